"""The honest bracket (issue 19): exact endgames, the penalised bound, the adp player.

Twins and truths: the compiled expectimax against a plain-Python expectimax on
game.py over *every* legal move (so sensible+leftmost is seen to lose nothing);
the bound with W = 0 against the restricted clairvoyant solver deal for deal;
the bound with W = the exact value equal to the exact value on every stock
order; lower <= exact <= upper on random endgame positions; the penalty's
mean is zero under honest players (and clearly not under the clairvoyant
solver's lines, so the test can fail); the adp player never reads the stock
order, replays, and is never above the bound on the same deal.
"""

from __future__ import annotations

import math
from itertools import permutations

import numpy as np
import pytest

from engine_rs_free import adp, bound
from engine_rs_free.batch import play_batch
from engine_rs_free.deals import deal_batch
from engine_rs_free.expectimax import honest_q, honest_value
from engine_rs_free.game import DEAL, State, apply, apply_legal, legal_actions, legal_moves, replay, replay_states
from engine_rs_free.rules import rules_by_name
from engine_rs_free.solver import solve_batch

SEED = 2026
VARIANTS = ("standard", "strict", "reverse")


# ---------------------------------------------------------------------------------------------
# a plain-Python expectimax on game.py, over every legal move


def _reach_all(state: State, rules) -> list[State]:
    """Every state reachable from ``state`` by moves (any legal move, lone ones and every target)."""
    seen, out, todo = set(), [], [state]
    while todo:
        s = todo.pop()
        if s.piles in seen:
            continue
        seen.add(s.piles)
        out.append(s)
        todo.extend(apply_legal(s, m, rules) for m in legal_moves(s, rules))
    return out


def _ref_value(state: State, rules) -> float:
    if not state.stock:
        return float(any(s.won for s in _reach_all(state, rules)))
    cards = sorted(state.stock)
    best = 0.0
    for u in _reach_all(state, rules):
        tot, cnt = 0.0, 0
        for tup in permutations(cards, 4):
            rest = tuple(c for c in cards if c not in tup)
            tot += _ref_value(apply_legal(State(u.piles, tup + rest, u.discarded), DEAL, rules), rules)
            cnt += 1
        best = max(best, tot / cnt)
    return best


def _positions(variant: str, undealt: int, count: int, start: int) -> list[State]:
    """States just after the deal that leaves ``undealt`` cards: from games of the random policy, and
    (so that some can be won) from the restricted solver's lines of the deals it wins, alternately."""
    rules = rules_by_name(variant)
    decks = deal_batch(SEED, start, count)
    res = play_batch(decks, rules, "random", seed=SEED, indices=np.arange(start, start + count), want_lines=True)
    won = deal_batch(SEED, start + 10**6, 20 * count)
    sol = solve_batch(won, rules.with_options("sensible", "leftmost"), want_lines=True)
    games = [(d, ln) for d, ln, w in zip(won, sol.lines, sol.won) if w][:count]
    out = []
    for deck, line in list(zip(decks, res.lines)) + games:
        states = replay_states(deck, line, rules)
        for after, a in zip(states[1:], line.split()):
            if a == "d" and len(after.stock) == undealt:
                out.append(after)
    return out


# ---------------------------------------------------------------------------------------------
# exact endgames


@pytest.mark.parametrize("variant", VARIANTS)
def test_exact_value_matches_plain_expectimax_one_deal_left(variant):
    rules = rules_by_name(variant)
    positions = _positions(variant, 4, 30, 100)
    assert len(positions) > 30
    values = [honest_value(s, rules) for s in positions]
    assert values == pytest.approx([_ref_value(s, rules) for s in positions], abs=1e-12)
    assert 0 < sum(values)  # some positions can be won: the comparison is not all zeros


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_exact_value_matches_plain_expectimax_two_deals_left(variant):
    rules = rules_by_name(variant)
    positions = _positions(variant, 8, 6, 300)[:4]
    for s in positions:
        assert honest_value(s, rules) == pytest.approx(_ref_value(s, rules), abs=1e-12)


