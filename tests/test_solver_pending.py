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
  same deals, and searches fewer positions; with ``RULE_COVER_REAL`` too. The covering relation of
  ``_tt3_probe_real`` (``_tt3_covers``, on native key words) is held to a restatement over piles
  written out as sequences of cards (hypothesis, and a fixed seed where both answers are counted), and
  its probe answers for covered keys only.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_rs_free import game
from engine_rs_free.deals import deal_batch
from engine_rs_free.rules import rules_by_name
from engine_rs_free.solver import core
from engine_rs_free.solver.common import Table
from engine_rs_free.solver.optional import ALL_RULES, RULE_COVER, RULE_COVER_REAL, RULE_LOCK, RULE_PENDING, rule_flags
from engine_rs_free.solver.table import (
    BUCKET,
    MATCH_COVER,
    _tt3_covered_or_add,
    _tt3_covers,
    _tt3_probe,
    _tt3_probe_real,
    _tt3_seen_or_add,
    _tt_seen_or_add,
)

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
    for lock in (0, RULE_LOCK, RULE_COVER, RULE_LOCK | RULE_COVER, RULE_COVER_REAL,
                 RULE_LOCK | RULE_COVER | RULE_COVER_REAL):
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


@pytest.mark.parametrize("lock", [0, RULE_LOCK, RULE_LOCK | RULE_COVER, RULE_LOCK | RULE_COVER | RULE_COVER_REAL])
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


@pytest.mark.parametrize("rule", [RULE_COVER, RULE_COVER_REAL])
@pytest.mark.parametrize("variant", VARIANTS)
def test_skipping_covered_positions_keeps_every_value_and_searches_fewer_positions(variant, rule):
    # the same deals with and without the skip (RULE_COVER: the same cards; RULE_COVER_REAL: some pending
    # cards taken off), every other rule on: the same values deal for deal (test_solver_optional holds
    # both to the generic search with no rule), and fewer positions in all
    decks = deal_batch(2026, 0, 60 if variant.startswith("strict") else 12)
    flags = rule_flags(rules_by_name(variant))
    assert flags & rule
    with_skip, n_with, st_with, _ = _run(decks, variant, flags, 3_000_000)
    without, n_without, st_without, _ = _run(decks, variant, flags & ~rule, 3_000_000)
    both = (st_with == 0) & (st_without == 0)
    assert both.sum() >= len(decks) - 2
    assert np.array_equal(with_skip[both], without[both])
    assert n_with[both].sum() < 0.9 * n_without[both].sum(), (int(n_with[both].sum()), int(n_without[both].sum()))


# A pending position written out: per pile, its cards bottom first, each a token: ("f", pile, card id) for
# the foreign bottom, ("o", native bit) for a card on its own pile; the pending tokens; the stock position.
def _written_out(k1, k2, k3):
    piles, pending = [], set()
    for p in range(4):
        pile = []
        f = (int(k2) >> (8 * p)) & 255
        if f != 255:
            pile.append(("f", p, f))
            if (int(k3) >> (52 + p)) & 1:
                pending.add(("f", p, f))
        for j in range(13):
            b = 13 * p + j
            if (int(k1) >> b) & 1:
                pile.append(("o", b))
                if (int(k3) >> b) & 1:
                    pending.add(("o", b))
        piles.append(pile)
    return piles, pending, int(k1) >> 52


def _covers_restated(e, k):
    """e covers k: the same stock position; every pile of k is e's with some of e's pending cards taken
    out, the others in the same order; and k's pending cards are pending in e."""
    e_piles, e_pending, e_sp = _written_out(*e)
    k_piles, k_pending, k_sp = _written_out(*k)
    if e_sp != k_sp or not k_pending <= e_pending:
        return False
    for ep, kp in zip(e_piles, k_piles):
        if [t for t in ep if t in kp] != kp or not all(t in e_pending for t in ep if t not in kp):
            return False
    return True


