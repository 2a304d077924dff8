"""The search with optional discards as *pending* discards (docs/solver.md, "Pending discards").

Under ``discards=optional`` a discardable card may be taken or kept, and the
plain search (``optional.py``) searches both: the card discarded, and the card
kept and buried by the next deal, two subtrees that differ in nothing until the
card surfaces again, if ever. This search merges them. A discardable card is
made *pending* at once: it stays on its pile, physically, and is counted as
discarded. It stays pending until one of these:

- it is *taken off* (physically removed, still counted): when an action needs
  the card under it, or the pile it lies in as an empty pile;
- it *turns real* again (uncounted) when it is the beater of a discard;
- a rule proves it can never be needed as a beater (``optional`` RULE_NO_TARGET,
  RULE_STRICT_PILES, anywhere on its pile; RULE_END on a top beaten by a real
  top with the stock out): then it is taken off.

A pending card can also be moved into an empty pile and stay pending. The
game's position is the physical one less the pending cards that are taken off
in the end (or never turn real): each pending card is in effect discarded at
the moment it became pending, unless it later turns real, when it was kept all
along. docs/solver.md proves that the two searches have the same value, and
``_pd_game_line`` turns a line of this one into a line of the game by exactly
that reading (the tests replay it).

A position is the native one (``native.py``: a 52-bit mask of the cards on
their own piles with the stock position, and the foreign bottoms) and a third
word, the pending cards: native bits 0..51, and bit 52 + p for the foreign
bottom of pile p. Its key is the three words (``table._tt3_seen_or_add``); with
``optional.RULE_COVER`` the table answers for a position whose cards lie as in
an entry's and whose pending cards are a subset of the entry's
(``table._tt3_covered_or_add``: such a position has no line the entry lacks), and
with ``optional.RULE_COVER_REAL`` also for one whose cards are an entry's less
some of its pending cards (``table._tt3_probe_real``, in the table's second half).

Action codes of this search (internal; the line is turned into game codes):
``KIND_DEAL``; ``KIND_MOVE + 4*src + 16*dst + 64*depth``, the card ``depth``
cards down pile ``src`` (every card above it pending, taken off) into pile
``dst`` (every card of it pending, taken off); ``KIND_DISCARD + 4*p + 16*q +
64*depth``, the highest real card of pile p (the pending cards above it taken
off) made pending with the beater ``depth`` cards down pile q (the pending cards
above it taken off; a pending beater turns real).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..actions import KIND_DEAL, KIND_DISCARD, KIND_MOVE
from ..rules import FILL_ACE, TOP_STRENGTH
from .common import (
    MASK52,
    MAX_DEPTH,
    STATUS_GAVE_UP,
    STATUS_SOLVED,
    _beaten,
    _high_bit,
    _popcount,
)
from .native import DEAL_BITS, NO_FOREIGN4, _nat_field, _nat_foreign
from .optional import (  # noqa: F401
    RULE_COVER,
    RULE_COVER_REAL,
    RULE_END,
    RULE_LOCK,
    RULE_NO_TARGET,
    RULE_PENDING,
    RULE_STRICT_PILES,
    _opt_in_play,
)
from .table import MATCH_COVER, MATCH_EXACT, _tt3_probe, _tt3_probe_real

FOREIGN_PEND = 52  # pending-word bit 52 + p: the foreign bottom of pile p is pending
_ONE = np.uint64(1)
_FIELD = np.uint64(0x1FFF)

# the events of a replay, from which _pd_game_line builds the game's line
EV_DEAL = 0  # a deal
EV_MOVE = 1  # a move (card, code, the card was pending)
EV_PEND = 2  # a card made pending (card, the game's discard code)
EV_KEEP = 3  # a pending card turned real: it was kept all along
EV_GONE = 4  # a pending card taken off: it was discarded when it became pending


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_record(ev, ne, kind, card, code, flag):
    """Append an event when recording (``ev`` has rows); return the new count."""
    if ev.shape[0] > 0:
        ev[ne, 0] = kind
        ev[ne, 1] = card
        ev[ne, 2] = code
        ev[ne, 3] = flag
        return ne + 1
    return ne


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_top(mask, fw, pend, p, deck):
    """(code, pending) of pile p's top card; (-64, False) for an empty pile."""
    f = _nat_field(mask, p)
    if f != 0:
        b = 13 * p + _high_bit(f)
        return np.int64(deck.pcode[b]), ((pend >> np.uint64(b)) & _ONE) != 0
    fb = _nat_foreign(fw, p)
    if fb != 255:
        return np.int64(deck.code[fb]), ((pend >> np.uint64(FOREIGN_PEND + p)) & _ONE) != 0
    return np.int64(-64), False


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_reach(mask, fw, pend, p):
    """(cards of pile p that an action can reach, every card of it is pending).

    The reachable cards are the top and, down from it, every card with only pending cards above
    it: down to the highest real card, or the whole pile when all of it is pending.
    """
    f = _nat_field(mask, p)
    rf = f & ~np.int64((pend >> np.uint64(13 * p)) & _FIELD)
    if rf != 0:
        return _popcount(np.uint64(f >> _high_bit(rf))), False
    fb = _nat_foreign(fw, p)
    n = _popcount(np.uint64(f)) + (1 if fb != 255 else 0)
    return n, fb == 255 or ((pend >> np.uint64(FOREIGN_PEND + p)) & _ONE) != 0


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_at(mask, fw, pend, p, d, deck):
    """(card id, pending) of the card ``d`` cards down pile p (d < the pile's height)."""
    f = _nat_field(mask, p)
    for _ in range(d):
        if f == 0:
            break
        f &= ~(np.int64(1) << _high_bit(f))
    if f != 0:
        b = 13 * p + _high_bit(f)
        return np.int64(deck.pcard[b]), ((pend >> np.uint64(b)) & _ONE) != 0
    return _nat_foreign(fw, p), ((pend >> np.uint64(FOREIGN_PEND + p)) & _ONE) != 0


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_pop(mask, fw, pend, p, deck):
    """Take pile p's top card off the table (its pending bit too): (mask, fw, pend, card)."""
    f = _nat_field(mask, p)
    if f != 0:
        b = 13 * p + _high_bit(f)
        bit = _ONE << np.uint64(b)
        return mask & ~bit, fw, pend & ~bit, np.int64(deck.pcard[b])
    card = _nat_foreign(fw, p)
    return mask, fw | (np.uint32(255) << np.uint32(8 * p)), pend & ~(_ONE << np.uint64(FOREIGN_PEND + p)), card


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_take_off(mask, fw, pend, p, count, deck, ev, ne):
    """Take the top ``count`` cards of pile p off (each pending): (mask, fw, pend, events)."""
    for _ in range(count):
        mask, fw, pend, card = _pd_pop(mask, fw, pend, p, deck)
        ne = _pd_record(ev, ne, EV_GONE, card, 0, 0)
    return mask, fw, pend, ne


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_set_top_pending(mask, fw, pend, p, on):
    """Set (on) or clear the pending bit of pile p's top card."""
    f = _nat_field(mask, p)
    if f != 0:
        bit = _ONE << np.uint64(13 * p + _high_bit(f))
    else:
        bit = _ONE << np.uint64(FOREIGN_PEND + p)
    return pend | bit if on else pend & ~bit


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_no_target(which, pend, mask, fw, sp, deck, od, flags, ev, ne):
    """RULE_NO_TARGET (RULE_STRICT_PILES): take off every pending card of ``which`` (pending-word
    bits), anywhere, that no card in play can ever need as a beater. Returns (mask, fw, pend,
    events, any taken off)."""
    live = _opt_in_play(mask, fw, sp, deck)
    strict_piles = (flags & RULE_STRICT_PILES) != 0
    any_off = False
    own = which & pend & MASK52
    while own != 0:
        b = _high_bit(own)
        own &= ~(_ONE << np.uint64(b))
        targets = od.weaker_other[b] if strict_piles else od.weaker[b]
        if (targets & live) == 0:
            bit = _ONE << np.uint64(b)
            mask &= ~bit
            pend &= ~bit
            live &= ~bit
            any_off = True
            ne = _pd_record(ev, ne, EV_GONE, np.int64(deck.pcard[b]), 0, 0)
    for p in range(4):
        if ((which & pend) >> np.uint64(FOREIGN_PEND + p)) & _ONE:
            fb = _nat_foreign(fw, p)
            b = np.int64(deck.pbit[fb])
            targets = od.weaker_other[b] if strict_piles else od.weaker[b]
            if (targets & live) == 0:
                fw |= np.uint32(255) << np.uint32(8 * p)
                pend &= ~(_ONE << np.uint64(FOREIGN_PEND + p))
                live &= ~(_ONE << np.uint64(b))
                any_off = True
                ne = _pd_record(ev, ne, EV_GONE, fb, 0, 0)
    return mask, fw, pend, ne, any_off


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_settle(mask, fw, pend, sp, nstock, deck, od, flags, ev, ne, left_play):
    """Make pending every real top card that a real top card beats (all at once: the strongest real
    top of each suit beats the others), then take off the pending cards the rules prove are never
    needed; repeat until nothing changes. Returns (mask, fw, pend, cards made pending, events).

    ``left_play``: some card left play since the last settle (a card taken off). RULE_NO_TARGET
    reads only the cards in play, so without that only the cards made pending here are checked
    (each pending card passed the check when it became pending, and its targets are still there).
    """
    gained = 0
    fresh = np.uint64(0)  # pending-word bits of the cards made pending here
    while True:
        t0, q0 = _pd_top(mask, fw, pend, 0, deck)
        t1, q1 = _pd_top(mask, fw, pend, 1, deck)
        t2, q2 = _pd_top(mask, fw, pend, 2, deck)
        t3, q3 = _pd_top(mask, fw, pend, 3, deck)
        r0 = np.int64(-64) if q0 else t0
        r1 = np.int64(-64) if q1 else t1
        r2 = np.int64(-64) if q2 else t2
        r3 = np.int64(-64) if q3 else t3
        d0 = _beaten(r0, r1, r2, r3)
        d1 = _beaten(r1, r0, r2, r3)
        d2 = _beaten(r2, r0, r1, r3)
        d3 = _beaten(r3, r0, r1, r2)
        if d0 or d1 or d2 or d3:
            for p in range(4):
                if (p == 0 and d0) or (p == 1 and d1) or (p == 2 and d2) or (p == 3 and d3):
                    before = pend
                    pend = _pd_set_top_pending(mask, fw, pend, p, True)
                    fresh |= pend & ~before
                    gained += 1
                    if ev.shape[0] > 0:
                        card, _q = _pd_at(mask, fw, pend, p, 0, deck)
                        ne = _pd_record(ev, ne, EV_PEND, card, KIND_DISCARD + 4 * p, 0)
            continue
        changed = False
        if sp >= nstock and (flags & RULE_END) != 0:
            # a pending top that a real top beats (the real tops are unchanged by taking these off)
            e0 = q0 and _beaten(t0, r1, r2, r3)
            e1 = q1 and _beaten(t1, r0, r2, r3)
            e2 = q2 and _beaten(t2, r0, r1, r3)
            e3 = q3 and _beaten(t3, r0, r1, r2)
            for p in range(4):
                if (p == 0 and e0) or (p == 1 and e1) or (p == 2 and e2) or (p == 3 and e3):
                    mask, fw, pend, card = _pd_pop(mask, fw, pend, p, deck)
                    ne = _pd_record(ev, ne, EV_GONE, card, 0, 0)
                    changed = True
                    left_play = True
        which = pend if left_play else fresh
        if (pend & which) != 0 and (flags & RULE_NO_TARGET) != 0:
            mask, fw, pend, ne, off = _pd_no_target(which, pend, mask, fw, sp, deck, od, flags, ev, ne)
            if off:
                changed = True
                left_play = True
        fresh = np.uint64(0)
        if not changed:
            return mask, fw, pend, gained, ne


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_apply(a, mask, fw, pend, sp, nstock, deck, od, flags, ev, ne):
    """Apply an action of this search, then settle: (mask, fw, pend, sp, score gained, lone, events).

    ``lone``: the move only relabelled piles (the card was its pile's only card, nothing was taken
    off): the cycle guard reads it.
    """
    kind = a & 3
    gained = 0
    lone = False
    left_play = False
    if kind == KIND_DEAL:
        sp += 4
        mask |= DEAL_BITS << np.uint64(sp >> 2)
        ne = _pd_record(ev, ne, EV_DEAL, 0, KIND_DEAL, 0)
    elif kind == KIND_DISCARD:
        p = (a >> 2) & 3
        q = (a >> 4) & 3
        dy = a >> 6
        nx, _allp = _pd_reach(mask, fw, pend, p)
        mask, fw, pend, ne = _pd_take_off(mask, fw, pend, p, nx - 1, deck, ev, ne)
        mask, fw, pend, ne = _pd_take_off(mask, fw, pend, q, dy, deck, ev, ne)
        pend = _pd_set_top_pending(mask, fw, pend, p, True)
        left_play = True  # (x is new to the pending cards: the settle checks them all)
        if ev.shape[0] > 0:
            card, _q = _pd_at(mask, fw, pend, p, 0, deck)
            ne = _pd_record(ev, ne, EV_PEND, card, KIND_DISCARD + 4 * p, 0)
        _ty, y_pending = _pd_top(mask, fw, pend, q, deck)
        if y_pending:
            pend = _pd_set_top_pending(mask, fw, pend, q, False)
            if ev.shape[0] > 0:
                card, _q = _pd_at(mask, fw, pend, q, 0, deck)
                ne = _pd_record(ev, ne, EV_KEEP, card, 0, 0)
        else:
            gained = 1
    else:
        src = (a >> 2) & 3
        dst = (a >> 4) & 3
        dz = a >> 6
        mask, fw, pend, ne = _pd_take_off(mask, fw, pend, src, dz, deck, ev, ne)
        _tz, z_pending = _pd_top(mask, fw, pend, src, deck)
        mask, fw, pend, card = _pd_pop(mask, fw, pend, src, deck)
        nd, _allp = _pd_reach(mask, fw, pend, dst)
        lone = dz == 0 and nd == 0 and _nat_field(mask, src) == 0 and _nat_foreign(fw, src) == 255
        left_play = dz > 0 or nd > 0
        mask, fw, pend, ne = _pd_take_off(mask, fw, pend, dst, nd, deck, ev, ne)
        home = np.int64(deck.pbit[card])
        if home // 13 == dst:
            bit = _ONE << np.uint64(home)
            mask |= bit
            if z_pending:
                pend |= bit
        else:
            fw = (fw & ~(np.uint32(255) << np.uint32(8 * dst))) | (np.uint32(card) << np.uint32(8 * dst))
            if z_pending:
                pend |= _ONE << np.uint64(FOREIGN_PEND + dst)
        ne = _pd_record(ev, ne, EV_MOVE, card, KIND_MOVE + 4 * src + 16 * dst, 1 if z_pending else 0)
    mask, fw, pend, g2, ne = _pd_settle(mask, fw, pend, sp, nstock, deck, od, flags, ev, ne, left_play)
    return mask, fw, pend, sp, gained + g2, lone, ne


