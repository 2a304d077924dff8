"""The generic search: depth first over positions as piles and heights, with an undo stack (docs/solver.md)."""

from __future__ import annotations

import numba as nb
import numpy as np

from ..actions import KIND_DEAL, KIND_MOVE
from ..game import WIN_SCORE
from ..rules import FILL_ACE, FILL_ANY, TOP_STRENGTH
from .bounds import BOUND_FROM, _stock_max, _upper_bound
from .common import MASK52, MAX_DEPTH, STATUS_GAVE_UP, STATUS_SOLVED, _on_lone_run
from .position import (
    _apply,
    _beaten_buried_move,
    _gen_actions,
    _gen_actions_inline,
    _key,
    _key_of,
    _only_deal,
    _undo,
)
from .table import _tt_seen_or_add

# The rules of the generic search for ``easy`` (docs/solver.md, "Easy"), a bit set beside
# optional.RULE_* (the same ``flags`` word), so that each can be switched off and measured alone
RULE_EASY_END = 8  # stock out: a buried card a top beats is moved (and so discarded) at once, alone
# the last four cards of four suits cap the score: the search stops there (every variant and
# restriction, either discard rule; optional.py and pending.py use it too)
RULE_LAST_DEAL_CAP = 16
EASY_RULES = RULE_EASY_END | RULE_LAST_DEAL_CAP
# stock left, no solver restriction: a buried card a top beats goes at once, alone, when it and
# every card under it are the weakest cards of their suits in play (docs/solver.md, "Inert cards";
# only native_easy.py reads it: the generic search, its twin, does not)
RULE_EASY_INERT = 512


def easy_rule_flags(rules) -> int:
    """The easy rules of a rule set (``rules.Rules``): EASY_RULES for ``easy`` with forced discards
    (with or without solver restrictions: their proofs hold under them), and RULE_EASY_INERT as well
    when there is no restriction (its proof needs none); else 0."""
    if rules.fill != FILL_ANY or rules.optional_discards:
        return 0
    restricted = rules.sensible or rules.leftmost or rules.must_fill
    return EASY_RULES if restricted else EASY_RULES | RULE_EASY_INERT


@nb.njit(cache=True, inline="always", _nrt=False)
def _last_deal_cap(stock, nstock, strength, code):
    """The best score any line can reach, as the last four cards of the stock limit it (docs/solver.md, "Easy").

    If those four cards are of four suits, the game ends with the last deal: it fills every
    pile, no two tops share a suit, so nothing is discarded and nothing can move. Those four
    cards stay, and so does every card of the top rank: the score is at most 48 minus the
    last four's cards below the top rank. Otherwise (or with fewer than four cards to deal)
    the cap is 48.
    """
    if nstock < 4:
        return WIN_SCORE
    s0 = code[stock[nstock - 4]] >> 4
    s1 = code[stock[nstock - 3]] >> 4
    s2 = code[stock[nstock - 2]] >> 4
    s3 = code[stock[nstock - 1]] >> 4
    if s0 == s1 or s0 == s2 or s0 == s3 or s1 == s2 or s1 == s3 or s2 == s3:
        return WIN_SCORE
    below = 0
    for i in range(nstock - 4, nstock):
        if strength[stock[i]] != TOP_STRENGTH:
            below += 1
    return WIN_SCORE - below


