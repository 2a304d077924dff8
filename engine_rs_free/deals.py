"""Seeded deals: deck number ``index`` of seed ``seed``, the same on every machine.

The algorithm (version 1; changing it changes every published number, so the
golden vectors in ``tests/test_deals.py`` pin it):

1. Random words come from **Philox4x32-10** (Salmon et al., "Parallel random
   numbers: as easy as 1, 2, 3", SC 2011), a counter-based generator written
   out here in full and checked against the Random123 known-answer vectors.
   For deck ``index`` of seed ``seed``, block ``b`` (0, 1, 2, …) is::

       key     = (seed & 0xFFFFFFFF, seed >> 32)                 # seed in 0 .. 2**64-1
       counter = (b, STREAM_DEAL, index & 0xFFFFFFFF, index >> 32)  # index in 0 .. 2**63-1

   and yields four 32-bit words; the deck reads the words of blocks 0, 1, 2, …
   in order (word 0 of block 0 first).
2. The words drive a Fisher-Yates shuffle of the ordered deck
   ``[0, 1, …, 51]`` (card ids of ``cards.py``): for ``i = 51 down to 1``, draw
   ``j`` uniform in ``0..i`` and swap positions ``i`` and ``j``. ``j`` comes
   from Lemire's multiply-shift method with rejection ("Fast random integer
   generation in an interval", 2019), so it is exactly uniform: ``m = w * (i+1)``;
   if ``m mod 2**32 < (2**32 - (i+1)) mod (i+1)`` draw the next word and retry;
   else ``j = m >> 32``.

So a deck depends only on (seed, index): not on batch size, worker, machine,
or NumPy's version (no NumPy shuffle routine is used). Other streams of the
same generator (``STREAM_POLICY``) give policies their random words, keyed the
same way, so policy randomness never overlaps deal randomness.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .cards import N_CARDS
from .errors import InputRangeError

ALGORITHM_VERSION = 1
STREAM_DEAL = 0x0DEA1  # counter word 1 for deals
STREAM_POLICY = 0x9011C  # counter word 1 for policy randomness
STREAM_SAMPLE = 0x5A3B1  # counter word 1 for sampled stock orders (pimc)
MAX_INDEX = 2**63 - 1
MAX_SEED = 2**64 - 1

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint32(0x9E3779B9)
_W1 = np.uint32(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)


@nb.njit(cache=True, inline="always")
def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counter (c0..c3) and key (k0, k1), all uint32 -> 4 uint32."""
    c0 = np.uint32(c0)
    c1 = np.uint32(c1)
    c2 = np.uint32(c2)
    c3 = np.uint32(c3)
    k0 = np.uint32(k0)
    k1 = np.uint32(k1)
    for _ in range(10):
        p0 = _M0 * np.uint64(c0)
        p1 = _M1 * np.uint64(c2)
        hi0 = np.uint32(p0 >> np.uint64(32))
        lo0 = np.uint32(p0 & _MASK32)
        hi1 = np.uint32(p1 >> np.uint64(32))
        lo1 = np.uint32(p1 & _MASK32)
        c0 = hi1 ^ c1 ^ k0
        c1 = lo1
        c2 = hi0 ^ c3 ^ k1
        c3 = lo0
        k0 = np.uint32(k0 + _W0)
        k1 = np.uint32(k1 + _W1)
    return c0, c1, c2, c3


