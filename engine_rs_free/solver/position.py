"""A position as piles and heights (``piles: int8[4, MAX_HEIGHT]``, ``h: int32[4]``), and its steps.

The general form of a position, used by the generic search (any start
position, optional discards, ``easy``) and by the replay of a line: forced
discards with an undo stack, the legal actions in the search order or in
game.py's order, applying and undoing an action, and the exact table key.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..actions import KIND_DEAL, KIND_DISCARD, KIND_MOVE
from ..rules import FILL_ACE, FILL_ANY, TOP_STRENGTH
from .common import _I32, _NO_FOREIGN, _PILES, _RULES, _beaten, _get4, _set4, _sort4


@nb.njit(cache=True, inline="always", _nrt=False)
def _top_code(piles, hp, p, code):
    """The top card of pile p (height hp) as its code (``suit * 16 + strength``); -64 for an empty pile."""
    t = np.int64(code[piles[p, max(hp - 1, 0)]])
    return t if hp > 0 else np.int64(-64)


@nb.njit(cache=True, inline="always", _nrt=False)
def _discardable(piles, h, i, code):
    """The top card of pile i may be discarded (another pile's top beats it)."""
    t0 = _top_code(piles, h[0], 0, code)
    t1 = _top_code(piles, h[1], 1, code)
    t2 = _top_code(piles, h[2], 2, code)
    t3 = _top_code(piles, h[3], 3, code)
    if i == 0:
        return _beaten(t0, t1, t2, t3)
    if i == 1:
        return _beaten(t1, t0, t2, t3)
    if i == 2:
        return _beaten(t2, t0, t1, t3)
    return _beaten(t3, t0, t1, t2)


@nb.njit(cache=True, inline="always", _nrt=False)
def _resolve(piles, h, code, rec_pile, rec_card, rtop):
    """Make every forced discard; push (pile, card) of each onto the undo stack; return the new top.

    Each round discards every top card that is weaker than another top card of
    its suit, all at once: the strongest top of each suit stays, so this is one
    of the orders of single discards, and every order ends in the same
    position (RULES.md rule 3). (A version without data-dependent branches
    ran 2% faster on strict and 10% slower on standard+sensible.)
    """
    while True:
        t0 = _top_code(piles, h[0], 0, code)
        t1 = _top_code(piles, h[1], 1, code)
        t2 = _top_code(piles, h[2], 2, code)
        t3 = _top_code(piles, h[3], 3, code)
        d0 = _beaten(t0, t1, t2, t3)
        d1 = _beaten(t1, t0, t2, t3)
        d2 = _beaten(t2, t0, t1, t3)
        d3 = _beaten(t3, t0, t1, t2)
        if not (d0 or d1 or d2 or d3):
            return rtop
        for i in range(4):
            if (i == 0 and d0) or (i == 1 and d1) or (i == 2 and d2) or (i == 3 and d3):
                h[i] -= 1
                rec_pile[rtop] = i
                rec_card[rtop] = piles[i, h[i]]
                rtop += 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _only_deal(h, optional):
    """No pile is empty and discards are forced: no move or discard is legal, only a deal (if any)."""
    return h[0] > 0 and h[1] > 0 and h[2] > 0 and h[3] > 0 and not optional


@nb.njit(cache=True, inline="always", _nrt=False)
def _write_moves(piles, h, strength, fill, sensible, leftmost, out, n, which):
    """Append the legal moves to ``out[n:]`` in game.py's order; return the new count.

    which: 0 = every move, 1 = moves of a card that is not alone, 2 = lone moves only.
    """
    first_empty = -1
    for p in range(4):
        if h[p] == 0:
            first_empty = p
            break
    if first_empty < 0:
        return n
    for src in range(4):
        hs = h[src]
        if hs == 0:
            continue
        if sensible and hs == 1:
            continue
        if which == 1 and hs == 1:
            continue
        if which == 2 and hs != 1:
            continue
        maxd = hs if fill == FILL_ANY else 1
        for depth in range(maxd):
            card = piles[src, hs - 1 - depth]
            if fill == FILL_ACE and strength[card] != TOP_STRENGTH:
                continue
            for dst in range(4):
                if h[dst] != 0:
                    continue
                if leftmost and dst != first_empty:
                    continue
                out[n] = KIND_MOVE + 4 * src + 16 * dst + 64 * depth
                n += 1
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _beaten_buried_move(piles, h, mask):
    """The move of the first buried card a top beats into the first empty pile, or -1.

    A buried card that a top beats (a stronger top of its suit, on any pile) is discarded the
    moment it reaches an empty pile, which ``easy`` allows at any depth. ``mask``: the cards on
    the table, as bits. Card ids must rank within their suit (strength == id % 13, as in
    ``easy``: search_rules checks it), so the cards a top t beats are the bits from its suit's
    first id up to t, and the beaten buried cards are one AND away (the common case, none, is
    told without a look at the piles; a stable position has no two tops of one suit, so no top
    is among them). Piles and depths are then scanned in order (pile 0 first, the shallowest card
    first), so the move is a function of the position alone. -1 when no pile is empty or no
    buried card is beaten.
    """
    first_empty = -1
    beaten = np.uint64(0)
    for p in range(4):
        if h[p] == 0:
            if first_empty < 0:
                first_empty = p
        else:
            t = np.uint64(piles[p, h[p] - 1])
            beaten |= (np.uint64(1) << t) - (np.uint64(1) << (np.uint64(13) * (t // np.uint64(13))))
    beaten &= mask
    if first_empty < 0 or beaten == 0:
        return -1
    for src in range(4):
        for depth in range(1, h[src]):
            c = np.uint64(piles[src, h[src] - 1 - depth])
            if (beaten >> c) & np.uint64(1):
                return KIND_MOVE + 4 * src + 16 * first_empty + 64 * depth
    return -1


# An explicit signature for _gen_actions, which the search and the line replay call with
# different integer types: one compiled version instead of several.
_SIG_GEN_ACTIONS = nb.int64(_PILES, _I32, nb.int64, nb.int64, _RULES, _I32, nb.boolean)


@nb.njit(cache=True, _nrt=False)
def _write_discards(piles, h, code, out, n):
    """Append the optional discards ``xN`` (by pile) to ``out[n:]``; return the new count."""
    for p in range(4):
        if _discardable(piles, h, p, code):
            out[n] = KIND_DISCARD + 4 * p
            n += 1
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _gen_actions_inline(piles, h, sp, nstock, rules, out, contract_order):
    """``_gen_actions``, inlined where it is called in the search loop.

    Write the legal actions of the position into ``out``; return how many.

    ``contract_order``: game.py's order (deal, moves by src/depth/dst, discards).
    Otherwise the search order: discards, moves of a card that is not alone,
    deal, lone moves (a lone move only relabels piles, so it is tried last).
    """
    strength, code, fill, optional, sensible, leftmost, must_fill = rules
    n = 0
    can_deal = sp < nstock
    if contract_order:
        # moves first (to know whether must_fill blocks the deal), then shift them right by one;
        # must_fill blocks it only while a card of a pile of two or more may move (RULES.md)
        nm = _write_moves(piles, h, strength, fill, sensible, leftmost, out, 0, 0)
        blocks = False
        if must_fill:
            for i in range(nm):
                if h[(out[i] >> 2) & 3] >= 2:
                    blocks = True
                    break
        if can_deal and not blocks:
            for i in range(nm, 0, -1):
                out[i] = out[i - 1]
            out[0] = KIND_DEAL
            nm += 1
        n = nm
        if optional:
            n = _write_discards(piles, h, code, out, n)
        return n
    if optional:
        n = _write_discards(piles, h, code, out, n)
    n0 = n
    if not can_deal:
        # Endgame: with the stock empty no card will ever land on a pile again, so
        # the value depends only on the multiset of pile contents. A lone move
        # changes nothing then, and which empty pile a card moves into does not
        # matter: try only moves of cards that are not alone, into the first empty pile.
        return _write_moves(piles, h, strength, fill, sensible, True, out, n, 1)
    n = _write_moves(piles, h, strength, fill, sensible, leftmost, out, n, 1)
    n1 = n
    n = _write_moves(piles, h, strength, fill, sensible, leftmost, out, n, 2)
    if can_deal and not (must_fill and n1 > n0):
        # the deal goes between the moves of cards that are not alone and the lone moves (which never
        # block it under must_fill: RULES.md)
        for i in range(n, n1, -1):
            out[i] = out[i - 1]
        out[n1] = KIND_DEAL
        n += 1
    return n


@nb.njit(_SIG_GEN_ACTIONS, cache=True, _nrt=False)
def _gen_actions(piles, h, sp, nstock, rules, out, contract_order):
    """Write the legal actions of the position into ``out``; return how many (``_gen_actions_inline``)."""
    return _gen_actions_inline(piles, h, sp, nstock, rules, out, contract_order)


@nb.njit(cache=True, inline="always", _nrt=False)
def _deal(piles, h, stock, sp, rules, work, rtop):
    """Deal the next four cards (and make the forced discards); (new sp, new undo-stack top)."""
    for p in range(4):
        piles[p, h[p]] = stock[sp + p]
        h[p] += 1
    if not rules.optional:
        rtop = _resolve(piles, h, rules.code, work.rec_pile, work.rec_card, rtop)
    return sp + 4, rtop


@nb.njit(cache=True, inline="always", _nrt=False)
def _undo_deal(h, sp):
    """Take back a deal whose discards are already put back; returns the old sp."""
    for p in range(4):
        h[p] -= 1
    return sp - 4


@nb.njit(cache=True, inline="always", _nrt=False)
def _apply(a, piles, h, stock, sp, rules, work, rtop):
    """Apply action code ``a`` (and the forced discards); returns (new sp, new undo-stack top).

    Discards go onto the undo stack ``work.rec_pile``/``work.rec_card`` from ``rtop`` on.
    """
    kind = a & 3
    if kind == KIND_DEAL:
        return _deal(piles, h, stock, sp, rules, work, rtop)
    rec_pile = work.rec_pile
    rec_card = work.rec_card
    if kind == KIND_MOVE:
        src = (a >> 2) & 3
        dst = (a >> 4) & 3
        depth = (a >> 6) & 63
        pos = h[src] - 1 - depth
        card = piles[src, pos]
        for i in range(pos, h[src] - 1):
            piles[src, i] = piles[src, i + 1]
        h[src] -= 1
        piles[dst, h[dst]] = card
        h[dst] += 1
    else:
        p = (a >> 2) & 3
        h[p] -= 1
        rec_pile[rtop] = p
        rec_card[rtop] = piles[p, h[p]]
        rtop += 1
        return sp, rtop
    if not rules.optional:
        rtop = _resolve(piles, h, rules.code, rec_pile, rec_card, rtop)
    return sp, rtop


@nb.njit(cache=True, inline="always", _nrt=False)
def _undo_discards(piles, h, rec_pile, rec_card, rtop, rbase):
    """Put back the discards of undo-stack entries rbase..rtop-1, last first."""
    while rtop > rbase:
        rtop -= 1
        p = rec_pile[rtop]
        piles[p, h[p]] = rec_card[rtop]
        h[p] += 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _undo(a, piles, h, sp, work, rtop, rbase):
    """Undo action ``a`` whose discards are undo-stack entries rbase..rtop-1; returns the old sp."""
    _undo_discards(piles, h, work.rec_pile, work.rec_card, rtop, rbase)
    kind = a & 3
    if kind == KIND_DEAL:
        sp = _undo_deal(h, sp)
    elif kind == KIND_MOVE:
        src = (a >> 2) & 3
        dst = (a >> 4) & 3
        depth = (a >> 6) & 63
        h[dst] -= 1
        card = piles[dst, h[dst]]
        pos = h[src] - depth
        for i in range(h[src], pos, -1):
            piles[src, i] = piles[src, i - 1]
        piles[src, pos] = card
        h[src] += 1
    return sp


@nb.njit(cache=True, _nrt=False)
def _key(piles, h, sp, nstock, native):
    """The exact position key (see the module docstring): (mask | sp << 52, foreign bottoms).

    With the stock empty (``sp == nstock``) pile labels no longer matter (no
    card will land on a pile again), so the key is that of the multiset of
    piles: the lone cards are written in ascending order into the labels not
    held by a pile of two or more cards (254 for an empty one). A pile of two
    or more has cards dealt to its own label above its bottom, so its label is
    fixed by its content, and the key stays exact for the multiset.
    """
    mask = np.uint64(0)
    for p in range(4):
        for i in range(h[p]):
            mask |= np.uint64(1) << np.uint64(piles[p, i])
    return _key_of(mask, piles, h, sp, nstock, native)


@nb.njit(cache=True, inline="always", _nrt=False)
def _key_of(mask, piles, h, sp, nstock, native):
    """``_key`` given the mask of the cards on the table (the search keeps it up to date)."""
    k1 = mask | (np.uint64(sp) << np.uint64(52))
    k2 = np.uint32(0)
    if sp < nstock:
        for p in range(4):
            b = np.uint32(_NO_FOREIGN)
            if h[p] > 0 and native[piles[p, 0]] != p:
                b = np.uint32(piles[p, 0])
            k2 |= b << np.uint32(8 * p)
        return k1, k2
    l0 = l1 = l2 = l3 = np.int64(255)
    nl = 0
    for p in range(4):
        if h[p] == 1:
            l0, l1, l2, l3 = _set4(l0, l1, l2, l3, nl, np.int64(piles[p, 0]))
            nl += 1
    l0, l1, l2, l3 = _sort4(l0, l1, l2, l3)
    taken = 0
    for p in range(4):
        if h[p] >= 2:
            b = np.uint32(_NO_FOREIGN)
            if native[piles[p, 0]] != p:
                b = np.uint32(piles[p, 0])
        else:
            c = _get4(l0, l1, l2, l3, taken)
            taken += 1
            b = np.uint32(c) if c != 255 else np.uint32(254)
        k2 |= b << np.uint32(8 * p)
    return k1, k2