# Compiled once and called, not inlined, where a step runs once a deal (the root's settle) or once a step of
# the best line (its replay in _pd_game_line): each inlined copy of _pd_settle or _pd_apply costs Numba
# seconds of cold compile (docs/solver.md, "No reference counting, few calls").
@nb.njit(cache=True, _nrt=False)
def _pd_settle_call(mask, fw, pend, sp, nstock, deck, od, flags, ev, ne, left_play):
    """``_pd_settle``, called."""
    return _pd_settle(mask, fw, pend, sp, nstock, deck, od, flags, ev, ne, left_play)


@nb.njit(cache=True, _nrt=False)
def _pd_apply_call(a, mask, fw, pend, sp, nstock, deck, od, flags, ev, ne):
    """``_pd_apply``, called."""
    return _pd_apply(a, mask, fw, pend, sp, nstock, deck, od, flags, ev, ne)


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_height_is_one(mask, fw, p):
    """Pile p holds exactly one card."""
    f = _nat_field(mask, p)
    if _nat_foreign(fw, p) != 255:
        return f == 0
    return f != 0 and (f & (f - 1)) == 0


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_gen(mask, fw, pend, sp, nstock, deck, rules, out):
    """The actions of a settled position in search order: discards (a real card made pending with a
    beater that an action has to reach first, or a pending one), moves, the deal. Returns the count."""
    n = 0
    code = deck.code
    r0, a0 = _pd_reach(mask, fw, pend, 0)
    r1, a1 = _pd_reach(mask, fw, pend, 1)
    r2, a2 = _pd_reach(mask, fw, pend, 2)
    r3, a3 = _pd_reach(mask, fw, pend, 3)
    # with every top real and no pile of pending cards alone, the settle made every discard
    some_pending = r0 > 1 or r1 > 1 or r2 > 1 or r3 > 1 or (a0 and r0 > 0) or (a1 and r1 > 0) or \
        (a2 and r2 > 0) or (a3 and r3 > 0)
    for p in range(4):
        if not some_pending:
            break
        np_ = r0 if p == 0 else (r1 if p == 1 else (r2 if p == 2 else r3))
        allp = a0 if p == 0 else (a1 if p == 1 else (a2 if p == 2 else a3))
        if allp:
            continue  # no real card to make pending
        x, _qx = _pd_at(mask, fw, pend, p, np_ - 1, deck)
        cx = np.int64(code[x])
        for q in range(4):
            if q == p:
                continue
            nq = r0 if q == 0 else (r1 if q == 1 else (r2 if q == 2 else r3))
            for dy in range(nq):
                y, qy = _pd_at(mask, fw, pend, q, dy, deck)
                cy = np.int64(code[y])
                if (cy >> 4) != (cx >> 4) or cy <= cx:
                    continue
                if np_ == 1 and dy == 0 and not qy:
                    continue  # both tops, a real beater: the settle made it
                out[n] = KIND_DISCARD + 4 * p + 16 * q + 64 * dy
                n += 1
    strict = rules.fill == FILL_ACE
    # With the stock out pile labels no longer matter, so a move into an empty pile goes into the
    # first one, a pile of pending cards is filled only when no pile is empty (an empty one keeps
    # them: docs/solver.md), and a lone card does not move (a relabelling).
    stock_out = sp >= nstock
    first_empty = -1
    if stock_out:
        for p in range(4):
            if _nat_field(mask, p) == 0 and _nat_foreign(fw, p) == 255:
                first_empty = p
                break
    for src in range(4):
        if not (a0 or a1 or a2 or a3):
            break  # no pile to move into
        ns = r0 if src == 0 else (r1 if src == 1 else (r2 if src == 2 else r3))
        for dz in range(ns):
            if strict:
                z, _qz = _pd_at(mask, fw, pend, src, dz, deck)
                if (np.int64(code[z]) & 15) != TOP_STRENGTH:
                    continue
            if stock_out and dz == 0 and _pd_height_is_one(mask, fw, src):
                continue
            for dst in range(4):
                if dst == src:
                    continue
                if first_empty >= 0 and dst != first_empty:
                    continue
                allp = a0 if dst == 0 else (a1 if dst == 1 else (a2 if dst == 2 else a3))
                if allp:
                    out[n] = KIND_MOVE + 4 * src + 16 * dst + 64 * dz
                    n += 1
    if sp < nstock:
        out[n] = KIND_DEAL
        n += 1
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_on_lone_run(keys1, keys2, keys3, lone, k, n1, n2, n3):
    """Cycle guard (``common._on_lone_run`` with the pending word): the position is that of a frame on
    the current run of relabelling moves."""
    j = k
    while True:
        if keys1[j] == n1 and keys2[j] == n2 and keys3[j] == n3:
            return True
        if j == 0 or not lone[j - 1]:
            return False
        j -= 1


