"""The transposition table: a fixed-size visited set of exact position keys (docs/solver.md).

``tt`` is ``uint64[2 * entries]`` in buckets of ``BUCKET`` entries (one
64-byte cache line); an entry is the two key words and a tag (the search's
epoch and the stock position). Entries of another epoch are free slots, so the
table is never cleared between searches; a full bucket gives up its entry
deepest in the deal. A lost entry only costs time.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..rules import FILL_ACE, FILL_ANY, Rules

BUCKET = 4  # entries per bucket of the transposition table; an entry is 16 bytes
# The table is a visited set whose replacement keeps the shallow entries, so a
# small one loses little: 2**14 buckets (1 MiB, cache-resident) search 0.5% more
# positions than 2**18 on standard deals but each ~30% faster.
DEFAULT_TT_BITS = 14  # 2**14 buckets = 64 Ki entries = 1 MiB
STRICT_TT_BITS = 12  # 256 KiB: strict searches ~100 positions a deal (max ~3,300); 2-4% faster than 1 MiB
EASY_TT_BITS = 22  # 2**22 buckets = 16 Mi entries = 256 MiB: easy has far more positions
# 2**18 buckets = 16 MiB: standard and reverse with optional discards (the pending search, whose
# entries take two slots each) search 10^7-10^8 positions on the deals that cannot be won. Without
# the covered-position skip a small table forgot too much: deal 39 of seed 2026 took over 6 minutes
# with 1 MiB, 54 s with 4 MiB, 37 s with 16 MiB, 32 s with 64 MiB. With it (a covering entry answers
# for many keys) 16 MiB searches 2-35 % more positions than 64 MiB in 10-17 % less time, its misses
# being cheaper (docs/solver.md, "Covered positions"). With optional.RULE_COVER_REAL the table is two
# halves of 8 MiB, one a probe ("Covered positions with cards taken off"): 16 MiB still searched fastest
# (heavy standard deals: 4.1-4.4 s with 16 MiB, 4.4 s with 32, 4.5 s with 64)
PENDING_TT_BITS = 18


@nb.njit(cache=True, inline="always", _nrt=False)
def _mix(k1, k2):
    """splitmix64 finaliser of the two key words: the bucket index source."""
    z = k1 ^ (np.uint64(k2) * np.uint64(0x9E3779B97F4A7C15))
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True, inline="always", _nrt=False)
def _tt_seen_or_add(table, k1, k2, epoch, sp):
    """True when the exact key is in the table (this deck); else add it and return False.

    ``table.slots`` is ``uint64[2 * entries]``: entry i is ``slots[2i] = k1`` and
    ``slots[2i+1] = k2 | tag << 32`` with ``tag = epoch << 8 | sp``. A bucket of
    four entries is one 64-byte cache line. Entries of another epoch (deck)
    are free slots, so the table is never cleared between decks.

    A key goes into the first free slot of its bucket, and a full bucket gives up an entry of
    this epoch for it, so this epoch's entries always fill a bucket from its first slot: the
    scan stops at the first free slot (the key is not further on) and puts the key there.
    """
    tt = table.slots
    mask_bits = table.mask
    b = np.int64(_mix(k1, k2) & mask_bits) * BUCKET
    victim = b
    victim_sp = -1
    for s in range(BUCKET):
        i = b + s
        w = tt[2 * i + 1]
        tag = np.uint32(w >> np.uint64(32))
        if (tag >> np.uint32(8)) != epoch:
            victim = i  # a free slot: the key is not further on (see the docstring)
            break
        if tt[2 * i] == k1 and np.uint32(w & np.uint64(0xFFFFFFFF)) == k2:
            return True
        esp = np.int64(tag & np.uint32(255))
        if esp >= victim_sp:
            victim = i
            victim_sp = esp
    tt[2 * victim] = k1
    tag = (np.uint64(epoch) << np.uint64(8)) | np.uint64(sp)
    tt[2 * victim + 1] = np.uint64(k2) | (tag << np.uint64(32))
    return False


def tt_bits_for(rules: Rules) -> int:
    """The transposition table size (log2 of buckets) used for a rule set."""
    if rules.fill == FILL_ANY:
        return EASY_TT_BITS
    if rules.fill == FILL_ACE:
        return STRICT_TT_BITS
    # the pending search (optional.rule_flags: optional discards, no solver restriction)
    return PENDING_TT_BITS if rules.optional_discards and not rules.restrictions else DEFAULT_TT_BITS


@nb.njit(cache=True, inline="always", _nrt=False)
def _tt3_put(tt, i, k1, k2, k3, epoch, sp):
    """Write a three-word entry at word ``i`` of the slots: (k1, k2 | tag << 32, k3, tag << 32)."""
    tag = ((np.uint64(epoch) << np.uint64(8)) | np.uint64(sp)) << np.uint64(32)
    tt[i] = k1
    tt[i + 1] = np.uint64(k2) | tag
    tt[i + 2] = k3
    tt[i + 3] = tag


_M52 = np.uint64((1 << 52) - 1)  # the card bits of a native key word (the stock position above them)


@nb.njit(cache=True, inline="always", _nrt=False)
def _tt3_covers(e1, e2, e3, k1, k2, k3):
    """Pending position e (native words ``e1``, ``e2``, pending word ``e3``) covers k: the same stock
    position, k's cards are e's less some of e's pending cards, in the same places, and k's pending
    cards are e's too (docs/solver.md, "Covered positions": k then has no line that e lacks)."""
    if (e1 >> np.uint64(52)) != (k1 >> np.uint64(52)):
        return False
    m1 = e1 & _M52
    m2 = k1 & _M52
    if (m2 & ~m1) != 0 or (k3 & ~e3) != 0 or (m1 & ~m2 & ~e3) != 0:
        return False
    for p in range(4):
        f1 = (e2 >> np.uint32(8 * p)) & np.uint32(255)
        f2 = (k2 >> np.uint32(8 * p)) & np.uint32(255)
        # (a foreign bottom: the same card, or e's is pending and k has none)
        if f1 != f2 and not (f2 == 255 and ((e3 >> np.uint64(52 + p)) & np.uint64(1)) != 0):
            return False
    return True