def test_exact_value_reads_the_stock_as_a_set():
    rules = rules_by_name("standard")
    s = _positions("standard", 8, 10, 500)[0]
    flipped = State(s.piles, tuple(reversed(s.stock)), s.discarded)
    assert honest_value(s, rules) == honest_value(flipped, rules)


@pytest.mark.parametrize("variant", VARIANTS)
def test_bound_with_the_exact_w_is_the_exact_value_on_every_order(variant):
    """W = the honest value, exact expectations: the penalised value equals it for every stock order."""
    rules = rules_by_name(variant)
    rng = np.random.default_rng(4)
    checked = 0
    for undealt, n_pos in ((4, 12), (8, 3)):
        for s in _positions(variant, undealt, 40, 700)[:n_pos]:
            exact = honest_value(s, rules)
            for _ in range(2 if undealt == 8 else 4):
                order = list(rng.permutation(list(s.stock)))
                got = bound.penalised_value(s.piles, order, rules, w="exact", exact=8)
                assert got.value == pytest.approx(exact, abs=1e-9)
                checked += 1
    assert checked >= 50


@pytest.mark.parametrize("variant,w", [("standard", "w1"), ("reverse", "w1"), ("standard", "w3")])
def test_lower_exact_upper_on_endgames(variant, w):
    """Two deals left: adp's exact value <= the honest optimum <= the mean penalised value (sampled expectations)."""
    rules = rules_by_name(variant)
    # positions worth checking: an honest player wins at least 2% of them (rarer wins are seldom sampled)
    positions = [(s, v) for s in _positions(variant, 8, 25, 900) if (v := honest_value(s, rules)) >= 0.02][:6]
    assert len(positions) >= 4
    rng = np.random.default_rng(5)
    gaps = []
    for n, (s, exact) in enumerate(positions):
        # lower: the player choosing by its model at 8 undealt (exact=4), then exactly; its exact value
        moves = adp.choose(s, rules, "adp:look=0,exact=4", seed=SEED, index=n, decision=0)
        u = s
        for m in moves:
            u = apply(u, m, rules)
        lower = honest_q(u, rules)
        assert lower <= exact + 1e-12
        # upper: sampled expectations at 8 undealt (unbiased, independent of the order): valid in expectation
        vals = []
        for k in range(200):
            order = list(rng.permutation(list(s.stock)))
            vals.append(bound.penalised_value(s.piles, order, rules, w=w, samples=16, exact=4, seed=SEED,
                                              index=1000 * n + k).value)
        vals = np.array(vals)
        se = vals.std(ddof=1) / math.sqrt(len(vals))
        assert exact <= vals.mean() + 3.5 * se + 1e-12, (n, exact, vals.mean(), se)
        gaps.append(se)
    assert min(gaps) > 0  # the per-order values vary: the comparison has something to compare


# ---------------------------------------------------------------------------------------------
# the look-ahead W at 8 undealt cards (models with look8 > 0: w3)


def _look_orders(cards, look, seed, index):
    from engine_rs_free.infostate import undealt_mask
    from engine_rs_free.value import look_key, look_orders

    out = np.zeros((look, 8), np.int8)
    assert look_orders(undealt_mask(cards), look_key(look, seed, index), out)
    return out


def test_look_ahead_orders_are_keyed_orders_of_the_undealt_set():
    cards = [3, 9, 14, 20, 27, 33, 41, 50]
    a = _look_orders(cards, 32, SEED, 7)
    assert all(sorted(row.tolist()) == cards for row in a)
    assert len({tuple(row) for row in a}) > 28  # 32 draws of 40,320 orders: hardly any repeat
    assert (a == _look_orders(cards[::-1], 32, SEED, 7)).all()  # the set, not its order
    assert not (a == _look_orders(cards, 32, SEED, 8)).all()  # each deal its own orders
    assert not (a == _look_orders(cards, 32, SEED + 1, 7)).all()
    from engine_rs_free.value import look_tuples

    assert (look_tuples(cards, 32, seed=SEED, index=7) == a[:, :4]).all()