@nb.njit(cache=True, _nrt=False)
def top_rank_bits(deck):
    """The native bits of the cards of the top rank (never discarded)."""
    topm = np.uint64(0)
    for b in range(52):
        if (np.int64(deck.pcode[b]) & 15) == TOP_STRENGTH:
            topm |= _ONE << np.uint64(b)
    return topm


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_lock_bound(mask, fw, pend, sp, deck, od, topm, best):
    """The lock bound of a position (docs/solver.md, "The lock bound"): when no pile can ever empty
    again, 48 less the real cards no line can ever discard; 48 when that is not proved, or when it
    cannot come out at ``best`` or lower (fewer candidates than it needs: a shortcut only).

    While no pile is empty nothing moves, so a card stays on its pile (a stock card goes to the pile
    of its native field). A card *stays* (is never discarded) if it lies under a card that stays
    or is of the top rank (an *anchor*) on its pile, or if every stronger card of its suit in play
    is on its own pile or lies under an anchor of another pile; grown until the anchors stop
    covering more. The lock holds when every pile has a real anchor on the table. Pending cards may
    be absent in the game (so never anchors and never counted) or present (so possible beaters).
    """
    dealt = (_ONE << np.uint64((sp >> 2) + 1)) - _ONE
    stock = ~(dealt * DEAL_BITS) & MASK52
    real = mask & ~(pend & MASK52)
    field = np.uint64(0x1FFF)
    fh0 = np.uint64(0)  # the native bit of pile p's foreign bottom (0: none)
    fh1 = np.uint64(0)
    fh2 = np.uint64(0)
    fh3 = np.uint64(0)
    freal = np.uint64(0)  # those of the real foreign bottoms
    for p in range(4):
        fb = _nat_foreign(fw, p)
        h = np.uint64(0)
        if fb != 255:
            h = _ONE << np.uint64(deck.pbit[fb])
            if ((pend >> np.uint64(FOREIGN_PEND + p)) & _ONE) == 0:
                freal |= h
        if (real & (field << np.uint64(13 * p))) == 0 and (h & freal) == 0:
            return 48  # no real card on pile p: it is empty in the game, or may be
        if p == 0:
            fh0 = h
        elif p == 1:
            fh1 = h
        elif p == 2:
            fh2 = h
        else:
            fh3 = h
    cand = (real | stock | freal) & ~topm  # the cards that may be counted
    if _popcount(cand) < 48 - best:
        return 48
    live = mask | stock | fh0 | fh1 | fh2 | fh3
    ps0 = (field & (mask | stock)) | fh0  # the cards of each pile, on the table or bound for it
    ps1 = ((field << np.uint64(13)) & (mask | stock)) | fh1
    ps2 = ((field << np.uint64(26)) & (mask | stock)) | fh2
    ps3 = ((field << np.uint64(39)) & (mask | stock)) | fh3
    stays = np.uint64(0)
    last_covered = ~np.uint64(0)
    while True:
        anchors = topm | stays
        covered = np.uint64(0)
        anchored = 0
        for p in range(4):
            fh = fh0 if p == 0 else (fh1 if p == 1 else (fh2 if p == 2 else fh3))
            a = _nat_field(real & anchors, p)
            if a != 0:
                below = np.uint64(_nat_field(mask, p) & ((np.int64(1) << _high_bit(a)) - 1))
                covered |= (below << np.uint64(13 * p)) | fh
                anchored += 1
            elif (fh & freal & anchors) != 0:
                anchored += 1
        if covered == last_covered:
            # (whether a card stays reads the covered cards only: no more will)
            return 48 - _popcount(stays) if anchored == 4 else 48
        last_covered = covered
        rest = cand & ~stays
        while rest != 0:
            b = _high_bit(rest)
            bit = _ONE << np.uint64(b)
            rest &= ~bit
            if (bit & covered) != 0:
                stays |= bit
                continue
            if (bit & (mask | stock)) != 0:
                q = b // 13
            else:
                q = 0 if bit == fh0 else (1 if bit == fh1 else (2 if bit == fh2 else 3))
            own = ps0 if q == 0 else (ps1 if q == 1 else (ps2 if q == 2 else ps3))
            if (od.stronger[b] & live & ~own & ~covered) == 0:
                stays |= bit


