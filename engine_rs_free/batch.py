"""The batch engine: many deals played at once by a policy, in compiled code.

``play_batch(decks, rules, policy, seed=…, indices=…)`` plays every deck with
a policy of ``policies.py`` and returns a ``BatchResult``, a struct of arrays
with one row per deck. It agrees exactly with the scalar twin
``policies.play_scalar`` (score, won, moves, decisions, line) on every deal:
the policies, tie-breaks, counting rules, ``MAX_ACTIONS`` and random draws
are the ones the ``policies`` module docstring defines, and the twin tests
check them over every variant and policy.

Layout (struct of arrays, fixed shapes, small dtypes)::

    decks:   uint8[N, 52]        card ids in deal order (cards.py), one row per deal
    indices: int64[N]            deal index of each row (keys the random draws)
    score:   int8[N]  won: bool[N]  moves: int16[N]  decisions: int16[N]   the result rows
    lines:   int16[C, LINE_CAP]  action codes of each game line, C = LINE_CHUNK rows at a
                                 time, only when lines are wanted

and, inside the kernel, scratch allocated once per call (not per deal)::

    work:    int64[S, 4, 52]     S scratch positions: slot 0 is the game being played,
                                 the others hold positions a policy looks at; cards
                                 bottom first; only work[s, i, :height[s, i]] is
                                 meaningful (a discard just lowers the height, which
                                 lets a policy undo a probe cheaply)
    height:  int64[S, 4]         cards on each pile of each scratch position
    moves:   int64[S, 832]       legal moves of a position, contract order, as move codes
    beats:   uint8[53, 53]       beats[o, c]: card o is of c's suit and stronger; 52 = empty pile
    is_ace:  uint8[53]           the variant's top rank

The compiled kernel loops over the decks (no Python loop over deals); each
game is played in scratch slot 0 with ``pos`` the index of the next stock
card. ``nomove`` under forced discards and without ``must_fill`` (it only
deals) has a tight loop of its own, ``_play_nomove_games``, with the same
results. The policy functions are passed the piles and ``pos`` (so the number of
cards left, ``52 - pos``) and never the deck, so they cannot read the stock
order; the tests check it by permuting the undealt stock.

Compilation: one kernel serves every policy and rule set (they are run-time
arguments), compiled once and cached on disk (``cache=True``); the first call
in a fresh checkout takes about a minute, later processes load the cache.

Actions are the codes of ``actions.py`` (``int16`` in the line buffers), so
lines are built in compiled code and only formatted in Python
(``actions.CODE_TEXT``) when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numba as nb
import numpy as np

from .actions import CODE_TEXT, DEAL_CODE, KIND_DISCARD, KIND_MOVE, code_depth, code_dst, code_src
from .cards import N_CARDS, SUIT
from .deals import STREAM_POLICY, philox4x32
from .errors import InputRangeError
from .game import WIN_SCORE
from .policies import MAX_ACTIONS, PolicySpec, parse_policy
from .rules import FILL_ACE, FILL_ANY, TOP_STRENGTH, Rules, rules_by_name, strength_table

N_PILES = 4
MOVE_CAP = N_CARDS * N_PILES * N_PILES  # 832 > any number of legal moves in one position
LINE_CAP = MAX_ACTIONS + 56  # the cap is checked at decision points; up to 48 discards can follow
POLICY_KINDS = {"nomove": 0, "random": 1, "greedy": 2, "aces": 3, "human": 4, "lookahead": 5}
K_NOMOVE, K_RANDOM, K_GREEDY, K_ACES, K_HUMAN, K_LOOKAHEAD = range(6)
MAX_DEPTH = 4
# Scratch slots: 0 game, 1 probe (discards after a move), 2 rollout, 3.. lookahead levels.
SLOT_GAME, SLOT_PROBE, SLOT_ROLLOUT, SLOT_LEVELS = 0, 1, 2, 3
N_SLOTS = SLOT_LEVELS + MAX_DEPTH + 1
N_DEALS = (N_CARDS - N_PILES) // N_PILES  # 12 deals after the first four cards
NOMOVE_PILE_CAP = 1 + 1 + N_DEALS  # _play_nomove_games: a sentinel, then at most 1 + 12 cards per pile


class BatchRules(NamedTuple):
    """A rule set as the compiled game loop reads it (``batch_rules`` makes one)."""

    fill: int  # FILL_TOP | FILL_ACE | FILL_ANY
    optional: bool  # discards=optional
    sensible: bool
    leftmost: bool
    must_fill: bool
    is_ace: np.ndarray  # uint8[53]       the variant's top rank (index 52: an empty pile)
    beats: np.ndarray  # uint8[53, 53]    beats[o, c]: card o is of c's suit and stronger


class PolicyArgs(NamedTuple):
    """A policy as the compiled game loop reads it."""

    kind: int  # K_NOMOVE .. K_LOOKAHEAD
    param: int  # human: sacrifice; lookahead: depth; else 0
    max_actions: int  # a game stops at a decision point once its line holds this many actions


class Scratch(NamedTuple):
    """The game loop's scratch, allocated once per call (the module docstring has the layout)."""

    work: np.ndarray  # int64[N_SLOTS, 4, 52]
    height: np.ndarray  # int64[N_SLOTS, 4]
    moves: np.ndarray  # int64[N_SLOTS, MOVE_CAP]
    line: np.ndarray  # int16[LINE_CAP]        the line of the game being played
    count: np.ndarray  # int64[MAX_DEPTH + 1]  lookahead's stack of levels: moves, next, best value
    nxt: np.ndarray  # int64[MAX_DEPTH + 1]
    best: np.ndarray  # int64[MAX_DEPTH + 1]


