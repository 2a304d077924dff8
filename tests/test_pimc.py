"""pimc (engine_rs_free/pimc.py): names, sampled orders, the batch position solve, and play.

Twins: the compiled sampler against a plain-Python Fisher-Yates on the same
Philox words; the batch position solve against ``solver.solve_position``; the
game counts against a replay of the line through ``game.py``. Play: lines
replay to the score, results are deterministic and independent of the batch,
the real stock order is never read (permuting the undealt cards after a
decision changes nothing up to it), and pimc never beats the clairvoyant
solver on any deal; it beats the simpler policies of the batch engine in mean
score, and (slow test) wins more often than greedy and lookahead, beats greedy
in mean score and ties lookahead in it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine_rs_free import pimc
from engine_rs_free.batch import play_batch
from engine_rs_free.deals import STREAM_SAMPLE, deal_batch, philox4x32
from engine_rs_free.game import DEAL, Action, apply, legal_actions, new_game, parse_position, replay_states
from engine_rs_free.pimc import (
    PimcSpec,
    candidates,
    choose,
    parse_pimc,
    pimc_batch,
    play_pimc,
    sample_orders,
    solve_positions,
)
from engine_rs_free.policies import UnknownPolicyError
from engine_rs_free.rules import rules_by_name
from engine_rs_free.players import canonical_player, play
from engine_rs_free.solver import solve_batch, solve_position

SEED = 2026
FAST = "pimc:samples=4"  # few samples, the default (cheapest) inner solves: for wide tests
PURE = "pimc:samples=4,guide=none"  # pure PIMC: no guiding policy


# ---------------------------------------------------------------------------------------------
# names


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("pimc", "pimc:samples=8,inner=sensible+leftmost+must_fill,guide=lookahead,margin=3"),
        ("pimc:samples=32", "pimc:samples=32,inner=sensible+leftmost+must_fill,guide=lookahead,margin=12"),
        ("PIMC: inner = leftmost+sensible , samples=16",
         "pimc:samples=16,inner=sensible+leftmost,guide=lookahead,margin=6"),
        ("pimc:inner=none,guide=none", "pimc:samples=8,inner=none,guide=none"),
        ("pimc:inner=none,guide=none,margin=5", "pimc:samples=8,inner=none,guide=none"),  # no guide to override
        ("pimc:guide=greedy,inner=must_fill+sensible+leftmost",
         "pimc:samples=8,inner=sensible+leftmost+must_fill,guide=greedy,margin=3"),
        ("pimc:samples=4,nodes=5000,inner=sensible",
         "pimc:samples=4,inner=sensible,guide=lookahead,margin=2,nodes=5000"),
        ("pimc:nodes=0", "pimc:samples=8,inner=sensible+leftmost+must_fill,guide=lookahead,margin=3"),
        ("pimc:margin=1,samples=1", "pimc:samples=1,inner=sensible+leftmost+must_fill,guide=lookahead,margin=1"),
        ("pimc:samples=2", "pimc:samples=2,inner=sensible+leftmost+must_fill,guide=lookahead,margin=1"),
        ("pimc:margin=3", "pimc:samples=8,inner=sensible+leftmost+must_fill,guide=lookahead,margin=3"),
    ],
)
def test_canonical_names(text, canonical):
    assert parse_pimc(text).name == canonical
    assert parse_pimc(canonical).name == canonical
    assert canonical_player(text) == canonical
    assert canonical_player(canonical) == canonical


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("pimc:samples=0", "samples=0 in player 'pimc:samples=0' is out of range; use 1..4096"),
        ("pimc:samples=x", "needs a whole number"),
        ("pimc:depth=2", "unknown parameter 'depth' in player 'pimc:depth=2'"),
        ("pimc:inner=smart", "inner='smart' in player 'pimc:inner=smart' is not 'none' or distinct options"),
        ("pimc:inner=sensible+sensible", "is not 'none' or distinct options"),
        ("pimc:samples=4,samples=5", "given twice"),
        ("pimc:", "ends with ':'"),
        ("pimc:samples", "needs a value"),
        ("pimc:guide=random", "guide='random' in player 'pimc:guide=random' is not one of none, nomove"),
        ("pimc:margin=0", "margin=0 in player 'pimc:margin=0' is out of range; use 1..4096"),
        ("pimc:margin=-1", "needs a whole number"),
    ],
)
def test_name_errors_say_what_is_wrong(text, fragment):
    with pytest.raises(UnknownPolicyError) as err:
        parse_pimc(text)
    assert fragment in str(err.value)
    with pytest.raises(ValueError):
        canonical_player(text)


def test_inner_rules_add_the_options_to_the_game():
    spec = parse_pimc("pimc:inner=sensible+must_fill")
    assert spec.inner_rules(rules_by_name("strict+optional")).name == "strict+optional+sensible+must_fill"
    assert parse_pimc("pimc:inner=none").inner_rules(rules_by_name("easy")).name == "easy"


# ---------------------------------------------------------------------------------------------
# sampled orders


def _reference_orders(unseen, samples, seed, index, decision):
    """Plain-Python twin of the sampler (module docstring of pimc.py)."""
    out = []
    for s in range(samples):
        row = sorted(unseen)
        words: list[int] = []
        block = 0
        for i in range(len(row) - 1, 0, -1):
            span = i + 1
            threshold = (2**32 - span) % span
            while True:
                if not words:
                    c0 = (decision << 20) | (s << 8) | block
                    words = [int(w) for w in philox4x32(c0, STREAM_SAMPLE, index & 0xFFFFFFFF, index >> 32,
                                                         seed & 0xFFFFFFFF, seed >> 32)]
                    block += 1
                w = words.pop(0)
                m = w * span
                if (m & 0xFFFFFFFF) >= threshold:
                    j = m >> 32
                    break
            row[i], row[j] = row[j], row[i]
        out.append(row)
    return out


@pytest.mark.parametrize("n_unseen", [0, 1, 4, 20, 48])
@pytest.mark.parametrize("seed, index, decision", [(0, 0, 0), (SEED, 7, 3), (2**64 - 1, 2**63 - 1, 4095)])
def test_sampled_orders_match_the_reference(n_unseen, seed, index, decision):
    rng = np.random.default_rng(n_unseen)
    unseen = rng.choice(52, n_unseen, replace=False).tolist()
    got = sample_orders(unseen, 5, seed=seed, index=index, decision=decision)
    assert got.shape == (5, n_unseen)
    assert got.tolist() == _reference_orders(unseen, 5, seed, index, decision)
    # the order the cards are given in does not matter: only the set does
    assert np.array_equal(sample_orders(unseen[::-1], 5, seed=seed, index=index, decision=decision), got)


def test_sampled_orders_differ_by_key_and_are_uniform():
    unseen = list(range(4, 16))
    base = sample_orders(unseen, 3, seed=1, index=2, decision=3)
    for kw in ({"seed": 2, "index": 2, "decision": 3}, {"seed": 1, "index": 3, "decision": 3},
               {"seed": 1, "index": 2, "decision": 4}):
        assert not np.array_equal(sample_orders(unseen, 3, **kw), base)
    assert len({tuple(r) for r in base.tolist()}) == 3
    # the first card of 4,000 orders of 4 cards: each card about 1,000 times
    firsts = sample_orders([0, 1, 2, 3], 4000, seed=5, index=0, decision=0)[:, 0]
    counts = np.bincount(firsts, minlength=4)
    assert counts.sum() == 4000 and (np.abs(counts - 1000) < 4 * math.sqrt(750)).all()


def test_sample_count_is_checked():
    with pytest.raises(ValueError, match="samples=0 is out of range"):
        sample_orders([1, 2], 0, seed=0, index=0, decision=0)


# ---------------------------------------------------------------------------------------------
# candidates and the batch position solve


def test_candidates_leave_out_lone_moves_and_other_empty_piles():
    state = parse_position("KS 3S | 7H | - | -", "2H 3H 4H 5H")
    rules = rules_by_name("standard")
    legal = [str(a) for a in legal_actions(state, rules)]
    assert legal == ["d", "0>2", "0>3", "1>2", "1>3"]
    assert [str(a) for a in candidates(state, rules)] == ["d", "0>2"]
    # with the stock empty, stopping (None) comes first
    empty = parse_position("KS 3S | 7H | - | -", "")
    assert candidates(empty, rules) == [None, Action.from_text("0>2")]
    # must_fill forbids the deal while a move exists; optional discards add xN
    assert [str(a) for a in candidates(state, rules_by_name("standard+must_fill"))] == ["0>2"]
    opt = parse_position("KS 3S | 7S | - | 9C 2C", "2H 3H 4H 5H")
    assert [str(a) for a in candidates(opt, rules_by_name("standard+optional"))] == ["d", "0>2", "3>2", "x0"]


def _random_positions(rules, count, seed):
    """Positions met in random play (stock not empty), with their rules."""
    rng = np.random.default_rng(seed)
    decks = deal_batch(seed, 0, count)
    out = []
    for deck in decks:
        state = new_game(deck, rules)
        for _ in range(int(rng.integers(0, 40))):
            legal = legal_actions(state, rules)
            if not legal or len(state.stock) <= 4:
                break
            state = apply(state, legal[int(rng.integers(len(legal)))], rules)
        out.append(state)
    return out


@pytest.mark.parametrize("variant, count", [
    ("standard+sensible+leftmost", 20), ("strict", 20), ("reverse+sensible+leftmost+must_fill", 20),
    ("easy+sensible+leftmost+must_fill", 20), ("strict+optional+sensible+must_fill", 4),  # optional: long solves
])
def test_batch_position_solve_equals_solve_position(variant, count):
    rules = rules_by_name(variant)
    states = _random_positions(rules, count, 11)
    piles, stocks, scores, deal_first, expected = [], [], [], [], []
    for st in states:
        # the position itself, and the position before a deal (solved after dealing)
        piles += [st.piles, st.piles]
        stocks += [list(st.stock), list(st.stock)]
        scores += [st.score, st.score]
        deal_first += [False, True]
        expected += [solve_position(st, rules).max_score, solve_position(apply(st, DEAL, rules.without_restrictions()),
                                                                          rules).max_score]
    # one call per stock length (solve_positions takes stocks of one length)
    got = np.zeros(len(piles), int)
    lengths = np.array([len(s) for s in stocks])
    for n in set(lengths.tolist()):
        rows = np.flatnonzero(lengths == n)
        got[rows] = solve_positions([piles[r] for r in rows], np.array([stocks[r] for r in rows], np.int8).reshape(
            len(rows), n), [scores[r] for r in rows], rules, deal_first=[deal_first[r] for r in rows])
    assert got.tolist() == expected


# ---------------------------------------------------------------------------------------------
# play


def _counts_from_line(deck, line, rules):
    """(score, moves, decision points) of a line, recounted on game.py (policies.py's counting)."""
    states = replay_states(deck, line, rules)
    actions = line.split()
    decisions = 0
    for st in states[:-1]:
        if len(legal_actions(st, rules)) + (0 if st.stock else 1) > 1:
            decisions += 1
    last = states[-1]
    if not last.stock and legal_actions(last, rules):
        decisions += 1  # the final point: the player chose to stop
    return last.score, sum(1 for a in actions if ">" in a), decisions


@pytest.mark.parametrize("variant, count, player", [
    ("standard", 30, FAST), ("strict", 30, FAST), ("reverse", 15, FAST),
    # optional discards make the solves long: a node limit keeps them short (a lower bound counts)
    ("strict+optional", 6, FAST + ",nodes=2000"), ("standard+optional", 4, FAST + ",nodes=2000"),
])
def test_lines_replay_to_the_reported_score_and_counts(variant, count, player):
    rules = rules_by_name(variant)
    decks = deal_batch(SEED, 100, count)
    res = pimc_batch(decks, rules, player, seed=SEED, indices=np.arange(100, 100 + count), want_lines=True)
    assert res.score.dtype == np.int8 and res.moves.dtype == np.int16 and res.decisions.dtype == np.int16
    assert np.array_equal(res.won, res.score == 48)
    for n, deck in enumerate(decks):
        assert _counts_from_line(deck, res.lines[n], rules) == (res.score[n], res.moves[n], res.decisions[n])
    if rules.optional_discards:
        assert any(" x" in ln or ln.startswith("x") for ln in res.lines)


def test_deterministic_and_independent_of_the_batch():
    decks = deal_batch(SEED, 0, 12)
    idx = np.arange(500, 512)
    a = pimc_batch(decks, "standard", FAST, seed=SEED, indices=idx, want_lines=True)
    b = pimc_batch(decks, "standard", FAST, seed=SEED, indices=idx, want_lines=True)
    assert a.lines == b.lines and np.array_equal(a.score, b.score)
    for n in (0, 5, 11):
        one = play_pimc(decks[n], "standard", FAST, seed=SEED, index=int(idx[n]))
        assert (one.score, one.moves, one.decisions, one.line) == (a.score[n], a.moves[n], a.decisions[n], a.lines[n])
    # another seed samples other orders, and some game goes otherwise
    c = pimc_batch(decks, "standard", FAST, seed=SEED + 1, indices=idx, want_lines=True)
    assert c.lines != a.lines


def test_the_registry_plays_pimc():
    decks = deal_batch(SEED, 0, 3)
    res = play(decks, "standard", canonical_player("pimc:samples=2"), seed=SEED, indices=np.arange(3),
               want_lines=True)
    direct = pimc_batch(decks, "standard", "pimc:samples=2", seed=SEED, indices=np.arange(3), want_lines=True)
    assert res.score.tolist() == direct.score.tolist() and res.line == direct.lines
    assert res.nodes is None and res.status is None


@pytest.mark.parametrize("variant, base", [("standard", FAST), ("standard", PURE), ("strict+optional", FAST)])
def test_never_reads_the_real_stock_order(variant, base):
    """Permuting the cards still undealt after action t changes none of actions 1..t+1."""
    rules = rules_by_name(variant)
    player = base + (",nodes=2000" if rules.optional_discards else "")
    rng = np.random.default_rng(3)
    decks = deal_batch(SEED, 40, 8 if not rules.optional_discards else 3)
    changed_later = 0
    for n, deck in enumerate(decks):
        index = 40 + n
        line = play_pimc(deck, rules, player, seed=SEED, index=index).line.split()
        states = replay_states(deck, " ".join(line), rules)
        for t in sorted(set(rng.integers(0, len(line), 3).tolist())):
            undealt = len(states[t].stock)
            if undealt < 8:
                continue
            other = deck.copy()
            other[52 - undealt:] = rng.permutation(deck[52 - undealt:])
            line2 = play_pimc(other, rules, player, seed=SEED, index=index).line.split()
            assert line2[: t + 1] == line[: t + 1], (n, t)
            changed_later += line2 != line
    assert changed_later > 0  # the permutations did change the games later: the test can see a difference


def _reference_choose(state, rules, player, *, seed, index, decision):
    """pimc's choice written again from its docstring, with nothing of pimc.py but parse_pimc.

    Candidates from game.legal_actions; orders from the plain-Python sampler above; each candidate under
    each order solved one position at a time with solver.solve_position (itself twin-tested against a
    brute force); the choice rule of the docstring, step 4.
    """
    from engine_rs_free.game import State
    from engine_rs_free.policies import decide

    spec = parse_pimc(player)
    inner = rules.with_options(*spec.inner)
    legal = legal_actions(state, rules)
    cands = [None] if not state.stock else ([DEAL] if DEAL in legal else [])
    empties = [i for i, pile in enumerate(state.piles) if not pile]
    cands += [a for a in legal if a.kind == "m" and len(state.piles[a.src]) > 1 and a.dst == empties[0]]
    cands += [a for a in legal if a.kind == "x"]
    if len(cands) == 1:
        return cands[0]
    orders = _reference_orders(list(state.stock), spec.samples, seed, index, decision) if state.stock else [[]]
    wins, totals = [], []
    for a in cands:
        scores = []
        for order in orders:
            if a is None:
                scores.append(state.score)
                continue
            imagined = State(state.piles, tuple(order), state.discarded)
            after = apply(imagined, a, rules)
            scores.append(solve_position(after, inner, node_limit=spec.nodes or None).max_score)
        wins.append(sum(x >= 48 for x in scores))
        totals.append(sum(scores))
    pure = max(range(len(cands)), key=lambda c: (wins[c], totals[c], -c))
    if spec.guide:
        discards = [a for a in cands if a is not None and a.kind == "x"]
        honest = discards[0] if discards else decide(state, rules, spec.guide)
        if honest in cands:
            h = cands.index(honest)
            return cands[pure] if wins[pure] - wins[h] >= spec.override_margin else honest
    return cands[pure]


@pytest.mark.parametrize("variant, player, count, choices", [
    ("standard", "pimc:samples=4", 40, 10), ("standard", "pimc:samples=4,guide=none,inner=sensible", 30, 8),
    ("strict", "pimc:samples=3,margin=1", 160, 10), ("reverse+sensible", "pimc:samples=4,guide=greedy", 40, 5),
    ("standard+optional", "pimc:samples=2,nodes=1500", 10, 3),
])
def test_choose_equals_the_reference_written_from_the_docstring(variant, player, count, choices):
    rules = rules_by_name(variant)
    spec = parse_pimc(player)
    seen = 0
    for k, state in enumerate(_random_positions(rules, count, 29)):
        got = choose(state, rules, spec, seed=SEED, index=k, decision=k % 7)
        want = _reference_choose(state, rules, player, seed=SEED, index=k, decision=k % 7)
        assert got == want, (variant, player, k, str(state))
        seen += len(candidates(state, rules)) > 1
    assert seen >= choices  # enough positions had a real choice to make


def test_play_equals_the_reference_loop():
    # whole games: the reference chooser in a plain loop over game.py, counted as policies.py counts
    rules = rules_by_name("standard")
    decks = deal_batch(SEED, 300, 4)
    for n, deck in enumerate(decks):
        index = 300 + n
        state, line, decisions = new_game(deck, rules), [], 0
        while True:
            legal = legal_actions(state, rules)
            if len(legal) + (0 if state.stock else 1) == 1 and not legal:
                break
            if len(legal) + (0 if state.stock else 1) == 1:
                action = legal[0]
            else:
                action = _reference_choose(state, rules, "pimc:samples=2", seed=SEED, index=index,
                                           decision=decisions)
                decisions += 1
            if action is None:
                break
            state = apply(state, action, rules)
            line.append(str(action))
        got = play_pimc(deck, rules, "pimc:samples=2", seed=SEED, index=index)
        assert (got.line, got.score, got.decisions) == (" ".join(line), state.score, decisions)


def test_choose_reads_the_stock_as_a_set():
    state = parse_position("KS 3S | 7H | - | 2C", "2H 3H 4H 5H 6D 9C QD JH")
    shuffled = parse_position("KS 3S | 7H | - | 2C", "JH 9C 2H QD 5H 6D 4H 3H")
    spec = parse_pimc("pimc:samples=16,inner=none,guide=none")
    rules = rules_by_name("standard")
    a = pimc.candidate_values(state, rules, spec, candidates(state, rules), seed=1, index=2, decision=3)
    b = pimc.candidate_values(shuffled, rules, spec, candidates(shuffled, rules), seed=1, index=2, decision=3)
    assert a == b
    assert choose(state, rules, spec, seed=1, index=2, decision=3) == choose(shuffled, rules, spec, seed=1, index=2,
                                                                              decision=3)


def test_stopping_is_weighed_against_moves_with_the_stock_empty():
    state = parse_position("QS KS | 7H | - | 2C", "")
    rules = rules_by_name("standard")
    spec = PimcSpec(samples=8, guide="")
    # moving KS into pile 2 uncovers QS, which KS then beats: one discard more than stopping
    assert candidates(state, rules) == [None, Action.from_text("0>2")]
    assert choose(state, rules, spec, seed=0, index=0, decision=0) == Action.from_text("0>2")
    # nothing to gain: stop (stopping comes first on a tie)
    calm = parse_position("2S 3D | 7H | - | 2C", "")
    assert choose(calm, rules, spec, seed=0, index=0, decision=0) is None


@pytest.mark.parametrize("variant, count", [("standard", 40), ("strict", 60), ("reverse", 20)])
def test_never_beats_the_clairvoyant_solver(variant, count):
    decks = deal_batch(SEED, 1000, count)
    idx = np.arange(1000, 1000 + count)
    solved = solve_batch(decks, variant, want_lines=False)
    assert all(s == "solved" for s in solved.status)
    for player, rows in ((FAST, count), (PURE, count), ("pimc:samples=4,inner=sensible,guide=none", 10)):
        res = pimc_batch(decks[:rows], variant, player, seed=SEED, indices=idx[:rows])
        assert (res.score <= solved.max_score[:rows]).all(), np.flatnonzero(res.score > solved.max_score[:rows])


def _policy_scores(decks, variant, idx):
    return {p: play_batch(decks, variant, p, seed=SEED, indices=idx).score.astype(int)
            for p in ("nomove", "random", "greedy", "aces", "human", "lookahead")}


# pimc surely beats nomove, random, aces and human in mean score (by about a point); against greedy and
# lookahead see the slow test at the end of this section and docs/pimc.md (margin).
BEATEN = ("nomove", "random", "aces", "human")


def test_beats_the_simpler_policies_on_the_same_deals():
    decks = deal_batch(SEED, 2000, 120)
    idx = np.arange(2000, 2120)
    pimc = pimc_batch(decks, "standard", FAST, seed=SEED, indices=idx).score.astype(int)
    scores = _policy_scores(decks, "standard", idx)
    for name in BEATEN:
        assert pimc.mean() > scores[name].mean(), name


@pytest.mark.slow
@pytest.mark.parametrize("variant, player, count", [("standard", "pimc:samples=8", 400),
                                                    ("strict", "pimc:samples=8", 400)])
def test_beats_the_simpler_policies_and_stays_below_the_solver_slow(variant, player, count):
    decks = deal_batch(SEED, 10_000, count)
    idx = np.arange(10_000, 10_000 + count)
    res = pimc_batch(decks, variant, player, seed=SEED, indices=idx, want_lines=True)
    pimc = res.score.astype(int)
    solved = solve_batch(decks, variant, want_lines=False)
    assert all(s == "solved" for s in solved.status)
    assert (pimc <= solved.max_score).all()
    scores = _policy_scores(decks, variant, idx)
    # strict: only Aces move, and the aces policy's mean score was 0.06 above pimc's on these 400 deals
    for name in BEATEN if variant == "standard" else ("nomove", "random"):
        assert pimc.mean() > scores[name].mean(), name
    for n in range(0, count, 37):
        assert _counts_from_line(decks[n], res.lines[n], variant)[0] == pimc[n]


def _paired_interval(a, b) -> tuple[float, float]:
    """95 % normal interval of the mean of a - b over paired rows."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    half = 1.96 * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean() - half, d.mean() + half


@pytest.mark.slow
def test_wins_more_than_greedy_and_lookahead_and_ties_lookahead_in_mean_score_slow():
    """The default pimc (samples=8) on 6,000 standard deals no margin was tuned on (20000..25999).

    It wins more often than greedy and lookahead (paired 95 % interval of the
    win-rate gap above 0), scores more than greedy, and scores no less than
    lookahead by more than 0.03 point. It does *not* beat lookahead in mean
    score: measured +0.001 ± 0.012 on 8,000 deals (docs/pimc.md, margin).
    """
    n = 6000
    decks = deal_batch(SEED, 20_000, n)
    idx = np.arange(20_000, 20_000 + n)
    pimc = pimc_batch(decks, "standard", "pimc:samples=8", seed=SEED, indices=idx).score.astype(int)
    for policy in ("greedy", "lookahead"):
        other = play_batch(decks, "standard", policy, seed=SEED, indices=idx).score.astype(int)
        lo, hi = _paired_interval(pimc == 48, other == 48)
        assert lo > 0, (policy, "wins", lo, hi)
        lo, hi = _paired_interval(pimc, other)
        assert lo > (0 if policy == "greedy" else -0.03), (policy, "mean score", lo, hi)
