"""What the solver's modules share: sizes, statuses, small register helpers and card codes.

A card's *code* is ``suit * 16 + strength`` (one table read gives both, and
within a suit a higher code is a stronger card); an empty pile's top is -64.
"""

from __future__ import annotations

import numba as nb
import numpy as np

# Numba types of the solver's arrays, for explicit signatures (one compiled version each)
_PILES = nb.types.Array(nb.int8, 2, "C")
_I8 = nb.types.Array(nb.int8, 1, "C")
_I32 = nb.types.Array(nb.int32, 1, "C")

MAX_HEIGHT = 64  # cards a pile can hold: 52 at most
MAX_POSITION_ACTIONS = 512  # legal actions of one position: easy moves (<=48 cards x 6 placements) + 24 deals + 4 discards
MAX_DEPTH = 8192  # path length: <=~250 progressing actions, each followed by <=23 lone moves


STATUS_SOLVED = 0
STATUS_GAVE_UP = 1
STATUS_NAMES = ("solved", "gave_up")


_NO_FOREIGN = 255
MASK52 = np.uint64((1 << 52) - 1)


@nb.njit(cache=True, inline="always", _nrt=False)
def _set4(l0, l1, l2, l3, i, c):
    """A list of four cards held in registers: (l0, l1, l2, l3) with item i replaced by c."""
    return (c if i == 0 else l0, c if i == 1 else l1, c if i == 2 else l2, c if i == 3 else l3)


@nb.njit(cache=True, inline="always", _nrt=False)
def _get4(l0, l1, l2, l3, i):
    """Item i of a list of four cards held in registers."""
    return l0 if i == 0 else (l1 if i == 1 else (l2 if i == 2 else l3))


@nb.njit(cache=True, inline="always", _nrt=False)
def _sort4(l0, l1, l2, l3):
    """The four values in ascending order (a sorting network)."""
    if l0 > l1:
        l0, l1 = l1, l0
    if l2 > l3:
        l2, l3 = l3, l2
    if l0 > l2:
        l0, l2 = l2, l0
    if l1 > l3:
        l1, l3 = l3, l1
    if l1 > l2:
        l1, l2 = l2, l1
    return l0, l1, l2, l3


@nb.njit(cache=True, inline="always", _nrt=False)
def _beaten(a, b, c, d):
    """Top code a (-64: an empty pile) is beaten by one of b, c, d (same suit, stronger).

    Written out in full: it is the heart of the forced discards, and spelling it
    through a two-card helper measured 5% slower on strict.
    """
    sa = a >> 4
    return a >= 0 and (((b >> 4) == sa and b > a) or ((c >> 4) == sa and c > a) or ((d >> 4) == sa and d > a))


@nb.njit(cache=True, inline="always", _nrt=False)
def _popcount(x):
    """The number of set bits of a uint64."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@nb.njit(cache=True, inline="always", _nrt=False)
def _on_lone_run(keys1, keys2, lone, k, n1, n2):
    """Cycle guard: the key (n1, n2) is that of a frame on the current run of lone moves (frames k, k-1, ...
    back to the one the run started from), so a lone move must not step back onto it."""
    j = k
    while True:
        if keys1[j] == n1 and keys2[j] == n2:
            return True
        if j == 0 or not lone[j - 1]:
            return False
        j -= 1