# how a three-word probe matches a key (``_tt3_probe``)
MATCH_EXACT = 0  # the same three words
MATCH_COVER = 1  # the same physical position, the key's pending cards a subset of the entry's
MATCH_REAL = 2  # an entry that covers the key (``_tt3_covers``), in the bucket of the key's real cards


@nb.njit(cache=True, inline="always", _nrt=False)
def _tt3_probe(table, k1, k2, k3, epoch, sp, match, buckets, first):
    """The probe of the three-word layout: True when the table holds the key, or a key that answers for it
    (``match``: MATCH_EXACT for ``_tt3_seen_or_add``, MATCH_COVER for ``_tt3_covered_or_add``,
    MATCH_REAL for ``_tt3_probe_real``); else the key is added and False returned. Buckets ``first`` to
    ``first + buckets`` (``buckets`` a mask): the whole table, or one half of it."""
    tt = table.slots
    h2 = k2
    if match == MATCH_REAL:
        # the bucket of the real cards (the pending ones, and a pending foreign bottom, left out)
        h1 = k1 & ~(k3 & _M52)
        for p in range(4):
            if (k3 >> np.uint64(52 + p)) & np.uint64(1):
                h2 |= np.uint32(255) << np.uint32(8 * p)
    elif match == MATCH_COVER:
        # the bucket from the physical position alone: the pending variants of a position meet there
        h1 = k1
    else:
        # (k3 is spread first: a pending card is also a bit of k1, so k1 ^ k3 alone would fold the
        # positions that differ in which cards are pending onto one bucket)
        h1 = k1 ^ (k3 * np.uint64(0xC2B2AE3D27D4EB4F))
    base = (np.int64(_mix(h1, h2) & buckets) + first) * (2 * BUCKET)
    victim = base
    victim_sp = -1
    contained = -1  # an entry that the key answers for (MATCH_COVER, MATCH_REAL): replaced first
    for s in range(BUCKET // 2):
        i = base + 4 * s
        w = tt[i + 1]
        tag = np.uint32(w >> np.uint64(32))
        if (tag >> np.uint32(8)) != epoch:
            victim = i  # a free slot: the key is not further on (as in _tt_seen_or_add)
            break
        e2 = np.uint32(w & np.uint64(0xFFFFFFFF))
        if match == MATCH_REAL:
            if _tt3_covers(tt[i], e2, tt[i + 2], k1, k2, k3):
                return True
            if _tt3_covers(k1, k2, k3, tt[i], e2, tt[i + 2]):
                contained = i
        elif tt[i] == k1 and e2 == k2:
            old = tt[i + 2]
            if old == k3 or (match == MATCH_COVER and (k3 & ~old) == 0):
                return True
            if match == MATCH_COVER and (old & ~k3) == 0:
                contained = i
        esp = np.int64(tag & np.uint32(255))
        if esp >= victim_sp:
            victim = i
            victim_sp = esp
    if contained >= 0:
        victim = contained
    _tt3_put(tt, victim, k1, k2, k3, epoch, sp)
    return False


@nb.njit(cache=True, inline="always", _nrt=False)
def _tt3_seen_or_add(table, k1, k2, k3, epoch, sp):
    """``_tt_seen_or_add`` for a key of three words (the pending-discards search: ``k3`` is its
    pending cards), in the same table: entries of four words, two to a bucket.

    Entry i of bucket b is ``slots[8b + 4i .. 8b + 4i + 3]`` = (k1, k2 | tag << 32, k3, tag << 32).
    The tag is written twice so that both layouts read a tag of this epoch only from an entry of
    their own: words 1 and 5 are tags of ``_tt_seen_or_add``'s entries 0 and 2 and words 3 and 7
    those of its entries 1 and 3, so an entry of one layout is a free slot to the other (another
    epoch), and a search uses one layout (one epoch per search).
    """
    return _tt3_probe(table, k1, k2, k3, epoch, sp, MATCH_EXACT, table.mask, 0)


@nb.njit(cache=True, inline="always", _nrt=False)
def _tt3_covered_or_add(table, k1, k2, k3, epoch, sp):
    """True when the table holds the physical position (``k1``, ``k2``) with a superset of the pending
    cards ``k3`` (this epoch); else add the key and return False. The pending search with
    ``optional.RULE_COVER`` probes this instead of ``_tt3_seen_or_add`` (docs/solver.md, "Covered
    positions": a position whose pending cards are a subset of another's with the same cards in the
    same places has no line that the other lacks).

    The layout is ``_tt3_seen_or_add``'s, but the bucket comes from the physical position alone, so
    that the pending variants of a position meet in one bucket; a new key replaces an entry of its
    position whose pending cards it contains, before any other.
    """
    return _tt3_probe(table, k1, k2, k3, epoch, sp, MATCH_COVER, table.mask, 0)


@nb.njit(cache=True, inline="always", _nrt=False)
def _tt3_probe_real(table, k1, k2, k3, epoch, sp):
    """True when the second half of the table holds a position that covers the key (``_tt3_covers``);
    else add the key there and return False. The pending search with ``optional.RULE_COVER_REAL``
    probes it after ``_tt3_probe`` on the first half.

    A position covered by one with the same cards in the same places is found by ``_tt3_probe``, whose
    bucket comes from the physical cards. This one finds those that have taken off some of the other's
    pending cards: its bucket comes from the *real* cards (the cards less the pending ones, and the
    stock position), which a position shares with one whose pending cards it took off and turned none
    of real. A new key replaces an entry of this bucket that it covers, before any other.
    """
    half = table.mask >> np.uint64(1)
    return _tt3_probe(table, k1, k2, k3, epoch, sp, MATCH_REAL, half, np.int64(half) + 1)
