"""The best line of a search turned into the result: lone-move runs shortened, moves and decisions counted."""

from __future__ import annotations

import numba as nb
import numpy as np

from ..actions import KIND_MOVE
from ..rules import FILL_ACE, TOP_STRENGTH
from .common import MASK52, flags_of, tops_of
from .native import (
    _nat_apply_call,
    _nat_count,
    _nat_legal_count_call,
    _nat_slot_pattern,
)
from .position import _apply, _gen_actions, _only_deal


@nb.njit(cache=True, _nrt=False)
def _finish_line_native(line, nline, nstock, deck, rules, small, bfs, best_keys1, best_keys2, best_nacts):
    """``_finish_line`` on native piles, for a line from a fresh deal: (length, moves, decisions).

    The line's positions are those the search kept along it (``best_keys1``/``best_keys2``,
    frames 0..nline), so nothing is replayed but the shortened runs of lone moves. Each run of
    lone moves is cut to a shortest run to the same position (``_lone_path``), written in place;
    the shorter run ends where the old one did (the same lone cards in the same piles is the same
    position), so the frames still hold every position after it. While the stock lasts, a
    frame's action count (``best_nacts``, what ``_nat_gen`` listed) is its legal count: the
    search lists every legal action there (only with the stock out does it leave some out), so
    only the positions with the stock out, and those inside a shortened run, are counted again.
    ``small`` (int32[3, 64]) and ``bfs`` (int32[64, 6]) are scratch.
    """
    # the steps of a shortened run call helpers compiled once (native._nat_*_call) instead of inlining
    # them: each inlined copy of _nat_apply or _nat_legal_count cost 10-15 s of Numba's cold compile
    tops, flags = tops_of(deck), flags_of(rules)
    start = small[0, :4]
    goal = small[1, :4]
    path = small[2]
    moves = 0
    decisions = 0
    n = 0
    i = 0
    while True:
        mask = best_keys1[i] & MASK52
        fw = best_keys2[i]
        sp = np.int64(best_keys1[i] >> np.uint64(52))
        if i < nline and (line[i] & 3) == KIND_MOVE and _nat_count(mask, fw, (line[i] >> 2) & 3) == 1:
            # a run of lone moves, frames i..j: the shortest run from where it starts to where it ends
            j = i + 1
            while j < nline and (line[j] & 3) == KIND_MOVE and \
                    _nat_count(best_keys1[j] & MASK52, best_keys2[j], (line[j] >> 2) & 3) == 1:
                j += 1
            _nat_slot_pattern(mask, fw, deck, start)
            _nat_slot_pattern(best_keys1[j] & MASK52, best_keys2[j], deck, goal)
            m = _lone_path(start, goal, rules.leftmost, rules.fill == FILL_ACE, rules.strength, path, bfs)
            if m < 0 or m > j - i:
                for t in range(i, j):  # the run as it is: its positions are frames
                    if _frame_choices(t, nline, nstock, best_keys1, best_keys2, best_nacts, tops, flags) > 1:
                        decisions += 1
                    line[n] = line[t]
                    n += 1
                moves += j - i
            else:
                for t in range(m):
                    b = path[t]
                    if _choices(mask, fw, sp, nstock, tops, flags) > 1:
                        decisions += 1
                    mask, fw, sp, _nd, _full, _lone = _nat_apply_call(b, mask, fw, sp, deck)
                    line[n] = b
                    n += 1
                moves += m
            i = j
            continue
        if _frame_choices(i, nline, nstock, best_keys1, best_keys2, best_nacts, tops, flags) > 1:
            decisions += 1
        if i >= nline:
            break
        if (line[i] & 3) == KIND_MOVE:
            moves += 1
        line[n] = line[i]
        n += 1
        i += 1
    return n, moves, decisions


@nb.njit(cache=True, inline="always", _nrt=False)
def _choices(mask, fw, sp, nstock, tops, flags):
    """The choices at a native position: its legal actions, plus stopping once the stock is empty."""
    return _nat_legal_count_call(mask, fw, sp, nstock, tops, flags) + (1 if sp == nstock else 0)


@nb.njit(cache=True, inline="always", _nrt=False)
def _frame_choices(i, nline, nstock, best_keys1, best_keys2, best_nacts, tops, flags):
    """``_choices`` at frame i of a native line, from the frame's action count while the stock lasts;
    0 at the line's end with stock left (the player did not stop there: no decision)."""
    sp = np.int64(best_keys1[i] >> np.uint64(52))
    if sp == nstock:
        return _choices(best_keys1[i] & MASK52, best_keys2[i], sp, nstock, tops, flags)
    if i < nline:
        return np.int64(best_nacts[i])
    return np.int64(0)


@nb.njit(cache=True, inline="always", _nrt=False)
def _is_decision(piles, h, sp, nstock, rules, scratch, last):
    """1 when a point of a line is a decision point (as in policies.py), else 0.

    A decision point is one where the player had more than one choice: the
    legal actions plus, once the stock is empty, stopping. ``last``: the end
    of the line, which counts only when the player stopped by choice.
    """
    if _only_deal(h, rules.optional):
        n = 1 if sp < nstock else 0
    else:
        n = _gen_actions(piles, h, sp, nstock, rules, scratch, True)
    if sp == nstock:
        n += 1  # stopping is a choice once the stock is empty
    return 1 if n > 1 and (not last or sp == nstock) else 0


