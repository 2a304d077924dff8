"""The compiled batch loop behind every entry point, its work buffers and its inputs."""

from __future__ import annotations

import numba as nb
import numpy as np

from ..actions import line_text
from ..cards import N_CARDS, SUIT
from ..errors import InputRangeError, PositionParseError
from ..game import N_PILES, WIN_SCORE, State
from ..rules import FILL_ACE, FILL_ANY, TOP_STRENGTH, Rules, strength_table
from .common import (
    EVENT_ROWS,
    MAX_DEPTH,
    MAX_HEIGHT,
    MAX_POSITION_ACTIONS,
    NativeDeck,
    OptionalDeck,
    Results,
    SearchRules,
    STATUS_GAVE_UP,
    STATUS_SOLVED,
    Starts,
    Table,
    Work,
    _popcount,
)
from .generic import RULE_LAST_DEAL_CAP, _last_deal_cap, _search, easy_rule_flags
from .lines import _finish_line, _finish_line_native
from .native import DEAL_BITS, NO_FOREIGN4, _nat_resolve_call, _search_native
from .native_easy import _search_native_easy
from .optional import (
    ALL_RULES,
    FORCED_LINE,
    RULE_COVER,
    RULE_COVER_REAL,
    RULE_FORCED_FIRST,
    RULE_LOCK,
    _fill_optional_deck,
    _opt_full_line,
    _search_optional,
    rule_flags,
)
from .pending import RULE_PENDING, _pd_game_line, _search_pending
from .position import _resolve
from .table import BUCKET, DEFAULT_TT_BITS, tt_bits_for


class _Workspace:
    """Per-process search buffers and transposition table, reused across calls (compiled once)."""

    def __init__(self, tt_bits: int):
        size = (1 << tt_bits) * BUCKET
        self.tt_bits = tt_bits
        self.table = Table(np.zeros(2 * size, np.uint64), np.uint64((1 << tt_bits) - 1))
        self.epoch = 0
        self.work = Work(
            acts=np.zeros((MAX_DEPTH, MAX_POSITION_ACTIONS), np.int32),
            nacts=np.zeros(MAX_DEPTH, np.int32),
            idx=np.zeros(MAX_DEPTH, np.int32),
            path=np.zeros(MAX_DEPTH, np.int32),
            lone=np.zeros(MAX_DEPTH, np.bool_),
            keys1=np.zeros(MAX_DEPTH, np.uint64),
            keys2=np.zeros(MAX_DEPTH, np.uint32),
            keys3=np.zeros(MAX_DEPTH, np.uint64),
            rbase=np.zeros(MAX_DEPTH, np.int32),
            scores=np.zeros(MAX_DEPTH, np.int32),
            rec_pile=np.zeros(64, np.int32),
            rec_card=np.zeros(64, np.int32),
            best_line=np.zeros(MAX_DEPTH, np.int32),
            best_keys1=np.zeros(MAX_DEPTH + 1, np.uint64),
            best_keys2=np.zeros(MAX_DEPTH + 1, np.uint32),
            best_nacts=np.zeros(MAX_DEPTH + 1, np.int32),
            events=np.zeros((EVENT_ROWS, 4), np.int32),
        )
        high_bit = np.zeros(1 << 13, np.int8)  # the highest set bit of a pile's 13-bit field
        for f in range(2, 1 << 13):
            high_bit[f] = high_bit[f >> 1] + 1
        self.high_bit = high_bit

    def next_epochs(self, count: int) -> int:
        """Reserve ``count`` fresh epochs (one per search); returns the first. Clears the table on wrap."""
        if self.epoch + count + 1 >= (1 << 24):
            self.table.slots[:] = 0
            self.epoch = 0
        first = self.epoch + 1
        self.epoch += count
        return first

    def native_deck(self, rules: SearchRules) -> NativeDeck:
        """Tables for the native search, filled per deck by the ``_solve_*_many`` loops."""
        return NativeDeck(np.zeros(N_CARDS, np.int8), np.zeros(N_CARDS, np.int8), np.zeros(N_CARDS, np.int8),
                          np.zeros(13, np.uint64), np.zeros(13, np.int64), self.high_bit, rules.code,
                          np.zeros(13, np.uint64))