def _pair_with(rng):
    """A pending position e, and k: e with some pending cards taken off and some turned real (covered),
    then, half the time, one change that may break that (a real card taken off, a card added, a pending
    bit set, another foreign bottom or stock position)."""
    bits = rng.getrandbits(52)
    sp = rng.randrange(13)
    foreign = [rng.choice([255, 3, 17, 40]) for _ in range(4)]
    fbits = sum(1 << (52 + p) for p, f in enumerate(foreign) if f != 255)
    pend = rng.getrandbits(56) & (bits | fbits)
    e = (np.uint64(bits | (sp << 52)), np.uint32(sum(f << (8 * p) for p, f in enumerate(foreign))),
         np.uint64(pend))
    off = rng.getrandbits(56) & pend  # pending cards taken off
    real = rng.getrandbits(56) & pend & ~off if rng.random() < 0.3 else 0  # pending cards turned real
    kbits, kforeign = bits & ~off, list(foreign)
    for p in range(4):
        if (off >> (52 + p)) & 1:
            kforeign[p] = 255
    kpend = pend & ~off & ~real
    change = rng.randrange(10)
    b = rng.randrange(52)
    if change == 1:
        kbits &= ~(1 << b)  # a card taken off, pending or not
        kpend &= ~(1 << b)
    elif change == 2:
        kbits |= 1 << b  # a card added (or not, if there)
    elif change == 3:
        kpend |= (1 << b) & kbits  # a card made pending (or not, if pending or absent)
    elif change == 4:
        kforeign[b % 4] = rng.choice([255, 3, 17, 40, 41])
    elif change == 5:
        sp = (sp + 1) % 13
    kfbits = sum(1 << (52 + p) for p, f in enumerate(kforeign) if f != 255)
    kpend &= kbits | kfbits
    k = (np.uint64(kbits | (sp << 52)), np.uint32(sum(f << (8 * p) for p, f in enumerate(kforeign))),
         np.uint64(kpend))
    return e, k


@settings(max_examples=3000, deadline=None)
@given(st.randoms(use_true_random=False))
def test_the_covering_relation_equals_its_restatement(rng):
    e, k = _pair_with(rng)
    assert bool(_tt3_covers(*e, *k)) == _covers_restated(e, k)


def test_the_covering_relation_equals_its_restatement_on_random_pairs():
    # the same check on pairs of a fixed seed, where both answers are counted: both come often
    rng = random.Random(5)
    answers = []
    for _ in range(2000):
        e, k = _pair_with(rng)
        covered = _covers_restated(e, k)
        assert bool(_tt3_covers(*e, *k)) == covered, (e, k)
        answers.append(covered)
    assert 400 <= sum(answers) <= 1600, sum(answers)


def test_real_cards_probe_answers_for_covered_positions_only():
    buckets = 1 << 6
    table = Table(np.zeros(2 * BUCKET * buckets, np.uint64), np.uint64(buckets - 1))
    e = np.uint32(3)
    # cards 7, 9, 20 on pile 0, 30 on pile 2; 9 and 30 pending; a pending foreign bottom 17 on pile 3
    a = np.uint64((5 << 52) | (1 << 7) | (1 << 9) | (1 << 20) | (1 << 30))
    b = np.uint32(0x11FFFFFF)
    pend = np.uint64((1 << 9) | (1 << 30) | (1 << 55))
    assert not _tt3_probe_real(table, a, b, pend, e, 5)
    # taken off: 9, 30, the foreign bottom, any of them: covered, with the same real cards (a pending card
    # turned real is covered too, but has other real cards: that is the first probe's, the same cards)
    for off in (1 << 9, 1 << 30, (1 << 9) | (1 << 30), 1 << 55, (1 << 55) | (1 << 9)):
        kb = b | np.uint32(0xFF000000) if off & (1 << 55) else b
        k1 = np.uint64(int(a) & ~(off & ((1 << 52) - 1)))  # (bits 52.. of off: foreign bottoms, of k1: the stock)
        assert _tt3_probe_real(table, k1, kb, np.uint64(int(pend) & ~off), e, 5), off
    k1 = np.uint64(int(a) & ~(1 << 9) & ~(1 << 30))
    assert _tt3_probe_real(table, k1, np.uint32(0xFFFFFFFF), np.uint64(0), e, 5)
    # a real card taken off (20), a card the entry lacks (21), a pending card the entry has real (7),
    # another stock position or epoch: not covered
    assert not _tt3_probe_real(table, np.uint64(int(a) & ~(1 << 20)), b, pend, e, 5)
    assert not _tt3_probe_real(table, np.uint64(int(a) | (1 << 21)), b, pend, e, 5)
    assert not _tt3_probe_real(table, a, b, np.uint64(int(pend) | (1 << 7)), e, 5)
    assert not _tt3_probe_real(table, np.uint64(int(a) + (1 << 52)), b, pend, e, 5)
    assert not _tt3_probe_real(table, a, b, pend, np.uint32(4), 5)
    # it never reads the first half of the table, where the search's _tt3_probe puts its keys
    table2 = Table(np.zeros(2 * BUCKET * buckets, np.uint64), np.uint64(buckets - 1))
    assert not _tt3_probe(table2, a, b, pend, e, 5, MATCH_COVER, table2.mask >> np.uint64(1), 0)
    assert _tt3_probe(table2, a, b, pend, e, 5, MATCH_COVER, table2.mask >> np.uint64(1), 0)
    assert not _tt3_probe_real(table2, a, b, pend, e, 5)


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