@nb.njit(cache=True, _nrt=False)
def _lone_path(start, goal, leftmost, aces_only, strength, out, bfs):
    """Shortest run of lone moves turning slot pattern ``start`` into ``goal``; returns its length.

    A slot pattern gives, per pile, the lone card (0..51), -1 for an empty pile
    or -2 for a pile of two or more (which a lone move never touches). Moves
    are written to ``out`` as action codes; -1 when ``goal`` is unreachable.
    ``aces_only`` (strict): only a card of the top rank may move. ``bfs``
    (int32[64, 6]) is scratch for the queue: pattern, parent, move.
    """
    cap = 64
    q = bfs[:, 0:4]
    parent = bfs[:, 4]
    via = bfs[:, 5]
    for p in range(4):
        q[0, p] = start[p]
    parent[0] = -1
    nq = 1
    head = 0
    found = -1
    while head < nq:
        same = True
        for p in range(4):
            if q[head, p] != goal[p]:
                same = False
        if same:
            found = head
            break
        first_empty = -1
        for p in range(4):
            if q[head, p] == -1:
                first_empty = p
                break
        for src in range(4):
            if q[head, src] < 0 or (aces_only and strength[q[head, src]] != TOP_STRENGTH):
                continue
            for dst in range(4):
                if q[head, dst] != -1 or (leftmost and dst != first_empty):
                    continue
                if nq >= cap:
                    continue
                for p in range(4):
                    q[nq, p] = q[head, p]
                q[nq, dst] = q[head, src]
                q[nq, src] = -1
                seen = False
                for j in range(nq):
                    eq = True
                    for p in range(4):
                        if q[j, p] != q[nq, p]:
                            eq = False
                            break
                    if eq:
                        seen = True
                        break
                if not seen:
                    parent[nq] = head
                    via[nq] = KIND_MOVE + 4 * src + 16 * dst
                    nq += 1
        head += 1
    if found < 0:
        return -1
    n = 0
    j = found
    while parent[j] >= 0:
        n += 1
        j = parent[j]
    j = found
    i = n - 1
    while parent[j] >= 0:
        out[i] = via[j]
        i -= 1
        j = parent[j]
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _slot_pattern(piles, h, out):
    """Per pile: its lone card (0..51), -1 when empty, -2 when it holds two or more cards."""
    for p in range(4):
        out[p] = -1 if h[p] == 0 else (piles[p, 0] if h[p] == 1 else -2)


@nb.njit(cache=True, inline="always", _nrt=False)
def _set_slot_pattern(piles, h, pattern):
    """Put the lone cards and empty piles of ``pattern`` back (piles of two or more are kept)."""
    for p in range(4):
        if pattern[p] == -1:
            h[p] = 0
        elif pattern[p] >= 0:
            h[p] = 1
            piles[p, 0] = pattern[p]


@nb.njit(cache=True, inline="always", _nrt=False)
def _lone_move(piles, h, a):
    """Move the lone card of pile ``(a >> 2) & 3`` into the empty pile ``(a >> 4) & 3``.

    A lone move discards nothing: the same cards are on top before and after.
    """
    src = (a >> 2) & 3
    dst = (a >> 4) & 3
    piles[dst, 0] = piles[src, 0]
    h[dst] = 1
    h[src] = 0


@nb.njit(cache=True, _nrt=False)
def _finish_line(piles, h, stock, nstock, rules, line, nline, small, bfs, scratch, work):
    """Replay the best line from (piles, h) and shorten its runs of lone moves: (length, moves, decisions).

    The search may wander through several relabellings (a run of lone moves)
    before the step that needed one; each run is replaced by a shortest run to
    the same position (``_lone_path``), so the rest of the line and its score
    are unchanged. ``line[:length]`` becomes the final line, written in place
    (a shortened run is never longer, so no action is overwritten before it is
    read); the same replay counts its move actions and decision points
    (``_is_decision``). ``piles``/``h`` are left at the end of the line.
    ``small``, ``bfs`` and ``scratch`` are scratch; discards go onto ``work``'s undo stack.
    """
    start = small[0, :4]
    goal = small[1, :4]
    path = small[2]
    sp = 0
    rtop = 0
    n = 0
    moves = 0
    decisions = 0
    i = 0
    while i < nline:
        a = line[i]
        if (a & 3) == KIND_MOVE and h[(a >> 2) & 3] == 1:
            # a run of lone moves: where it ends, then the shortest run from where it starts
            _slot_pattern(piles, h, start)
            j = i
            while j < nline and (line[j] & 3) == KIND_MOVE and h[(line[j] >> 2) & 3] == 1:
                _lone_move(piles, h, line[j])
                j += 1
            _slot_pattern(piles, h, goal)
            m = _lone_path(start, goal, rules.leftmost, rules.fill == FILL_ACE, rules.strength, path, bfs)
            keep = m < 0 or m > j - i
            if keep:
                m = j - i
            _set_slot_pattern(piles, h, start)
            for t in range(m):
                b = line[i + t] if keep else path[t]
                decisions += _is_decision(piles, h, sp, nstock, rules, scratch, False)
                moves += 1
                _lone_move(piles, h, b)
                line[n] = b
                n += 1
            i = j
            continue
        decisions += _is_decision(piles, h, sp, nstock, rules, scratch, False)
        if (a & 3) == KIND_MOVE:
            moves += 1
        sp, rtop = _apply(a, piles, h, stock, sp, rules, work, rtop)
        line[n] = a
        n += 1
        i += 1
    decisions += _is_decision(piles, h, sp, nstock, rules, scratch, True)
    return n, moves, decisions