@pytest.mark.parametrize("variant", ["standard", "reverse"])
def test_look_ahead_w_matches_plain_python(variant):
    """W of w3 at 8 undealt: the best, over the sensible+leftmost positions reachable by moves, of the mean
    exact V_1 after the first deal of each keyed order; the twin is game.py's moves and the plain expectimax."""
    rules = rules_by_name(variant)
    restricted = rules.with_options("sensible", "leftmost")
    checked = nonzero = 0
    # positions an honest player wins now and then (at 2 % or more), so that the values are not all zero
    positions = [s for s in _positions(variant, 8, 25, 900) if honest_value(s, rules) >= 0.02][:5]
    for n, s in enumerate(positions):
        orders = _look_orders(s.stock, 32, SEED, n)
        want = 0.0
        for u in _reach_all(s, restricted):
            vals = [_ref_value(apply_legal(State(u.piles, tuple(int(c) for c in o), u.discarded), DEAL, rules),
                               rules) for o in orders]
            want = max(want, sum(vals) / len(vals))
        got = bound.w_value(s.piles, s.stock, rules, w="w3", seed=SEED, index=n)
        assert got == pytest.approx(want, abs=1e-12), n
        checked += 1
        nonzero += want > 0
    assert checked == 5 and nonzero > 0


def test_look_ahead_penalty_term_telescopes():
    """With w3 the deal from 8 undealt is charged with the orders W was taken over, so from a position
    just after a deal with 8 undealt no line of any stock order is worth more than W there; with w1
    (the network) some are, so the test can fail."""
    rules = rules_by_name("standard")
    rng = np.random.default_rng(6)
    above = {"w1": 0, "w3": 0}
    for n, s in enumerate(_positions("standard", 8, 12, 900)[:12]):
        for w in above:
            top = bound.w_value(s.piles, s.stock, rules, w=w, seed=SEED, index=n)
            for _ in range(5):
                order = list(rng.permutation(list(s.stock)))
                above[w] += bound.penalised_value(s.piles, order, rules, w=w, seed=SEED, index=n).value > top + 1e-12
    assert above["w3"] == 0
    assert above["w1"] > 0


# w3 (the look-ahead at 8 undealt alone) in the slow suite: w4 has the same look-ahead and the feature at 12
@pytest.mark.parametrize("w", [pytest.param("w3", marks=pytest.mark.slow), "w4"])
@pytest.mark.parametrize("player", ["greedy", "random"])
def test_look_ahead_penalty_has_mean_zero_for_honest_players(player, w):
    n = 600
    decks = deal_batch(SEED, 24000, n)
    res = play_batch(decks, "standard", player, seed=SEED, indices=np.arange(24000, 24000 + n), want_lines=True)
    z = np.array([bound.line_penalty(d, ln, "standard", w=w, samples=8, seed=SEED, index=24000 + i)
                  for i, (d, ln) in enumerate(zip(decks, res.lines))])
    se = z.std(ddof=1) / math.sqrt(n)
    assert abs(z.mean()) < 3.5 * se, (z.mean(), se)
    assert z.std() > 0.005


# the look-ahead feature at 12 undealt cards (models with look12 > 0: w4)


def _network(model, k, fx):
    """The stage-k network of a model in plain NumPy (the twin of value._network)."""
    z = (np.asarray(fx[: model.W1.shape[1]]) - model.mu[k]) / model.sd[k]
    return float(1 / (1 + np.exp(-(np.tanh(z @ model.W1[k] + model.b1[k]) @ model.w2[k] + model.b2[k]))))