@nb.njit(cache=True, _nrt=False)
def _search_pending(nstock, start_score, cap, deck, od, rules, flags, node_limit, table, epoch, work):
    """The search over pending discards from a fresh deal (no discard made yet).

    ``flags``: the rules of ``optional`` that take pending cards off (RULE_END, RULE_NO_TARGET,
    RULE_STRICT_PILES), the lock bound's pruning (RULE_LOCK) and the skips of covered positions
    (RULE_COVER: the same cards; RULE_COVER_REAL: some pending cards taken off).
    ``cap``: no line of the game scores more (48, or the last deal's cap); the
    search stops when it reaches it (a line of this search is a game line with the same score).
    Returns (best score, best line length, nodes, status); ``work.best_line``
    holds the line in this search's codes (``_pd_game_line`` turns it into the game's).
    """
    acts, nacts, idx, path, lone, keys1, keys2, keys3, scores = work.acts, work.nacts, work.idx, work.path, \
        work.lone, work.keys1, work.keys2, work.keys3, work.scores
    best_line = work.best_line
    no_ev = work.events[:0]
    mask, fw, pend, gained, _ne = _pd_settle_call(DEAL_BITS, NO_FOREIGN4, np.uint64(0), 0, nstock, deck, od,
                                                  flags, no_ev, 0, True)
    start_score += gained
    topm = top_rank_bits(deck)
    use_lock = (flags & RULE_LOCK) != 0
    match = MATCH_COVER if (flags & RULE_COVER) != 0 else MATCH_EXACT
    use_real = (flags & RULE_COVER_REAL) != 0
    # (with RULE_COVER_REAL the table's second half is _tt3_probe_real's)
    buckets = table.mask >> np.uint64(1) if use_real else table.mask
    best = start_score
    best_len = 0
    nodes = 1
    status = STATUS_SOLVED
    _tt3_probe(table, mask, fw, pend, epoch, 0, match, buckets, 0)
    if use_real:
        _tt3_probe_real(table, mask, fw, pend, epoch, 0)
    if best >= cap:
        return best, 0, nodes, status
    keys1[0] = mask
    keys2[0] = fw
    keys3[0] = pend
    scores[0] = start_score
    nacts[0] = _pd_gen(mask, fw, pend, 0, nstock, deck, rules, acts[0])
    idx[0] = 0
    k = 0
    sp = np.int64(0)
    while True:
        if idx[k] >= nacts[k]:
            if k == 0:
                break
            k -= 1
            continue
        a = acts[k, idx[k]]
        idx[k] += 1
        mask = keys1[k] & MASK52
        sp = np.int64(keys1[k] >> np.uint64(52))
        fw = keys2[k]
        pend = keys3[k]
        mask, fw, pend, sp, gained, is_lone, _ne = _pd_apply(a, mask, fw, pend, sp, nstock, deck, od, flags,
                                                             no_ev, 0)
        score = scores[k] + gained
        path[k] = a
        lone[k] = is_lone
        n1 = mask | (np.uint64(sp) << np.uint64(52))
        skip = False
        if is_lone:
            skip = _pd_on_lone_run(keys1, keys2, keys3, lone, k, n1, fw, pend)
        if not skip:
            # (a covered position has no line that the covering one lacks: docs/solver.md, "Covered
            # positions"; like a position seen before, it is not searched again)
            skip = _tt3_probe(table, n1, fw, pend, epoch, sp, match, buckets, 0)
            if not skip and use_real:
                # (nor is one covered by a position that still holds some of its taken-off pending cards)
                skip = _tt3_probe_real(table, n1, fw, pend, epoch, sp)
        if skip:
            continue
        if node_limit > 0 and nodes >= node_limit:
            status = STATUS_GAVE_UP
            break
        if k + 64 >= MAX_DEPTH:
            # (the game's line adds at most 48 discards to this one: it must fit MAX_DEPTH)
            status = STATUS_GAVE_UP
            break
        nodes += 1
        if score > best:
            best = score
            best_len = k + 1
            for i in range(k + 1):
                best_line[i] = path[i]
            if best >= cap:
                break
        # the lock bound, at the positions a deal reaches only (it changes most with a deal, and a
        # bound at every position cost more than it pruned: docs/solver.md, "The lock bound")
        if use_lock and (a & 3) == KIND_DEAL and _pd_lock_bound(mask, fw, pend, sp, deck, od, topm, best) <= best:
            continue  # no line from here scores more than the best found
        k += 1
        keys1[k] = n1
        keys2[k] = fw
        keys3[k] = pend
        scores[k] = score
        nacts[k] = _pd_gen(mask, fw, pend, sp, nstock, deck, rules, acts[k])
        idx[k] = 0
    return best, best_len, nodes, status


