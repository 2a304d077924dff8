"""The lower end of the honest bracket: the player that follows the value model W (approximate DP).

``adp:w=M,look=L,samples=K,exact=E,psamples=J,pexact=F`` (its grammar and
defaults are its entry of ``players.py``; ``parse_adp`` gives typed fields). Before
each deal the player lists the positions it can reach by sensible+leftmost moves
(dealing at once first) and takes the one with the highest value:

- with 4 cards undealt: the exact chance that some line wins after the last deal
  (the mean over its 24 orders); with 8 undealt and ``exact=8``: the exact
  expectimax value (``expectimax.q2``);
- otherwise, ``look=0``: the model value Q̂ of the position; ``look=1``: the mean
  of W after K sampled next deals (the same K tuples for every position of the
  decision: common random numbers), i.e. a one-step lookahead on W;
- ties go to the first listed (dealing before moving);
- with the stock empty it plays the line of moves with the best score.

It is honest: it reads the piles, the discarded cards and the *set* of undealt
cards. The decision tuples are drawn from the sorted undealt cards with Philox
counter ``(decision << 20 | s << 8 | block, STREAM_CHOICE, deal index)``, so
permuting the undealt stock changes nothing until the next card is dealt (the
tests check it). The real deck is read only to deal.

Each game also gets its **penalised value** 1{won} - z, z the penalty of
``bound`` along the line played (W after each deal minus its expectation, with
the bound's own tuples: J sampled, or exact with at most F undealt). Its mean is
the player's win rate (z has mean zero for an honest player), with a much smaller
variance than 1{won}: the control-variate estimate of the lower end. With the
bound's settings it is never above the bound's value on the same deal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .batch import check_batch_input
from .errors import PositionParseError
from .expectimax import q1, q2
from .infostate import (
    END_STACK,
    POOL_ROWS,
    ROW_END,
    ROW_R8,
    bit,
    can_move,
    copy_row,
    deal4,
    first_empty,
    move,
    new_pool,
    on_table,
    popcount,
    reach,
    resolve,
    rule_tables,
)
from .value import (
    STREAM_CHOICE,
    W_MODEL,
    _sample_tuples,
    expected_w,
    load_model,
    mask_to_cards,
    q_model,
    w_of,
)
from .actions import DEAL_CODE, KIND_MOVE, line_text
from .bound import deal_tuples
from .players import PlayerSpec, PlayResult, UnknownPlayerError, parse_player
from .rules import rules_by_name

ADP_KIND = "adp"
MAX_LINE = 256


@dataclass(frozen=True)
class AdpSpec:
    """A parsed ``adp`` player as typed fields (the grammar and the defaults are in players.py).

    w: the value model; look: 1 for the mean of W after ``samples`` sampled next deals, 0 for the
    model value itself; exact: 8 for the exact expectimax with 8 cards undealt (4: exact from 4 only);
    psamples, pexact: the penalty's tuples (those of ``bound``).
    """

    w: str
    look: int
    samples: int
    exact: int
    psamples: int
    pexact: int

    @property
    def player(self) -> PlayerSpec:
        return PlayerSpec(ADP_KIND, (("w", self.w), ("look", self.look), ("samples", self.samples),
                                     ("exact", str(self.exact)), ("psamples", self.psamples),
                                     ("pexact", str(self.pexact))))

    @property
    def name(self) -> str:
        """The canonical name (players.py)."""
        return self.player.name

    def __str__(self) -> str:
        return self.name


def parse_adp(name: str | PlayerSpec | AdpSpec) -> AdpSpec:
    """The AdpSpec of an adp player's name (players.parse_player; defaults filled in).

    >>> parse_adp("adp").name
    'adp:w=w1,look=1,samples=16,exact=8,psamples=32,pexact=4'
    """
    if isinstance(name, AdpSpec):
        return name
    spec = parse_player(name)
    if spec.kind != ADP_KIND:
        raise UnknownPlayerError(f"{spec.name!r} is not an adp player; write e.g. 'adp:samples=16'")
    return AdpSpec(w=spec.param("w"), look=spec.param("look"), samples=spec.param("samples"),
                   exact=int(spec.param("exact")), psamples=spec.param("psamples"), pexact=int(spec.param("pexact")))


@nb.njit(cache=True)
def _has_choice(P, H, r, st, fill):
    """A point of the game (full rules) with more than one choice: some card may move into an empty pile."""
    if first_empty(H, r) < 0:
        return False
    for p in range(4):
        if H[r, p] > 0 and (fill != 1 or st[P[r, p, H[r, p] - 1]] == 12):
            return True
    return False


@nb.njit(cache=True)
def _endgame_line(P, H, r, st, su, fill, path, best_path):
    """With the stock empty: the line of moves from row r leaving the fewest cards; (fewest, its length).

    The line's moves (source piles, each into the first empty pile) go to best_path.
    """
    best = on_table(H, r)
    blen = 0
    if best <= 4:
        return best, 0
    base = ROW_END
    copy_row(P, H, r, base)
    nxt = np.zeros(END_STACK, np.int64)
    d = 0
    while d >= 0:
        row = base + d
        e = first_empty(H, row)
        src = nxt[d]
        found = -1
        if e >= 0:
            while src < 4:
                if can_move(P, H, row, src, st, fill):
                    found = src
                    break
                src += 1
        if found < 0 or d + 1 >= END_STACK:
            d -= 1
            continue
        nxt[d] = found + 1
        path[d] = found
        copy_row(P, H, row, row + 1)
        move(P, H, row + 1, found, e, st, su)
        t = on_table(H, row + 1)
        if t < best:
            best = t
            blen = d + 1
            for i in range(blen):
                best_path[i] = path[i]
            if best <= 4:
                return best, blen
        d += 1
        nxt[d] = 0
    return best, blen


@nb.njit(cache=True)
def _play_moves(P, H, r, srcs, st, su, fill, line, nl, decisions):
    """Play the moves of ``srcs`` (source piles, each into the first empty pile) on row r.

    Appends their action codes to ``line`` from ``nl`` on and counts the points with a choice
    before each move; returns (new line length, new decision count).
    """
    for src in srcs:
        if _has_choice(P, H, r, st, fill):
            decisions += 1
        e = first_empty(H, r)
        move(P, H, r, src, e, st, su)
        line[nl] = KIND_MOVE | src << 2 | e << 4
        nl += 1
    return nl, decisions


@nb.njit(cache=True)
def _decide(P, H, KM, KF, r, und, decision, seed_lo, seed_hi, idx_lo, idx_hi, look, samples, exact, st, su, fill,
            W1, b1, w2, b2, mu, sd, fx, lk, choice_tup):
    """(pick, m): the position the player deals from, as index ``pick`` into the reach list of row r
    (rows ROW_R8 + i, m of them).

    Reads row r, the undealt *set* ``und`` and the decision number; pick -1 on overflow.
    """
    n = popcount(und)
    copy_row(P, H, r, ROW_R8)
    m = reach(P, H, KM, KF, ROW_R8, st, su, fill)
    if m < 0:
        return -1, m
    if m == 1:
        return 0, m
    cards = np.empty(48, np.int8)
    cards8 = np.zeros(8, np.int64)
    nc = mask_to_cards(und, cards)
    if n == 4 or (n == 8 and exact == 8):
        mask_to_cards(und, cards8)
    elif look == 1:
        if not _sample_tuples(cards[:nc], samples, decision, STREAM_CHOICE, seed_lo, seed_hi, idx_lo, idx_hi,
                              choice_tup):
            return -1, m
    best = -1.0
    pick = 0
    for i in range(m):
        u = ROW_R8 + i
        if n == 4:
            v = q1(P, H, u, cards8, st, su, fill)
        elif n == 8 and exact == 8:
            v = q2(P, H, KM, KF, u, cards8, st, su, fill)
        elif look == 1:
            v = expected_w(P, H, KM, KF, u, und, choice_tup, 0, samples, W_MODEL, st, su, fill,
                           W1, b1, w2, b2, mu, sd, fx, lk)
        else:
            v = q_model(P, H, KM, KF, u, und, n // 4, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk)
        if v > best + 1e-12:
            best = v
            pick = i
    return pick, m


@nb.njit(cache=True)
def _play(deck, seed_lo, seed_hi, idx_lo, idx_hi, look, samples, exact, st, su, fill,
          W1, b1, w2, b2, mu, sd, P, H, KM, KF, fx, lk, ptup, poff, line, choice_tup):
    """Play one deck; returns (score, moves, decisions, line length, z) with z the penalty of the line.

    ``ptup``/``poff``: the penalty tuples of each deal (bound.deal_tuples). The line goes to ``line``
    as action codes (actions.py). Score -1 on overflow.
    """
    r = POOL_ROWS - 1
    for p in range(4):
        H[r, p] = 1
        P[r, p, 0] = deck[p]
    resolve(P, H, r, st, su)
    und = np.uint64(0)
    for i in range(4, 52):
        und |= bit(deck[i])
    nl = 0
    moves = 0
    decisions = 0
    decision = 0
    z = 0.0
    path = np.zeros(END_STACK, np.int64)
    best_path = np.zeros(END_STACK, np.int64)
    seq = np.zeros(64, np.int64)
    for d in range(12):
        pick, m = _decide(P, H, KM, KF, r, und, decision, seed_lo, seed_hi, idx_lo, idx_hi, look, samples, exact,
                          st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk, choice_tup)
        if pick < 0:
            return -1, 0, 0, 0, 0.0
        if m > 1:
            decision += 1
        # the moves to the chosen position, first to last (parents are listed before children)
        ns = 0
        j = pick
        while KF[ROW_R8 + j, 1] >= 0:
            seq[ns] = KF[ROW_R8 + j, 2]
            ns += 1
            j = KF[ROW_R8 + j, 1]
        nl, decisions = _play_moves(P, H, r, seq[ns - 1::-1] if ns > 0 else seq[:0], st, su, fill, line, nl,
                                    decisions)
        moves += ns
        if _has_choice(P, H, r, st, fill):
            decisions += 1
        # the penalty of this deal: its expected W (the bound's tuples) before, the W after
        e_w = expected_w(P, H, KM, KF, r, und, ptup, poff[d], poff[d + 1], W_MODEL, st, su, fill,
                         W1, b1, w2, b2, mu, sd, fx, lk)
        c0, c1, c2, c3 = deck[4 + 4 * d], deck[5 + 4 * d], deck[6 + 4 * d], deck[7 + 4 * d]
        deal4(P, H, r, c0, c1, c2, c3, st, su)
        und &= ~(bit(c0) | bit(c1) | bit(c2) | bit(c3))
        line[nl] = DEAL_CODE
        nl += 1
        w_after = w_of(P, H, KM, KF, r, und, W_MODEL, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk)
        if e_w < 0 or w_after < 0:
            return -1, 0, 0, 0, 0.0
        z += w_after - e_w
    # the stock is out: the line of moves with the best score, then stop
    fewest, blen = _endgame_line(P, H, r, st, su, fill, path, best_path)
    nl, decisions = _play_moves(P, H, r, best_path[:blen], st, su, fill, line, nl, decisions)
    moves += blen
    if _has_choice(P, H, r, st, fill):
        decisions += 1  # stopping, with a move left
    return 52 - on_table(H, r), moves, decisions, nl, z


@dataclass
class AdpResult:
    """One row per deck: score int8[N], won bool[N], moves int16[N], decisions int16[N],
    value float64[N] (the penalised value 1{won} - z), lines list[str] or None."""

    score: np.ndarray
    won: np.ndarray
    moves: np.ndarray
    decisions: np.ndarray
    value: np.ndarray
    lines: list | None = None

    def __len__(self) -> int:
        return len(self.score)


def play(decks, rules, spec: str | PlayerSpec | AdpSpec, *, seed: int, indices=None,
         want_lines: bool = False) -> AdpResult:
    """Play every deck (``uint8[N, 52]``) with the adp player; row n depends only on (seed, indices[n], deck n)."""
    spec = parse_adp(spec)
    st, su, fill = rule_tables(rules)
    decks, indices, seed = check_batch_input(decks, indices, seed)
    model = load_model(spec.w, fill == 1)
    n = len(decks)
    score = np.zeros(n, np.int8)
    moves = np.zeros(n, np.int16)
    decisions = np.zeros(n, np.int16)
    value = np.zeros(n, np.float64)
    lines = [] if want_lines else None
    P, H, KM, KF = new_pool(4)
    fx = np.zeros(64)
    line = np.zeros(MAX_LINE, np.int64)
    choice_tup = np.zeros((spec.samples, 4), np.int8)
    seed_lo, seed_hi = np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32)
    for g in range(n):
        idx = int(indices[g])
        deck = decks[g]
        ptup, poff = deal_tuples([int(c) for c in deck[4:]], samples=spec.psamples, exact=spec.pexact, seed=seed,
                                 index=idx, look=model.look8)
        sc, mv, dec, nl, z = _play(deck.astype(np.int64), seed_lo, seed_hi, np.uint32(idx & 0xFFFFFFFF),
                                   np.uint32(idx >> 32), spec.look, spec.samples, spec.exact, st, su, fill,
                                   *model.arrays, P, H, KM, KF, fx, model.key(seed, idx), ptup, poff,
                                   line, choice_tup)
        if sc < 0:
            raise RuntimeError(f"adp player failed on deal {idx}: a reach list overflowed")
        score[g], moves[g], decisions[g] = sc, mv, dec
        value[g] = float(sc >= 48) - z
        if lines is not None:
            lines.append(line_text(line[:nl]))
    return AdpResult(score, score >= 48, moves, decisions, value, lines)


def play_player(decks, rules, spec: PlayerSpec, *, seed: int, indices, want_lines: bool = False,
                node_limit: int | None = None) -> PlayResult:
    """The registry's entry point (players.py): ``play`` as a ``PlayResult`` with the ``value`` column.

    ``node_limit`` is for the solver; adp has none.
    """
    res = play(decks, rules, spec, seed=seed, indices=indices, want_lines=want_lines)
    return PlayResult(res.score, res.won, res.moves, res.decisions, line=res.lines, value=res.value)


def choose(state, rules, spec: str | PlayerSpec | AdpSpec, *, seed: int, index: int, decision: int) -> list:
    """The moves (``game.Action``, possibly none) the player makes before dealing from ``state``.

    ``state`` is a ``game.State`` just after a deal with cards left to deal; only the set of
    ``state.stock`` is read. ``decision`` numbers the points with a choice so far (keys the tuples).
    """
    from .game import Action, State, resolve_discards
    from .infostate import pool_row, undealt_mask

    spec = parse_adp(spec)
    st, su, fill = rule_tables(rules)
    if not state.stock:
        raise PositionParseError("choose() needs cards left to deal; with the stock empty the player plays its best line")
    model = load_model(spec.w, fill == 1)
    P, H, KM, KF = new_pool(4)
    r = POOL_ROWS - 1
    pool_row(P, H, r, state.piles)
    seed, index = int(seed), int(index)
    pick, m = _decide(P, H, KM, KF, r, undealt_mask(state.stock), decision, np.uint32(seed & 0xFFFFFFFF),
                      np.uint32(seed >> 32), np.uint32(index & 0xFFFFFFFF), np.uint32(index >> 32), spec.look,
                      spec.samples, spec.exact, st, su, fill, *model.arrays, np.zeros(64),
                      model.key(seed, index), np.zeros((spec.samples, 4), np.int8))
    if pick < 0:
        raise RuntimeError("the reach list overflowed")
    seq = []
    j = pick
    while KF[ROW_R8 + j, 1] >= 0:
        seq.append(int(KF[ROW_R8 + j, 2]))
        j = int(KF[ROW_R8 + j, 1])
    out = []
    piles = [list(p) for p in state.piles]
    for src in reversed(seq):
        dst = next(i for i in range(4) if not piles[i])
        out.append(Action("m", src, dst, 0))
        piles[dst].append(piles[src].pop())
        after = resolve_discards(State(tuple(tuple(p) for p in piles), (), frozenset()), rules_by_name(rules))
        piles = [list(p) for p in after.piles]
    return out