class GameRows(NamedTuple):
    """The rows the game loop writes, one per deck."""

    score: np.ndarray  # int8[N]
    moves: np.ndarray  # int16[N]
    decisions: np.ndarray  # int16[N]
    length: np.ndarray  # int64[N]    actions in the line
    lines: np.ndarray  # int16[N, LINE_CAP]   the lines' action codes (a 1x1 dummy when not wanted)


@dataclass
class BatchResult:
    """One row per deck: score int8[N] (0..48), won bool[N], moves int16[N], decisions int16[N],
    lines list[str] (game lines in game.py action text) or None when not asked for."""

    score: np.ndarray
    won: np.ndarray
    moves: np.ndarray
    decisions: np.ndarray
    lines: list[str] | None = None

    def __len__(self) -> int:
        return len(self.score)


# ----------------------------------------------------------------------------------------------
# Compiled position primitives. A position is (work[s], height[s]) for a scratch slot s; only
# work[s, i, :height[s, i]] is meaningful (pops just lower the height, so a probe can undo them).
# Tables, built once per call: beats[o, c] = 1 when card o is of c's suit and stronger (row and
# column EMPTY = 52 are 0, so an empty pile neither beats nor is beaten); is_ace[c] = 1 for the
# variant's top rank.

EMPTY = N_CARDS
DST_BITS = 3 << 4  # the dst field of an action code: moves of one card into other piles differ only there


@nb.njit(cache=True, inline="always", _nrt=False)
def _top(work, height, s, i):
    h = height[s, i]
    return work[s, i, h - 1] if h > 0 else EMPTY


@nb.njit(cache=True, inline="always", _nrt=False)
def _beaten_tops(beats, t0, t1, t2, t3):
    """For each of the four top cards t0..t3 (EMPTY for an empty pile), 1 when another top beats it."""
    return (beats[t1, t0] | beats[t2, t0] | beats[t3, t0],
            beats[t0, t1] | beats[t2, t1] | beats[t3, t1],
            beats[t0, t2] | beats[t1, t2] | beats[t3, t2],
            beats[t0, t3] | beats[t1, t3] | beats[t2, t3])


@nb.njit(cache=True, inline="always", _nrt=False)
def _resolve_tops(work, height, s, beats, t0, t1, t2, t3):
    """Forced discards in position s whose top cards are t0..t3 (EMPTY for an empty pile).

    Every top card beaten by another top card goes, until none is; returns
    (discards, t0, t1, t2, t3) with the new tops. All beaten tops go at once:
    the strongest top of each suit stays, so this reaches the same position as
    one discard at a time (RULES.md rule 3).
    """
    n = 0
    while True:
        d0, d1, d2, d3 = _beaten_tops(beats, t0, t1, t2, t3)
        if (d0 | d1 | d2 | d3) == 0:
            return n, t0, t1, t2, t3
        if d0:
            h = height[s, 0] - 1
            height[s, 0] = h
            n += 1
            t0 = work[s, 0, h - 1] if h > 0 else EMPTY
        if d1:
            h = height[s, 1] - 1
            height[s, 1] = h
            n += 1
            t1 = work[s, 1, h - 1] if h > 0 else EMPTY
        if d2:
            h = height[s, 2] - 1
            height[s, 2] = h
            n += 1
            t2 = work[s, 2, h - 1] if h > 0 else EMPTY
        if d3:
            h = height[s, 3] - 1
            height[s, 3] = h
            n += 1
            t3 = work[s, 3, h - 1] if h > 0 else EMPTY


@nb.njit(cache=True, inline="always", _nrt=False)
def _resolve(work, height, s, beats):
    """Forced discards in position s (see _resolve_tops); returns their count."""
    n, _, _, _, _ = _resolve_tops(work, height, s, beats, _top(work, height, s, 0), _top(work, height, s, 1),
                                  _top(work, height, s, 2), _top(work, height, s, 3))
    return n


@nb.njit(cache=True, _nrt=False)
def _take_discards(work, height, s, beats, line, n_line):
    """Under discards=optional: take every discard, lowest pile first, one at a time, into the line."""
    while True:
        found = -1
        for i in range(N_PILES):
            c = _top(work, height, s, i)
            for j in range(N_PILES):
                if j != i and beats[_top(work, height, s, j), c]:
                    found = i
                    break
            if found >= 0:
                break
        if found < 0:
            return n_line
        height[s, found] -= 1
        line[n_line] = KIND_DISCARD | found << 2
        n_line += 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _copy(work, height, src, dst):
    for i in range(N_PILES):
        h = height[src, i]
        for k in range(h):
            work[dst, i, k] = work[src, i, k]
        height[dst, i] = h


