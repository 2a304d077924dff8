"""The search for ``easy`` on native piles: ``generic._search``'s tree, on native.py's positions.

In ``easy`` a card at any depth may move into an empty pile, and the cards
above it stay on their pile in order. A pile is still an optional foreign
bottom card followed by cards dealt to it in deal order (taking a card out of
that sequence keeps the rest in order, and the card moved is alone on its new
pile), so native.py's position (the 52-bit mask over (pile, place in its deal
order) and the foreign bottoms) holds an ``easy`` position exactly, and a
search frame is again its position: stepping back undoes nothing.

The search is the generic one, step for step, but for the table: the same
actions in the same order (moves of a card that is not alone by source pile
and depth, the deal, lone moves; with the stock out only the former, into the
first empty pile), the same two rules (``generic.RULE_EASY_END``,
``RULE_LAST_DEAL_CAP``; docs/solver.md, "Easy") and the same table keys (the mask of
the cards on the table by card id, which each frame keeps beside its native
mask, and the foreign bottoms). It differs in two ways. Without a
solver restriction it has a third rule, ``generic.RULE_EASY_INERT`` (docs/solver.md,
"Inert cards"), which the generic search lacks. And it differs in which positions it
looks up: a position with no empty pile never (the generic search: at every other stock
position). Its only action is a deal, so meeting it again costs the chain of
deals down to the next position with an empty pile (which is looked up) or the
end, at most 12 deals, where a probe of easy's 256 MiB table is a cache miss;
measured in docs/solver.md ("Easy on native piles"). The visited set only
saves work and the rules keep the value, so the value is the same; the node
counts are not. The generic search is its twin (``tests/test_solver_easy.py``:
scores deck for deck).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..actions import KIND_DEAL, KIND_MOVE
from .common import MASK52, MAX_DEPTH, STATUS_GAVE_UP, STATUS_SOLVED, _high_bit, _on_lone_run, _popcount, _set4, \
    _sort4, _get4
from .generic import RULE_EASY_END, RULE_EASY_INERT
from .native import DEAL_BITS, NO_FOREIGN4, _nat_field, _nat_foreign, _nat_resolve
from .table import _tt_seen_or_add

ONE = np.uint64(1)


@nb.njit(cache=True, inline="always", _nrt=False)
def _ne_height(mask, fw, p):
    """The number of cards on pile p."""
    n = _popcount(np.uint64(_nat_field(mask, p)))
    return n + 1 if _nat_foreign(fw, p) != 255 else n


@nb.njit(cache=True, inline="always", _nrt=False)
def _ne_top_card(mask, fw, p, deck):
    """The card id of pile p's top; -1 for an empty pile."""
    f = _nat_field(mask, p)
    if f != 0:
        return np.int64(deck.pcard[13 * p + _high_bit(f)])
    fb = _nat_foreign(fw, p)
    return fb if fb != 255 else np.int64(-1)


@nb.njit(cache=True, inline="always", _nrt=False)
def _ne_card_at(mask, fw, p, depth, deck):
    """The card at ``depth`` of pile p (0 = its top; the foreign bottom is the deepest) and its
    native bit, -1 for the foreign bottom."""
    f = _nat_field(mask, p)
    for _ in range(depth):
        if f == 0:
            break
        f &= ~(1 << _high_bit(f))
    if f != 0:
        bit = 13 * p + _high_bit(f)
        return np.int64(deck.pcard[bit]), bit
    return _nat_foreign(fw, p), np.int64(-1)


@nb.njit(cache=True, inline="always", _nrt=False)
def _ne_gone(cmask, before, after, fw_before, fw_after, pcard):
    """``cmask`` (the cards on the table, by id) less the cards whose native bits ``before`` has
    and ``after`` lacks, and less the foreign bottoms ``fw_before`` has and ``fw_after`` lacks."""
    cleared = before & ~after
    while cleared != 0:
        low = cleared & (~cleared + ONE)
        cmask &= ~(ONE << np.uint64(pcard[_high_bit(low)]))
        cleared ^= low
    if fw_before != fw_after:
        for p in range(4):
            fb = _nat_foreign(fw_before, p)
            if fb != 255 and _nat_foreign(fw_after, p) == 255:
                cmask &= ~(ONE << np.uint64(fb))
    return cmask


