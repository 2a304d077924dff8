"""The strict bound: 48 minus the cards that can never be discarded (docs/solver.md)."""

from __future__ import annotations

import numba as nb
import numpy as np

from ..game import WIN_SCORE
from ..rules import FILL_ACE, TOP_STRENGTH
from .common import _get4, _set4

BOUND_FROM = 40  # the bound is worked out only once the best score found is this high (see _search)  # the card bits of a key's first word


@nb.njit(cache=True, _nrt=False)
def _upper_bound(piles, h, sp, smax, strength, fill, mask, top_mask):
    """An upper bound of the score of every position reachable from this one.

    48 minus the cards that can never be discarded. In ``strict`` only the top
    rank moves, so every other card stays on its pile until it is discarded,
    and a stock card lands on a known pile (``stock[i]`` on pile ``i % 4``).
    A card x that is not the top rank, of suit t on pile p, is *dead* when
    the top rank of t lies under x on p (it cannot leave before x does) and
    no higher card of t lies on another pile or in the stock bound for
    another pile (``smax[sp, p, t]``): then no higher card of t can ever be a
    top card on another pile while x is one, so x and every card under it stay
    for good. In the other variants any top card may move into an empty pile,
    so no card is provably dead this way and the bound is 48 (only the win
    stops the search early).

    Only piles with a buried top rank are examined (``mask``: the cards on
    the table; ``top_mask``: the cards of the top rank).
    """
    if fill != FILL_ACE:
        return WIN_SCORE
    buried = mask & top_mask
    for p in range(4):
        if h[p] > 0:
            buried &= ~(np.uint64(1) << np.uint64(piles[p, h[p] - 1]))
    if buried == 0:
        return WIN_SCORE
    # the cards of each pile as a bit mask; a card's id is suit * 13 + rank index, and
    # in strict its strength is its rank index, so within a suit a higher bit is stronger
    m0 = m1 = m2 = m3 = np.uint64(0)
    for p in range(4):
        m = np.uint64(0)
        for i in range(h[p]):
            m |= np.uint64(1) << np.uint64(piles[p, i])
        m0, m1, m2, m3 = _set4(m0, m1, m2, m3, p, m)
    d0 = d1 = d2 = d3 = np.int64(-1)  # per pile, the position of its highest dead card
    for t in range(4):
        ace = t * 13 + 12
        if not (buried >> np.uint64(ace)) & np.uint64(1):
            continue
        p = 0
        while not (_get4(m0, m1, m2, m3, p) >> np.uint64(ace)) & np.uint64(1):
            p += 1
        in_p = _get4(m0, m1, m2, m3, p)
        suit_bits = np.uint64(0x1FFF) << np.uint64(13 * t)
        # the highest card of suit t on another pile or bound for one
        others = np.int64(smax[sp, p, t])
        elsewhere = mask & ~in_p & suit_bits
        for r in range(11, others, -1):
            if (elsewhere >> np.uint64(13 * t + r)) & np.uint64(1):
                others = r
                break
        # cards of suit t on pile p stronger than all of those (the Ace itself aside)
        cand = in_p & suit_bits & ~(np.uint64(1) << np.uint64(ace))
        cand &= ~((np.uint64(1) << np.uint64(13 * t + others + 1)) - np.uint64(1))
        if cand == 0:
            continue
        # the highest of them above the Ace is dead
        for j in range(h[p] - 1, -1, -1):
            c = piles[p, j]
            if c == ace:
                break
            if (cand >> np.uint64(c)) & np.uint64(1):
                if j > _get4(d0, d1, d2, d3, p):
                    d0, d1, d2, d3 = _set4(d0, d1, d2, d3, p, np.int64(j))
                break
    dead = 0
    for p in range(4):
        for i in range(_get4(d0, d1, d2, d3, p) + 1):
            if strength[piles[p, i]] != TOP_STRENGTH:
                dead += 1
    return WIN_SCORE - dead


@nb.njit(cache=True, _nrt=False)
def _stock_max(stock, nstock, code, smax):
    """Fill ``smax[:nstock+1, 4, 4]``: ``smax[sp, p, t]`` is the highest strength of suit t among
    the cards of ``stock[sp:]`` that a deal puts on another pile than p (-1 if none)."""
    for p in range(4):
        for t in range(4):
            smax[nstock, p, t] = -1
    for sp in range(nstock - 1, -1, -1):
        suit_c = code[stock[sp]] >> 4
        strength_c = code[stock[sp]] & 15
        for p in range(4):
            for t in range(4):
                smax[sp, p, t] = smax[sp + 1, p, t]
            if p != sp % 4 and strength_c > smax[sp, p, suit_c]:
                smax[sp, p, suit_c] = strength_c