_WORKSPACES: dict[int, _Workspace] = {}


def _workspace(tt_bits: int) -> _Workspace:
    ws = _WORKSPACES.get(tt_bits)
    if ws is None:
        # keep at most one large table alive: drop the large ones before allocating
        for bits in list(_WORKSPACES):
            if bits > DEFAULT_TT_BITS or tt_bits > DEFAULT_TT_BITS:
                del _WORKSPACES[bits]
        ws = _WORKSPACES[tt_bits] = _Workspace(tt_bits)
    return ws


@nb.njit(cache=True, _nrt=False)
def _set_position(piles, h, from_piles, from_h):
    """Copy the position (from_piles, from_h) into (piles, h)."""
    for p in range(4):
        h[p] = from_h[p]
        for i in range(h[p]):
            piles[p, i] = from_piles[p, i]


@nb.njit(cache=True, inline="always", _nrt=False)
def _beaten_flat(a, b, c, d):
    """``_beaten`` of four dealt cards (none is an empty pile), without branches: the deck's
    52 comparisons are data-dependent and mispredicted half the time."""
    sa = a >> 4
    return ((((b >> 4) == sa) & (b > a)) | (((c >> 4) == sa) & (c > a)) | (((d >> 4) == sa) & (d > a)))


@nb.njit(cache=True, _nrt=False)
def _fill_native_deck(deck, init_piles, stocks, n):
    """The native tables of fresh deal n (its first four cards ``init_piles[n, :, 0]``, the stock ``stocks[n]``).

    (Indexed here rather than passed as slices: a slice made in the caller costs a reference count.)
    """
    pcode, pcard, pbit, code = deck.pcode, deck.pcard, deck.pbit, deck.code
    # the i-th card dealt to pile p is deck[4*i + p]: the first four, then the stock
    for p in range(4):
        for i in range(13):
            card = init_piles[n, p, 0] if i == 0 else stocks[n, 4 * (i - 1) + p]
            pcard[13 * p + i] = card
            pcode[13 * p + i] = code[card]
            pbit[card] = 13 * p + i
    for i in range(13):
        t0 = np.int64(pcode[i])
        t1 = np.int64(pcode[13 + i])
        t2 = np.int64(pcode[26 + i])
        t3 = np.int64(pcode[39 + i])
        clear = np.uint64(0)
        clear |= np.uint64(_beaten_flat(t0, t1, t2, t3)) << np.uint64(i)
        clear |= np.uint64(_beaten_flat(t1, t0, t2, t3)) << np.uint64(13 + i)
        clear |= np.uint64(_beaten_flat(t2, t0, t1, t3)) << np.uint64(26 + i)
        clear |= np.uint64(_beaten_flat(t3, t0, t1, t2)) << np.uint64(39 + i)
        deck.deal_clear[i] = clear
        deck.deal_nd[i] = _popcount(clear)
    undealt = np.uint64(0)
    for i in range(12, -1, -1):
        deck.undealt[i] = undealt
        for p in range(4):
            undealt |= np.uint64(1) << np.uint64(pcard[13 * p + i])


SEARCH_GENERIC = 0  # generic._search: any start position, any rules
SEARCH_NATIVE = 1  # native._search_native: fresh deals, forced discards, not easy
SEARCH_OPTIONAL = 2  # optional._search_optional: fresh deals, optional discards, not easy
SEARCH_NATIVE_EASY = 3  # native_easy._search_native_easy: fresh deals, forced discards, easy


@nb.njit(cache=True)
def _keep_line(line_buf, nl, line, blen, out, n):
    """Append ``line[:blen]`` (start n's line) at ``line_buf[nl:]``, growing the buffer; returns (buffer, new nl)."""
    if nl + blen > line_buf.shape[0]:
        grown = np.zeros(max(2 * line_buf.shape[0], nl + blen), np.int32)
        grown[:nl] = line_buf[:nl]
        line_buf = grown
    for i in range(blen):
        line_buf[nl + i] = line[i]
    nl += blen
    out.line_off[n + 1] = nl
    return line_buf, nl