def _features(state: State, rules) -> np.ndarray:
    """value.features of a position about to deal (30 entries; feature 30 left 0)."""
    from engine_rs_free.infostate import new_pool, pool_row, rule_tables, undealt_mask
    from engine_rs_free.value import features

    st, su, _ = rule_tables(rules)
    P, H, _, _ = new_pool()
    pool_row(P, H, 0, [list(p) for p in state.piles])
    fx = np.zeros(64)
    features(P, H, 0, undealt_mask(list(state.stock)), st, su, fx)
    return fx


def _look12_twin(u: State, rules, model, index: int) -> float:
    """The look-ahead feature of u (about to deal, 12 undealt) from game.py: the mean over the keyed tuples
    of the best stage-2 network value over the sensible+leftmost positions reachable after the deal."""
    from engine_rs_free.value import STREAM_PENALTY, sample_tuples

    restricted = rules.with_options("sensible", "leftmost")
    tuples = sample_tuples(u.stock, model.look12, seed=SEED, index=index, counter=36, stream=STREAM_PENALTY)
    vals = []
    for t in tuples:
        t = tuple(int(c) for c in t)
        after = apply_legal(State(u.piles, t + tuple(c for c in sorted(u.stock) if c not in t), u.discarded),
                            DEAL, rules)
        vals.append(max(_network(model, 2, _features(v, rules)) for v in _reach_all(after, restricted)))
    return sum(vals) / len(vals)


@pytest.mark.parametrize("variant", ["standard", "reverse"])
def test_look_ahead_feature_w_matches_plain_python(variant):
    """W of w4 at 12 undealt: the best, over the reachable positions u, of the stage-3 network on u's
    features with feature 30 = the look-ahead feature; the twin reaches, deals and evaluates with game.py
    and NumPy (only value.features is shared)."""
    from engine_rs_free.value import load_model

    rules = rules_by_name(variant)
    restricted = rules.with_options("sensible", "leftmost")
    model = load_model("w4")
    assert model.look12 == 32 and model.W1.shape[1] == 31
    values = []
    for n, s in enumerate(_positions(variant, 12, 4, 950)[:6]):
        want = 0.0
        for u in _reach_all(s, restricted):
            fx = _features(u, rules)
            fx[30] = _look12_twin(u, rules, model, n)
            want = max(want, _network(model, 3, fx))
        got = bound.w_value(s.piles, s.stock, rules, w="w4", seed=SEED, index=n)
        assert got == pytest.approx(want, abs=1e-12), n
        values.append(got)
    assert len(values) == 6 and len(set(values)) == 6  # distinct positions, distinct values


def _w_of_model(model, s: State, rules, index: int) -> float:
    """value.w_of of the position s (just after a deal) under a Model object (not a shipped name)."""
    from engine_rs_free.infostate import POOL_ROWS, pool_row, rule_tables, undealt_mask
    from engine_rs_free.value import W_MODEL, w_of

    st, su, fill = rule_tables(rules)
    P, H, KM, KF = bound._ws().pool
    pool_row(P, H, POOL_ROWS - 1, [list(p) for p in s.piles])
    return float(w_of(P, H, KM, KF, POOL_ROWS - 1, undealt_mask(list(s.stock)), W_MODEL, st, su, fill,
                      *model.arrays, np.zeros(64), model.key(SEED, index)))


@pytest.mark.parametrize("variant", ["standard", "reverse"])
def test_telescoping_stage_3_w_is_the_best_look_ahead_feature(variant):
    """W at 12 undealt of a telescoping model (tele12, w9): the best look-ahead feature over the reachable
    positions, with no stage-3 network; the twin reaches, deals and evaluates with game.py and NumPy.
    The same arrays without tele12 (w4) give other values, so the flag is what is tested."""
    from engine_rs_free.value import Model, load_model

    rules = rules_by_name(variant)
    restricted = rules.with_options("sensible", "leftmost")
    w4 = load_model("w4")
    tele = Model("tele", *w4.arrays, look8=w4.look8, look12=w4.look12, tele12=True)
    differ = 0
    for n, s in enumerate(_positions(variant, 12, 4, 950)[:6]):
        want = max(_look12_twin(u, rules, tele, n) for u in _reach_all(s, restricted))
        got = _w_of_model(tele, s, rules, n)
        assert got == pytest.approx(want, abs=1e-12), n
        differ += abs(got - _w_of_model(w4, s, rules, n)) > 1e-6
    assert differ >= 4