@nb.njit(cache=True, inline="always", _nrt=False)
def _gen_moves(work, height, s, fill, sensible, leftmost, is_ace, out, row):
    """Write the legal moves of position s to out[row, :] in contract order; returns their count."""
    first_empty = -1
    for i in range(N_PILES):
        if height[s, i] == 0:
            first_empty = i
            break
    if first_empty < 0:
        return 0
    n = 0
    for src in range(N_PILES):
        h = height[s, src]
        if h == 0:
            continue
        if sensible and h == 1:
            continue
        max_depth = h if fill == FILL_ANY else 1
        for depth in range(max_depth):
            if fill == FILL_ACE and not is_ace[work[s, src, h - 1 - depth]]:
                continue
            for dst in range(N_PILES):
                if dst == src or height[s, dst] != 0:
                    continue
                if leftmost and dst != first_empty:
                    continue
                out[row, n] = KIND_MOVE | src << 2 | dst << 4 | depth << 6
                n += 1
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _count_moves(work, height, s, fill, sensible, leftmost, is_ace):
    """The number of legal moves of position s (what _gen_moves would list)."""
    empties = 0
    sources = 0
    for i in range(N_PILES):
        h = height[s, i]
        if h == 0:
            empties += 1
        elif not (sensible and h == 1):
            if fill == FILL_ANY:
                sources += h
            elif fill != FILL_ACE or is_ace[work[s, i, h - 1]]:
                sources += 1
    if leftmost and empties > 0:
        empties = 1
    return sources * empties


@nb.njit(cache=True, inline="always", _nrt=False)
def _apply_move(work, height, s, code):
    """Move the card of move ``code`` into its empty target pile (no discards)."""
    dst = code_dst(code)
    depth = code_depth(code)
    src = code_src(code)
    h = height[s, src]
    at = h - 1 - depth
    card = work[s, src, at]
    for k in range(at, h - 1):
        work[s, src, k] = work[s, src, k + 1]
    height[s, src] = h - 1
    work[s, dst, 0] = card
    height[s, dst] = 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _moved_card(work, height, s, code):
    src = code_src(code)
    return work[s, src, height[s, src] - 1 - code_depth(code)]


@nb.njit(cache=True, inline="always", _nrt=False)
def _is_lone(height, s, code):
    return height[s, code_src(code)] == 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _may_discard(work, height, s, code, beats):
    """False when move ``code`` surely discards nothing in the *resolved* position s.

    In a resolved position no two top cards share a suit. A move adds one new
    top card: the card uncovered on the source pile (a top move), or the card
    moved (from below the top, in ``easy``). Cards of one suit always differ
    in rank, so a discard follows exactly when that card shares a suit with a
    top card.
    """
    depth = code_depth(code)
    src = code_src(code)
    h = height[s, src]
    new = work[s, src, h - 2] if depth == 0 else work[s, src, h - 1 - depth]
    for i in range(N_PILES):
        t = _top(work, height, s, i)
        if beats[t, new] | beats[new, t]:
            return True
    return False


@nb.njit(cache=True, inline="always", _nrt=False)
def _discards_after(work, height, s, code, beats):
    """Discards set off by move ``code`` in position s; the position is left as it was.

    Done in place: pops only lower heights, so restoring the heights (and, for a
    move from below the top, shifting the pile back) undoes the move.
    """
    h0 = height[s, 0]
    h1 = height[s, 1]
    h2 = height[s, 2]
    h3 = height[s, 3]
    depth = code_depth(code)
    src = code_src(code)
    hs = height[s, src]
    at = hs - 1 - depth
    card = work[s, src, at]
    _apply_move(work, height, s, code)
    n = _resolve(work, height, s, beats)
    if depth > 0:
        for k in range(hs - 1, at, -1):
            work[s, src, k] = work[s, src, k - 1]
        work[s, src, at] = card
    height[s, 0] = h0
    height[s, 1] = h1
    height[s, 2] = h2
    height[s, 3] = h3
    return n


@nb.njit(cache=True, _nrt=False)
def _position_value(work, height, s, pos, is_ace, fill):
    """policies.position_value: discards first; then Aces at the bottom of a pile and empty piles,
    Aces first except in easy (FILL_ANY), where empty piles come first."""
    on_piles = 0
    empties = 0
    aces = 0
    for i in range(N_PILES):
        h = height[s, i]
        on_piles += h
        if h == 0:
            empties += 1
        elif is_ace[work[s, i, 0]]:
            aces += 1
    if fill == FILL_ANY:
        return (pos - on_piles) * 100 + empties * 10 + aces
    return (pos - on_piles) * 100 + aces * 10 + empties