@nb.njit(cache=True, inline="always", _nrt=False)
def _record(out, n, best, nodes, status):
    """Row n of ``out``: the search's result (the line finish adds moves and decisions)."""
    out.score[n] = best
    out.nodes[n] = nodes
    out.status[n] = status


@nb.njit(cache=True, _nrt=False)
def _fill_optional_start(piles0, h0, deck, od, starts, rules, n):
    """Start n of a fresh deal with optional discards: its position into ``piles0, h0`` (no discard is forced),
    its NativeDeck and OptionalDeck filled."""
    _set_position(piles0, h0, starts.piles[n], starts.heights[n])
    _fill_native_deck(deck, starts.piles, starts.stocks, n)
    _fill_optional_deck(deck, od, rules)


@nb.njit(cache=True, inline="always")
def _finish_buffers():
    """The generic line finish's buffers: (piles, h, piles0, h0, small, bfs, scratch); a loop puts each
    start position into piles0, h0 before its search."""
    return (np.zeros((4, MAX_HEIGHT), np.int8), np.zeros(4, np.int32), np.zeros((4, MAX_HEIGHT), np.int8),
            np.zeros(4, np.int32), np.zeros((3, 64), np.int32), np.zeros((64, 6), np.int32),
            np.zeros(MAX_POSITION_ACTIONS, np.int32))


@nb.njit(cache=True)
def _finish_start(fb, stock, ns, rules, blen, work, out, n):
    """The generic line finish of start n (``fb``: _finish_buffers, its start in piles0, h0): moves and
    decisions into ``out``; returns the line's length."""
    piles, h, piles0, h0, small, bfs, scratch = fb
    _set_position(piles, h, piles0, h0)
    blen, mv, dec = _finish_line(piles, h, stock, ns, rules, work.best_line, blen, small, bfs, scratch, work)
    out.moves[n] = mv
    out.decisions[n] = dec
    return blen


# One compiled loop per search mode (below), not one loop over every mode: a process compiles only the
# searches it runs (a cold compile of the whole solver is minutes), and each loop is a smaller unit for
# LLVM. Their args are those of ``run``; each returns the (possibly grown) line buffer, and writes row n of
# ``out`` and line n to ``line_buf[out.line_off[n]:out.line_off[n+1]]``.

@nb.njit(cache=True)
def _solve_native_many(starts, rules, node_limit, table, first_epoch, work, deck, out, line_buf):
    """SEARCH_NATIVE: every start is a fresh deal; ``deck`` is filled per deal."""
    init_piles, _h, stocks, nstocks, start_scores, _natives = starts
    small = np.zeros((3, 64), np.int32)
    bfs = np.zeros((64, 6), np.int32)
    nl = 0
    out.line_off[0] = 0
    for n in range(init_piles.shape[0]):
        ns = nstocks[n]
        _fill_native_deck(deck, init_piles, stocks, n)
        mask0, _fw, nd, _full = _nat_resolve_call(DEAL_BITS, NO_FOREIGN4, deck)
        best, blen, nodes, status = _search_native(ns, mask0, start_scores[n] + nd, deck, rules, node_limit, table,
                                                   np.uint32(first_epoch + n), work)
        _record(out, n, best, nodes, status)
        blen, mv, dec = _finish_line_native(work.best_line, blen, ns, deck, rules, small, bfs, work.best_keys1,
                                            work.best_keys2, work.best_nacts)
        out.moves[n] = mv
        out.decisions[n] = dec
        line_buf, nl = _keep_line(line_buf, nl, work.best_line, blen, out, n)
    return line_buf