@nb.njit(cache=True, inline="always", _nrt=False)
def _ne_apply(a, mask, fw, cmask, sp, deck):
    """Apply action code ``a`` (a deal or a move at any depth) and its forced discards.

    Returns (mask, fw, cmask, sp, discards, no pile is empty, the move was a lone move).
    """
    pcard = deck.pcard
    if (a & 3) == KIND_DEAL:
        sp += 4
        i = sp >> 2
        before = mask | (DEAL_BITS << np.uint64(i))
        for p in range(4):
            cmask |= ONE << np.uint64(pcard[13 * p + i])
        c = deck.deal_clear[i]
        if c == 0:
            return before, fw, cmask, sp, np.int64(0), True, False
        mask, fw2, nd, full = _nat_resolve(before & ~c, fw, deck)
        return mask, fw2, _ne_gone(cmask, before, mask, fw, fw2, pcard), sp, nd + deck.deal_nd[i], full, False
    src = (a >> 2) & 3
    dst = (a >> 4) & 3
    depth = (a >> 6) & 63
    is_lone = _ne_height(mask, fw, src) == 1
    card, bit = _ne_card_at(mask, fw, src, depth, deck)
    if bit >= 0:
        mask &= ~(ONE << np.uint64(bit))
    else:
        fw |= np.uint32(255) << np.uint32(8 * src)
    home = np.int64(deck.pbit[card])
    if home // 13 == dst:
        # onto its own pile (which was empty): the same position as if it had never left
        mask |= ONE << np.uint64(home)
    else:
        fw = (fw & ~(np.uint32(255) << np.uint32(8 * dst))) | (np.uint32(card) << np.uint32(8 * dst))
    mask2, fw2, nd, full = _nat_resolve(mask, fw, deck)
    return mask2, fw2, _ne_gone(cmask, mask, mask2, fw, fw2, pcard), sp, nd, full, is_lone


@nb.njit(cache=True, inline="always", _nrt=False)
def _ne_gen(mask, fw, sp, nstock, rules, out):
    """``position._gen_actions_inline`` (search order, forced discards, ``easy``) on a native position."""
    sensible, leftmost, must_fill = rules.sensible, rules.leftmost, rules.must_fill
    h0 = _ne_height(mask, fw, 0)
    h1 = _ne_height(mask, fw, 1)
    h2 = _ne_height(mask, fw, 2)
    h3 = _ne_height(mask, fw, 3)
    can_deal = sp < nstock
    first_empty = 0 if h0 == 0 else (1 if h1 == 0 else (2 if h2 == 0 else (3 if h3 == 0 else -1)))
    if first_empty < 0:
        if can_deal:
            out[0] = KIND_DEAL
            return 1
        return 0
    empty = (1 if h0 == 0 else 0) | (2 if h1 == 0 else 0) | (4 if h2 == 0 else 0) | (8 if h3 == 0 else 0)
    targets = (1 << first_empty) if (leftmost or not can_deal) else empty
    n = 0
    for src in range(4):
        hs = h0 if src == 0 else (h1 if src == 1 else (h2 if src == 2 else h3))
        if hs < 2:
            continue
        for depth in range(hs):
            for dst in range(4):
                if (targets >> dst) & 1:
                    out[n] = KIND_MOVE + 4 * src + 16 * dst + 64 * depth
                    n += 1
    if not can_deal:
        return n
    # the deal goes between the moves of cards that are not alone and the lone moves;
    # must_fill forbids it while a card that is not alone may move
    if not (must_fill and n > 0):
        out[n] = KIND_DEAL
        n += 1
    if not sensible:
        for src in range(4):
            hs = h0 if src == 0 else (h1 if src == 1 else (h2 if src == 2 else h3))
            if hs == 1:
                for dst in range(4):
                    if (targets >> dst) & 1:
                        out[n] = KIND_MOVE + 4 * src + 16 * dst
                        n += 1
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _ne_key(mask, fw, cmask, sp, nstock, deck):
    """``position._key`` of a native position: (cards on the table by id | sp << 52, foreign bottoms);
    with the stock out, that of the multiset of piles (the lone cards in ascending order into the
    labels no pile of two or more holds, 254 for an empty pile)."""
    k1 = cmask | (np.uint64(sp) << np.uint64(52))
    if sp < nstock:
        return k1, fw
    l0 = l1 = l2 = l3 = np.int64(255)
    nl = 0
    for p in range(4):
        if _ne_height(mask, fw, p) == 1:
            l0, l1, l2, l3 = _set4(l0, l1, l2, l3, nl, _ne_top_card(mask, fw, p, deck))
            nl += 1
    l0, l1, l2, l3 = _sort4(l0, l1, l2, l3)
    k2 = np.uint32(0)
    taken = 0
    for p in range(4):
        if _ne_height(mask, fw, p) >= 2:
            b = np.uint32(_nat_foreign(fw, p))
        else:
            c = _get4(l0, l1, l2, l3, taken)
            taken += 1
            b = np.uint32(c) if c != 255 else np.uint32(254)
        k2 |= b << np.uint32(8 * p)
    return k1, k2