# ----------------------------------------------------------------------------------------------
# Policies. A choice is PASS (deal if the stock is not empty, else stop), GIVE_UP (stop although
# dealing is not allowed, see policies.py) or a move code. Each takes the legal moves of its
# position already generated in moves[row, :n].

PASS = -1
GIVE_UP = -2


@nb.njit(cache=True, inline="always", _nrt=False)
def _scan_moves(work, height, s, is_ace, beats, moves, n):
    """One pass over the n moves of position s (in moves[s]), counting the discards each sets off.

    Returns (best move, its discards, best Ace move, its discards, the most
    discards of a move that is not an Ace); GIVE_UP / -1 where there is none.
    "Best" is the first with the most discards. Moves of the only card of a
    pile are skipped, and so are repeats of one card into another empty pile:
    they discard the same, so they can never be strictly better.
    """
    best = GIVE_UP
    best_d = -1
    best_ace = GIVE_UP
    ace_d = -1
    other_d = -1
    last = -1
    for k in range(n):
        code = moves[s, k]
        if (code | DST_BITS) == last or _is_lone(height, s, code):
            continue
        last = code | DST_BITS
        d = _discards_after(work, height, s, code, beats) if _may_discard(work, height, s, code, beats) else 0
        if d > best_d:
            best = code
            best_d = d
        if is_ace[_moved_card(work, height, s, code)]:
            if d > ace_d:
                best_ace = code
                ace_d = d
        elif d > other_d:
            other_d = d
    return best, best_d, best_ace, ace_d, other_d


@nb.njit(cache=True, inline="always", _nrt=False)
def _fills_from_a_stack(work, height, s, fill, is_ace):
    """game.fills_from_a_stack: a card of a pile of two or more may move into an empty pile of position s.

    Under must_fill exactly this forbids dealing; a lone card never does (RULES.md).
    """
    empty = False
    stack = False
    for i in range(N_PILES):
        h = height[s, i]
        if h == 0:
            empty = True
        elif h >= 2 and (fill != FILL_ACE or is_ace[work[s, i, h - 1]]):
            stack = True
    return empty and stack


@nb.njit(cache=True, inline="always", _nrt=False)
def _pass_ok(work, height, s, pos, rules):
    """Dealing (or, with the stock empty, stopping) is allowed: must_fill blocks it while a card of a pile
    of two or more may move into an empty pile."""
    return pos >= N_CARDS or not rules.must_fill or not _fills_from_a_stack(work, height, s, rules.fill, rules.is_ace)


@nb.njit(cache=True, inline="always", _nrt=False)
def _greedy_pick(best, best_d, pass_ok):
    """Greedy's choice from the scan: the best move if it discards (or passing is not allowed), else pass."""
    if best >= 0 and (best_d > 0 or not pass_ok):
        return best
    return PASS if pass_ok else GIVE_UP


@nb.njit(cache=True, inline="always", _nrt=False)
def _greedy_choice(work, height, s, pos, rules, moves, n):
    """Greedy's choice in position s, whose n legal moves are in moves[s]."""
    best, best_d, _, _, _ = _scan_moves(work, height, s, rules.is_ace, rules.beats, moves, n)
    return _greedy_pick(best, best_d, _pass_ok(work, height, s, pos, rules))


@nb.njit(cache=True, _nrt=False)
def _rollout_value(work, height, s, pos, rules, moves):
    """Play greedy from position s (in the rollout slot) until it would deal or stop; the value."""
    r = SLOT_ROLLOUT
    _copy(work, height, s, r)
    while True:
        n = _gen_moves(work, height, r, rules.fill, rules.sensible, rules.leftmost, rules.is_ace, moves, r)
        a = _greedy_choice(work, height, r, pos, rules, moves, n)
        if a < 0:
            return _position_value(work, height, r, pos, rules.is_ace, rules.fill)
        _apply_move(work, height, r, a)
        _resolve(work, height, r, rules.beats)


@nb.njit(cache=True, _nrt=False)
def _level_setup(work, height, s, pos, rules, moves):
    """Generate the moves of level slot s; returns (count, starting best value)."""
    n = _gen_moves(work, height, s, rules.fill, rules.sensible, rules.leftmost, rules.is_ace, moves, s)
    pass_ok = _pass_ok(work, height, s, pos, rules)
    has_cand = False
    for k in range(n):
        if not _is_lone(height, s, moves[s, k]):
            has_cand = True
            break
    if pass_ok or not has_cand:
        return n, _position_value(work, height, s, pos, rules.is_ace, rules.fill)
    return n, np.int64(-1)