@nb.njit(cache=True)
def _solve_easy_many(starts, rules, opt_flags, node_limit, table, first_epoch, work, deck, out, line_buf):
    """SEARCH_NATIVE_EASY: every start is a fresh deal of easy with forced discards."""
    init_piles, init_h, stocks, nstocks, start_scores, _natives = starts
    fb = _finish_buffers()
    piles0, h0 = fb[2], fb[3]
    nl = 0
    out.line_off[0] = 0
    for n in range(init_piles.shape[0]):
        stock = stocks[n]
        ns = nstocks[n]
        _set_position(piles0, h0, init_piles[n], init_h[n])
        start = start_scores[n] + _resolve(piles0, h0, rules.code, work.rec_pile, work.rec_card, 0)
        _fill_native_deck(deck, init_piles, stocks, n)
        mask0, _fw, nd, _full = _nat_resolve_call(DEAL_BITS, NO_FOREIGN4, deck)
        cmask0 = np.uint64(0)
        for b in range(52):
            if (mask0 >> np.uint64(b)) & np.uint64(1):
                cmask0 |= np.uint64(1) << np.uint64(deck.pcard[b])
        cap = _last_deal_cap(stock, ns, rules.strength, rules.code) if (opt_flags & RULE_LAST_DEAL_CAP) != 0 \
            else WIN_SCORE
        best, blen, nodes, status = _search_native_easy(ns, mask0, cmask0, start, cap, deck, rules, node_limit,
                                                        table, np.uint32(first_epoch + n), work, opt_flags)
        _record(out, n, best, nodes, status)
        blen = _finish_start(fb, stock, ns, rules, blen, work, out, n)
        line_buf, nl = _keep_line(line_buf, nl, work.best_line, blen, out, n)
    return line_buf


@nb.njit(cache=True)
def _optional_start(starts, rules, opt_flags, node_limit, table, epoch, work, deck, od, piles0, h0, fline, n):
    """What start n of SEARCH_OPTIONAL knows before its optional search (docs/solver.md, "The cap and
    the forced search first").

    Puts the start into ``piles0, h0`` and fills its tables (``_fill_optional_start``), works out its
    cap (48, or the last deal's cap with RULE_LAST_DEAL_CAP) and, with RULE_FORCED_FIRST, solves it
    with forced discards (epoch ``epoch``), writing that line out with its discards into ``fline``. Returns (cap, forced score,
    forced line length, forced nodes, node limit left for the optional search, the forced score is
    the result): the forced score is -1 when it was not worked out; the result is the forced one when
    it reaches the cap, or when the forced search used up ``node_limit`` (then it is a lower bound).
    """
    ns = starts.nstocks[n]
    _fill_optional_start(piles0, h0, deck, od, starts, rules, n)
    cap = _last_deal_cap(starts.stocks[n], ns, rules.strength, rules.code) \
        if (opt_flags & RULE_LAST_DEAL_CAP) != 0 else WIN_SCORE
    if (opt_flags & RULE_FORCED_FIRST) == 0:
        return cap, -1, 0, 0, node_limit, False
    mask0, _fw, nd, _full = _nat_resolve_call(DEAL_BITS, NO_FOREIGN4, deck)
    fbest, blen, fnodes, _st = _search_native(ns, mask0, starts.scores[n] + nd, deck, rules, node_limit, table,
                                              epoch, work)
    for i in range(blen):
        fline[i] = work.best_line[i]
    flen = _opt_full_line(fline, blen, ns, deck, od, FORCED_LINE, work.path)
    left = node_limit - fnodes if node_limit > 0 else 0
    return cap, fbest, flen, fnodes, left, fbest >= cap or (node_limit > 0 and left < 1)


@nb.njit(cache=True)
def _optional_finish(fb, starts, rules, cap, fbest, fline, flen, fnodes, best, blen, nodes, status, work, out,
                     line_buf, nl, n):
    """Row and line n of SEARCH_OPTIONAL, from the optional search's result (``best`` ... ``status``;
    ``best`` is -1 when it did not run, its line in ``work.best_line`` in the game's codes) and the forced
    search's (``_optional_start``): the better score and its line, the nodes of both. A forced score at
    the cap is the value (solved); below it, the optional search's score is never lower unless a node
    limit stopped it (gave up). Returns (line buffer, nl) as ``_keep_line``."""
    if best < fbest:
        for i in range(flen):
            work.best_line[i] = fline[i]
        best, blen, status = fbest, flen, STATUS_SOLVED if fbest >= cap else STATUS_GAVE_UP
    _record(out, n, best, fnodes + nodes, status)
    blen = _finish_start(fb, starts.stocks[n], starts.nstocks[n], rules, blen, work, out, n)
    return _keep_line(line_buf, nl, work.best_line, blen, out, n)


