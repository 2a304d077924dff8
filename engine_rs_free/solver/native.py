"""The search on native piles: a fresh deal's positions as one 52-bit mask (docs/solver.md).

A pile is always an optional foreign bottom card followed by cards dealt to
it, in deal order. From a fresh deal the cards dealt to pile p are fixed:
``deck[4*i + p]`` is its i-th card (i = 0..12). So a position is one 52-bit
mask over (pile, i), bit ``13*p + i`` set while that card lies on its own
pile, plus the foreign bottom of each pile (one byte each, 255 for none). The
top of a pile is the highest bit of its 13-bit field, or its foreign bottom
when the field is empty; a deal sets four bits, a discard clears one, and the
position of a search frame is two words, so stepping back undoes nothing. The
key of the table is the position itself.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..actions import KIND_DEAL, KIND_MOVE
from ..game import WIN_SCORE
from ..rules import FILL_ACE, TOP_STRENGTH
from .common import (
    _DECK,
    _FLAGS,
    _I32,
    _TOPS,
    MASK52,
    MAX_DEPTH,
    STATUS_GAVE_UP,
    STATUS_SOLVED,
    _beaten,
    _get4,
    _high_bit,
    _on_lone_run,
    _set4,
    _sort4,
    flags_of,
    tops_of,
)
from .table import _tt_seen_or_add

DEAL_BITS = np.uint64(1 | 1 << 13 | 1 << 26 | 1 << 39)  # bit i of every pile's field, shifted by i
NO_FOREIGN4 = np.uint32(0xFFFFFFFF)  # no pile has a foreign bottom


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_field(mask, p):
    """The 13-bit field of pile p: which of its own cards lie on it."""
    return np.int64((mask >> np.uint64(13 * p)) & np.uint64(0x1FFF))


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_foreign(fw, p):
    """The foreign bottom card of pile p, 255 for none."""
    return np.int64((fw >> np.uint32(8 * p)) & np.uint32(255))


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_top(mask, fw, p, deck):
    """The top card of pile p as its code (``suit * 16 + strength``); -64 for an empty pile."""
    f = _nat_field(mask, p)
    if f != 0:
        return np.int64(deck.pcode[13 * p + _high_bit(f)])
    fb = _nat_foreign(fw, p)
    return np.int64(deck.code[fb]) if fb != 255 else np.int64(-64)


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_count(mask, fw, p):
    """Cards on pile p, capped at 2 (0 empty, 1 lone, 2 two or more)."""
    f = _nat_field(mask, p)
    n = 0 if f == 0 else (1 if (f & (f - 1)) == 0 else 2)
    if _nat_foreign(fw, p) != 255:
        n += 1
    return min(n, 2)


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_pop(mask, fw, p, deck):
    """Take the top card off pile p (not empty): its highest own card, else its foreign bottom.
    Returns (mask, fw, the pile's new top as ``_nat_top`` gives it)."""
    f = _nat_field(mask, p)
    if f != 0:
        mask &= ~(np.uint64(1) << np.uint64(13 * p + _high_bit(f)))
    else:
        fw |= np.uint32(255) << np.uint32(8 * p)
    return mask, fw, _nat_top(mask, fw, p, deck)


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_resolve(mask, fw, deck):
    """Make every forced discard (as ``_resolve``); returns (mask, fw, discards, no pile is empty).

    The four tops are read once; a round of discards reads again only the tops of the piles it took
    a card from (the others are unchanged): standard, strict and reverse 7-10 % faster than reading
    all four every round, easy 4-8 % (docs/solver.md, "No reference counting, few calls").
    """
    nd = 0
    t0 = _nat_top(mask, fw, 0, deck)
    t1 = _nat_top(mask, fw, 1, deck)
    t2 = _nat_top(mask, fw, 2, deck)
    t3 = _nat_top(mask, fw, 3, deck)
    while True:
        d0 = _beaten(t0, t1, t2, t3)
        d1 = _beaten(t1, t0, t2, t3)
        d2 = _beaten(t2, t0, t1, t3)
        d3 = _beaten(t3, t0, t1, t2)
        if not (d0 or d1 or d2 or d3):
            return mask, fw, nd, t0 >= 0 and t1 >= 0 and t2 >= 0 and t3 >= 0
        # every beaten top goes at once; only those piles' tops change (written out per pile, as the
        # four _beaten calls are: the tops are four scalars, not an array)
        if d0:
            mask, fw, t0 = _nat_pop(mask, fw, 0, deck)
            nd += 1
        if d1:
            mask, fw, t1 = _nat_pop(mask, fw, 1, deck)
            nd += 1
        if d2:
            mask, fw, t2 = _nat_pop(mask, fw, 2, deck)
            nd += 1
        if d3:
            mask, fw, t3 = _nat_pop(mask, fw, 3, deck)
            nd += 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_gen(mask, fw, sp, nstock, deck, rules, out):
    """The search order of ``_gen_actions`` on a native position: moves of a card that is not
    alone, the deal, lone moves; with the stock out only moves of a card that is not alone, into
    the first empty pile. Returns the count written to ``out``.

    Each pile is read once, into bit sets (empty piles, piles whose top may move): the nested
    loops over source and target piles then read no pile again, and a position whose empty pile
    no card may fill (in strict: no Ace on top, the common case) has the deal alone at once.
    """
    fill, sensible, leftmost, must_fill = rules.fill, rules.sensible, rules.leftmost, rules.must_fill
    empty = 0  # bit p: pile p is empty
    stacked = 0  # bit p: the top of pile p, a pile of two or more, may move
    lone = 0  # bit p: the lone card of pile p may move
    for p in range(4):
        c = _nat_count(mask, fw, p)
        if c == 0:
            empty |= 1 << p
        elif fill != FILL_ACE or (_nat_top(mask, fw, p, deck) & 15) == TOP_STRENGTH:
            if c == 2:
                stacked |= 1 << p
            elif not sensible:
                lone |= 1 << p
    can_deal = sp < nstock
    if empty == 0 or (stacked == 0 and (lone == 0 or not can_deal)):
        # no move: the deal alone (nothing with the stock out)
        if can_deal:
            out[0] = KIND_DEAL
            return 1
        return 0
    first_empty = 0 if empty & 1 else (1 if empty & 2 else (2 if empty & 4 else 3))
    targets = (1 << first_empty) if (leftmost or not can_deal) else empty
    n = 0
    for src in range(4):
        if (stacked >> src) & 1:
            for dst in range(4):
                if (targets >> dst) & 1:
                    out[n] = KIND_MOVE + 4 * src + 16 * dst
                    n += 1
    if not can_deal:
        return n
    # the deal goes between the moves of cards that are not alone and the lone moves;
    # must_fill forbids it while a card that is not alone may move
    n_before_deal = n
    if not (must_fill and n_before_deal > 0):
        out[n] = KIND_DEAL
        n += 1
    for src in range(4):
        if (lone >> src) & 1:
            for dst in range(4):
                if (targets >> dst) & 1:
                    out[n] = KIND_MOVE + 4 * src + 16 * dst
                    n += 1
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_end_key(mask, fw, sp, deck):
    """The table key of a position with the stock out: that of the multiset of piles (as ``_key``).

    A pile of two or more cards holds one of its own, so its label is fixed; the
    lone cards are taken off the mask and written in ascending order into the
    other labels (254 for an empty pile).
    """
    pcard = deck.pcard
    k1 = mask
    l0 = l1 = l2 = l3 = np.int64(255)
    nl = 0
    for p in range(4):
        if _nat_count(mask, fw, p) == 1:
            f = _nat_field(mask, p)
            if f != 0:
                bit = 13 * p + _high_bit(f)
                k1 &= ~(np.uint64(1) << np.uint64(bit))
                card = np.int64(pcard[bit])
            else:
                card = _nat_foreign(fw, p)
            l0, l1, l2, l3 = _set4(l0, l1, l2, l3, nl, card)
            nl += 1
    l0, l1, l2, l3 = _sort4(l0, l1, l2, l3)
    k2 = np.uint32(0)
    taken = 0
    for p in range(4):
        if _nat_count(mask, fw, p) == 2:
            b = np.uint32(_nat_foreign(fw, p))
        else:
            c = _get4(l0, l1, l2, l3, taken)
            taken += 1
            b = np.uint32(c) if c != 255 else np.uint32(254)
        k2 |= b << np.uint32(8 * p)
    return k1 | (np.uint64(sp) << np.uint64(52)), k2


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_apply(a, mask, fw, sp, deck):
    """Apply action code ``a`` (a deal or a move) and its forced discards to a native position.

    Returns (mask, fw, sp, discards, no pile is empty, the move was a lone move).
    """
    pcard, pbit, deal_clear, deal_nd = deck.pcard, deck.pbit, deck.deal_clear, deck.deal_nd
    is_lone = False
    if (a & 3) == KIND_DEAL:
        sp += 4
        i = sp >> 2
        mask |= DEAL_BITS << np.uint64(i)
        # the first round of discards is among the four dealt cards alone: known per deck
        c = deal_clear[i]
        if c == 0:
            return mask, fw, sp, np.int64(0), True, False
        mask &= ~c
        mask, fw, nd, full = _nat_resolve(mask, fw, deck)
        return mask, fw, sp, nd + deal_nd[i], full, False
    src = (a >> 2) & 3
    dst = (a >> 4) & 3
    f = _nat_field(mask, src)
    fb = _nat_foreign(fw, src)
    if f != 0:
        bit = 13 * src + _high_bit(f)
        card = np.uint32(pcard[bit])
        mask &= ~(np.uint64(1) << np.uint64(bit))
        is_lone = (f & (f - 1)) == 0 and fb == 255
    else:
        card = np.uint32(fb)
        fw |= np.uint32(255) << np.uint32(8 * src)
        is_lone = True
    home = np.int64(pbit[card])
    if home // 13 == dst:
        # back on its own pile (which was empty): the same position as if it had never left
        mask |= np.uint64(1) << np.uint64(home)
    else:
        fw = (fw & ~(np.uint32(255) << np.uint32(8 * dst))) | (card << np.uint32(8 * dst))
    mask, fw, nd, full = _nat_resolve(mask, fw, deck)
    return mask, fw, sp, nd, full, is_lone


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_legal_count(mask, fw, sp, nstock, deck, rules):
    """The number of legal actions of a native position (as ``game.legal_actions``)."""
    fill, sensible, leftmost, must_fill = rules.fill, rules.sensible, rules.leftmost, rules.must_fill
    n_empty = 0
    for p in range(4):
        if _nat_count(mask, fw, p) == 0:
            n_empty += 1
    moves = 0
    stacked = 0  # moves of a card of a pile of two or more: only these block a deal under must_fill
    if n_empty > 0:
        for src in range(4):
            c = _nat_count(mask, fw, src)
            if c == 0 or (c == 1 and sensible):
                continue
            if fill == FILL_ACE and (_nat_top(mask, fw, src, deck) & 15) != TOP_STRENGTH:
                continue
            moves += 1 if leftmost else n_empty
            if c == 2:
                stacked += 1
    deal = 1 if sp < nstock and not (must_fill and stacked > 0) else 0
    return moves + deal


# Compiled once, called (not inlined) where speed matters less than compile time: the
# line's finish and the root of the search. Explicit signatures: one compiled version.


@nb.njit(nb.types.Tuple((nb.uint64, nb.uint32, nb.int64, nb.int64, nb.boolean, nb.boolean))(
    nb.int64, nb.uint64, nb.uint32, nb.int64, _DECK), cache=True, _nrt=False)
def _nat_apply_call(a, mask, fw, sp, deck):
    """``_nat_apply``, called."""
    return _nat_apply(a, mask, fw, sp, deck)


@nb.njit(nb.types.Tuple((nb.uint64, nb.uint32, nb.int64, nb.boolean))(nb.uint64, nb.uint32, _DECK),
         cache=True, _nrt=False)
def _nat_resolve_call(mask, fw, deck):
    """``_nat_resolve``, called."""
    return _nat_resolve(mask, fw, deck)


@nb.njit(nb.int64(nb.uint64, nb.uint32, nb.int64, nb.int64, _TOPS, _FLAGS), cache=True, _nrt=False)
def _nat_legal_count_call(mask, fw, sp, nstock, tops, flags):
    """``_nat_legal_count``, called (with the NativeTops and MoveFlags of the deck and the rules)."""
    return _nat_legal_count(mask, fw, sp, nstock, tops, flags)


@nb.njit(nb.int64(nb.uint64, nb.uint32, nb.int64, nb.int64, _TOPS, _FLAGS, _I32), cache=True, _nrt=False)
def _nat_gen_call(mask, fw, sp, nstock, tops, flags, out):
    """``_nat_gen``, called (with the NativeTops and MoveFlags of the deck and the rules)."""
    return _nat_gen(mask, fw, sp, nstock, tops, flags, out)


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_slot_pattern(mask, fw, deck, out):
    """``_slot_pattern`` of a native position: per pile its lone card, -1 when empty, -2 for two or more."""
    pcard = deck.pcard
    for p in range(4):
        c = _nat_count(mask, fw, p)
        if c == 0:
            out[p] = -1
        elif c == 2:
            out[p] = -2
        else:
            f = _nat_field(mask, p)
            out[p] = pcard[13 * p + _high_bit(f)] if f != 0 else _nat_foreign(fw, p)


@nb.njit(cache=True, _nrt=False)
def _search_native(nstock, start_mask, start_score, deck, rules, node_limit, table, epoch, work):
    """``generic._search`` on native piles (forced discards, a fresh deal, any variant but ``easy``).

    Args:
        nstock:       the stock's length (48)
        start_mask:   the native mask of the start (the first four cards, forced discards made),
                      no foreign bottom, no card dealt from the stock
        start_score:  the discards made so far
        deck:         NativeDeck of the deal
        rules:        SearchRules
        node_limit:   positions to search at most; <= 0 for no limit
        table, epoch: the transposition table and this search's epoch in it
        work:         Work buffers: frame k's position is ``keys1[k]`` (mask | sp << 52) and
                      ``keys2[k]`` (foreign bottoms), ``scores[k]`` its score

    Returns (best score, best line length, nodes, status), with the line in
    ``work.best_line`` (action codes) and the positions along it in
    ``work.best_keys1``/``work.best_keys2`` (as the frames), with the frames' action counts
    in ``work.best_nacts`` (the line's finish counts its decision points from them).
    """
    acts, nacts, idx, path, lone, keys1, keys2, scores = work.acts, work.nacts, work.idx, work.path, work.lone, \
        work.keys1, work.keys2, work.scores
    best_line, best_keys1, best_keys2, best_nacts = work.best_line, work.best_keys1, work.best_keys2, work.best_nacts
    best = start_score
    best_len = 0
    nodes = 1
    status = STATUS_SOLVED
    fw = NO_FOREIGN4
    _tt_seen_or_add(table, start_mask, fw, epoch, 0)
    if best >= WIN_SCORE:
        return best, 0, nodes, status
    keys1[0] = start_mask
    keys2[0] = fw
    scores[0] = start_score
    nacts[0] = _nat_gen_call(start_mask, fw, 0, nstock, tops_of(deck), flags_of(rules), acts[0])
    idx[0] = 0
    k = 0
    a = -1  # an action already chosen (a deal from a position with no empty pile), or -1
    mask = start_mask
    sp = np.int64(0)
    while True:
        if a < 0:
            if idx[k] >= nacts[k]:
                if k == 0:
                    break
                k -= 1  # the parent's position is its frame: nothing to undo
                continue
            a = acts[k, idx[k]]
            idx[k] += 1
            mask = keys1[k] & MASK52
            sp = np.int64(keys1[k] >> np.uint64(52))
            fw = keys2[k]
        mask, fw, sp, nd, full, is_lone = _nat_apply(a, mask, fw, sp, deck)
        score = scores[k] + nd
        path[k] = a
        lone[k] = is_lone
        leaf = full and sp == nstock
        n1 = mask | (np.uint64(sp) << np.uint64(52))
        skip = False
        if not leaf:
            if is_lone:
                skip = _on_lone_run(keys1, keys2, lone, k, n1, fw)
            # as in _search: a position with no empty pile is looked up at every other stock position
            if not skip and not (full and (sp & 4) != 0):
                if sp < nstock:
                    skip = _tt_seen_or_add(table, n1, fw, epoch, sp)
                else:
                    e1, e2 = _nat_end_key(mask, fw, sp, deck)
                    skip = _tt_seen_or_add(table, e1, e2, epoch, sp)
        a = -1
        if skip:
            continue
        if node_limit > 0 and nodes >= node_limit:
            status = STATUS_GAVE_UP
            break
        if k + 2 >= MAX_DEPTH:
            status = STATUS_GAVE_UP  # unreachable by the bound on path length; never claim an answer
            break
        nodes += 1
        if score > best:
            best = score
            best_len = k + 1
            for i in range(k + 1):
                best_line[i] = path[i]
                best_keys1[i] = keys1[i]
                best_keys2[i] = keys2[i]
                best_nacts[i] = nacts[i]
            best_keys1[k + 1] = n1
            best_keys2[k + 1] = fw
            if best >= WIN_SCORE:
                break
        if leaf:
            continue
        k += 1
        keys1[k] = n1
        keys2[k] = fw
        scores[k] = score
        if full:
            # no pile is empty: the deal is the only action; take it at once, from the registers
            nacts[k] = 1
            idx[k] = 1
            a = KIND_DEAL
        else:
            nacts[k] = _nat_gen(mask, fw, sp, nstock, deck, rules, acts[k])
            idx[k] = 0
    return best, best_len, nodes, status
