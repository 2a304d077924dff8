"""The upper end of the honest bracket: a clairvoyant search that pays for what it sees.

Information relaxation with a penalty (Brown, Smith & Sun, Operations Research
58(4), 2010; docs/bracket.md). For one stock order, ``penalised_value`` is::

    max over the sensible+leftmost lines of play of  1{won} - z,
    z = sum over the deals d of the line [ W(s after d) - Ê(W after d | s before d) ]

with W of ``value.w_of`` and Ê its mean over the tuples of ``deal_tuples``:
every ordered 4-tuple of the undealt cards while at most ``exact_upto`` are
left (exact), else ``samples`` sampled ones, the same for every position at
that stock position (common random numbers) and drawn from the set of undealt
cards with their own Philox stream, so independent of the cards actually
dealt. For every honest strategy z has mean zero, so the mean of this value
over stock orders bounds the win rate of every honest player from above.

The search is a max-plus dynamic programme over the positions of one deal: a
depth-first walk with a table of exact values (the key of ``solver.py``: the
cards on the table, the stock position and the foreign bottom of each pile).
A deal edge adds Ê(u) - W(after); with the stock empty a position is worth
1{some line of moves wins}. Under sensible+leftmost there are no cycles.

The player ``bound:w=MODEL,samples=K,exact=E`` (its grammar and defaults are
its entry of ``players.py``; ``parse_bound`` gives typed fields) plays it on a
batch of decks (``play``; ``play_player`` for the registry): ``value`` is the
per-deal bound (a real number), ``score``/``won``/``moves`` are those of the
line that attains it, ``nodes`` the positions expanded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .batch import check_batch_input
from .deals import mix64
from .errors import PositionParseError
from .expectimax import v0
from .infostate import (
    POOL_ROWS,
    bit,
    can_move,
    copy_row,
    deal4,
    first_empty,
    move,
    new_pool,
    on_table,
    pool_row,
    rule_tables,
)
from .players import DEFAULT_MODEL, REGISTRY, PlayerSpec, PlayResult, UnknownPlayerError, parse_player
from .value import (
    STREAM_PENALTY,
    W_EXACT,
    W_MODEL,
    W_ZERO,
    Model,
    all_tuples,
    expected_w,
    load_model,
    look_tuples,
    sample_tuples,
    w_of,
)

MAX_FRAMES = 200  # path length: 12 deals and fewer than 48 moves (each takes a card off a pile of two or more)
MEMO_BITS = 20
MEMO_PROBES = 16
NO_FOREIGN = 255
BOUND_KIND = "bound"
_ENTRY = REGISTRY[BOUND_KIND]
DEFAULT_SAMPLES = _ENTRY.param("samples").default
DEFAULT_EXACT = int(_ENTRY.param("exact").default)


@dataclass(frozen=True)
class BoundSpec:
    """A parsed bound player as typed fields (the grammar and the defaults are in players.py):
    the W model (``zero`` for the clairvoyant solver), samples K, exact-from E."""

    w: str = DEFAULT_MODEL
    samples: int = DEFAULT_SAMPLES
    exact: int = DEFAULT_EXACT

    @property
    def player(self) -> PlayerSpec:
        return PlayerSpec(BOUND_KIND, (("w", self.w), ("samples", self.samples), ("exact", str(self.exact))))

    @property
    def name(self) -> str:
        """The canonical name (players.py)."""
        return self.player.name

    def __str__(self) -> str:
        return self.name


def parse_bound(name: str | PlayerSpec | BoundSpec) -> BoundSpec:
    """The BoundSpec of a bound player's name (players.parse_player; defaults filled in).

    >>> parse_bound("bound").name
    'bound:w=w1,samples=32,exact=4'
    >>> parse_bound("bound: exact=8, w=zero").name
    'bound:w=zero,samples=32,exact=8'
    """
    if isinstance(name, BoundSpec):
        return name
    spec = parse_player(name)
    if spec.kind != BOUND_KIND:
        raise UnknownPlayerError(f"{spec.name!r} is not a bound player; write e.g. 'bound:samples=32'")
    return BoundSpec(spec.param("w"), spec.param("samples"), int(spec.param("exact")))


def w_kind_and_model(w: str, rules) -> tuple[int, Model]:
    """(kind, model) of a W name under ``rules``: ``zero``, ``exact`` (at most 8 cards undealt) or a
    shipped model (its strict file for strict)."""
    if w == "zero":
        return W_ZERO, Model.zero()
    if w == "exact":
        return W_EXACT, Model.zero()
    return W_MODEL, load_model(w, rule_tables(rules)[2] == 1)


def deal_tuples(stock_cards: list[int], *, samples: int, exact: int, seed: int, index: int, stream=STREAM_PENALTY,
                look: int = 0):
    """The tuples of every deal of a stock: (tuples int8[T, 4], offsets int64[D+1]), D = len(stock)/4.

    Deal i (stock position 4i, n = len(stock) - 4i undealt cards) has tuples[off[i]:off[i+1]]: every
    ordered 4-tuple of those cards when n <= exact, else ``samples`` tuples sampled with counter 4i.
    They depend on the *set* of cards from position 4i on (honest knowledge), not their order.
    With a look-ahead model (``look`` = its ``look8`` > 0) the deal from 8 undealt (n = 8 > exact) takes
    the first deals of that model's orders (``value.look_tuples``), so its penalty term telescopes.
    The deal from 12 undealt (counter 36 of a full stock) takes the tuples a look-ahead feature model
    (w4) reads at that point (``value.look12_feature``): its Q̂_3 and the expectation it is compared
    with share their noise.
    """
    nstock = len(stock_cards)
    parts, off = [], [0]
    for i in range(nstock // 4):
        rest = stock_cards[4 * i:]
        n = len(rest)
        if n <= exact:
            t = all_tuples(rest)
        elif n == 8 and look > 0:
            t = look_tuples(rest, look, seed=seed, index=index)
        else:
            t = sample_tuples(rest, samples, seed=seed, index=index, counter=4 * i, stream=stream)
        parts.append(t)
        off.append(off[-1] + len(t))
    tuples = np.concatenate(parts) if parts else np.zeros((0, 4), np.int8)
    return np.ascontiguousarray(tuples), np.array(off, np.int64)


@nb.njit(cache=True, inline="always")
def _key(P, H, r, sp, natives):
    m = np.uint64(0)
    f = np.uint32(0)
    for p in range(4):
        for i in range(H[r, p]):
            m |= bit(P[r, p, i])
        b = np.uint32(NO_FOREIGN)
        if H[r, p] > 0 and natives[P[r, p, 0]] != p:
            b = np.uint32(P[r, p, 0])
        f |= b << np.uint32(8 * p)
    return m | (np.uint64(sp) << np.uint64(52)), f


@nb.njit(cache=True, inline="always")
def _slot(k1, k2, bits):
    z = mix64(k1 ^ (np.uint64(k2) * np.uint64(0x9E3779B97F4A7C15)))
    return np.int64(z & np.uint64((1 << bits) - 1))


@nb.njit(cache=True)
def _memo_get(mk1, mk2, mep, k1, k2, epoch, bits):
    s = _slot(k1, k2, bits)
    size = 1 << bits
    for j in range(MEMO_PROBES):
        i = (s + j) & (size - 1)
        if mep[i] != epoch:
            return -1
        if mk1[i] == k1 and mk2[i] == k2:
            return i
    return -1


@nb.njit(cache=True)
def _memo_put(mk1, mk2, mep, mv, ms, mm, k1, k2, epoch, bits, v, sc, mo):
    s = _slot(k1, k2, bits)
    size = 1 << bits
    for j in range(MEMO_PROBES):
        i = (s + j) & (size - 1)
        if mep[i] != epoch or (mk1[i] == k1 and mk2[i] == k2):
            mk1[i] = k1
            mk2[i] = k2
            mep[i] = epoch
            mv[i] = v
            ms[i] = sc
            mm[i] = mo
            return
    # the probe run is full: the value is not kept (it is worked out again if met again)


@nb.njit(cache=True)
def _search(P, H, KM, KF, root, stock, nstock, start_score, natives, und_at, tuples, toff, kind, st, su, fill,
            W1, b1, w2, b2, mu, sd, fx, lk, mk1, mk2, mep, mv, ms, mm, epoch, bits,
            fsp, fn, fi, facts, fbest, fbs, fbm, fpen, fcur, fk1, fk2):
    """The penalised value of the position in pool row ``root`` (stock ``stock[:nstock]`` in order).

    Frames live in pool rows POOL_ROWS + k. Returns (value, score of the best line, its moves,
    positions expanded); value is NaN when a W evaluation failed (a reach list overflowed).
    """
    FR = POOL_ROWS
    copy_row(P, H, root, FR)
    score0 = start_score
    nodes = 0
    if nstock == 0:
        v = v0(P, H, FR, st, su, fill)
        return v, 52 - on_table(H, FR), 0, 1
    # frame 0
    k = 0
    fsp[0] = 0
    kk1, kk2 = _key(P, H, FR, 0, natives)
    fk1[0] = kk1
    fk2[0] = kk2
    expand = True
    while True:
        row = FR + k
        if expand:
            # list the children: the deal first, then the moves into the first empty pile
            nodes += 1
            sp = fsp[k]
            fn[k] = 1
            facts[k, 0] = 0
            e = first_empty(H, row)
            if e >= 0:
                for src in range(4):
                    if can_move(P, H, row, src, st, fill):
                        facts[k, fn[k]] = 1 + src
                        fn[k] += 1
            fi[k] = 0
            fbest[k] = -1e300
            fbs[k] = 0
            fbm[k] = 0
            if kind != W_ZERO:
                i = sp // 4
                pen = expected_w(P, H, KM, KF, row, und_at[i], tuples, toff[i], toff[i + 1], kind, st, su, fill,
                                 W1, b1, w2, b2, mu, sd, fx, lk)
                if pen < 0:
                    return np.nan, 0, 0, nodes
                fpen[k] = pen
            else:
                fpen[k] = 0.0
            expand = False
        if fi[k] < fn[k]:
            a = facts[k, fi[k]]
            fi[k] += 1
            sp = fsp[k]
            child = row + 1
            copy_row(P, H, row, child)
            if a == 0:
                deal4(P, H, child, stock[sp], stock[sp + 1], stock[sp + 2], stock[sp + 3], st, su)
                csp = sp + 4
                edge = fpen[k]
                if kind != W_ZERO:
                    w = w_of(P, H, KM, KF, child, und_at[csp // 4], kind, st, su, fill, W1, b1, w2, b2, mu, sd, fx,
                             lk)
                    if w < 0:
                        return np.nan, 0, 0, nodes
                    edge -= w
                dm = 0
            else:
                move(P, H, child, a - 1, first_empty(H, row), st, su)
                csp = sp
                edge = 0.0
                dm = 1
            if csp == nstock:
                # the stock is out: worth 1 if some line of moves wins (and its score)
                v = v0(P, H, child, st, su, fill)
                cs = 48 if v > 0.5 else 52 - on_table(H, child)
                cand = edge + v
                if cand > fbest[k]:
                    fbest[k] = cand
                    fbs[k] = cs
                    fbm[k] = dm
                continue
            c1, c2 = _key(P, H, child, csp, natives)
            j = _memo_get(mk1, mk2, mep, c1, c2, epoch, bits)
            if j >= 0:
                cand = edge + mv[j]
                if cand > fbest[k]:
                    fbest[k] = cand
                    fbs[k] = ms[j]
                    fbm[k] = mm[j] + dm
                continue
            if k + 2 >= MAX_FRAMES:
                return np.nan, 0, 0, nodes
            fcur[k] = edge
            k += 1
            fsp[k] = csp
            fk1[k] = c1
            fk2[k] = c2
            expand = True
            continue
        # every child is done: the value of frame k is final
        v = fbest[k]
        _memo_put(mk1, mk2, mep, mv, ms, mm, fk1[k], fk2[k], epoch, bits, v, fbs[k], fbm[k])
        if k == 0:
            return v, fbs[0], fbm[0], nodes
        k -= 1
        dm = 0 if facts[k, fi[k] - 1] == 0 else 1
        cand = fcur[k] + v
        if cand > fbest[k]:
            fbest[k] = cand
            fbs[k] = fbs[k + 1]
            fbm[k] = fbm[k + 1] + dm


class _Workspace:
    """Search buffers reused across calls."""

    def __init__(self):
        self.pool = new_pool(MAX_FRAMES + 2)
        size = 1 << MEMO_BITS
        self.mk1 = np.zeros(size, np.uint64)
        self.mk2 = np.zeros(size, np.uint32)
        self.mep = np.zeros(size, np.uint32)
        self.mv = np.zeros(size, np.float64)
        self.ms = np.zeros(size, np.int16)
        self.mm = np.zeros(size, np.int16)
        self.epoch = 0
        self.frames = (np.zeros(MAX_FRAMES, np.int64), np.zeros(MAX_FRAMES, np.int64),
                       np.zeros(MAX_FRAMES, np.int64), np.zeros((MAX_FRAMES, 8), np.int64),
                       np.zeros(MAX_FRAMES, np.float64), np.zeros(MAX_FRAMES, np.int64),
                       np.zeros(MAX_FRAMES, np.int64), np.zeros(MAX_FRAMES, np.float64),
                       np.zeros(MAX_FRAMES, np.float64), np.zeros(MAX_FRAMES, np.uint64),
                       np.zeros(MAX_FRAMES, np.uint32))
        self.fx = np.zeros(64, np.float64)

    def next_epoch(self) -> int:
        self.epoch += 1
        if self.epoch >= 2**32 - 1:
            self.mep[:] = 0
            self.epoch = 1
        return self.epoch


_WS: _Workspace | None = None


def _ws() -> _Workspace:
    global _WS
    if _WS is None:
        _WS = _Workspace()
    return _WS


@dataclass
class PositionBound:
    value: float  # the penalised value of this stock order
    score: int  # final score of the line attaining it
    moves: int
    nodes: int


def penalised_value(piles, stock, rules, *, w: str = DEFAULT_MODEL, samples: int = DEFAULT_SAMPLES,
                    exact: int = DEFAULT_EXACT, seed: int = 0, index: int = 0, tuples=None) -> PositionBound:
    """The penalised value of one position (four card sequences, bottom first) with ``stock`` in deal order.

    The position is taken as it is (its forced discards made). ``tuples`` = (tuples, offsets) overrides
    ``deal_tuples`` (the tests pass their own).
    """
    st, su, fill = rule_tables(rules)
    stock = [int(c) for c in stock]
    if len(stock) % 4:
        raise PositionParseError(f"the stock holds {len(stock)} cards; give a multiple of 4")
    kind, model = w_kind_and_model(w, rules)
    if kind == W_EXACT and len(stock) > 8:
        raise PositionParseError(f"w=exact needs at most 8 undealt cards; got {len(stock)}")
    ws = _ws()
    P, H, KM, KF = ws.pool
    root = POOL_ROWS - 1
    pool_row(P, H, root, piles)
    natives = np.full(52, -1, np.int8)
    for p, pile in enumerate(piles):
        for c in pile:
            natives[c] = p
    for i, c in enumerate(stock):
        natives[c] = i % 4
    und_at = np.zeros(len(stock) // 4 + 1, np.uint64)
    for i in range(len(stock) // 4 + 1):
        m = 0
        for c in stock[4 * i:]:
            m |= 1 << c
        und_at[i] = np.uint64(m)
    if tuples is None:
        tuples = deal_tuples(stock, samples=samples, exact=exact, seed=seed, index=index, look=model.look8)
    tup, toff = tuples
    on = sum(len(p) for p in piles)
    start_score = 52 - on - len(stock)
    v, sc, mo, nodes = _search(P, H, KM, KF, root, np.array(stock + [0] * 4, np.int8), len(stock), start_score,
                               natives, und_at, tup, toff, kind, st, su, fill, *model.arrays, ws.fx,
                               model.key(seed, index),
                               ws.mk1, ws.mk2, ws.mep, ws.mv, ws.ms, ws.mm, np.uint32(ws.next_epoch()), MEMO_BITS,
                               *ws.frames)
    if np.isnan(v):
        raise RuntimeError("the penalised search failed: a reach list or the frame stack overflowed")
    return PositionBound(float(v), int(sc), int(mo), int(nodes))


@dataclass
class BoundResult:
    """One row per deck: value float64[N] (the bound's per-deal value), score int8[N], won bool[N],
    moves int16[N], decisions int16[N] (points of the line with a choice: not counted, -1), nodes int64[N]."""

    value: np.ndarray
    score: np.ndarray
    won: np.ndarray
    moves: np.ndarray
    decisions: np.ndarray
    nodes: np.ndarray

    def __len__(self) -> int:
        return len(self.value)


def play(decks, rules, spec: str | PlayerSpec | BoundSpec, *, seed: int, indices=None) -> BoundResult:
    """The bound player on a batch of decks (``uint8[N, 52]``): row n depends only on (seed, indices[n], deck n)."""
    spec = parse_bound(spec)
    decks, indices, seed = check_batch_input(decks, indices, seed)
    n = len(decks)
    value = np.zeros(n, np.float64)
    score = np.zeros(n, np.int8)
    moves = np.zeros(n, np.int16)
    nodes = np.zeros(n, np.int64)
    st, su, fill = rule_tables(rules)
    for r in range(n):
        deck = [int(c) for c in decks[r]]
        P, H, _, _ = _ws().pool
        row = POOL_ROWS - 1
        pool_row(P, H, row, [[c] for c in deck[:4]])
        from .infostate import resolve

        resolve(P, H, row, st, su)
        piles = [[int(P[row, p, i]) for i in range(H[row, p])] for p in range(4)]
        res = penalised_value(piles, deck[4:], rules, w=spec.w, samples=spec.samples, exact=spec.exact,
                              seed=seed, index=int(indices[r]))
        value[r], score[r], moves[r], nodes[r] = res.value, res.score, res.moves, res.nodes
    return BoundResult(value, score, score >= 48, moves, np.full(n, -1, np.int16), nodes)


def play_player(decks, rules, spec: PlayerSpec, *, seed: int, indices, want_lines: bool = False,
                node_limit: int | None = None) -> PlayResult:
    """The registry's entry point (players.py): ``play`` as a ``PlayResult`` with ``nodes`` and ``value``.

    The bound's rows have no line (its line is a clairvoyant one, no player's game), whatever
    ``want_lines`` says; ``node_limit`` is for the solver (the bound visits every position once).
    """
    res = play(decks, rules, spec, seed=seed, indices=indices)
    return PlayResult(res.score, res.won, res.moves, res.decisions, nodes=res.nodes, value=res.value)


def line_penalty(deck, line: str, rules, *, w: str = DEFAULT_MODEL, samples: int = DEFAULT_SAMPLES,
                 exact: int = DEFAULT_EXACT, seed: int = 0, index: int = 0) -> float:
    """The penalty z of one game line (game.py text) on ``deck``: the sum over its deals of W(after) - Ê(before).

    With the tuples of ``deal_tuples`` (those of the bound), so for an honest player z has mean zero
    and 1{won} - z is never above the bound's value of the deal (when the line is sensible+leftmost).
    """
    from .game import replay_states

    st, su, fill = rule_tables(rules)
    kind, model = w_kind_and_model(w, rules)
    deck = [int(c) for c in deck]
    tup, toff = deal_tuples(deck[4:], samples=samples, exact=exact, seed=seed, index=index, look=model.look8)
    lk = model.key(seed, index)
    states = replay_states(np.asarray(deck, np.uint8), line, rules)
    P, H, KM, KF = _ws().pool
    u_row, a_row = POOL_ROWS - 1, POOL_ROWS
    fx = np.zeros(64)
    z = 0.0
    for before, after, action in zip(states, states[1:], line.split()):
        if action != "d":
            continue
        i = (48 - len(before.stock)) // 4
        pool_row(P, H, u_row, before.piles)
        pool_row(P, H, a_row, after.piles)
        e = expected_w(P, H, KM, KF, u_row, _mask(before.stock), tup, toff[i], toff[i + 1], kind, st, su, fill,
                       *model.arrays, fx, lk)
        wa = w_of(P, H, KM, KF, a_row, _mask(after.stock), kind, st, su, fill, *model.arrays, fx, lk)
        if e < 0 or wa < 0:
            raise RuntimeError("a W evaluation failed: a reach list overflowed")
        z += wa - e
    return z


def w_value(piles, undealt, rules, *, w: str = DEFAULT_MODEL, seed: int = 0, index: int = 0) -> float:
    """W of the position ``piles`` just after a deal, with the cards ``undealt`` (their set) still to come:
    ``value.w_of`` under the W named ``w``, a look-ahead model's orders keyed by (seed, index)."""
    st, su, fill = rule_tables(rules)
    kind, model = w_kind_and_model(w, rules)
    P, H, KM, KF = _ws().pool
    row = POOL_ROWS - 1
    pool_row(P, H, row, piles)
    v = w_of(P, H, KM, KF, row, _mask(undealt), kind, st, su, fill, *model.arrays, _ws().fx,
             model.key(seed, index))
    if v < 0:
        raise RuntimeError("a W evaluation failed: a reach list overflowed (or w=exact beyond 8 undealt)")
    return float(v)


def _mask(cards) -> np.uint64:
    m = 0
    for c in cards:
        m |= 1 << int(c)
    return np.uint64(m)