@nb.njit(cache=True)
def _solve_optional_many(starts, rules, opt_flags, node_limit, table, first_epoch, work, deck, od, out, line_buf):
    """SEARCH_OPTIONAL without RULE_PENDING: every start is a fresh deal with optional discards, searched by
    optional.py (after the forced search, with RULE_FORCED_FIRST); ``deck`` and ``od`` are filled per deal;
    each start takes two epochs (the forced search, the optional one)."""
    fb = _finish_buffers()
    fline = np.zeros(work.best_line.shape[0], np.int32)
    safe = opt_flags & ALL_RULES
    nl = 0
    out.line_off[0] = 0
    for n in range(starts.piles.shape[0]):
        ns = starts.nstocks[n]
        epoch = np.uint32(first_epoch + 2 * n)
        cap, fbest, flen, fnodes, left, done = _optional_start(starts, rules, opt_flags, node_limit, table, epoch,
                                                               work, deck, od, fb[2], fb[3], fline, n)
        best, blen, nodes, status = -1, 0, 0, STATUS_SOLVED
        if not done:
            best, blen, nodes, status = _search_optional(ns, DEAL_BITS, starts.scores[n], cap, deck, od, rules,
                                                         safe, left, table, epoch + np.uint32(1), work)
            # the line without its safe discards: put them back (the generic finish counts it)
            blen = _opt_full_line(work.best_line, blen, ns, deck, od, safe, work.path)
        line_buf, nl = _optional_finish(fb, starts, rules, cap, fbest, fline, flen, fnodes, best, blen, nodes,
                                        status, work, out, line_buf, nl, n)
    return line_buf


@nb.njit(cache=True)
def _solve_pending_many(starts, rules, opt_flags, node_limit, table, first_epoch, work, deck, od, out, line_buf):
    """SEARCH_OPTIONAL with RULE_PENDING: the same, searched by pending.py."""
    fb = _finish_buffers()
    fline = np.zeros(work.best_line.shape[0], np.int32)
    safe = opt_flags & (ALL_RULES | RULE_LOCK | RULE_COVER | RULE_COVER_REAL)
    nl = 0
    out.line_off[0] = 0
    for n in range(starts.piles.shape[0]):
        epoch = np.uint32(first_epoch + 2 * n)
        cap, fbest, flen, fnodes, left, done = _optional_start(starts, rules, opt_flags, node_limit, table, epoch,
                                                               work, deck, od, fb[2], fb[3], fline, n)
        best, blen, nodes, status = -1, 0, 0, STATUS_SOLVED
        if not done:
            ns = starts.nstocks[n]
            best, blen, nodes, status = _search_pending(ns, starts.scores[n], cap, deck, od, rules, safe, left,
                                                        table, epoch + np.uint32(1), work)
            # the line in the search's codes: the game's line (the generic finish counts it)
            blen = _pd_game_line(work.best_line, blen, ns, deck, od, safe, work.events, work.path)
        line_buf, nl = _optional_finish(fb, starts, rules, cap, fbest, fline, flen, fnodes, best, blen, nodes,
                                        status, work, out, line_buf, nl, n)
    return line_buf


