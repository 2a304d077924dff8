"""The transposition table's probe (``table._tt_seen_or_add``, ``_tt3_seen_or_add``) against a plain-Python twin.

The twin scans the whole bucket, as the policy is stated: a key of this epoch found answers True;
else the key goes into the first slot of another epoch (a free slot), or, in a bucket full of this
epoch's entries, replaces the one deepest in the deal (the largest stock position, the last of
equals). The compiled probe stops at the first free slot instead; the two must agree on every
answer and leave the same words in the table. A table of a few buckets makes full buckets,
replacements and stale entries of older epochs common. Only the bucket index (``_mix``) is shared.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine_rs_free.solver.common import Table
from engine_rs_free.solver.table import BUCKET, _mix, _tt3_seen_or_add, _tt_seen_or_add

BUCKETS = 8
M32 = (1 << 32) - 1


def _twin(slots: list[int], k1: int, k2: int, k3: int | None, epoch: int, sp: int) -> bool:
    """The probe written from its policy: ``slots`` (a list of 64-bit words) is changed in place.
    ``k3`` None: the two-word layout (4 entries a bucket); else entries of four words (2 a bucket)."""
    words, per = (2, BUCKET) if k3 is None else (4, BUCKET // 2)
    if k3 is None:
        b = int(_mix(np.uint64(k1), np.uint32(k2))) & (BUCKETS - 1)
    else:
        spread = (k1 ^ ((k3 * 0xC2B2AE3D27D4EB4F) & ((1 << 64) - 1))) & ((1 << 64) - 1)
        b = int(_mix(np.uint64(spread), np.uint32(k2))) & (BUCKETS - 1)
    entries = [b * BUCKET * 2 + words * s for s in range(per)]
    mine = [i for i in entries if (slots[i + 1] >> 40) == epoch]
    for i in mine:
        if slots[i] == k1 and slots[i + 1] & M32 == k2 and (k3 is None or slots[i + 2] == k3):
            return True
    free = [i for i in entries if (slots[i + 1] >> 40) != epoch]
    if free:
        victim = free[0]
    else:
        deepest = max((slots[i + 1] >> 32) & 255 for i in entries)
        victim = [i for i in entries if (slots[i + 1] >> 32) & 255 == deepest][-1]
    tag = (epoch << 8) | sp
    slots[victim] = k1
    slots[victim + 1] = k2 | (tag << 32)
    if k3 is not None:
        slots[victim + 2] = k3
        slots[victim + 3] = tag << 32
    return False


@pytest.mark.parametrize("layout", ["two words", "three words"])
def test_probe_equals_its_twin(layout):
    rng = np.random.default_rng(6)
    table = Table(np.zeros(2 * BUCKET * BUCKETS, np.uint64), np.uint64(BUCKETS - 1))
    slots = [0] * (2 * BUCKET * BUCKETS)
    pool = [(int(rng.integers(0, 1 << 60)), int(rng.integers(0, 1 << 32)), int(rng.integers(0, 1 << 52)))
            for _ in range(60)]
    hits = replaced = 0
    epoch = 1
    for step in range(6_000):
        if rng.random() < 0.01:
            epoch += 1  # a new search: every older entry becomes a free slot
        k1, k2, k3 = pool[int(rng.integers(0, len(pool)))]
        sp = int(rng.integers(0, 49))
        full = sum((slots[i] >> 40) == epoch for i in range(1, len(slots), 2))
        if layout == "two words":
            got = _tt_seen_or_add(table, np.uint64(k1), np.uint32(k2), np.uint32(epoch), sp)
            want = _twin(slots, k1, k2, None, epoch, sp)
        else:
            got = _tt3_seen_or_add(table, np.uint64(k1), np.uint32(k2), np.uint64(k3), np.uint32(epoch), sp)
            want = _twin(slots, k1, k2, k3, epoch, sp)
        assert bool(got) == want, (layout, step)
        assert [int(w) for w in table.slots] == slots, (layout, step)
        hits += want
        replaced += not want and sum((slots[i] >> 40) == epoch for i in range(1, len(slots), 2)) == full
    # the sequence reaches every branch: hits, inserts into free slots, replacements in full buckets
    assert hits > 500 and replaced > 200, (hits, replaced)
