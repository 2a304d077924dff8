"""The search with optional discards on native piles, and the dominance rules that cut it (docs/solver.md).

Under ``discards=optional`` every discard may be made or left, at any later
moment while it is legal. The search takes a discard at once, without
branching, whenever discarding can be proved never to be worse (a *safe*
discard: ``_opt_settle``); every other discard is one more action. Each rule
is proved in docs/solver.md ("Optional discards") and can be switched off
alone (``flags``), which is how the tests hold the search to its exhaustive
twins and how their cut is measured. Positions are native (``native.py``): a
52-bit mask over (pile, place in deal order) and the foreign bottoms.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..actions import KIND_DEAL, KIND_DISCARD
from ..rules import FILL_ACE, FILL_ANY
from .common import (
    MASK52,
    MAX_DEPTH,
    STATUS_GAVE_UP,
    STATUS_SOLVED,
    _beaten,
    _high_bit,
    _on_lone_run,
)
from .generic import RULE_LAST_DEAL_CAP
from .native import (
    DEAL_BITS,
    NO_FOREIGN4,
    _nat_end_key,
    _nat_field,
    _nat_foreign,
    _nat_gen,
)
from .table import _tt_seen_or_add

# which dominance rules are on (a bit set, so that each can be switched off and measured alone)
RULE_END = 1  # with the stock out every discard is safe
RULE_NO_TARGET = 2  # a card with no weaker card of its suit in play is safe to discard
RULE_STRICT_PILES = 4  # strict (with RULE_NO_TARGET): weaker cards dealt to the card's own pile are no targets
ALL_RULES = RULE_END | RULE_NO_TARGET | RULE_STRICT_PILES  # the bits _opt_settle and _pd_settle read
RULE_PENDING = 32  # search the discards as pending discards (pending.py; the rules above take pending cards off)
# solve the deal with forced discards first: a forced line is a line under optional discards too,
# so its score is a lower bound, and the value itself when it reaches the cap (48, or the last
# deal's cap: RULE_LAST_DEAL_CAP); the optional search runs only when it does not (core.py)
RULE_FORCED_FIRST = 64
# not a rule: every discard is taken at once, which is how _opt_full_line writes a forced-discard
# line out as a line of optional discards (the diamond argument in docs/solver.md: the forced
# discards of a position end in the same position whatever their order)
FORCED_LINE = 128
# prune a position of the pending search whose lock bound (pending._pd_lock_bound: no pile can ever
# empty again, and so many cards can never be discarded) is no better than the best score found
RULE_LOCK = 256
# the pending search skips a position whose cards lie as in a position of its table and whose
# pending cards are a subset of that one's (table._tt3_covered_or_add): it has no line the other
# lacks (docs/solver.md, "Covered positions")
RULE_COVER = 1024
# ... and one whose cards are those of a position of its table less some of that one's pending cards, in
# the same places, its own pending cards pending there too (table._tt3_probe_real: the taken-off pending
# cards were that position's to keep or not, so it has every line this one has)
RULE_COVER_REAL = 2048


def rule_flags(rules) -> int:
    """The rules proved for a rule set (``rules.Rules``) with optional discards (0 for forced discards).

    The last deal's cap and the forced search first hold under every restriction (neither
    depends on which moves are allowed). The dominance rules (safe discards) hold under none
    (``sensible``, ``leftmost`` and ``must_fill`` make an empty pile or a lone card matter,
    which their proofs rely on not mattering).
    """
    if not rules.optional_discards:
        return 0
    always = RULE_LAST_DEAL_CAP | RULE_FORCED_FIRST
    if rules.restrictions or rules.fill == FILL_ANY:
        # (easy with optional discards goes to the generic search, which reads the cap alone)
        return always
    if rules.fill == FILL_ACE:
        # strict: the pending-discards search (pending.py), 9x fewer positions and about 2x faster
        return always | ALL_RULES | RULE_PENDING | RULE_LOCK | RULE_COVER | RULE_COVER_REAL
    # standard and reverse: the pending search too, since the forced search first settles the deals
    # that are won (where this one was the faster) and with a table of 16 MiB (table.tt_bits_for),
    # it is 2-3x faster on the rest (docs/solver.md, "The pending search for standard and reverse")
    return always | RULE_END | RULE_NO_TARGET | RULE_PENDING | RULE_LOCK | RULE_COVER | RULE_COVER_REAL


@nb.njit(cache=True, inline="always", _nrt=False)
def _opt_top(mask, fw, p, deck):
    """(code, native bit) of the top card of pile p; (-64, -1) for an empty pile."""
    f = _nat_field(mask, p)
    if f != 0:
        b = 13 * p + _high_bit(f)
        return np.int64(deck.pcode[b]), b
    fb = _nat_foreign(fw, p)
    if fb != 255:
        return np.int64(deck.code[fb]), np.int64(deck.pbit[fb])
    return np.int64(-64), np.int64(-1)


@nb.njit(cache=True, inline="always", _nrt=False)
def _opt_remove_top(mask, fw, p, deck):
    """Take the top card off pile p (a discard): (mask, fw)."""
    f = _nat_field(mask, p)
    if f != 0:
        return mask & ~(np.uint64(1) << np.uint64(13 * p + _high_bit(f))), fw
    return mask, fw | (np.uint32(255) << np.uint32(8 * p))


@nb.njit(cache=True, inline="always", _nrt=False)
def _opt_in_play(mask, fw, sp, deck):
    """Native bits of the cards not discarded: on the table (own pile or foreign bottom) or not dealt yet."""
    dealt_field = (np.uint64(1) << np.uint64((sp >> 2) + 1)) - np.uint64(1)
    live = (~(dealt_field * DEAL_BITS) & MASK52) | mask
    for p in range(4):
        fb = _nat_foreign(fw, p)
        if fb != 255:
            live |= np.uint64(1) << np.uint64(deck.pbit[fb])
    return live


@nb.njit(cache=True, inline="always", _nrt=False)
def _opt_safe(b, live, sp, nstock, od, flags):
    """The discardable top card (native bit b) can be discarded at once without loss (docs/solver.md);
    with FORCED_LINE in ``flags`` every discard is taken (the replay of a forced-discard line)."""
    if (flags & FORCED_LINE) != 0:
        return True
    if sp >= nstock:
        return (flags & RULE_END) != 0
    if (flags & RULE_NO_TARGET) != 0:
        targets = od.weaker_other[b] if (flags & RULE_STRICT_PILES) != 0 else od.weaker[b]
        if (targets & live) == 0:
            return True
    return False


@nb.njit(cache=True, inline="always", _nrt=False)
def _opt_settle(mask, fw, sp, nstock, deck, od, flags, out, n):
    """Make every safe discard, one at a time (lowest pile first), writing ``x p`` codes to ``out[n:]``
    when ``out`` is given (len > 0).

    Returns (mask, fw, discards, piles empty, discardable tops left).
    """
    nd = 0
    while True:
        t0, b0 = _opt_top(mask, fw, 0, deck)
        t1, b1 = _opt_top(mask, fw, 1, deck)
        t2, b2 = _opt_top(mask, fw, 2, deck)
        t3, b3 = _opt_top(mask, fw, 3, deck)
        d0 = _beaten(t0, t1, t2, t3)
        d1 = _beaten(t1, t0, t2, t3)
        d2 = _beaten(t2, t0, t1, t3)
        d3 = _beaten(t3, t0, t1, t2)
        nbeaten = np.int64(d0) + np.int64(d1) + np.int64(d2) + np.int64(d3)
        nempty = np.int64(t0 < 0) + np.int64(t1 < 0) + np.int64(t2 < 0) + np.int64(t3 < 0)
        if nbeaten == 0 or flags == 0:
            return mask, fw, nd, nempty, nbeaten
        live = _opt_in_play(mask, fw, sp, deck)
        pick = -1
        if d0 and _opt_safe(b0, live, sp, nstock, od, flags):
            pick = 0
        elif d1 and _opt_safe(b1, live, sp, nstock, od, flags):
            pick = 1
        elif d2 and _opt_safe(b2, live, sp, nstock, od, flags):
            pick = 2
        elif d3 and _opt_safe(b3, live, sp, nstock, od, flags):
            pick = 3
        if pick < 0:
            return mask, fw, nd, nempty, nbeaten
        mask, fw = _opt_remove_top(mask, fw, pick, deck)
        if out.shape[0] > 0:
            out[n + nd] = KIND_DISCARD + 4 * pick
        nd += 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _opt_apply(a, mask, fw, sp, nstock, deck, od, flags, out, n):
    """Apply action code ``a`` to a native position under optional discards, then the safe discards.

    Returns (mask, fw, sp, discards, piles empty, discardable tops left, the move was a lone move).
    """
    pcard, pbit = deck.pcard, deck.pbit
    kind = a & 3
    nd = 0
    is_lone = False
    if kind == KIND_DEAL:
        sp += 4
        mask |= DEAL_BITS << np.uint64(sp >> 2)
    elif kind == KIND_DISCARD:
        mask, fw = _opt_remove_top(mask, fw, (a >> 2) & 3, deck)
        nd = 1
    else:
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
            mask |= np.uint64(1) << np.uint64(home)
        else:
            fw = (fw & ~(np.uint32(255) << np.uint32(8 * dst))) | (card << np.uint32(8 * dst))
    mask, fw, n2, nempty, nbeaten = _opt_settle(mask, fw, sp, nstock, deck, od, flags, out, n)
    return mask, fw, sp, nd + n2, nempty, nbeaten, is_lone


@nb.njit(cache=True, inline="always", _nrt=False)
def _opt_gen(mask, fw, sp, nstock, deck, rules, out):
    """The actions of a settled position in search order: discards, moves of a card that is not alone,
    the deal, lone moves (``native._nat_gen`` after the discards). Returns the count."""
    n = 0
    t0, _b0 = _opt_top(mask, fw, 0, deck)
    t1, _b1 = _opt_top(mask, fw, 1, deck)
    t2, _b2 = _opt_top(mask, fw, 2, deck)
    t3, _b3 = _opt_top(mask, fw, 3, deck)
    if _beaten(t0, t1, t2, t3):
        out[n] = KIND_DISCARD
        n += 1
    if _beaten(t1, t0, t2, t3):
        out[n] = KIND_DISCARD + 4
        n += 1
    if _beaten(t2, t0, t1, t3):
        out[n] = KIND_DISCARD + 8
        n += 1
    if _beaten(t3, t0, t1, t2):
        out[n] = KIND_DISCARD + 12
        n += 1
    return n + _nat_gen(mask, fw, sp, nstock, deck, rules, out[n:])


@nb.njit(cache=True, _nrt=False)
def _search_optional(nstock, start_mask, start_score, cap, deck, od, rules, flags, node_limit, table, epoch, work):
    """The native search (``native._search_native``) under optional discards, with the safe discards made
    at once (``flags``: which rules are on; 0 for none, as the restrictions need).

    ``start_mask``: the fresh deal's first four cards, no discard made. ``cap``: no line scores more
    (48, or the last deal's cap): the search stops when it reaches it. Returns (best score, best line
    length, nodes, status); ``work.best_line`` holds the line without the safe discards (the line's
    finish puts them back).
    """
    acts, nacts, idx, path, lone, keys1, keys2, scores = work.acts, work.nacts, work.idx, work.path, work.lone, \
        work.keys1, work.keys2, work.scores
    best_line = work.best_line
    no_out = work.rec_pile[:0]
    fw = NO_FOREIGN4
    mask, fw, nd, _ne, _nb = _opt_settle(start_mask, fw, 0, nstock, deck, od, flags, no_out, 0)
    start_score += nd
    best = start_score
    best_len = 0
    nodes = 1
    status = STATUS_SOLVED
    _tt_seen_or_add(table, mask, fw, epoch, 0)
    if best >= cap:
        return best, 0, nodes, status
    keys1[0] = mask
    keys2[0] = fw
    scores[0] = start_score
    nacts[0] = _opt_gen(mask, fw, 0, nstock, deck, rules, acts[0])
    idx[0] = 0
    k = 0
    a = -1
    sp = np.int64(0)
    while True:
        if a < 0:
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
        mask, fw, sp, nd, nempty, nbeaten, is_lone = _opt_apply(a, mask, fw, sp, nstock, deck, od, flags,
                                                                 no_out, 0)
        score = scores[k] + nd
        path[k] = a
        lone[k] = is_lone
        only_deal = nempty == 0 and nbeaten == 0
        leaf = only_deal and sp == nstock
        n1 = mask | (np.uint64(sp) << np.uint64(52))
        skip = False
        if not leaf:
            if is_lone:
                skip = _on_lone_run(keys1, keys2, lone, k, n1, fw)
            if not skip and not (only_deal and (sp & 4) != 0):
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
        if leaf:
            continue
        k += 1
        keys1[k] = n1
        keys2[k] = fw
        scores[k] = score
        if only_deal:
            nacts[k] = 1
            idx[k] = 1
            a = KIND_DEAL
        else:
            nacts[k] = _opt_gen(mask, fw, sp, nstock, deck, rules, acts[k])
            idx[k] = 0
    return best, best_len, nodes, status


@nb.njit(cache=True, _nrt=False)
def _fill_optional_deck(deck, od, rules):
    """The per-deck tables of the rules (``OptionalDeck``), from the native tables of the deal."""
    pcode = deck.pcode
    strict = rules.fill == FILL_ACE
    for b in range(52):
        cb = np.int64(pcode[b])
        w = np.uint64(0)
        st = np.uint64(0)
        for o in range(52):
            co = np.int64(pcode[o])
            if (co >> 4) == (cb >> 4) and co < cb:
                w |= np.uint64(1) << np.uint64(o)
            elif (co >> 4) == (cb >> 4) and co > cb:
                st |= np.uint64(1) << np.uint64(o)
        od.weaker[b] = w
        od.stronger[b] = st
        own = np.uint64(0x1FFF) << np.uint64(13 * (b // 13))
        od.weaker_other[b] = w & ~own if strict else w


@nb.njit(cache=True, _nrt=False)
def _opt_full_line(line, nline, nstock, deck, od, flags, scratch):
    """Put the safe discards back into a line of ``_search_optional`` (in place): its new length.

    The search's frames hold settled positions, so its line lacks the discards
    ``_opt_settle`` made; this replays the line from the fresh deal and writes
    them where they were made. ``scratch``: int32[>= nline].
    """
    for i in range(nline):
        scratch[i] = line[i]
    mask, fw, n, _ne, _nb = _opt_settle(DEAL_BITS, NO_FOREIGN4, 0, nstock, deck, od, flags, line, 0)
    sp = np.int64(0)
    for i in range(nline):
        a = scratch[i]
        line[n] = a
        n += 1
        mask, fw, sp, nd, _ne, _nb, _lone = _opt_apply(a, mask, fw, sp, nstock, deck, od, flags, line, n)
        if (a & 3) == KIND_DISCARD:
            nd -= 1  # the action's own discard is already written
        n += nd
    return n