@nb.njit(cache=True)
def _solve_generic_many(starts, resolve_start, rules, opt_flags, node_limit, table, first_epoch, work, out, line_buf):
    """SEARCH_GENERIC: any start position; ``resolve_start`` makes its forced discards first (a fresh deal, as
    game.new_game does)."""
    init_piles, init_h, stocks, nstocks, start_scores, natives = starts
    fb = _finish_buffers()
    piles, h, piles0, h0 = fb[0], fb[1], fb[2], fb[3]
    smax = np.zeros((N_CARDS + 1, 4, 4), np.int8)
    top_mask = np.uint64(0)  # the cards of the top rank (for the strict bound)
    for c in range(N_CARDS):
        if rules.strength[c] == TOP_STRENGTH:
            top_mask |= np.uint64(1) << np.uint64(c)
    nl = 0
    out.line_off[0] = 0
    for n in range(init_piles.shape[0]):
        stock = stocks[n]
        ns = nstocks[n]
        start = start_scores[n]
        _set_position(piles, h, init_piles[n], init_h[n])
        if resolve_start and not rules.optional:
            start += _resolve(piles, h, rules.code, work.rec_pile, work.rec_card, 0)
        _set_position(piles0, h0, piles, h)  # the start: the search and the line's replay start from it
        best, blen, nodes, status = _search(stock, ns, smax, piles, h, start, natives[n], rules, node_limit, table,
                                            np.uint32(first_epoch + n), work, top_mask, opt_flags)
        _record(out, n, best, nodes, status)
        blen = _finish_start(fb, stock, ns, rules, blen, work, out, n)
        line_buf, nl = _keep_line(line_buf, nl, work.best_line, blen, out, n)
    return line_buf


def search_rules(rules: Rules) -> SearchRules:
    """A rule set as the searches read it."""
    strength = strength_table(rules)
    if rules.fill in (FILL_ACE, FILL_ANY):
        # the strict bound (_upper_bound) and easy's endgame rule (_beaten_buried_move) read card
        # strength from card id bits
        assert all(strength[c] == c % 13 for c in range(N_CARDS)), "strict and easy need strength == rank index"
    # a card's code is suit * 16 + strength: one table read gives both, and within
    # a suit a higher code is a stronger card (strength is 0..12)
    code = (SUIT.astype(np.int64) * 16 + strength).astype(np.int8)
    return SearchRules(strength.astype(np.int8), code, int(rules.fill), bool(rules.optional_discards),
                       bool(rules.sensible), bool(rules.leftmost), bool(rules.must_fill))


def search_mode(rules: Rules, search: str) -> int:
    """The search ``run`` uses for fresh deals: SEARCH_NATIVE, SEARCH_OPTIONAL, SEARCH_NATIVE_EASY (easy with
    forced discards) or SEARCH_GENERIC (``search='generic'``, and easy with optional discards)."""
    if search == "auto" and rules.fill != FILL_ANY:
        return SEARCH_OPTIONAL if rules.optional_discards else SEARCH_NATIVE
    if search == "auto" and not rules.optional_discards:
        return SEARCH_NATIVE_EASY
    return SEARCH_GENERIC


def run(starts: Starts, resolve_start: bool, rules: Rules, node_limit, want_lines: bool, tt_bits=None,
        search: str = "generic", opt_flags=None):
    """Solve every start position: (score, nodes, status, moves, decisions, lines or None).

    ``search='auto'`` only for fresh deals (``deck_inputs``), which the native search needs
    (every pile holds its first card, the stock is the other 48).
    """
    n = starts.piles.shape[0]
    if node_limit is not None and int(node_limit) < 1:
        raise InputRangeError(f"node_limit {node_limit!r} is not positive; give 1 or more, or None for no limit")
    limit = 0 if node_limit is None else int(node_limit)
    ws = _workspace(tt_bits if tt_bits is not None else tt_bits_for(rules))
    out = Results(np.zeros(n, np.int8), np.zeros(n, np.int64), np.zeros(n, np.int8), np.zeros(n, np.int16),
                  np.zeros(n, np.int16), np.zeros(n + 1, np.int64))
    line_buf = np.zeros(max(64 * n, 64), np.int32)
    srules = search_rules(rules)
    mode = search_mode(rules, search)
    # SEARCH_OPTIONAL: two searches a start (the forced one first, then the optional one)
    first_epoch = ws.next_epochs(max(n, 1) * (2 if mode == SEARCH_OPTIONAL else 1))
    if mode == SEARCH_GENERIC and starts.natives.shape[1] != N_CARDS:
        raise ValueError("the generic search needs Starts.natives: make the inputs with deck_inputs(decks)")
    if opt_flags is None:
        opt_flags = rule_flags(rules) | easy_rule_flags(rules)
    flags = int(opt_flags)
    if mode == SEARCH_NATIVE:
        line_buf = _solve_native_many(starts, srules, limit, ws.table, first_epoch, ws.work, ws.native_deck(srules),
                                      out, line_buf)
    elif mode == SEARCH_NATIVE_EASY:
        line_buf = _solve_easy_many(starts, srules, flags, limit, ws.table, first_epoch, ws.work,
                                    ws.native_deck(srules), out, line_buf)
    elif mode == SEARCH_OPTIONAL:
        od = empty_optional_deck()
        solve = _solve_pending_many if flags & RULE_PENDING else _solve_optional_many
        line_buf = solve(starts, srules, flags, limit, ws.table, first_epoch, ws.work, ws.native_deck(srules), od,
                         out, line_buf)
    else:
        line_buf = _solve_generic_many(starts, resolve_start, srules, flags, limit, ws.table, first_epoch, ws.work,
                                       out, line_buf)
    lines = None
    if want_lines:
        lines = [line_text(line_buf[out.line_off[i]:out.line_off[i + 1]]) for i in range(n)]
    return out.score, out.nodes, out.status, out.moves, out.decisions, lines


