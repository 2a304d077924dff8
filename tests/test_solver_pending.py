"""The pending-discards search (solver/pending.py) against its twins.

- Values: on full deals the pending search is held deck for deck to the plain optional search
  (optional.py), a different search over a different state (a kept card is a real card there, and
  every keep is a branch), itself held to the generic search and the brute force
  (test_solver_optional, whose full-deal check also runs the pending search, each rule alone and
  none, against the generic search).
- Lines: the search's line is in its own codes; ``_pd_game_line`` turns it into a line of the game
  by the reading docs/solver.md proves. ``game.replay_states`` replays that line with the game's
  own rules (every discard and move checked legal) and must reach the search's score.
- The table: the three-word entries find every key again and never answer for a key of the
  two-word layout or another epoch; the covering probe (``RULE_COVER``) answers exactly for the
  keys of the same physical position whose pending cards are a subset of a kept entry's.
- Covered positions: the search that skips them has the values of the one that does not, on the
  same deals, and searches fewer positions.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine_rs_free import game
from engine_rs_free.deals import deal_batch
from engine_rs_free.rules import rules_by_name
from engine_rs_free.solver import core
from engine_rs_free.solver.common import Table
from engine_rs_free.solver.optional import ALL_RULES, RULE_COVER, RULE_LOCK, RULE_PENDING, rule_flags
from engine_rs_free.solver.table import BUCKET, _tt3_covered_or_add, _tt3_seen_or_add, _tt_seen_or_add

VARIANTS = ["standard+optional", "strict+optional", "reverse+optional"]


def _run(decks, variant, flags, node_limit=None, lines=False):
    rules = rules_by_name(variant)
    score, nodes, status, _m, _d, out = core.run(core.deck_inputs(decks), True, rules, node_limit, lines,
                                                 search="auto", opt_flags=flags)
    return score.copy(), nodes.copy(), status.copy(), out


def _plain_and_pending(variant, decks, limit):
    """The two searches' values on ``decks`` (each stopped at ``limit`` positions a deal, None for
    none): equal where both finished; where one gave up, its best score is a lower bound that the
    other's value must not be below. Returns how many deals both finished."""
    rules_only = rule_flags(rules_by_name(variant)) & ALL_RULES
    plain, _pn, plain_status, _ = _run(decks, variant, rules_only, limit)
    finished = []
    # the pending search with and without the lock bound's pruning and the covered positions' skip
    for lock in (0, RULE_LOCK, RULE_COVER, RULE_LOCK | RULE_COVER):
        pend, _n, pend_status, _ = _run(decks, variant, rules_only | RULE_PENDING | lock, limit)
        both = (plain_status == 0) & (pend_status == 0)
        assert np.array_equal(pend[both], plain[both]), (variant, lock)
        only_plain = (plain_status == 0) & (pend_status != 0)
        only_pend = (pend_status == 0) & (plain_status != 0)
        assert (pend[only_plain] <= plain[only_plain]).all() and (plain[only_pend] <= pend[only_pend]).all()
        finished.append(int(both.sum()))
    return min(finished)


def test_pending_equals_plain_optional_on_strict_deals():
    decks = deal_batch(41, 0, 150)
    assert _plain_and_pending("strict+optional", decks, None) == 150


@pytest.mark.parametrize("variant", ["standard+optional", "reverse+optional"])
def test_pending_equals_plain_optional_on_standard_and_reverse_deals(variant):
    decks = deal_batch(42, 0, 24)
    assert _plain_and_pending(variant, decks, 300_000) >= 8


@pytest.mark.slow
def test_pending_equals_plain_optional_on_strict_deals_full_count():
    # (a few deals in a thousand take the plain search 10^8 positions and more: a limit keeps the
    # test to minutes, and the deals it stops are compared as lower bounds)
    # (1,714 deals finish in both: the pending search finishes 1,997, the plain one 1,714)
    decks = deal_batch(43, 0, 2000)
    assert _plain_and_pending("strict+optional", decks, 3_000_000) >= 1700


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["standard+optional", "reverse+optional"])
def test_pending_equals_plain_optional_on_standard_and_reverse_deals_full_count(variant):
    decks = deal_batch(44, 0, 150)
    assert _plain_and_pending(variant, decks, 3_000_000) >= 60


@pytest.mark.parametrize("lock", [0, RULE_LOCK, RULE_LOCK | RULE_COVER])
@pytest.mark.parametrize("variant", VARIANTS)
def test_pending_lines_are_legal_game_lines_to_the_score(variant, lock):
    decks = deal_batch(2026, 0, 24)
    flags = rule_flags(rules_by_name(variant)) & ALL_RULES | RULE_PENDING | lock
    score, _n, _status, lines = _run(decks, variant, flags, 200_000, lines=True)  # (a line of a search stopped early replays too)
    kept = 0
    for n, deck in enumerate(decks):
        states = game.replay_states(deck, lines[n], variant)  # raises on an illegal action
        assert states[-1].score == score[n], (variant, n, lines[n])
        # a discardable card left on the table across a deal: a keep the search chose
        kept += any(_discardable(s, variant) for s, a in zip(states, lines[n].split()) if a == "d")
    assert kept > 0  # the lines do keep cards (the reading of episodes that turn real is exercised)