@nb.njit(cache=True)
def _pd_game_line(line, nline, nstock, deck, od, flags, ev, scratch):
    """Turn a line of ``_search_pending`` into a line of the game, in place: its new length.

    The replay records every event (``ev``: int32[rows, 4], rows enough for the line's events;
    ``scratch``: int32[>= nline]). Each time a card is made pending opens an episode of it; the
    episode ends when it turns real (the card was kept: no discard, its moves are the game's) or is
    taken off or the line ends (the card was discarded where it became pending: that discard is
    the game's, its moves while pending are not). Deals and the moves of real cards are the game's.
    docs/solver.md proves that the result is a legal line with the same score.
    """
    for i in range(nline):
        scratch[i] = line[i]
    mask, fw, pend, _g, ne = _pd_settle_call(DEAL_BITS, NO_FOREIGN4, np.uint64(0), 0, nstock, deck, od, flags, ev, 0,
                                             True)
    sp = np.int64(0)
    for i in range(nline):
        mask, fw, pend, sp, _g, _lone, ne = _pd_apply_call(scratch[i], mask, fw, pend, sp, nstock, deck, od, flags,
                                                           ev, ne)
    # 1 = in the game's line, 0 = not, -1 = not decided yet (a pending card's move)
    opened = np.full(52, -1, np.int64)
    for j in range(ne):
        kind = ev[j, 0]
        if kind == EV_PEND:
            opened[ev[j, 1]] = j
            ev[j, 3] = -1
        elif kind == EV_MOVE:
            ev[j, 3] = -1 if ev[j, 3] == 1 else 1
        elif kind == EV_DEAL:
            ev[j, 3] = 1
        else:
            ev[j, 3] = 0
            c = ev[j, 1]
            if kind == EV_GONE and opened[c] < 0:
                continue  # (a card taken off is always pending; kept for safety)
            _pd_close(ev, opened[c], j, c, kind == EV_KEEP)
            opened[c] = -1
    for c in range(52):
        if opened[c] >= 0:
            _pd_close(ev, opened[c], ne, c, False)
    n = 0
    for j in range(ne):
        if ev[j, 3] == 1:
            line[n] = ev[j, 2]
            n += 1
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _pd_close(ev, j0, j1, card, kept):
    """Decide the episode of ``card`` that opened at event j0 and ends at j1 (see _pd_game_line)."""
    ev[j0, 3] = 0 if kept else 1
    for j in range(j0 + 1, j1):
        if ev[j, 0] == EV_MOVE and ev[j, 1] == card and ev[j, 3] == -1:
            ev[j, 3] = 1 if kept else 0