def empty_optional_deck() -> OptionalDeck:
    """An OptionalDeck to fill per deal (``_fill_optional_deck``)."""
    return OptionalDeck(np.zeros(N_CARDS, np.uint64), np.zeros(N_CARDS, np.uint64), np.zeros(N_CARDS, np.uint64))


def deck_inputs(decks: np.ndarray, natives: bool = True) -> Starts:
    """The start positions of fresh deals (``uint8[N, 52]``): the first four cards dealt, the stock the rest.

    ``natives=False`` leaves ``Starts.natives`` empty (0 columns): only the generic search reads it,
    and working it out is a sixth of the per-deck cost of a strict batch outside the search.
    """
    decks = np.ascontiguousarray(decks, dtype=np.uint8)
    if decks.ndim != 2 or decks.shape[1] != N_CARDS:
        raise ValueError(f"decks must be a uint8[N, 52] array; got shape {decks.shape}")
    n = decks.shape[0]
    init_piles = np.zeros((n, N_PILES, 1), np.int8)
    init_piles[:, :, 0] = decks[:, :N_PILES]
    init_h = np.ones((n, N_PILES), np.int32)
    stocks = decks[:, N_PILES:].astype(np.int8)
    nstocks = np.full(n, N_CARDS - N_PILES, np.int32)
    start_scores = np.zeros(n, np.int32)
    if not natives:
        return Starts(init_piles, init_h, stocks, nstocks, start_scores, np.zeros((n, 0), np.int8))
    pile_of = np.zeros((n, N_CARDS), np.int8)
    rows = np.arange(n)[:, None]
    pile_of[rows, decks] = (np.arange(N_CARDS) % N_PILES).astype(np.int8)[None, :]
    return Starts(init_piles, init_h, stocks, nstocks, start_scores, pile_of)


def position_inputs(state: State) -> Starts:
    """The start position of any State (taken as it is: no discards are made first)."""
    stock = list(state.stock)
    if len(stock) % N_PILES:
        raise PositionParseError(f"the stock holds {len(stock)} cards; a stock is dealt four at a time, so give a multiple of 4")
    height = max(1, max(len(p) for p in state.piles))
    if height > MAX_HEIGHT:
        raise PositionParseError(f"a pile holds {height} cards; at most {MAX_HEIGHT} are supported")
    init_piles = np.zeros((1, N_PILES, height), np.int8)
    init_h = np.zeros((1, N_PILES), np.int32)
    natives = np.full((1, N_CARDS), -1, np.int8)
    for p, pile in enumerate(state.piles):
        init_h[0, p] = len(pile)
        for i, c in enumerate(pile):
            init_piles[0, p, i] = c
            natives[0, c] = p
    for i, c in enumerate(stock):
        natives[0, c] = i % N_PILES
    stocks = np.zeros((1, max(len(stock), 1)), np.int8)
    stocks[0, : len(stock)] = stock
    nstocks = np.array([len(stock)], np.int32)
    start_scores = np.array([state.score], np.int32)
    return Starts(init_piles, init_h, stocks, nstocks, start_scores, natives)