@nb.njit(cache=True, _nrt=False)
def _search(stock, nstock, smax, piles, h, start_score, native, rules, node_limit, table, epoch, work, top_mask,
            flags):
    """Depth-first search from the position (piles, h, stock[0:nstock]); see docs/solver.md.

    Args:
        stock, nstock: the stock (next card first) and its length
        smax:          scratch for the strict bound's stock table (bounds._stock_max)
        piles, h:      the start position; scratch, its content is undefined afterwards
        start_score:   cards already discarded
        native:        int8[52], the pile each card is (or will be) dealt to (the key's foreign bottoms)
        rules:         SearchRules
        node_limit:    positions to search at most; <= 0 for no limit
        table, epoch:  the transposition table and this search's epoch in it
        work:          Work buffers; ``work.best_line[:length]`` gets the best line's action codes
        top_mask:      the cards of the top rank, as bits (the strict bound)
        flags:         the RULE_* bits on (easy_rule_flags; other bits are ignored)

    Returns (best score, best line length, nodes, status).
    """
    strength, code, fill, optional, sensible, leftmost, must_fill = rules
    acts, nacts, idx, path, lone, keys1, keys2, rbase = work.acts, work.nacts, work.idx, work.path, work.lone, \
        work.keys1, work.keys2, work.rbase
    rec_card = work.rec_card
    best_line = work.best_line
    sp = 0
    rtop = 0
    score = start_score
    best = score
    best_len = 0
    nodes = 1
    status = STATUS_SOLVED
    k1, k2 = _key(piles, h, sp, nstock, native)
    _tt_seen_or_add(table, k1, k2, epoch, sp)
    easy_end = (flags & RULE_EASY_END) != 0
    # a win, or the cap the last four cards set: nothing can beat it
    cap = _last_deal_cap(stock, nstock, strength, code) if (flags & RULE_LAST_DEAL_CAP) != 0 else WIN_SCORE
    if best >= cap:
        return best, 0, nodes, status
    # the stock table of the strict bound is worked out when the bound is first needed
    smax_ready = False
    if fill == FILL_ACE and best >= BOUND_FROM:
        _stock_max(stock, nstock, code, smax)
        smax_ready = True
        if _upper_bound(piles, h, sp, smax, strength, fill, k1 & MASK52, top_mask) <= best:
            return best, 0, nodes, status
    keys1[0] = k1
    keys2[0] = k2
    # as below in the loop: the endgame rule's move alone, or every action
    a = _beaten_buried_move(piles, h, k1 & MASK52) if easy_end and sp == nstock else -1
    if a >= 0:
        acts[0, 0] = a
        nacts[0] = 1
    else:
        nacts[0] = _gen_actions(piles, h, sp, nstock, rules, acts[0], False)
    idx[0] = 0
    k = 0
    while True:
        if idx[k] >= nacts[k]:
            # every child of the position at depth k is done: step back
            if k == 0:
                break
            k -= 1
            score -= rtop - rbase[k]
            sp = _undo(path[k], piles, h, sp, work, rtop, rbase[k])
            rtop = rbase[k]
            continue
        a = acts[k, idx[k]]
        idx[k] += 1
        is_lone = (a & 3) == KIND_MOVE and h[(a >> 2) & 3] == 1
        rbase[k] = rtop
        sp, rtop = _apply(a, piles, h, stock, sp, rules, work, rtop)
        score += rtop - rbase[k]
        path[k] = a
        lone[k] = is_lone
        # a leaf (the stock is out and no pile is empty: no action is left) is scored
        # without a key or a table entry: meeting it again costs no more than that
        full = _only_deal(h, optional)
        leaf = full and sp == nstock
        skip = False
        if not leaf:
            # the table mask of the child: the parent's, plus a deal's cards, minus the discards
            mask = keys1[k] & MASK52
            if (a & 3) == KIND_DEAL:
                for i in range(sp - 4, sp):
                    mask |= np.uint64(1) << np.uint64(stock[i])
            for i in range(rbase[k], rtop):
                mask &= ~(np.uint64(1) << np.uint64(rec_card[i]))
            n1, n2 = _key_of(mask, piles, h, sp, nstock, native)
            if is_lone:
                skip = _on_lone_run(keys1, keys2, lone, k, n1, n2)
            # A table probe is the costliest part of a node (a cache miss). A position with no
            # empty pile has one child, a deal, so every other one of them (by stock position)
            # skips the table: a position met again is then caught one deal later, at its child.
            if not skip and not (full and (sp & 4) != 0):
                skip = _tt_seen_or_add(table, n1, n2, epoch, sp)
        if not skip:
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
            # the bound (strict only) is checked where there is a choice: dead cards stay dead,
            # so a cut missed at a position with one action is made at the next choice
            go = not leaf
            if go and fill == FILL_ACE and best >= BOUND_FROM and not full:
                if not smax_ready:
                    _stock_max(stock, nstock, code, smax)
                    smax_ready = True
                go = _upper_bound(piles, h, sp, smax, strength, fill, n1 & MASK52, top_mask) > best
            if go:
                k += 1
                keys1[k] = n1
                keys2[k] = n2
                if full:
                    # no pile is empty, so no move: dealing is the only action (a call to
                    # _gen_actions costs as much as the rest of such a node)
                    acts[k, 0] = KIND_DEAL
                    nacts[k] = 1
                else:
                    a = -1
                    if easy_end and sp == nstock:
                        # easy, stock out: a buried card a top beats goes (and is discarded) at once,
                        # the only child searched (docs/solver.md, "Easy", the endgame rule)
                        a = _beaten_buried_move(piles, h, n1 & MASK52)
                    if a >= 0:
                        acts[k, 0] = a
                        nacts[k] = 1
                    else:
                        # (inlined here: a call that passes arrays costs as much as a deal)
                        nacts[k] = _gen_actions_inline(piles, h, sp, nstock, rules, acts[k], False)
                idx[k] = 0
                continue
        # the child was seen before, is a leaf or cannot beat the best: enter it with no
        # action left, so that the step back above undoes it (one inlined undo, not two)
        k += 1
        nacts[k] = 0
        idx[k] = 0
    return best, best_len, nodes, status