def test_look_ahead_feature_shares_the_penalty_tuples():
    """On a real deal the feature's tuples are the ones the bound charges the deal from 12 undealt with."""
    from engine_rs_free.value import STREAM_PENALTY, sample_tuples

    deck = [int(c) for c in deal_batch(SEED, 77, 1)[0]]
    tup, off = bound.deal_tuples(deck[4:], samples=32, exact=4, seed=SEED, index=77, look=32)
    i = (48 - 12) // 4
    want = sample_tuples(deck[4 + 36:], 32, seed=SEED, index=77, counter=36, stream=STREAM_PENALTY)
    assert (tup[off[i]:off[i + 1]] == want).all()
    assert not (tup[off[i - 1]:off[i - 1] + 32] == want).all()


# ---------------------------------------------------------------------------------------------
# the bound


@pytest.mark.parametrize("variant", VARIANTS)
def test_zero_w_bound_is_the_restricted_solver(variant):
    decks = deal_batch(SEED, 0, 300)
    got = bound.play(decks, variant, "bound:w=zero", seed=SEED)
    want = solve_batch(decks, rules_by_name(variant).with_options("sensible", "leftmost"), want_lines=False)
    assert got.value.tolist() == want.won.astype(float).tolist()
    assert got.won.tolist() == want.won.tolist()
    if variant != "strict":
        assert want.won.sum() > 30


@pytest.mark.parametrize("player", ["nomove", "greedy", "random", "lookahead"])
def test_penalty_has_mean_zero_for_honest_players(player):
    n = 1200
    decks = deal_batch(SEED, 20000, n)
    res = play_batch(decks, "standard", player, seed=SEED, indices=np.arange(20000, 20000 + n), want_lines=True)
    z = np.array([bound.line_penalty(d, ln, "standard", samples=8, seed=SEED, index=20000 + i)
                  for i, (d, ln) in enumerate(zip(decks, res.lines))])
    se = z.std(ddof=1) / math.sqrt(n)
    assert abs(z.mean()) < 3.5 * se, (z.mean(), se)
    assert z.std() > 0.005  # the penalties are not all zero


def test_penalty_is_not_zero_for_the_clairvoyant_solver():
    """The solver's winning lines see the stock: their penalty is clearly positive (the test above has power)."""
    n = 400
    decks = deal_batch(SEED, 20000, n)
    sol = solve_batch(decks, "standard+sensible+leftmost", want_lines=True)
    z = np.array([bound.line_penalty(d, ln, "standard", samples=8, seed=SEED, index=20000 + i)
                  for i, (d, ln) in enumerate(zip(decks, sol.lines)) if sol.won[i]])
    se = z.std(ddof=1) / math.sqrt(len(z))
    assert z.mean() > 5 * se


def test_bound_names():
    """The registry's grammar (players.py) for bound; parse_bound is its typed view."""
    assert bound.parse_bound("bound").name == "bound:w=w1,samples=32,exact=4"
    assert bound.parse_bound(bound.parse_bound("bound:samples=8").name).name == "bound:w=w1,samples=8,exact=4"
    assert bound.parse_bound("bound:w=zero,exact=8") == bound.BoundSpec("zero", 32, 8)
    for bad, msg in (("bound:samples=0", "out of range"), ("bound:exact=5", "is not one of 0, 4, 8"),
                     ("bound:depth=2", "unknown parameter 'depth'"), ("bound:w=nosuch", "is not one of zero, w1"),
                     ("bounds", "unknown player 'bounds'"), ("greedy", "not a bound player")):
        with pytest.raises(ValueError, match=msg):
            bound.parse_bound(bad)