@nb.njit(cache=True, _nrt=False)
def _subtree_value(root, levels, pos, rules, scratch):
    """policies._subtree_value without recursion: an explicit stack over scratch slots.

    Level l of the stack lives in slot SLOT_LEVELS + l; the position to value is
    copied from slot ``root`` to level 0.
    """
    work, height, moves, count, nxt, best = scratch.work, scratch.height, scratch.moves, scratch.count, \
        scratch.nxt, scratch.best
    beats = rules.beats
    if levels == 0:
        return _rollout_value(work, height, root, pos, rules, moves)
    base = SLOT_LEVELS
    _copy(work, height, root, base)
    lvl = 0
    count[0], best[0] = _level_setup(work, height, base, pos, rules, moves)
    nxt[0] = 0
    while True:
        s = base + lvl
        advanced = False
        while nxt[lvl] < count[lvl]:
            code = moves[s, nxt[lvl]]
            nxt[lvl] += 1
            if _is_lone(height, s, code):
                continue
            child = s + 1
            _copy(work, height, s, child)
            _apply_move(work, height, child, code)
            _resolve(work, height, child, beats)
            if lvl + 1 == levels:
                v = _rollout_value(work, height, child, pos, rules, moves)
                if v > best[lvl]:
                    best[lvl] = v
            else:
                lvl += 1
                count[lvl], best[lvl] = _level_setup(work, height, child, pos, rules, moves)
                nxt[lvl] = 0
                advanced = True
                break
        if advanced:
            continue
        v = best[lvl]
        if lvl == 0:
            return v
        lvl -= 1
        if v > best[lvl]:
            best[lvl] = v


@nb.njit(cache=True, _nrt=False)
def _choose(policy, pos, rules, scratch, n):
    """The choice of a deterministic policy in the game slot, whose n legal moves are in scratch.moves[0]."""
    kind, param = policy.kind, policy.param
    work, height, moves = scratch.work, scratch.height, scratch.moves
    is_ace, beats = rules.is_ace, rules.beats
    s = SLOT_GAME
    pass_ok = _pass_ok(work, height, s, pos, rules)
    if kind == K_NOMOVE:
        if pass_ok:
            return PASS
        for k in range(n):
            if not _is_lone(height, s, moves[s, k]):
                return moves[s, k]
        return GIVE_UP
    if kind != K_LOOKAHEAD:
        best, best_d, best_ace, ace_d, other_d = _scan_moves(work, height, s, is_ace, beats, moves, n)
        if kind == K_ACES and best_ace >= 0:
            return best_ace
        if kind == K_HUMAN and best_ace >= 0:
            best_other = other_d
            if pass_ok and best_other < 0:
                best_other = 0
            if ace_d >= best_other - param:
                return best_ace
        return _greedy_pick(best, best_d, pass_ok)
    # K_LOOKAHEAD: value every choice now, pass first, ties to the earlier choice
    choice = GIVE_UP
    best_value = -1
    if pass_ok:
        choice = PASS
        best_value = _position_value(work, height, s, pos, is_ace, rules.fill)
    for k in range(n):
        code = moves[s, k]
        if _is_lone(height, s, code):
            continue
        child = N_SLOTS - 1  # a slot of its own: the rollout and level slots are used inside
        _copy(work, height, s, child)
        _apply_move(work, height, child, code)
        _resolve(work, height, child, beats)
        v = _subtree_value(child, param - 1, pos, rules, scratch)
        if v > best_value:
            choice = code
            best_value = v
    return choice


@nb.njit(cache=True, _nrt=False)
def _uniform_choice(n, seed_lo, seed_hi, idx_lo, idx_hi, decision):
    """policies.uniform_choice: Lemire's exactly-uniform choice in 0..n-1 from Philox words."""
    nn = np.uint64(n)
    threshold = np.uint64((4294967296 - n) % n)
    block = np.uint32(decision)
    while True:
        w0, w1, w2, w3 = philox4x32(block, STREAM_POLICY, idx_lo, idx_hi, seed_lo, seed_hi)
        for t in range(4):
            if t == 0:
                w = w0
            elif t == 1:
                w = w1
            elif t == 2:
                w = w2
            else:
                w = w3
            mm = np.uint64(w) * nn
            if (mm & np.uint64(0xFFFFFFFF)) >= threshold:
                return np.int64(mm >> np.uint64(32))
        block = np.uint32(block + np.uint32(1))


@nb.njit(cache=True, inline="always")
def idx_lo_hi(index, part):
    """Word ``part`` (0 low, 1 high) of a deal index, as uint32."""
    idx = np.uint64(index)
    if part == 0:
        return np.uint32(idx & np.uint64(0xFFFFFFFF))
    return np.uint32(idx >> np.uint64(32))


