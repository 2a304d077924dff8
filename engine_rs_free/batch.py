"""The batch engine: many deals played at once by a policy, in compiled code.

``play_batch(decks, rules, policy, seed=…, indices=…)`` plays every deck with
a policy of ``policies.py`` and returns a ``BatchResult``, a struct of arrays
with one row per deck. It agrees exactly with the scalar twin
``policies.play_scalar`` (score, won, moves, decisions, line) on every deal:
the policies, tie-breaks, counting rules, ``MAX_ACTIONS`` and random draws
are the ones the ``policies`` module docstring defines, and the twin tests
check them over every variant and policy.

Layout (struct of arrays, fixed shapes, small dtypes; built once per call)::

    decks:  uint8[N, 52]     card ids in deal order (cards.py)
    work:   int8[S, 4, 52]   S scratch positions: slot 0 is the game being played,
                             the others hold positions a policy looks at;
                             cards bottom first, -1 = empty slot
    height: int64[S, 4]      cards on each pile of each scratch position
    moves:  int64[S, 832]    legal moves of a position, contract order, as move codes
    lines:  int16[N, LINE_CAP]  action codes of each game line (only when lines are wanted)

The compiled kernel loops over the decks; each game is played in scratch slot
0, with ``pos`` the index of the next stock card in the deck. The policy reads
the piles and ``52 - pos`` (the number of cards left), never ``deck[pos:]``.

Action codes (``int16``): 0 = ``d``; ``1 + (src*52 + depth)*4 + dst`` = a move;
``1000 + pile`` = ``x<pile>`` (an optional discard). ``ACTION_TEXT`` maps a
code to its game.py text, so lines are built in compiled code and only
formatted in Python when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .cards import N_CARDS, SUIT
from .deals import STREAM_POLICY, philox4x32
from .policies import MAX_ACTIONS, TOP_STRENGTH, PolicySpec, parse_policy
from .rules import FILL_ACE, FILL_ANY, Rules, rules_by_name, strength_table

N_PILES = 4
MOVE_CAP = N_CARDS * N_PILES * N_PILES  # 832 > any number of legal moves in one position
LINE_CAP = MAX_ACTIONS + 56  # the cap is checked at decision points; up to 48 discards can follow
CODE_DEAL = 0
CODE_DISCARD = 1000
POLICY_KINDS = {"nomove": 0, "random": 1, "greedy": 2, "aces": 3, "human": 4, "lookahead": 5}
K_NOMOVE, K_RANDOM, K_GREEDY, K_ACES, K_HUMAN, K_LOOKAHEAD = range(6)
MAX_DEPTH = 4
# Scratch slots: 0 game, 1 probe (discards after a move), 2 rollout, 3.. lookahead levels.
SLOT_GAME, SLOT_PROBE, SLOT_ROLLOUT, SLOT_LEVELS = 0, 1, 2, 3
N_SLOTS = SLOT_LEVELS + MAX_DEPTH + 1


def _action_text() -> list[str]:
    text = [""] * (CODE_DISCARD + N_PILES)
    text[CODE_DEAL] = "d"
    for src in range(N_PILES):
        for depth in range(N_CARDS):
            for dst in range(N_PILES):
                code = 1 + (src * N_CARDS + depth) * N_PILES + dst
                text[code] = f"{src}:{depth}>{dst}" if depth else f"{src}>{dst}"
    for pile in range(N_PILES):
        text[CODE_DISCARD + pile] = f"x{pile}"
    return text


ACTION_TEXT = _action_text()


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
# Compiled position primitives. A position is (work[s], height[s]) for a scratch slot s.


@nb.njit(cache=True, inline="always")
def _top_discardable(work, height, s, i, strength, suit):
    """True when the top card of pile i has a same-suit, stronger top card on another pile."""
    if height[s, i] == 0:
        return False
    c = work[s, i, height[s, i] - 1]
    sc = suit[c]
    st = strength[c]
    for j in range(N_PILES):
        if j != i and height[s, j] > 0:
            o = work[s, j, height[s, j] - 1]
            if suit[o] == sc and strength[o] > st:
                return True
    return False


@nb.njit(cache=True)
def _resolve(work, height, s, strength, suit, line, n_line, record):
    """Discard until no top card can go, lowest pile first; returns (discards, new line length).

    With ``record`` each discard is written to ``line`` as an ``x`` action
    (the policies' way of taking optional discards); forced discards are not
    recorded.
    """
    n = 0
    found = True
    while found:
        found = False
        for i in range(N_PILES):
            if _top_discardable(work, height, s, i, strength, suit):
                height[s, i] -= 1
                work[s, i, height[s, i]] = -1
                n += 1
                if record:
                    line[n_line] = CODE_DISCARD + i
                    n_line += 1
                found = True
                break
    return n, n_line


@nb.njit(cache=True, inline="always")
def _copy(work, height, src, dst):
    for i in range(N_PILES):
        h = height[src, i]
        for k in range(h):
            work[dst, i, k] = work[src, i, k]
        for k in range(h, height[dst, i]):
            work[dst, i, k] = -1
        height[dst, i] = h


@nb.njit(cache=True)
def _gen_moves(work, height, s, fill, sensible, leftmost, strength, out, m):
    """Write the legal moves of position s to out[m, :] in contract order; returns their count."""
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
            card = work[s, src, h - 1 - depth]
            if fill == FILL_ACE and strength[card] != TOP_STRENGTH:
                continue
            for dst in range(N_PILES):
                if dst == src or height[s, dst] != 0:
                    continue
                if leftmost and dst != first_empty:
                    continue
                out[m, n] = (src * N_CARDS + depth) * N_PILES + dst
                n += 1
    return n


@nb.njit(cache=True, inline="always")
def _apply_move(work, height, s, code):
    """Move the card of move ``code`` into its empty target pile (no discards)."""
    dst = code % N_PILES
    rest = code // N_PILES
    depth = rest % N_CARDS
    src = rest // N_CARDS
    h = height[s, src]
    at = h - 1 - depth
    card = work[s, src, at]
    for k in range(at, h - 1):
        work[s, src, k] = work[s, src, k + 1]
    work[s, src, h - 1] = -1
    height[s, src] = h - 1
    work[s, dst, 0] = card
    height[s, dst] = 1


@nb.njit(cache=True, inline="always")
def _moved_card(work, height, s, code):
    depth = (code // N_PILES) % N_CARDS
    src = code // (N_PILES * N_CARDS)
    return work[s, src, height[s, src] - 1 - depth]


@nb.njit(cache=True, inline="always")
def _is_lone(height, s, code):
    return height[s, code // (N_PILES * N_CARDS)] == 1


@nb.njit(cache=True)
def _discards_after(work, height, s, code, strength, suit, line):
    """Discards set off by move ``code`` in position s (computed in the probe slot)."""
    _copy(work, height, s, SLOT_PROBE)
    _apply_move(work, height, SLOT_PROBE, code)
    n, _ = _resolve(work, height, SLOT_PROBE, strength, suit, line, 0, False)
    return n


@nb.njit(cache=True)
def _position_value(work, height, s, pos, strength):
    """policies.position_value: discards*100 + empty piles*10 + Aces on top."""
    on_piles = 0
    empties = 0
    aces = 0
    for i in range(N_PILES):
        h = height[s, i]
        on_piles += h
        if h == 0:
            empties += 1
        elif strength[work[s, i, h - 1]] == TOP_STRENGTH:
            aces += 1
    return (pos - on_piles) * 100 + empties * 10 + aces


# ----------------------------------------------------------------------------------------------
# Policies. A choice is -1 (pass: deal if the stock is not empty, else stop) or a move code;
# -2 means "stop" when dealing is not allowed (give up, see policies.py).

PASS = -1
GIVE_UP = -2


@nb.njit(cache=True)
def _pass_ok(work, height, s, pos, fill, sensible, leftmost, must_fill, strength, moves, m):
    """True when the player may deal (stock left, not blocked by must_fill) or stop (stock empty)."""
    if pos >= N_CARDS:
        return True
    if not must_fill:
        return True
    return _gen_moves(work, height, s, fill, sensible, leftmost, strength, moves, m) == 0


@nb.njit(cache=True)
def _greedy_choice(work, height, s, pos, fill, sensible, leftmost, must_fill, strength, suit, moves, m, line):
    n = _gen_moves(work, height, s, fill, sensible, leftmost, strength, moves, m)
    best = GIVE_UP
    best_d = -1
    for k in range(n):
        code = moves[m, k]
        if _is_lone(height, s, code):
            continue
        d = _discards_after(work, height, s, code, strength, suit, line)
        if d > best_d:
            best = code
            best_d = d
    pass_ok = pos >= N_CARDS or not must_fill or n == 0
    if best >= 0 and (best_d > 0 or not pass_ok):
        return best
    return PASS if pass_ok else GIVE_UP


@nb.njit(cache=True)
def _rollout_value(work, height, s, pos, fill, sensible, leftmost, must_fill, strength, suit, moves, line):
    """Play greedy from position s (in the rollout slot) until it would deal or stop; the value."""
    _copy(work, height, s, SLOT_ROLLOUT)
    while True:
        a = _greedy_choice(work, height, SLOT_ROLLOUT, pos, fill, sensible, leftmost, must_fill, strength, suit,
                           moves, SLOT_ROLLOUT, line)
        if a < 0:
            return _position_value(work, height, SLOT_ROLLOUT, pos, strength)
        _apply_move(work, height, SLOT_ROLLOUT, a)
        _resolve(work, height, SLOT_ROLLOUT, strength, suit, line, 0, False)


@nb.njit(cache=True)
def _subtree_value(work, height, root, levels, pos, fill, sensible, leftmost, must_fill, strength, suit,
                   moves, line, count, nxt, best):
    """policies._subtree_value without recursion: an explicit stack over scratch slots.

    Level l of the stack lives in slot SLOT_LEVELS + l; the position to value is
    copied from slot ``root`` to level 0.
    """
    if levels == 0:
        return _rollout_value(work, height, root, pos, fill, sensible, leftmost, must_fill, strength, suit,
                              moves, line)
    base = SLOT_LEVELS
    _copy(work, height, root, base)
    lvl = 0
    # set up level 0
    s = base
    n = _gen_moves(work, height, s, fill, sensible, leftmost, strength, moves, s)
    count[0] = n
    nxt[0] = 0
    pass_ok = pos >= N_CARDS or not must_fill or n == 0
    has_cand = False
    for k in range(n):
        if not _is_lone(height, s, moves[s, k]):
            has_cand = True
    best[0] = _position_value(work, height, s, pos, strength) if (pass_ok or not has_cand) else -1
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
            _resolve(work, height, child, strength, suit, line, 0, False)
            if lvl + 1 == levels:
                v = _rollout_value(work, height, child, pos, fill, sensible, leftmost, must_fill, strength, suit,
                                   moves, line)
                if v > best[lvl]:
                    best[lvl] = v
            else:
                lvl += 1
                n = _gen_moves(work, height, child, fill, sensible, leftmost, strength, moves, child)
                count[lvl] = n
                nxt[lvl] = 0
                pass_ok = pos >= N_CARDS or not must_fill or n == 0
                has_cand = False
                for k in range(n):
                    if not _is_lone(height, child, moves[child, k]):
                        has_cand = True
                best[lvl] = _position_value(work, height, child, pos, strength) if (pass_ok or not has_cand) else -1
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


@nb.njit(cache=True)
def _choose(kind, param, work, height, pos, fill, sensible, leftmost, must_fill, strength, suit, moves, line,
            count, nxt, best):
    """The choice of a deterministic policy in the game slot: PASS, GIVE_UP or a move code."""
    s = SLOT_GAME
    if kind == K_GREEDY:
        return _greedy_choice(work, height, s, pos, fill, sensible, leftmost, must_fill, strength, suit, moves, s,
                              line)
    n = _gen_moves(work, height, s, fill, sensible, leftmost, strength, moves, s)
    pass_ok = pos >= N_CARDS or not must_fill or n == 0
    if kind == K_NOMOVE:
        if pass_ok:
            return PASS
        for k in range(n):
            if not _is_lone(height, s, moves[s, k]):
                return moves[s, k]
        return GIVE_UP
    if kind == K_ACES or kind == K_HUMAN:
        best_ace = GIVE_UP
        ace_d = -1
        other_d = -1
        for k in range(n):
            code = moves[s, k]
            if _is_lone(height, s, code):
                continue
            is_ace = strength[_moved_card(work, height, s, code)] == TOP_STRENGTH
            if kind == K_ACES and not is_ace:
                continue
            d = _discards_after(work, height, s, code, strength, suit, line)
            if is_ace:
                if d > ace_d:
                    best_ace = code
                    ace_d = d
            elif d > other_d:
                other_d = d
        if best_ace >= 0:
            if kind == K_ACES:
                return best_ace
            best_other = other_d
            if pass_ok and best_other < 0:
                best_other = 0
            if ace_d >= best_other - param:
                return best_ace
        return _greedy_choice(work, height, s, pos, fill, sensible, leftmost, must_fill, strength, suit, moves, s,
                              line)
    # K_LOOKAHEAD: value every choice now, pass first, ties to the earlier choice
    choice = GIVE_UP
    best_value = -1
    if pass_ok:
        choice = PASS
        best_value = _position_value(work, height, s, pos, strength)
    for k in range(n):
        code = moves[s, k]
        if _is_lone(height, s, code):
            continue
        child = N_SLOTS - 1  # a slot of its own: the probe and rollout slots are used inside
        _copy(work, height, s, child)
        _apply_move(work, height, child, code)
        _resolve(work, height, child, strength, suit, line, 0, False)
        v = _subtree_value(work, height, N_SLOTS - 1, param - 1, pos, fill, sensible, leftmost, must_fill,
                           strength, suit, moves, line, count, nxt, best)
        if v > best_value:
            choice = code
            best_value = v
    return choice


@nb.njit(cache=True)
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


@nb.njit(cache=True)
def _play_kernel(decks, indices, seed_lo, seed_hi, kind, param, fill, optional, sensible, leftmost, must_fill,
                 strength, suit, want_lines, out_score, out_moves, out_decisions, out_len, lines):
    """Play every deck; one game at a time in scratch slot 0 (see the module docstring)."""
    work = np.full((N_SLOTS, N_PILES, N_CARDS), -1, dtype=np.int8)
    height = np.zeros((N_SLOTS, N_PILES), dtype=np.int64)
    moves = np.zeros((N_SLOTS, MOVE_CAP), dtype=np.int64)
    line = np.zeros(LINE_CAP, dtype=np.int16)
    count = np.zeros(MAX_DEPTH + 1, dtype=np.int64)
    nxt = np.zeros(MAX_DEPTH + 1, dtype=np.int64)
    best = np.zeros(MAX_DEPTH + 1, dtype=np.int64)
    s = SLOT_GAME
    for g in range(decks.shape[0]):
        deck = decks[g]
        idx = np.uint64(indices[g])
        idx_lo = np.uint32(idx & np.uint64(0xFFFFFFFF))
        idx_hi = np.uint32(idx >> np.uint64(32))
        for i in range(N_PILES):
            for k in range(height[s, i]):
                work[s, i, k] = -1
            work[s, i, 0] = deck[i]
            height[s, i] = 1
        pos = N_PILES
        n_line = 0
        n_moves = 0
        n_dec = 0
        if not optional:
            _, n_line = _resolve(work, height, s, strength, suit, line, n_line, False)
        while True:
            if optional:
                _, n_line = _resolve(work, height, s, strength, suit, line, n_line, True)
            if n_line >= MAX_ACTIONS:
                break
            n = _gen_moves(work, height, s, fill, sensible, leftmost, strength, moves, s)
            stock_left = pos < N_CARDS
            deal_ok = stock_left and not (must_fill and n > 0)
            n_choices = n + (1 if deal_ok else 0) + (0 if stock_left else 1)
            if not stock_left and n == 0:
                break
            decision = n_dec
            if n_choices > 1:
                n_dec += 1
            if kind == K_RANDOM:
                k = 0
                if n_choices > 1:
                    k = _uniform_choice(n_choices, seed_lo, seed_hi, idx_lo, idx_hi, decision)
                if deal_ok:
                    if k == 0:
                        a = PASS
                    elif k - 1 < n:
                        a = moves[s, k - 1]
                    else:
                        a = GIVE_UP
                elif k < n:
                    a = moves[s, k]
                else:
                    a = GIVE_UP  # stop (only offered when the stock is empty)
            else:
                a = _choose(kind, param, work, height, pos, fill, sensible, leftmost, must_fill, strength, suit,
                            moves, line[LINE_CAP - 1:], count, nxt, best)
            if a == GIVE_UP or (a == PASS and not stock_left):
                break
            if a == PASS:
                for i in range(N_PILES):
                    work[s, i, height[s, i]] = deck[pos + i]
                    height[s, i] += 1
                pos += N_PILES
                line[n_line] = CODE_DEAL
            else:
                _apply_move(work, height, s, a)
                n_moves += 1
                line[n_line] = 1 + a
            n_line += 1
            if not optional:
                _, _ = _resolve(work, height, s, strength, suit, line, 0, False)
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


LINE_CHUNK = 16384  # decks per kernel call when lines are wanted (bounds the int16 line buffer)


def play_batch(
    decks: np.ndarray,
    rules: Rules | str,
    policy: str | PolicySpec,
    *,
    seed: int,
    indices: np.ndarray | None = None,
    want_lines: bool = False,
) -> BatchResult:
    """Play every deck (``uint8[N, 52]``) with ``policy`` under ``rules``; one row per deck.

    ``seed`` and ``indices`` (int64[N], the deal index of each deck; default
    0..N-1) key the random choices, so row n depends only on (seed,
    indices[n], deck n, rules, policy), never on the batch. The result equals
    ``policies.play_scalar`` deck by deck. With ``want_lines`` the game lines
    (game.py action text, replayable by ``game.replay``) are returned too.
    """
    rules = rules_by_name(rules)
    spec = parse_policy(policy)
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
        raise ValueError(f"seed {seed!r} is out of range; use an integer in 0..2**64-1")
    kind = POLICY_KINDS[spec.kind]
    param = 0
    if spec.kind == "human":
        param = spec.param("sacrifice")
    elif spec.kind == "lookahead":
        param = spec.param("depth")
    strength = strength_table(rules).astype(np.int64)
    suit = SUIT.astype(np.int64)
    score = np.empty(n, dtype=np.int8)
    moves = np.empty(n, dtype=np.int16)
    decisions = np.empty(n, dtype=np.int16)
    length = np.empty(n, dtype=np.int64)
    args = (np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32), kind, param, rules.fill,
            rules.optional_discards, rules.sensible, rules.leftmost, rules.must_fill, strength, suit)
    if not want_lines:
        _play_kernel(decks, indices, *args, False, score, moves, decisions, length, np.zeros((1, 1), np.int16))
        return BatchResult(score, score == 48, moves, decisions, None)
    out_lines: list[str] = []
    text = ACTION_TEXT
    for start in range(0, n, LINE_CHUNK):
        stop = min(n, start + LINE_CHUNK)
        buf = np.empty((stop - start, LINE_CAP), dtype=np.int16)
        _play_kernel(decks[start:stop], indices[start:stop], *args, True, score[start:stop], moves[start:stop],
                     decisions[start:stop], length[start:stop], buf)
        for row, ln in zip(buf.tolist(), length[start:stop].tolist()):
            out_lines.append(" ".join([text[c] for c in row[:ln]]))
    return BatchResult(score, score == 48, moves, decisions, out_lines)