# ---------------------------------------------------------------------------------------------
# the adp player


def test_adp_names():
    """The registry's grammar (players.py) for adp; parse_adp is its typed view."""
    assert adp.parse_adp("adp").name == "adp:w=w1,look=1,samples=16,exact=8,psamples=32,pexact=4"
    spec = adp.parse_adp("ADP: look=0, samples=4")
    assert adp.parse_adp(spec.name) == spec and adp.parse_adp(spec.player) == spec
    assert (spec.look, spec.samples, spec.exact, spec.pexact) == (0, 4, 8, 4)
    for bad, msg in (("adp:look=2", "out of range; use 0..1"), ("adp:samples=x", "whole number"),
                     ("adp:exact=5", "is not one of 4, 8"), ("adp:look=1,look=0", "twice"),
                     ("adpx", "unknown player 'adpx'"), ("bound", "not an adp player")):
        with pytest.raises(ValueError, match=msg):
            adp.parse_adp(bad)


FAST_ADP = "adp:samples=4,exact=4,psamples=8"


@pytest.mark.parametrize("variant", VARIANTS)
def test_adp_lines_replay_and_counts(variant):
    rules = rules_by_name(variant)
    n = 60
    decks = deal_batch(SEED, 3000, n)
    res = adp.play(decks, rules, FAST_ADP, seed=SEED, indices=np.arange(3000, 3000 + n), want_lines=True)
    for i in range(n):
        states = replay_states(decks[i], res.lines[i], rules)
        assert states[-1].score == res.score[i]
        assert not states[-1].stock
        acts = res.lines[i].split()
        assert res.moves[i] == sum(a != "d" for a in acts)
        # decision points as policies.py counts them: more than one choice (stopping counts with the stock out)
        dec = sum(len(legal_actions(s, rules)) + (0 if s.stock else 1) > 1 for s in states)
        assert res.decisions[i] == dec
    again = adp.play(decks[::-1], rules, FAST_ADP, seed=SEED, indices=np.arange(3000, 3000 + n)[::-1])
    assert again.score[::-1].tolist() == res.score.tolist()
    assert again.value[::-1].tolist() == res.value.tolist()


@pytest.mark.parametrize("variant,player", [("standard", FAST_ADP), ("strict", FAST_ADP),
                                            pytest.param("standard", FAST_ADP + ",w=w3", marks=pytest.mark.slow),
                                            ("standard", FAST_ADP + ",w=w4")])
def test_adp_never_reads_the_stock_order(variant, player):
    """Permuting the cards undealt after action k changes none of actions 1..k+1 (with w3 too: its
    look-ahead orders are keyed by the undealt set, not their order)."""
    rules = rules_by_name(variant)
    n = 80
    decks = deal_batch(SEED, 9000, n)
    idx = np.arange(9000, 9000 + n)
    base = adp.play(decks, rules, player, seed=SEED, indices=idx, want_lines=True)
    rng = np.random.default_rng(3)
    other = decks.copy()
    cuts = []
    for i in range(n):
        acts = base.lines[i].split()
        k = int(rng.integers(0, len(acts) + 1))
        dealt = 4 + 4 * acts[:k].count("d")
        other[i, dealt:] = rng.permutation(other[i, dealt:])
        cuts.append(k)
    moved = adp.play(other, rules, player, seed=SEED, indices=idx, want_lines=True)
    changed = 0
    for i, k in enumerate(cuts):
        a, b = base.lines[i].split(), moved.lines[i].split()
        assert b[: k + 1] == a[: k + 1], (i, k)
        changed += a != b
    assert changed > n // 5