@nb.njit(cache=True, inline="always", _nrt=False)
def _ne_empty_and_beaten(mask, fw, cmask, deck):
    """(the first empty pile or -1, the cards on the table that some top beats, by card id)."""
    first_empty = -1
    beaten = np.uint64(0)
    for p in range(4):
        t = _ne_top_card(mask, fw, p, deck)
        if t < 0:
            if first_empty < 0:
                first_empty = p
        else:
            tu = np.uint64(t)
            beaten |= (ONE << tu) - (ONE << (np.uint64(13) * (tu // np.uint64(13))))
    return first_empty, beaten & cmask


@nb.njit(cache=True, inline="always", _nrt=False)
def _ne_beaten_buried_move(mask, fw, cmask, deck):
    """``position._beaten_buried_move`` of a native position: the move of the first buried card a
    top beats (pile 0 first, the shallowest first) into the first empty pile, or -1."""
    first_empty, beaten = _ne_empty_and_beaten(mask, fw, cmask, deck)
    if first_empty < 0 or beaten == 0:
        return -1
    for src in range(4):
        hs = _ne_height(mask, fw, src)
        for depth in range(1, hs):
            c, _bit = _ne_card_at(mask, fw, src, depth, deck)
            if (beaten >> np.uint64(c)) & ONE:
                return KIND_MOVE + 4 * src + 16 * first_empty + 64 * depth
    return -1


@nb.njit(cache=True, inline="always", _nrt=False)
def _ne_inert_buried_move(mask, fw, cmask, sp, deck):
    """The move of RULE_EASY_INERT (docs/solver.md, "Inert cards"), or -1: with a pile empty, the
    first buried card X (pile 0 first, the shallowest first) that a top beats and that lies, with
    every card under it on its pile, among the *inert* cards: the weakest card of each suit in
    play (on the table or still to be dealt), which can never beat anything. The move goes into
    the first empty pile, where X is discarded at once."""
    first_empty, beaten = _ne_empty_and_beaten(mask, fw, cmask, deck)
    if first_empty < 0 or beaten == 0:
        return -1
    in_play = cmask | deck.undealt[sp >> 2]
    # card ids rank within their suit, so the weakest card of a suit in play is its lowest bit
    inert = np.uint64(0)
    for s in range(4):
        f = (in_play >> np.uint64(13 * s)) & np.uint64(0x1FFF)
        inert |= (f & (~f + ONE)) << np.uint64(13 * s)
    if (beaten & inert) == 0:
        return -1
    pcard = deck.pcard
    for src in range(4):
        f = _nat_field(mask, src)
        fb = _nat_foreign(fw, src)
        hs = _ne_height(mask, fw, src)
        # walk up from the bottom (depth hs - 1) to depth 1 while the cards are inert; the
        # shallowest of them a top beats is the move
        found = -1
        depth = hs - 1
        if fb != 255 and depth >= 1:
            if ((inert >> np.uint64(fb)) & ONE) == 0:
                continue
            if (beaten >> np.uint64(fb)) & ONE:
                found = depth
            depth -= 1
        while depth >= 1:
            low = f & -f
            c = pcard[13 * src + _high_bit(low)]
            if ((inert >> np.uint64(c)) & ONE) == 0:
                break
            if (beaten >> np.uint64(c)) & ONE:
                found = depth
            f ^= low
            depth -= 1
        if found >= 0:
            return KIND_MOVE + 4 * src + 16 * first_empty + 64 * found
    return -1


@nb.njit(cache=True, _nrt=False)
def _search_native_easy(nstock, start_mask, start_cmask, start_score, cap, deck, rules, node_limit, table, epoch,
                        work, flags):
    """``generic._search`` for ``easy`` from a fresh deal, on native piles (the module docstring).

    Args:
        nstock:        the stock's length (48)
        start_mask:    the native mask of the start (the first four cards, forced discards made)
        start_cmask:   the cards of the start, by card id
        start_score:   the discards made so far
        cap:           the best score any line can reach (generic._last_deal_cap, or 48): the search stops there
        deck:          NativeDeck of the deal
        rules:         SearchRules
        node_limit:    positions to search at most; <= 0 for no limit
        table, epoch:  the transposition table and this search's epoch in it
        work:          Work buffers: frame k's position is ``keys1[k]`` (mask | sp << 52), ``keys2[k]``
                       (foreign bottoms) and ``keys3[k]`` (its cards by id), ``scores[k]`` its score
        flags:         the RULE_* bits on (generic.easy_rule_flags; RULE_EASY_END and RULE_EASY_INERT are read here)

    Returns (best score, best line length, nodes, status), the line in ``work.best_line``
    (action codes, for the generic line finish).
    """
    acts, nacts, idx, path, lone, keys1, keys2, keys3, scores = work.acts, work.nacts, work.idx, work.path, \
        work.lone, work.keys1, work.keys2, work.keys3, work.scores
    best_line = work.best_line
    easy_end = (flags & RULE_EASY_END) != 0
    easy_inert = (flags & RULE_EASY_INERT) != 0
    best = start_score
    best_len = 0
    nodes = 1
    status = STATUS_SOLVED
    fw = NO_FOREIGN4
    sp = np.int64(0)
    r1, r2 = _ne_key(start_mask, fw, start_cmask, sp, nstock, deck)
    _tt_seen_or_add(table, r1, r2, epoch, sp)
    if best >= cap:
        return best, 0, nodes, status
    keys1[0] = start_mask
    keys2[0] = fw
    keys3[0] = start_cmask
    scores[0] = start_score
    nacts[0] = _ne_gen(start_mask, fw, sp, nstock, rules, acts[0])
    idx[0] = 0
    k = 0
    a = -1  # an action already chosen (a deal from a position with no empty pile), or -1
    # mask, sp, fw and cmask hold frame k's position whenever a >= 0 (a deal chosen from registers);
    # they are loaded from the frame when the next action is picked from it. These two are
    # overwritten before use: they only give Numba a definition on every path
    mask = start_mask
    cmask = start_cmask
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
            cmask = keys3[k]
        mask, fw, cmask, sp, nd, full, is_lone = _ne_apply(a, mask, fw, cmask, sp, deck)
        score = scores[k] + nd
        path[k] = a
        lone[k] = is_lone
        a = -1
        leaf = full and sp == nstock
        n1 = mask | (np.uint64(sp) << np.uint64(52))
        skip = False
        if not leaf:
            if is_lone:
                # the frames' native keys identify positions exactly while the stock lasts (lone moves do)
                skip = _on_lone_run(keys1, keys2, lone, k, n1, fw)
            # a position with no empty pile is never looked up (the module docstring): its only
            # child is a deal, cheaper to make again than a probe of the large table
            if not skip and not full:
                t1, t2 = _ne_key(mask, fw, cmask, sp, nstock, deck)
                skip = _tt_seen_or_add(table, t1, t2, epoch, sp)
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
            if best >= cap:
                break
        if leaf:
            continue
        k += 1
        keys1[k] = n1
        keys2[k] = fw
        keys3[k] = cmask
        scores[k] = score
        if full:
            # no pile is empty: the deal is the only action; take it at once
            nacts[k] = 1
            idx[k] = 1
            a = KIND_DEAL
        else:
            m = -1
            if easy_end and sp == nstock:
                # stock out: a buried card a top beats goes (and is discarded) at once, the only child
                m = _ne_beaten_buried_move(mask, fw, cmask, deck)
            elif easy_inert and sp < nstock:
                # stock left: such a card goes at once, the only child, if it and the cards under
                # it are inert (docs/solver.md, "Inert cards")
                m = _ne_inert_buried_move(mask, fw, cmask, sp, deck)
            if m >= 0:
                acts[k, 0] = m
                nacts[k] = 1
            else:
                nacts[k] = _ne_gen(mask, fw, sp, nstock, rules, acts[k])
            idx[k] = 0
    return best, best_len, nodes, status