@nb.njit(cache=True)
def _play_kernel(decks, indices, seed_lo, seed_hi, policy, rules, want_lines, out):
    """Play every deck; one game at a time in scratch slot 0 (see the module docstring).

    Args:
        decks, indices:   uint8[N, 52] decks and int64[N] their deal indices (they key the random draws)
        seed_lo, seed_hi: the two words of the seed, uint32
        policy:           PolicyArgs
        rules:            BatchRules
        want_lines:       write each game's line to ``out.lines``
        out:              GameRows, one row per deck
    """
    if policy.kind == K_NOMOVE and not rules.optional and not rules.must_fill:
        piles = np.empty((N_PILES, NOMOVE_PILE_CAP), dtype=np.int64)
        _play_nomove_games(decks, rules, want_lines, out, piles)
    else:
        scratch = Scratch(np.full((N_SLOTS, N_PILES, N_CARDS), -1, dtype=np.int64),
                          np.zeros((N_SLOTS, N_PILES), dtype=np.int64), np.zeros((N_SLOTS, MOVE_CAP), dtype=np.int64),
                          np.zeros(LINE_CAP, dtype=np.int16), np.zeros(MAX_DEPTH + 1, dtype=np.int64),
                          np.zeros(MAX_DEPTH + 1, dtype=np.int64), np.zeros(MAX_DEPTH + 1, dtype=np.int64))
        _play_games(decks, indices, seed_lo, seed_hi, policy, rules, want_lines, out, scratch)


@nb.njit(cache=True, inline="always", _nrt=False)
def _offers_move(top, h, fill, sensible, is_ace):
    """A pile of h cards with top card ``top`` has a card that may move into an empty pile.

    What _gen_moves lists from it as a source: not when it is empty, not its
    only card under ``sensible``, only an Ace in ``strict``; in ``easy`` any of
    its cards, so it qualifies exactly when a top-card move would.
    """
    return h > 0 and not (sensible and h == 1) and (fill != FILL_ACE or is_ace[top])


@nb.njit(cache=True, _nrt=False)
def _play_nomove_games(decks, rules, want_lines, out, piles):
    """``nomove`` under forced discards and without must_fill: a loop of its own, same results.

    With dealing always allowed, ``nomove`` deals whenever the stock is not
    empty and stops when it is: deal four, make the forced discards, repeat.
    So every game line is the 12 deals (``d`` x 12, far below MAX_ACTIONS),
    no card ever moves, and the score is the number of cards not left on the
    piles. A point counts as a decision, as in _play_games, when the player had
    more than one choice: some card could move into an empty pile (besides
    dealing, or, once the stock is empty, stopping). Under ``discards=optional``
    (discards go into the line) and ``must_fill`` (a move may be forced)
    _play_games plays ``nomove``.

    ``piles: int64[4, NOMOVE_PILE_CAP]`` holds pile i as piles[i, 1..h_i] with
    the sentinel EMPTY in piles[i, 0], so the top card is always piles[i, h_i]
    (EMPTY for an empty pile) and a discard is ``h_i -= 1`` without a branch;
    heights and tops live in local variables. The forced discards are the
    rounds of _resolve_tops.
    """
    fill, sensible, is_ace, beats = rules.fill, rules.sensible, rules.is_ace, rules.beats
    out_score, out_moves, out_decisions, out_len, lines = out
    for i in range(N_PILES):
        piles[i, 0] = EMPTY
    for g in range(decks.shape[0]):
        h0 = 0
        h1 = 0
        h2 = 0
        h3 = 0
        n_dec = 0
        pos = 0
        while True:
            # deal the next four cards (the first four make the layout), then the forced discards
            t0 = np.int64(decks[g, pos])
            t1 = np.int64(decks[g, pos + 1])
            t2 = np.int64(decks[g, pos + 2])
            t3 = np.int64(decks[g, pos + 3])
            pos += N_PILES
            h0 += 1
            piles[0, h0] = t0
            h1 += 1
            piles[1, h1] = t1
            h2 += 1
            piles[2, h2] = t2
            h3 += 1
            piles[3, h3] = t3
            while True:
                d0, d1, d2, d3 = _beaten_tops(beats, t0, t1, t2, t3)
                if (d0 | d1 | d2 | d3) == 0:
                    break
                h0 -= d0
                t0 = piles[0, h0]
                h1 -= d1
                t1 = piles[1, h1]
                h2 -= d2
                t2 = piles[2, h2]
                h3 -= d3
                t3 = piles[3, h3]
            if h0 == 0 or h1 == 0 or h2 == 0 or h3 == 0:
                if (_offers_move(t0, h0, fill, sensible, is_ace) or _offers_move(t1, h1, fill, sensible, is_ace)
                        or _offers_move(t2, h2, fill, sensible, is_ace)
                        or _offers_move(t3, h3, fill, sensible, is_ace)):
                    n_dec += 1  # a move was possible besides dealing (or stopping)
            if pos >= N_CARDS:
                break  # the stock is empty: nomove stops
        out_score[g] = N_CARDS - (h0 + h1 + h2 + h3)
        out_moves[g] = 0
        out_decisions[g] = n_dec
        out_len[g] = N_DEALS
        if want_lines:
            for k in range(N_DEALS):
                lines[g, k] = DEAL_CODE


