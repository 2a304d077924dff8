"""The batch engine against its scalar twin (policies.play_scalar on game.py).

Every variant x policy: identical score, won, moves, decisions and line on
fixed-seed random deals, and every line replays through game.replay to the
same score. The default run uses 80 deals per pair (about 8,000 games in
all, 250 more per policy on standard); ``-m slow`` runs 10,000 deals for every preset x policy.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_rs_free.batch import BatchResult, play_batch
from engine_rs_free.deals import deal_batch
from engine_rs_free.game import replay
from engine_rs_free.policies import MAX_ACTIONS, play_scalar
from engine_rs_free.rules import PRESETS, relabel_reverse_to_standard

VARIANTS = (
    "standard",
    "strict",
    "easy",
    "reverse",
    "standard+optional",
    "easy+optional",
    "reverse+leftmost+optional",
    "standard+sensible+leftmost",
    "strict+must_fill",
    "standard+must_fill",
    "easy+sensible+must_fill",
)
POLICIES = ("nomove", "random", "greedy", "aces", "human", "human:sacrifice=0", "lookahead", "lookahead:depth=2")
DEFAULT_POLICIES = ("nomove", "random", "greedy", "aces", "human", "lookahead")
SEED = 20261130


def _scalar_rows(args):
    decks, indices, variant, policy, seed, max_actions = args
    rows = []
    for deck, index in zip(decks, indices):
        r = play_scalar(deck, variant, policy, seed=seed, index=int(index), max_actions=max_actions)
        rows.append((r.score, r.won, r.moves, r.decisions, r.line))
    return rows


def _batch_rows(res: BatchResult):
    return [
        (int(res.score[n]), bool(res.won[n]), int(res.moves[n]), int(res.decisions[n]), res.lines[n])
        for n in range(len(res))
    ]


def _assert_twins(decks, indices, variant, policy, seed, *, workers=1, replay_every=1, max_actions=MAX_ACTIONS):
    res = play_batch(decks, variant, policy, seed=seed, indices=indices, want_lines=True, max_actions=max_actions)
    if workers > 1:
        parts = np.array_split(np.arange(len(decks)), workers * 4)
        with ProcessPoolExecutor(workers) as pool:
            chunks = pool.map(_scalar_rows, [(decks[p], indices[p], variant, policy, seed, max_actions)
                                             for p in parts])
            expected = [row for chunk in chunks for row in chunk]
    else:
        expected = _scalar_rows((decks, indices, variant, policy, seed, max_actions))
    got = _batch_rows(res)
    for n, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"{variant} {policy} deal {int(indices[n])}:\n batch  {g}\n scalar {e}"
    for n in range(0, len(decks), replay_every):
        assert replay(decks[n], res.lines[n], variant).score == res.score[n]
    return res


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("policy", POLICIES)
def test_batch_equals_scalar(variant, policy):
    start = 1000 + 37 * VARIANTS.index(variant)
    count = 80
    decks = deal_batch(SEED, start, count)
    _assert_twins(decks, np.arange(start, start + count, dtype=np.int64), variant, policy, SEED)


@pytest.mark.parametrize("policy", DEFAULT_POLICIES)
def test_batch_equals_scalar_standard_more_deals(policy):
    decks = deal_batch(SEED + 1, 0, 250)
    _assert_twins(decks, np.arange(250, dtype=np.int64), "standard", policy, SEED + 1)


@pytest.mark.slow
@pytest.mark.parametrize("variant", PRESETS)
@pytest.mark.parametrize("policy", DEFAULT_POLICIES)
def test_batch_equals_scalar_10000_deals(variant, policy):
    decks = deal_batch(SEED + 2, 0, 10_000)
    _assert_twins(decks, np.arange(10_000, dtype=np.int64), variant, policy, SEED + 2,
                  workers=min(2, os.cpu_count() or 1), replay_every=7)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["standard+optional", "easy+sensible+must_fill", "standard+sensible+leftmost",
                                     "strict+must_fill"])
@pytest.mark.parametrize("policy", DEFAULT_POLICIES)
def test_batch_equals_scalar_options_2000_deals(variant, policy):
    decks = deal_batch(SEED + 3, 0, 2_000)
    _assert_twins(decks, np.arange(2_000, dtype=np.int64), variant, policy, SEED + 3,
                  workers=min(2, os.cpu_count() or 1), replay_every=5)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**64 - 1),
    start=st.integers(min_value=0, max_value=2**63 - 10),
    variant=st.sampled_from(VARIANTS),
    policy=st.sampled_from(POLICIES + ("human:sacrifice=48", "lookahead:depth=4")),
)
def test_batch_equals_scalar_property(seed, start, variant, policy):
    decks = deal_batch(seed, start, 4)
    _assert_twins(decks, np.arange(start, start + 4, dtype=np.int64), variant, policy, seed)


@pytest.mark.parametrize("policy", POLICIES)
def test_reverse_is_standard_on_the_relabelled_deck(policy):
    decks = deal_batch(SEED, 5000, 3000)
    twins = np.stack([relabel_reverse_to_standard(d) for d in decks])
    rev = play_batch(decks, "reverse", policy, seed=SEED, want_lines=True)
    std = play_batch(twins, "standard", policy, seed=SEED, want_lines=True)
    for field in ("score", "won", "moves", "decisions"):
        assert np.array_equal(getattr(rev, field), getattr(std, field)), field
    assert rev.lines == std.lines


@pytest.mark.parametrize("policy", POLICIES)
def test_rows_do_not_depend_on_the_batch(policy):
    decks = deal_batch(SEED, 0, 2000)
    indices = np.arange(2000, dtype=np.int64) * 3 + 11
    whole = play_batch(decks, "easy", policy, seed=SEED, indices=indices, want_lines=True)
    order = np.random.default_rng(1).permutation(2000)[:700]
    part = play_batch(decks[order], "easy", policy, seed=SEED, indices=indices[order], want_lines=True)
    for field in ("score", "won", "moves", "decisions"):
        assert np.array_equal(getattr(whole, field)[order], getattr(part, field)), field
    assert [whole.lines[i] for i in order] == part.lines


@pytest.mark.parametrize("variant", ["standard", "easy+optional", "strict+must_fill"])
@pytest.mark.parametrize("policy", ["random", "greedy", "aces", "human", "lookahead:depth=2"])
def test_batch_policies_never_read_the_stock_order(variant, policy):
    # Permute the undealt stock after action k: actions 1..k+1 (the decision at k included) stay.
    n = 400
    decks = deal_batch(SEED, 9000, n)
    base = play_batch(decks, variant, policy, seed=SEED, want_lines=True)
    rng = np.random.default_rng(3)
    other = decks.copy()
    cuts = []
    for i in range(n):
        actions = base.lines[i].split()
        k = int(rng.integers(0, len(actions) + 1))
        dealt = 4 + 4 * actions[:k].count("d")
        other[i, dealt:] = rng.permutation(other[i, dealt:])
        cuts.append(k)
    moved = play_batch(other, variant, policy, seed=SEED, want_lines=True)
    changed = 0
    for i, k in enumerate(cuts):
        a, b = base.lines[i].split(), moved.lines[i].split()
        assert b[: k + 1] == a[: k + 1], (i, k)
        changed += a != b
    assert changed > n // 4  # the permutations did change the games (the test can fail)


def test_result_layout_and_lines_flag():
    decks = deal_batch(SEED, 0, 50)
    res = play_batch(decks, "standard", "greedy", seed=SEED)
    assert res.lines is None
    assert (res.score.dtype, res.won.dtype, res.moves.dtype, res.decisions.dtype) == (
        np.int8, np.bool_, np.int16, np.int16)
    assert res.score.shape == res.won.shape == res.moves.shape == res.decisions.shape == (50,)
    assert ((0 <= res.score) & (res.score <= 48)).all()
    assert np.array_equal(res.won, res.score == 48)
    with_lines = play_batch(decks, "standard", "greedy", seed=SEED, want_lines=True)
    assert np.array_equal(with_lines.score, res.score) and len(with_lines.lines) == 50
    empty = play_batch(decks[:0], "standard", "greedy", seed=SEED, want_lines=True)
    assert len(empty) == 0 and empty.lines == []


def test_lines_are_chunked_without_changing_them(monkeypatch):
    import engine_rs_free.batch as batch

    decks = deal_batch(SEED, 0, 300)
    whole = play_batch(decks, "standard", "random", seed=SEED, want_lines=True)
    monkeypatch.setattr(batch, "LINE_CHUNK", 7)
    chunked = play_batch(decks, "standard", "random", seed=SEED, want_lines=True)
    assert whole.lines == chunked.lines and np.array_equal(whole.score, chunked.score)


@pytest.mark.parametrize("variant", ["standard", "standard+must_fill", "easy"])
def test_max_actions_cap_binds_identically(variant):
    # random moves lone cards about, but with a deal always allowed beside them it never gets near
    # MAX_ACTIONS; a small cap makes the cap bind in many games of both engines
    decks = deal_batch(SEED, 0, 60)
    res = _assert_twins(decks, np.arange(60, dtype=np.int64), variant, "random", SEED, max_actions=20)
    lengths = [len(ln.split()) for ln in res.lines]
    assert max(lengths) >= 20 and min(lengths) < 20  # bound in some games, not in all
    assert max(lengths) <= 20 + 48  # checked at decision points; discards may follow under optional


def test_max_actions_is_checked():
    with pytest.raises(ValueError, match="max_actions=0 is out of range"):
        play_batch(deal_batch(SEED, 0, 2), "standard", "random", seed=1, max_actions=0)


def test_bad_input_is_refused_with_a_reason():
    decks = deal_batch(SEED, 0, 3)
    with pytest.raises(ValueError, match="shape"):
        play_batch(decks[:, :50], "standard", "greedy", seed=1)
    with pytest.raises(ValueError, match="one deal index per deck"):
        play_batch(decks, "standard", "greedy", seed=1, indices=np.arange(2))
    with pytest.raises(ValueError, match="unknown policy"):
        play_batch(decks, "standard", "gredy", seed=1)
    with pytest.raises(ValueError, match="unknown variant"):
        play_batch(decks, "standrd", "greedy", seed=1)
    with pytest.raises(ValueError, match="seed"):
        play_batch(decks, "standard", "greedy", seed=-1)


GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "policies.txt")


def test_golden_games_in_both_engines():
    rows = [ln.split(" ", 7) for ln in open(GOLDEN) if ln.strip() and not ln.startswith("#")]
    assert len(rows) == 48
    for variant, policy, seed, deal, score, moves, decisions, line in rows:
        deck = deal_batch(int(seed), int(deal), 1)
        expected = (int(score), int(score) == 48, int(moves), int(decisions), line.strip())
        res = play_batch(deck, variant, policy, seed=int(seed), indices=np.array([int(deal)]), want_lines=True)
        assert _batch_rows(res)[0] == expected, (variant, policy, deal)
        assert _scalar_rows((deck, [int(deal)], variant, policy, int(seed), MAX_ACTIONS))[0] == expected, (variant, policy, deal)