@nb.njit(cache=True, inline="always")
def mix64(z):
    """SplitMix64's finaliser: a bijection of the 64-bit words that spreads every bit (hash keys of
    tables and of keyed draws; solver/table.py keeps its own copy, compiled without NRT)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True)
def philox_shuffle(row, n, c0, stream, idx_lo, idx_hi, seed_lo, seed_hi, max_blocks):
    """Shuffle ``row[:n]`` in place: Fisher-Yates driven by exactly-uniform Lemire draws.

    The words come from Philox blocks ``(c0 + b, stream, idx_lo, idx_hi)`` keyed by
    ``(seed_lo, seed_hi)`` for b = 0, 1, … (word 0 of a block first), as the module
    docstring says. Returns False, leaving ``row`` partly shuffled, if more than
    ``max_blocks`` blocks would be needed (callers that pack other fields into
    ``c0`` bound it; the chance of needing even 20 blocks for 52 cards is nil).
    """
    block = 0
    w0, w1, w2, w3 = philox4x32(c0, stream, idx_lo, idx_hi, seed_lo, seed_hi)
    used = 0
    for i in range(n - 1, 0, -1):
        s = np.uint64(i + 1)
        threshold = np.uint64((4294967296 - (i + 1)) % (i + 1))
        while True:
            if used == 4:
                block += 1
                if block >= max_blocks:
                    return False
                w0, w1, w2, w3 = philox4x32(np.uint32(c0 + block), stream, idx_lo, idx_hi, seed_lo, seed_hi)
                used = 0
            if used == 0:
                w = w0
            elif used == 1:
                w = w1
            elif used == 2:
                w = w2
            else:
                w = w3
            used += 1
            m = np.uint64(w) * s
            if (m & _MASK32) >= threshold:
                j = np.int64(m >> np.uint64(32))
                break
        tmp = row[i]
        row[i] = row[j]
        row[j] = tmp
    return True


@nb.njit(cache=True)
def _shuffle_into(out, seed_lo, seed_hi, idx_lo, idx_hi):
    """Fill ``out`` (uint8[52]) with the deck of (seed, index), as the module docstring says."""
    for i in range(N_CARDS):
        out[i] = i
    philox_shuffle(out, N_CARDS, np.uint32(0), np.uint32(STREAM_DEAL), idx_lo, idx_hi, seed_lo, seed_hi, 1 << 30)


@nb.njit(cache=True)
def _deal_batch_kernel(out, seed_lo, seed_hi, start, count):
    for n in range(count):
        idx = np.uint64(start) + np.uint64(n)
        _shuffle_into(
            out[n],
            seed_lo,
            seed_hi,
            np.uint32(idx & _MASK32),
            np.uint32(idx >> np.uint64(32)),
        )


def _check_seed_index(seed: int, start: int, count: int = 1) -> None:
    if not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) <= MAX_SEED:
        raise InputRangeError(f"seed {seed!r} is out of range; use an integer in 0..2**64-1")
    if not isinstance(start, (int, np.integer)) or int(start) < 0:
        raise InputRangeError(f"deal index {start!r} is out of range; use an integer in 0..2**63-1")
    if count < 0:
        raise InputRangeError(f"deal count {count!r} is negative; use 0 or more")
    if int(start) + max(int(count), 1) - 1 > MAX_INDEX:
        raise InputRangeError(
            f"deal indices {start}..{int(start) + int(count) - 1} pass 2**63-1; use a smaller start or count"
        )


def deal_batch(seed: int, start: int, count: int) -> np.ndarray:
    """Decks ``start .. start+count-1`` of ``seed`` as ``uint8[count, 52]``.

    Row ``n`` equals ``deal(seed, start + n)`` whatever the batch size.
    """
    _check_seed_index(seed, start, count)
    out = np.empty((int(count), N_CARDS), dtype=np.uint8)
    seed = int(seed)
    _deal_batch_kernel(out, np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32), np.uint64(start), int(count))
    return out


def deal(seed: int, index: int) -> np.ndarray:
    """Deck number ``index`` of seed ``seed`` as ``uint8[52]`` (see the module docstring)."""
    return deal_batch(seed, index, 1)[0]


def deal_indices(seed: int, indices: np.ndarray) -> np.ndarray:
    """Decks for arbitrary deal indices of one seed, ``uint8[len(indices), 52]``."""
    indices = np.asarray(indices, dtype=np.int64)
    out = np.empty((len(indices), N_CARDS), dtype=np.uint8)
    for n, idx in enumerate(indices):
        out[n] = deal(seed, int(idx))
    return out