def test_adp_is_never_above_the_bound_on_a_deal():
    """Same penalty tuples: the adp line is one of the bound's lines, so its penalised value is at most the bound."""
    n = 40
    decks = deal_batch(SEED, 5000, n)
    idx = np.arange(5000, 5000 + n)
    low = adp.play(decks, "standard", FAST_ADP, seed=SEED, indices=idx)
    up = bound.play(decks, "standard", "bound:samples=8", seed=SEED, indices=idx)
    assert np.all(low.value <= up.value + 1e-9)
    assert np.any(low.value < up.value - 1e-6)
    # and its value is its own line's: 1{won} minus the penalty of the line, recomputed from game.py
    lines = adp.play(decks[:10], "standard", FAST_ADP, seed=SEED, indices=idx[:10], want_lines=True).lines
    for i in range(10):
        z = bound.line_penalty(decks[i], lines[i], "standard", samples=8, seed=SEED, index=int(idx[i]))
        assert low.value[i] == pytest.approx(float(low.won[i]) - z, abs=1e-9)
    assert replay(decks[0], lines[0], "standard").score == low.score[0]


@pytest.mark.parametrize("w", [pytest.param("w3", marks=pytest.mark.slow), "w4"])
def test_adp_is_never_above_the_bound_with_the_look_ahead_model(w):
    n = 3
    decks = deal_batch(SEED, 5100, n)
    idx = np.arange(5100, 5100 + n)
    low = adp.play(decks, "standard", f"adp:w={w},samples=4,psamples=8", seed=SEED, indices=idx)
    up = bound.play(decks, "standard", f"bound:w={w},samples=8", seed=SEED, indices=idx)
    assert np.all(low.value <= up.value + 1e-9)
    assert np.any(low.value < up.value - 1e-6)


@pytest.mark.parametrize("variant", ["standard", "strict"])
def test_clairvoyant_probe_matches_the_solver(variant):
    """Feature 30 of value.features: the share of 8 keyed stock orders a clairvoyant wins (dealing first),
    against solver.solve_position under sensible+leftmost on the same orders."""
    from engine_rs_free.deals import philox_shuffle
    from engine_rs_free.infostate import new_pool, pool_row, rule_tables, undealt_mask
    from engine_rs_free.solver import solve_position
    from engine_rs_free.value import PROBE_ORDERS, PROBE_STREAM, clairvoyant_probe

    rules = rules_by_name(variant)
    st, su, fill = rule_tables(rules)
    P, H, _, _ = new_pool(4)
    r = P.shape[0] - 1
    positions = _positions(variant, 8, 20, 1500)
    nonzero = 0
    for s in positions[:25]:
        pool_row(P, H, r, s.piles)
        und = undealt_mask(s.stock)
        got = clairvoyant_probe(P, H, r, und, st, su, fill)
        lo, hi = np.uint32(int(und) & 0xFFFFFFFF), np.uint32(int(und) >> 32)
        wins = 0
        for j in range(PROBE_ORDERS):
            order = np.array(sorted(s.stock), np.int8)
            philox_shuffle(order, 8, np.uint32(j << 8), np.uint32(PROBE_STREAM), lo, hi, lo, hi, 256)
            dealt = apply_legal(State(s.piles, tuple(int(c) for c in order), s.discarded), DEAL, rules)
            wins += solve_position(dealt, rules.with_options("sensible", "leftmost")).won
        assert got == wins / PROBE_ORDERS
        nonzero += got > 0
    assert nonzero > 0


# ---------------------------------------------------------------------------------------------
# the players in the registry


def test_rows_are_those_of_the_first_integration():
    """The registry's play gives, column for column, the rows the first integration wrote (before
    the players joined the registry and adp the one action code): tests/golden/bracket_rows.json,
    written by engine_rs_free.bracket.run_bracket_player at commit 92751f3."""
    import json
    from pathlib import Path

    from engine_rs_free.players import play

    cases = json.loads((Path(__file__).parent / "golden" / "bracket_rows.json").read_text())
    assert {c["player"].partition(":")[0] for c in cases} == {"adp", "bound"}
    for case in cases:
        n = len(case["score"])
        idx = np.arange(case["first"], case["first"] + n)
        cols = play(deal_batch(SEED, case["first"], n), case["variant"], case["player"], seed=SEED, indices=idx,
                    want_lines=True).columns()
        for name, want in case.items():
            if name in ("variant", "player", "first"):
                continue
            got = cols[name]
            got = None if got is None else [x if x is None or isinstance(x, str) else x.item() for x in got]
            assert got == want, (case["variant"], case["player"], name)


