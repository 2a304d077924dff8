"""The optional-discards search (solver/optional.py) and its dominance rules against their twins.

Two kinds of check, neither of which calls optional.py to get its expected value:

- each dominance rule, restated here in plain Python over ``game.State``, is held to the brute
  force of test_solver (``brute_value``: every position reachable through ``game.apply``): wherever
  the rule calls a discard safe, discarding must keep the value. A rule that calls a needed keep
  safe fails this test (``test_a_false_rule_is_caught`` shows the test can fail);
- the search on full deals is held, deck for deck, to the generic search (generic.py), which has
  no dominance rule (it branches on every discard) and is itself held to the brute force on short
  positions in test_solver. Full deals of optional discards are far too many positions for the
  Python brute force, and some are too many even for the generic search: the deals compared are
  those the generic search solves within a node limit (the test asserts how many);
- the last deal's cap, held to the brute force under optional discards (with and without the
  solver restrictions), and the forced search first, whose line is replayed through game.py.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from test_solver import brute_value, random_position
from test_solver_easy import check_last_deal_cap, last_deal_cap

from engine_rs_free import game
from engine_rs_free.cards import SUIT
from engine_rs_free.deals import deal_batch
from engine_rs_free.rules import FILL_ACE, FILL_ANY, TOP_STRENGTH, rules_by_name, strength_table
from engine_rs_free.solver import core, solve_batch
from engine_rs_free.solver.table import tt_bits_for
from engine_rs_free.solver.generic import RULE_LAST_DEAL_CAP
from engine_rs_free.solver.optional import (
    ALL_RULES,
    RULE_COVER,
    RULE_COVER_REAL,
    RULE_END,
    RULE_FORCED_FIRST,
    RULE_LOCK,
    RULE_NO_TARGET,
    RULE_PENDING,
    RULE_STRICT_PILES,
    rule_flags,
)

OPTIONAL_VARIANTS = ["standard+optional", "strict+optional", "reverse+optional"]


def safe_by_rule(state: game.State, pile: int, rules) -> set[str]:
    """The rules (docs/solver.md, "Optional discards") that call discarding the top of ``pile`` safe.

    Restated from the docs over a game.State, independently of optional.py: END when the stock is
    out; NO_TARGET when no weaker card of its suit is on the table or in the stock (strict: leaving
    out those dealt to its own pile, on it or still in the stock: stock card i goes to pile i % 4).
    """
    strength = strength_table(rules)
    c = state.piles[pile][-1]
    out = set()
    if not state.stock:
        out.add("END")
        return out
    strict = rules.fill == FILL_ACE
    targets = []
    for p, cards in enumerate(state.piles):
        for x in cards:
            if not (strict and p == pile):
                targets.append(x)
    for i, x in enumerate(state.stock):
        if not (strict and i % 4 == pile):
            targets.append(x)
    if not any(SUIT[x] == SUIT[c] and strength[x] < strength[c] for x in targets):
        out.add("NO_TARGET")
    return out


def _discardable_piles(state, rules):
    return [a.src for a in game.legal_actions(state, rules) if a.kind == "x"]


def _check_rules_on_positions(variant, count, seed, claim=safe_by_rule):
    """Every discard a rule calls safe keeps the brute-force value; returns how often each rule fired."""
    rules = rules_by_name(variant)
    checked = Counter()
    for i in range(count):
        state = random_position(seed, i, rules, [0, 4, 8, 12][i % 4] if "strict" in variant else [0, 4, 8][i % 3])
        value = None
        for p in _discardable_piles(state, rules):
            fired = claim(state, p, rules)
            if fired:
                if value is None:
                    value = brute_value(state, rules)
                after = game.apply(state, game.Action("x", p), rules)
                assert brute_value(after, rules) == value, (variant, claim(state, p, rules), game.picture(state), p)
                checked.update(fired)
    return checked


@pytest.mark.parametrize("variant", OPTIONAL_VARIANTS)
def test_dominance_rules_keep_the_brute_force_value(variant):
    checked = _check_rules_on_positions(variant, 1500, seed=21)
    assert checked["END"] >= 50 and checked["NO_TARGET"] >= 50, checked  # both rules fired, often


def test_a_false_rule_is_caught():
    # "every discard is safe" is false under optional discards (keeping a card can pay): the check
    # above must catch it on the same kind of positions, or it could not catch a wrong rule either
    with pytest.raises(AssertionError):
        _check_rules_on_positions("standard+optional", 400, seed=21, claim=lambda s, p, r: {"ALWAYS"})


def test_rule_flags_follow_the_rule_set():
    always = RULE_LAST_DEAL_CAP | RULE_FORCED_FIRST
    # every rule set without a restriction searches its discards as pending discards (pending.py;
    # test_solver_pending holds it to the plain search, and the test below to the generic one)
    # (and prunes with the lock bound and skips covered positions, both kinds, which the pending search alone
    # reads)
    pending = RULE_PENDING | RULE_LOCK | RULE_COVER | RULE_COVER_REAL
    assert rule_flags(rules_by_name("standard+optional")) == always | RULE_END | RULE_NO_TARGET | pending
    assert rule_flags(rules_by_name("reverse+optional")) == always | RULE_END | RULE_NO_TARGET | pending
    assert ALL_RULES == RULE_END | RULE_NO_TARGET | RULE_STRICT_PILES
    assert rule_flags(rules_by_name("strict+optional")) == always | ALL_RULES | pending
    # the proofs of the safe discards assume an empty pile or a lone card never matters: none of them
    # under a restriction; the cap and the forced search first hold under every restriction
    for r in ("standard+optional+sensible", "strict+optional+leftmost", "standard+optional+must_fill"):
        assert rule_flags(rules_by_name(r)) == always
    assert rule_flags(rules_by_name("easy+optional")) == always  # (the generic search reads the cap only)
    assert rule_flags(rules_by_name("standard")) == 0
    assert TOP_STRENGTH == 12


def _solve(decks, variant, search, node_limit, flags=None):
    score, nodes, status, _m, _d, _l = core.run(core.deck_inputs(decks), True, rules_by_name(variant), node_limit,
                                                False, search=search, opt_flags=flags)
    return score.copy(), nodes.copy(), status.copy()


def _check_against_generic(variant, count, seed, limit, min_solved):
    decks = deal_batch(seed, 0, count)
    # the twin: the generic search with no rule at all (no cap either)
    slow, slow_nodes, slow_status = _solve(decks, variant, "generic", limit, 0)
    ok = slow_status == 0
    assert ok.sum() >= min_solved, (variant, int(ok.sum()))
    fast, fast_nodes, fast_status = _solve(decks[ok], variant, "auto", None)
    assert (fast_status == 0).all()
    assert np.array_equal(fast, slow[ok]), variant
    # each rule alone, and none, in this search and in the pending one (with and without the lock
    # bound), with and without the cap and the forced search first: the same values (the search with
    # no rule is the generic one's order)
    flags = rule_flags(rules_by_name(variant)) & ALL_RULES
    safe = {0, flags & RULE_END, flags & ~RULE_END, flags} | {r | RULE_PENDING for r in (0, flags)} \
        | {r | RULE_PENDING | RULE_LOCK for r in (0, flags)} \
        | {r | RULE_PENDING | RULE_COVER | e for r in (0, flags) for e in (0, RULE_LOCK)} \
        | {r | RULE_PENDING | RULE_COVER_REAL | e for r in (0, flags) for e in (0, RULE_LOCK | RULE_COVER)}
    both = RULE_LAST_DEAL_CAP | RULE_FORCED_FIRST
    combos = {r | e for r in safe for e in (0, both)} | {r | e for r in (flags, flags | RULE_PENDING)
                                                         for e in (RULE_LAST_DEAL_CAP, RULE_FORCED_FIRST)}
    for f in sorted(combos):
        alone, _n, st = _solve(decks[ok], variant, "auto", None, f)
        assert (st == 0).all() and np.array_equal(alone, slow[ok]), (variant, f)
    # where the limit stopped the generic search, its lower bound never beats the fast search
    rest = np.flatnonzero(~ok)[:5]
    if rest.size:
        score, _n, st = _solve(decks[rest], variant, "auto", 2 * limit)
        assert (score[st == 0] >= slow[rest][st == 0]).all()
    return fast_nodes, slow_nodes[ok]


@pytest.mark.parametrize("variant", OPTIONAL_VARIANTS)
def test_optional_search_equals_generic_search_on_full_deals(variant):
    _check_against_generic(variant, 30, seed=31, limit=300_000, min_solved=3)


@pytest.mark.slow
@pytest.mark.parametrize("variant", OPTIONAL_VARIANTS)
def test_optional_search_equals_generic_search_on_full_deals_full_count(variant):
    _check_against_generic(variant, 200, seed=32, limit=4_000_000, min_solved=40)


@pytest.mark.parametrize("variant", OPTIONAL_VARIANTS)
def test_optional_lines_replay_to_max_score(variant):
    decks = deal_batch(2026, 0, 30)
    res = solve_batch(decks, variant, node_limit=200_000)
    for n, d in enumerate(decks):
        states = game.replay_states(d, res.lines[n], variant)
        assert states[-1].score == res.max_score[n]
        assert res.moves[n] == sum(1 for a in res.lines[n].split() if ">" in a)
        choices = [len(game.legal_actions(s, variant)) + (not s.stock) for s in states]
        decisions = sum(1 for c in choices[:-1] if c > 1) + (choices[-1] > 1 and not states[-1].stock)
        assert res.decisions[n] == decisions
    assert any(" x" in " " + line for line in res.lines)  # the lines do hold discards the search chose


def test_optional_never_scores_below_forced():
    # optional discards only add choices (forced play is one way to play them); on the deals the
    # search solves within the limit, so that the figure compared is a value, not a lower bound.
    # The optional search runs without the forced search first, which would make this true by
    # construction.
    decks = deal_batch(2026, 100, 30)
    for variant in ("strict", "standard", "reverse"):
        forced = solve_batch(decks, variant, want_lines=False)
        flags = rule_flags(rules_by_name(variant + "+optional")) & ~RULE_FORCED_FIRST
        opt, _n, status = _solve(decks, variant + "+optional", "auto", 300_000, flags)
        solved = status == 0
        assert solved.sum() >= 3, variant
        assert (opt[solved] >= forced.max_score[solved]).all()
        if variant == "strict":  # (the standard deals solved within the limit are mostly wins)
            assert (opt[solved] > forced.max_score[solved]).any()  # keeping a card did pay


def _small_position(rng, stock_left: int, rules) -> game.State:
    """A position with few cards in play (the rest discarded), where a line can reach the cap: the
    cards of the top rank not in the stock (they are never discarded) and up to six more on the
    piles at random, some piles maybe empty, and ``stock_left`` in the stock."""
    top = strength_table(rules) == TOP_STRENGTH
    cards = [int(c) for c in rng.permutation(52)]
    stock = tuple(cards[:stock_left])
    rest = cards[stock_left:]
    on_table = [c for c in rest if top[c]] + [c for c in rest if not top[c]][:int(rng.integers(0, 7))]
    on_table = [on_table[i] for i in rng.permutation(len(on_table))]
    piles = [[] for _ in range(4)]
    for c in on_table:
        piles[int(rng.integers(4))].append(c)
    return game.State(tuple(tuple(p) for p in piles), stock, frozenset(set(rest) - set(on_table)))


@pytest.mark.parametrize("variant", OPTIONAL_VARIANTS + ["standard+optional+must_fill",
                                                          "strict+optional+sensible+leftmost", "easy+optional"])
def test_the_last_deal_cap_bounds_every_line(variant):
    """Under optional discards too: when the last four stock cards are of four suits, no line from any
    position scores more than 48 minus those of them below the top rank (the brute force, every
    reachable position). Positions of random play (value far below the cap) and small positions
    (where lines reach it, so a cap one lower would fail here)."""
    rules = rules_by_name(variant)
    rng = np.random.default_rng(43)

    def states():
        for i in range(1200):
            # (easy with 8 cards to deal: minutes of brute force for the same check)
            stock_left = 4 if rules.fill == FILL_ANY else 4 + 4 * (i % 2)
            yield random_position(43, i, rules.without_restrictions(), stock_left) if i % 3 == 0 \
                else _small_position(rng, stock_left, rules)

    capped, reached = check_last_deal_cap(states(), rules)
    assert capped >= 100 and reached >= 20, (capped, reached)


@pytest.mark.parametrize("variant", OPTIONAL_VARIANTS + ["reverse+optional+must_fill"])
def test_forced_first_gives_the_value_where_it_reaches_the_cap(variant):
    """A deal whose forced-discard value reaches the cap (48, or the last deal's cap) is solved by the
    forced search alone: as many nodes as the forced solver spends, the forced score, and a line of
    optional discards (every discard written out) that game.py replays to that score. Elsewhere the
    optional search runs as well, and the score is never below the forced one."""
    decks = deal_batch(2026, 0, 40)
    rules = rules_by_name(variant)
    # the forced solver with the table the optional one uses (its size changes which positions are
    # found again, so the node counts)
    forced, forced_nodes, _st, _m, _d, _l = core.run(core.deck_inputs(decks), True,
                                                     rules_by_name(variant.replace("+optional", "")), None, False,
                                                     tt_bits=tt_bits_for(rules), search="auto")
    opt = solve_batch(decks, variant, node_limit=3_000_000)
    caps = [last_deal_cap(game.new_game(d, rules), rules) for d in decks]
    shortcut = 0
    for n, d in enumerate(decks):
        if forced[n] >= caps[n]:
            shortcut += 1
            assert opt.status[n] == "solved" and opt.max_score[n] == forced[n]
            assert opt.nodes[n] == forced_nodes[n], n
            states = game.replay_states(d, opt.lines[n], variant)
            assert states[-1].score == forced[n]
        else:
            assert opt.max_score[n] >= forced[n]
            assert opt.nodes[n] > forced_nodes[n]  # both searches ran, and both are counted
    assert shortcut >= 3, shortcut


def test_the_node_limit_covers_both_searches():
    decks = deal_batch(2026, 0, 8)
    for limit in (50, 5_000, 100_000):
        res = solve_batch(decks, "standard+optional", node_limit=limit, want_lines=False)
        assert (res.nodes <= limit).all(), (limit, res.nodes)
        gave_up = np.array(res.status) == "gave_up"
        assert gave_up.any()
        assert not (res.won & gave_up).any()


def lock_bound(state: game.State, rules) -> int | None:
    """The lock bound (docs/solver.md, "The lock bound"), restated over a game.State from the docs,
    independently of pending.py: None when the lock is not proved, else 48 less the cards no line
    can ever discard.

    While no pile is empty nothing moves, so every card stays on its pile (a stock card goes to pile
    i % 4). A card never leaves if it is of the top rank, or if every stronger card of its suit in
    play is on its own pile or lies under a card that never leaves on another pile (or if it lies
    under such a card itself); grown until nothing changes. The lock holds when every pile holds a
    card that never leaves."""
    strength = strength_table(rules)
    if any(len(cards) == 0 for cards in state.piles):
        return None
    pile_of = {c: p for p, cards in enumerate(state.piles) for c in cards}
    pile_of.update({c: i % 4 for i, c in enumerate(state.stock)})
    stays: set[int] = set()  # cards below the top rank that never leave
    while True:
        covered, anchored = set(), 0
        for cards in state.piles:
            anchors = [i for i, c in enumerate(cards) if strength[c] == TOP_STRENGTH or c in stays]
            if anchors:
                anchored += 1
                covered |= set(cards[:max(anchors)])
        new = {c for c in pile_of if strength[c] != TOP_STRENGTH and c not in stays and (
            c in covered or all(pile_of[b] == pile_of[c] or b in covered for b in pile_of
                                if SUIT[b] == SUIT[c] and strength[b] > strength[c]))}
        if not new:
            return game.WIN_SCORE - len(stays) if anchored == 4 else None
        stays |= new


def _full_piles_position(rng, stock_left: int, rules) -> game.State:
    """A small position with no pile empty: the cards of the top rank not in the stock and up to six
    more, dealt at random to the four piles (each pile gets one first), ``stock_left`` in the stock."""
    state = _small_position(rng, stock_left, rules)
    cards = [c for cards in state.piles for c in cards]
    cards = [cards[i] for i in rng.permutation(len(cards))]
    piles = [[c] for c in cards[:4]]
    for c in cards[4:]:
        piles[int(rng.integers(4))].append(c)
    return game.State(tuple(tuple(p) for p in piles), state.stock, state.discarded)


def _check_lock_bound(variant, count, seed, slack=0) -> tuple[int, int]:
    """No reachable position scores more than the lock bound (less ``slack``) wherever the lock is
    proved (the brute force); returns (positions locked, positions whose value is the bound)."""
    rules = rules_by_name(variant)
    rng = np.random.default_rng(seed)
    locked = reached = 0
    for i in range(count):
        stock_left = [0, 4, 8][i % 3]
        state = random_position(seed, i, rules, stock_left) if i % 2 == 0 \
            else _full_piles_position(rng, stock_left, rules)
        bound = lock_bound(state, rules)
        if bound is None:
            continue
        locked += 1
        value = brute_value(state, rules)
        assert value <= bound - slack, (variant, game.picture(state), bound, value)
        reached += value == bound
    return locked, reached


@pytest.mark.parametrize("variant", OPTIONAL_VARIANTS)
def test_the_lock_bound_bounds_every_line(variant):
    locked, reached = _check_lock_bound(variant, 600, seed=47)
    assert locked >= 150 and reached >= 20, (locked, reached)  # so a bound one lower would fail here


def test_a_lock_bound_one_lower_is_caught():
    with pytest.raises(AssertionError):
        _check_lock_bound("standard+optional", 600, seed=47, slack=1)


def _native_position(state: game.State, deck_cards) -> tuple[int, int, int]:
    """``state`` (reached from the fresh deal ``deck_cards``) as the native search holds it: (mask, fw, sp).
    Card j of the deal lies on pile j % 4 as its (j // 4)-th card: native bit 13 * (j % 4) + j // 4."""
    bit_of = {int(c): 13 * (j % 4) + j // 4 for j, c in enumerate(deck_cards)}
    mask, fw = 0, 0
    for p, cards in enumerate(state.piles):
        foreign = 255
        for k, c in enumerate(cards):
            if bit_of[c] // 13 == p:
                mask |= 1 << bit_of[c]
            else:
                assert k == 0, "a card off its own pile lies at the bottom (it moved into an empty pile)"
                foreign = c
        fw |= foreign << (8 * p)
    return mask, fw, 48 - len(state.stock)


@pytest.mark.parametrize("variant", OPTIONAL_VARIANTS)
def test_the_compiled_lock_bound_equals_its_restatement(variant):
    """pending._pd_lock_bound on positions of random play (no pending card), against lock_bound."""
    from engine_rs_free.solver.pending import _pd_lock_bound, top_rank_bits

    rules = rules_by_name(variant)
    srules = core.search_rules(rules)
    ws = core._workspace(10)
    piles0, h0 = np.zeros((4, 64), np.int8), np.zeros(4, np.int32)
    locked = 0
    for index in range(60):
        deck_cards = deal_batch(59, index, 1)
        deck, od = ws.native_deck(srules), core.empty_optional_deck()
        core._fill_optional_start(piles0, h0, deck, od, core.deck_inputs(deck_cards), srules, 0)
        topm = top_rank_bits(deck)
        for stock_left in range(0, 48, 4):
            state = random_position(59, index, rules, stock_left)
            mask, fw, sp = _native_position(state, deck_cards[0])
            expected = lock_bound(state, rules)
            got = _pd_lock_bound(np.uint64(mask), np.uint32(fw), np.uint64(0), np.int64(sp), deck, od, topm,
                                 np.int64(game.WIN_SCORE - 1))
            assert got == (game.WIN_SCORE if expected is None else expected), (variant, index, stock_left)
            locked += expected is not None
    assert locked >= 100, locked