def _discardable(state, variant):
    return any(a.kind == "x" for a in game.legal_actions(state, variant))


def test_three_word_table_finds_every_key_and_only_its_own():
    rng = np.random.default_rng(7)
    buckets = 1 << 10
    table = Table(np.zeros(2 * BUCKET * buckets, np.uint64), np.uint64(buckets - 1))
    # keys that differ only in the pending word, as the search's do (a pending card is a bit of k1
    # too): a hash that folds them together would evict them
    base = rng.integers(0, 2**52, 200, dtype=np.uint64) & ~np.uint64((1 << 3) | (1 << 17))
    keys = [(np.uint64(a | p), np.uint32(5), np.uint64(p)) for a in base for p in (0, 1 << 3, 1 << 17, (1 << 3) | (1 << 17))]
    assert sum(not _tt3_seen_or_add(table, a, b, c, np.uint32(9), 4) for a, b, c in keys) == len(keys)
    # 800 keys in 2,048 entries: most are still there (a full bucket gives one up). Had the four
    # keys of each position shared a bucket of two entries, at most half would be.
    found = sum(_tt3_seen_or_add(table, a, b, c, np.uint32(9), 4) for a, b, c in keys[:400])
    assert found >= 340
    # another epoch (another search) sees none of them
    assert not any(_tt3_seen_or_add(table, a, b, c, np.uint32(10), 4) for a, b, c in keys[:50])
    # the two-word layout at a later epoch, in the same table: no entry of the other layout answers
    assert not any(_tt_seen_or_add(table, a, b, np.uint32(11), 4) for a, b, _c in keys[:400])
    assert not any(_tt3_seen_or_add(table, a, b, c, np.uint32(12), 4) for a, b, c in keys[:400])


@pytest.mark.parametrize("variant", VARIANTS)
def test_skipping_covered_positions_keeps_every_value_and_searches_fewer_positions(variant):
    # the same deals with and without RULE_COVER, every other rule on: the same values deal for deal
    # (test_solver_optional holds both to the generic search with no rule), and fewer positions in all
    decks = deal_batch(2026, 0, 60 if variant.startswith("strict") else 12)
    flags = rule_flags(rules_by_name(variant))
    assert flags & RULE_COVER
    with_cover, n_with, st_with, _ = _run(decks, variant, flags, 3_000_000)
    without, n_without, st_without, _ = _run(decks, variant, flags & ~RULE_COVER, 3_000_000)
    both = (st_with == 0) & (st_without == 0)
    assert both.sum() >= len(decks) - 2
    assert np.array_equal(with_cover[both], without[both])
    assert n_with[both].sum() < 0.9 * n_without[both].sum(), (int(n_with[both].sum()), int(n_without[both].sum()))


def test_covering_probe_answers_for_subsets_of_the_pending_cards_only():
    buckets = 1 << 6
    table = Table(np.zeros(2 * BUCKET * buckets, np.uint64), np.uint64(buckets - 1))
    e = np.uint32(3)
    a, b = np.uint64((1 << 40) | (1 << 7) | (1 << 9) | (1 << 20)), np.uint32(77)
    p79 = np.uint64((1 << 7) | (1 << 9))
    assert not _tt3_covered_or_add(table, a, b, p79, e, 4)
    # the same cards in the same places with fewer (or the same) pending cards: covered
    for sub in (0, 1 << 7, 1 << 9, (1 << 7) | (1 << 9)):
        assert _tt3_covered_or_add(table, a, b, np.uint64(sub), e, 4), sub
    # a pending card the entry lacks: not covered, and the key is added
    p720 = np.uint64((1 << 7) | (1 << 20))
    assert not _tt3_covered_or_add(table, a, b, p720, e, 4)
    assert _tt3_covered_or_add(table, a, b, np.uint64(1 << 20), e, 4)
    assert _tt3_covered_or_add(table, a, b, p79, e, 4)  # (both entries are in the bucket)
    # a superset replaces the entries it contains first: afterwards every subset of it is covered
    full = np.uint64((1 << 7) | (1 << 9) | (1 << 20))
    assert not _tt3_covered_or_add(table, a, b, full, e, 4)
    assert all(_tt3_covered_or_add(table, a, b, np.uint64(s), e, 4)
               for s in (0, 1 << 7, 1 << 9, 1 << 20, (1 << 7) | (1 << 20), (1 << 9) | (1 << 20), int(full)))
    # another physical position (a card elsewhere, or other foreign bottoms), another epoch, the
    # two-word layout: never covered by these entries
    assert not _tt3_covered_or_add(table, a ^ np.uint64(1 << 41), b, np.uint64(0), e, 4)
    assert not _tt3_covered_or_add(table, a, np.uint32(78), np.uint64(0), e, 4)
    assert not _tt3_covered_or_add(table, a, b, np.uint64(0), np.uint32(4), 4)
    assert not _tt_seen_or_add(table, a, b, np.uint32(5), 4)