# Without NRT: the game loop allocates nothing, and reference counting of the
# scratch arrays on every helper call would otherwise cost about half its time.
@nb.njit(cache=True, _nrt=False)
def _play_games(decks, indices, seed_lo, seed_hi, policy, rules, want_lines, out, scratch):
    """The game loop of ``_play_kernel`` over the preallocated ``scratch``."""
    kind, max_actions = policy.kind, policy.max_actions
    fill, optional, sensible, leftmost, is_ace, beats = rules.fill, rules.optional, rules.sensible, rules.leftmost, \
        rules.is_ace, rules.beats
    out_score, out_moves, out_decisions, out_len, lines = out
    work, height, moves, line = scratch.work, scratch.height, scratch.moves, scratch.line
    s = SLOT_GAME
    for g in range(decks.shape[0]):
        t0 = np.int64(decks[g, 0])
        t1 = np.int64(decks[g, 1])
        t2 = np.int64(decks[g, 2])
        t3 = np.int64(decks[g, 3])
        for i in range(N_PILES):
            work[s, i, 0] = decks[g, i]
            height[s, i] = 1
        pos = N_PILES
        n_line = 0
        n_moves = 0
        n_dec = 0
        if not optional:
            _, t0, t1, t2, t3 = _resolve_tops(work, height, s, beats, t0, t1, t2, t3)
        while True:
            if optional:
                n_line = _take_discards(work, height, s, beats, line, n_line)
                t0 = _top(work, height, s, 0)
                t1 = _top(work, height, s, 1)
                t2 = _top(work, height, s, 2)
                t3 = _top(work, height, s, 3)
            if n_line >= max_actions:
                break
            if t0 != EMPTY and t1 != EMPTY and t2 != EMPTY and t3 != EMPTY:
                # no empty pile, so no move: dealing (or, with the stock empty, stopping) is the only choice
                if pos >= N_CARDS:
                    break
                a = PASS
            else:
                if kind == K_NOMOVE:
                    n = _count_moves(work, height, s, fill, sensible, leftmost, is_ace)
                else:
                    n = _gen_moves(work, height, s, fill, sensible, leftmost, is_ace, moves, s)
                stock_left = pos < N_CARDS
                deal_ok = stock_left and _pass_ok(work, height, s, pos, rules)
                n_choices = n + (1 if deal_ok else 0) + (0 if stock_left else 1)
                if not stock_left and n == 0:
                    break
                decision = n_dec
                if n_choices > 1:
                    n_dec += 1
                if kind == K_RANDOM:
                    k = 0
                    if n_choices > 1:
                        k = _uniform_choice(n_choices, seed_lo, seed_hi, idx_lo_hi(indices[g], 0),
                                            idx_lo_hi(indices[g], 1), decision)
                    if deal_ok:
                        k -= 1  # choice 0 is the deal
                    if k < 0:
                        a = PASS
                    elif k < n:
                        a = moves[s, k]
                    else:
                        a = GIVE_UP  # stop (offered only when the stock is empty)
                elif kind == K_NOMOVE and (deal_ok or not stock_left):
                    a = PASS
                elif kind == K_GREEDY:
                    a = _greedy_choice(work, height, s, pos, rules, moves, n)
                else:
                    if kind == K_NOMOVE:  # must_fill forbids dealing: nomove needs the move list
                        n = _gen_moves(work, height, s, fill, sensible, leftmost, is_ace, moves, s)
                    a = _choose(policy, pos, rules, scratch, n)
                if a == GIVE_UP or (a == PASS and not stock_left):
                    break
            if a == PASS:
                t0 = np.int64(decks[g, pos])
                t1 = np.int64(decks[g, pos + 1])
                t2 = np.int64(decks[g, pos + 2])
                t3 = np.int64(decks[g, pos + 3])
                work[s, 0, height[s, 0]] = t0
                height[s, 0] += 1
                work[s, 1, height[s, 1]] = t1
                height[s, 1] += 1
                work[s, 2, height[s, 2]] = t2
                height[s, 2] += 1
                work[s, 3, height[s, 3]] = t3
                height[s, 3] += 1
                pos += N_PILES
                line[n_line] = DEAL_CODE
            else:
                _apply_move(work, height, s, a)
                t0 = _top(work, height, s, 0)
                t1 = _top(work, height, s, 1)
                t2 = _top(work, height, s, 2)
                t3 = _top(work, height, s, 3)
                n_moves += 1
                line[n_line] = a
            n_line += 1
            if not optional:
                _, t0, t1, t2, t3 = _resolve_tops(work, height, s, beats, t0, t1, t2, t3)
        on_piles = 0
        for i in range(N_PILES):
            on_piles += height[s, i]
        out_score[g] = pos - on_piles
        out_moves[g] = n_moves
        out_decisions[g] = n_dec
        out_len[g] = n_line
        if want_lines:
            for k in range(n_line):
                lines[g, k] = line[k]


def batch_rules(rules: Rules) -> BatchRules:
    """A rule set as the compiled game loop reads it."""
    is_ace, beats = _tables(rules)
    return BatchRules(int(rules.fill), bool(rules.optional_discards), bool(rules.sensible), bool(rules.leftmost),
                      bool(rules.must_fill), is_ace, beats)