# ---------------------------------------------------------------------------------------------
# pimc's penalised value


def _w_twin(s: State, rules, model) -> float:
    """W of w1 at the position s just after a deal, from game.py and NumPy: the exact honest value with 4
    or fewer undealt, else the best stage-(n/4) network value over the sensible+leftmost reachable positions."""
    n = len(s.stock)
    if n <= 4:
        return _ref_value(s, rules)
    restricted = rules.with_options("sensible", "leftmost")
    return max(_network(model, n // 4, _features(u, rules)) for u in _reach_all(s, restricted))


def _penalty_twin(deck, line: str, rules, model, index: int) -> float:
    """The bound's penalty of a line: per deal, W after it minus the mean of W over the deal's tuples."""
    tuples, off = bound.deal_tuples([int(c) for c in deck[4:]], samples=32, exact=4, seed=SEED, index=index)
    states = replay_states(deck, line, rules)
    z = 0.0
    for before, after, action in zip(states, states[1:], line.split()):
        if action != "d":
            continue
        i = (48 - len(before.stock)) // 4
        vals = []
        for t in tuples[off[i]:off[i + 1]]:
            t = tuple(int(c) for c in t)
            dealt = State(before.piles, t + tuple(c for c in sorted(before.stock) if c not in t), before.discarded)
            vals.append(_w_twin(apply_legal(dealt, DEAL, rules), rules, model))
        z += _w_twin(after, rules, model) - sum(vals) / len(vals)
    return z


@pytest.mark.parametrize("variant, start", [("standard", 7000), ("strict", 7000)])
def test_pimc_value_is_its_line_less_the_penalty_of_a_plain_python_twin(variant, start):
    """pimc's rows carry 1{won} - z for the line they played, z the default bound's penalty (w1, 32 tuples,
    exact from 4 undealt), recomputed here from game.py, NumPy and the tuples alone."""
    from engine_rs_free.players import play
    from engine_rs_free.value import load_model

    rules = rules_by_name(variant)
    model = load_model("w1", variant == "strict")
    decks = deal_batch(SEED, start, 3)
    idx = np.arange(start, start + 3)
    res = play(decks, variant, "pimc:samples=2", seed=SEED, indices=idx, want_lines=True)
    for g in range(3):
        want = float(res.won[g]) - _penalty_twin(decks[g], res.line[g], rules, model, int(idx[g]))
        assert res.value[g] == pytest.approx(want, abs=1e-9), g
    assert len(set(res.value.tolist())) == 3


def test_pimc_value_has_mean_zero_penalty_and_stays_under_the_bound():
    """Over many deals pimc's mean value is its win rate (the penalty has mean zero for an honest player);
    its lines are sensible+leftmost ones, so on a deal its value is never above the default bound's."""
    from engine_rs_free.players import play

    n = 1200
    decks = deal_batch(SEED, 26000, n)
    idx = np.arange(26000, 26000 + n)
    res = play(decks, "standard", "pimc:samples=2", seed=SEED, indices=idx)
    z = res.won.astype(float) - res.value
    se = z.std(ddof=1) / math.sqrt(n)
    assert abs(z.mean()) < 3.5 * se, (z.mean(), se)
    assert z.std() > 0.005
    m = 12
    up = bound.play(decks[:m], "standard", "bound", seed=SEED, indices=idx[:m])
    assert np.all(res.value[:m] <= up.value + 1e-9)
    assert np.any(res.value[:m] < up.value - 1e-6)