def _tables(rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """is_ace uint8[53] and beats uint8[53, 53] of a rule set (index 52 = an empty pile)."""
    strength = strength_table(rules).astype(np.int64)
    suit = SUIT.astype(np.int64)
    is_ace = np.zeros(N_CARDS + 1, dtype=np.uint8)
    is_ace[:N_CARDS] = strength == TOP_STRENGTH
    beats = np.zeros((N_CARDS + 1, N_CARDS + 1), dtype=np.uint8)
    beats[:N_CARDS, :N_CARDS] = (suit[:, None] == suit[None, :]) & (strength[:, None] > strength[None, :])
    return is_ace, beats


LINE_CHUNK = 16384  # decks per kernel call when lines are wanted (bounds the int16 line buffer)


def check_batch_input(decks, indices, seed):
    """Validate and normalize the inputs every batch player takes.

    Returns ``(decks uint8[N, 52] contiguous, indices int64[N] contiguous, seed int)``;
    ``indices`` defaults to 0..N-1. Raises ValueError naming the bad input.
    """
    decks = np.ascontiguousarray(decks, dtype=np.uint8)
    if decks.ndim != 2 or decks.shape[1] != N_CARDS:
        raise ValueError(f"decks must have shape (N, 52); got {decks.shape}")
    n = decks.shape[0]
    if indices is None:
        indices = np.arange(n, dtype=np.int64)
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    if indices.shape != (n,):
        raise ValueError(f"indices must have one deal index per deck ({n}); got shape {indices.shape}")
    seed = int(seed)
    if not 0 <= seed < 2**64:
        raise InputRangeError(f"seed {seed!r} is out of range; use an integer in 0..2**64-1")
    return decks, indices, seed


def play_batch(
    decks: np.ndarray,
    rules: Rules | str,
    policy: str | PolicySpec,
    *,
    seed: int,
    indices: np.ndarray | None = None,
    want_lines: bool = False,
    max_actions: int = MAX_ACTIONS,
) -> BatchResult:
    """Play every deck (``uint8[N, 52]``) with ``policy`` under ``rules``; one row per deck.

    ``seed`` and ``indices`` (int64[N], the deal index of each deck; default
    0..N-1) key the random choices, so row n depends only on (seed,
    indices[n], deck n, rules, policy), never on the batch. The result equals
    ``policies.play_scalar`` deck by deck. With ``want_lines`` the game lines
    (game.py action text, replayable by ``game.replay``) are returned too.

    Each row of ``decks`` must be a permutation of 0..51 (as ``deals.deal_batch``
    makes them); that is not checked here, to keep the hot path lean.
    ``max_actions`` (1..MAX_ACTIONS) is the cap of policies.py on a line's length.
    """
    if not 1 <= max_actions <= MAX_ACTIONS:
        raise ValueError(f"max_actions={max_actions!r} is out of range; use 1..{MAX_ACTIONS}")
    rules = rules_by_name(rules)
    spec = parse_policy(policy)
    decks, indices, seed = check_batch_input(decks, indices, seed)
    n = decks.shape[0]
    kind = POLICY_KINDS[spec.kind]
    param = 0
    if spec.kind == "human":
        param = spec.param("sacrifice")
    elif spec.kind == "lookahead":
        param = spec.param("depth")
    score = np.empty(n, dtype=np.int8)
    moves = np.empty(n, dtype=np.int16)
    decisions = np.empty(n, dtype=np.int16)
    length = np.empty(n, dtype=np.int64)
    seed_words = np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32)
    args = (*seed_words, PolicyArgs(kind, param, int(max_actions)), batch_rules(rules))
    if not want_lines:
        _play_kernel(decks, indices, *args, False,
                     GameRows(score, moves, decisions, length, np.zeros((1, 1), np.int16)))
        return BatchResult(score, score == WIN_SCORE, moves, decisions, None)
    out_lines: list[str] = []
    text = CODE_TEXT
    for start in range(0, n, LINE_CHUNK):
        stop = min(n, start + LINE_CHUNK)
        buf = np.empty((stop - start, LINE_CAP), dtype=np.int16)
        rows = GameRows(score[start:stop], moves[start:stop], decisions[start:stop], length[start:stop], buf)
        _play_kernel(decks[start:stop], indices[start:stop], *args, True, rows)
        for row, ln in zip(buf.tolist(), length[start:stop].tolist()):
            out_lines.append(" ".join([text[c] for c in row[:ln]]))
    return BatchResult(score, score == WIN_SCORE, moves, decisions, out_lines)


def play_policy(decks: np.ndarray, rules: Rules, spec: PolicySpec, *, seed: int, indices: np.ndarray,
                want_lines: bool = False, node_limit: int | None = None):
    """The registry's entry point for the policies (players.py): ``play_batch`` as a ``PlayResult``.

    ``node_limit`` is for the solver and ignored here.
    """
    from .players import PlayResult

    res = play_batch(decks, rules, spec, seed=seed, indices=indices, want_lines=want_lines)
    return PlayResult(res.score, res.won, res.moves, res.decisions, line=res.lines)
