"""The exact honest value of a position with at most two deals left: expectimax over the deals.

With n undealt cards the next deal is one of the n(n-1)(n-2)(n-3) ordered
4-tuples of them, all equally likely to an honest player. The honest value
of a position just after a deal (the player about to choose its moves) is::

    V0(s) = 1 if some line of moves from s wins, else 0            (stock empty)
    Q_k(u) = mean over the ordered 4-tuples t of the undealt cards of V_{k-1}(deal(u, t))
    V_k(s) = max over the positions u reachable from s by moves of Q_k(u)   (4k cards undealt)

``honest_value(state, rules)`` computes V_k for k = 0, 1, 2 (at most 8 undealt
cards: 1,680 first deals, then 24 orders of the last four). The moves are
those of sensible+leftmost, which lose nothing for an honest player
(``infostate``); the tests check the values against a plain-Python
expectimax on game.py over every legal move.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .errors import PositionParseError
from .infostate import (
    ROW_R4,
    ROW_R8,
    ROW_TMP,
    copy_row,
    deal4,
    endgame_min,
    new_pool,
    pool_row,
    reach,
    rule_tables,
)

TMP_Q1 = ROW_TMP + 0
TMP_Q2 = ROW_TMP + 1
PERM4 = np.array([[a, b, c, d] for a in range(4) for b in range(4) for c in range(4) for d in range(4)
                  if len({a, b, c, d}) == 4], dtype=np.int64)  # int64[24, 4]


@nb.njit(cache=True)
def v0(P, H, r, st, su, fill):
    """1.0 when a line of moves from row r (stock empty) wins, else 0.0."""
    return 1.0 if endgame_min(P, H, r, st, su, fill) <= 4 else 0.0


@nb.njit(cache=True)
def q1(P, H, r, cards, st, su, fill):
    """Q_1 of row r (about to deal its last four cards ``cards``): the mean over their 24 orders of V0."""
    tot = 0.0
    for k in range(24):
        copy_row(P, H, r, TMP_Q1)
        deal4(P, H, TMP_Q1, cards[PERM4[k, 0]], cards[PERM4[k, 1]], cards[PERM4[k, 2]], cards[PERM4[k, 3]], st, su)
        tot += v0(P, H, TMP_Q1, st, su, fill)
    return tot / 24.0


@nb.njit(cache=True)
def v1(P, H, KM, KF, r, cards, st, su, fill):
    """V_1 of row r (4 undealt cards ``cards``): the best Q_1 over the positions reachable by moves."""
    copy_row(P, H, r, ROW_R4)
    n = reach(P, H, KM, KF, ROW_R4, st, su, fill)
    if n < 0:
        return -1.0
    best = 0.0
    for i in range(n):
        v = q1(P, H, ROW_R4 + i, cards, st, su, fill)
        if v > best:
            best = v
            if best >= 1.0:
                break
    return best


@nb.njit(cache=True)
def q2(P, H, KM, KF, r, cards, st, su, fill):
    """Q_2 of row r (8 undealt ``cards``): the mean over the 1,680 ordered first deals of V_1."""
    rest = np.empty(4, np.int64)
    tot = 0.0
    cnt = 0
    for a in range(8):
        for b in range(8):
            if b == a:
                continue
            for c in range(8):
                if c == a or c == b:
                    continue
                for d in range(8):
                    if d == a or d == b or d == c:
                        continue
                    k = 0
                    for j in range(8):
                        if j != a and j != b and j != c and j != d:
                            rest[k] = cards[j]
                            k += 1
                    copy_row(P, H, r, TMP_Q2)
                    deal4(P, H, TMP_Q2, cards[a], cards[b], cards[c], cards[d], st, su)
                    v = v1(P, H, KM, KF, TMP_Q2, rest, st, su, fill)
                    if v < 0:
                        return -1.0
                    tot += v
                    cnt += 1
    return tot / cnt


@nb.njit(cache=True)
def v2(P, H, KM, KF, r, cards, st, su, fill):
    """V_2 of row r (8 undealt ``cards``): the best Q_2 over the positions reachable by moves."""
    copy_row(P, H, r, ROW_R8)
    n = reach(P, H, KM, KF, ROW_R8, st, su, fill)
    if n < 0:
        return -1.0
    best = 0.0
    for i in range(n):
        v = q2(P, H, KM, KF, ROW_R8 + i, cards, st, su, fill)
        if v < 0:
            return -1.0
        if v > best:
            best = v
            if best >= 1.0:
                break
    return best


@nb.njit(cache=True)
def exact_value(P, H, KM, KF, r, cards, n, st, su, fill):
    """V_k of row r with the n = 4k (0, 4 or 8) undealt ``cards``; -1.0 if a reach list overflowed."""
    if n == 0:
        return v0(P, H, r, st, su, fill)
    if n == 4:
        return v1(P, H, KM, KF, r, cards, st, su, fill)
    return v2(P, H, KM, KF, r, cards, st, su, fill)


@nb.njit(cache=True)
def exact_q(P, H, KM, KF, r, cards, n, st, su, fill):
    """Q_k of row r (about to deal) with the n = 4k (4 or 8) undealt ``cards``."""
    if n == 4:
        return q1(P, H, r, cards, st, su, fill)
    return q2(P, H, KM, KF, r, cards, st, su, fill)


def _setup(state, rules):
    st, su, fill = rule_tables(rules)
    cards = np.array(sorted(state.stock), dtype=np.int64)
    n = len(cards)
    if n not in (0, 4, 8):
        raise PositionParseError(f"the exact honest value needs 0, 4 or 8 undealt cards (two deals or fewer); got {n}")
    P, H, KM, KF = new_pool()
    r = ROW_TMP + 8
    pool_row(P, H, r, state.piles)
    return P, H, KM, KF, r, cards, n, st, su, fill


def honest_value(state, rules) -> float:
    """The exact honest win probability V_k of a ``game.State`` (just after a deal) with at most 8 undealt cards.

    Only the set of ``state.stock`` is read (the honest value does not depend on its order).
    """
    P, H, KM, KF, r, cards, n, st, su, fill = _setup(state, rules)
    v = exact_value(P, H, KM, KF, r, cards, n, st, su, fill)
    if v < 0:
        raise RuntimeError("more positions reachable by moves than the reach list holds")
    return float(v)


def honest_q(state, rules) -> float:
    """The exact Q_k of a ``game.State`` about to deal (4 or 8 undealt cards): its honest value if it deals now."""
    P, H, KM, KF, r, cards, n, st, su, fill = _setup(state, rules)
    if n == 0:
        raise PositionParseError("Q needs a deal to come; the stock is empty")
    v = exact_q(P, H, KM, KF, r, cards, n, st, su, fill)
    if v < 0:
        raise RuntimeError("more positions reachable by moves than the reach list holds")
    return float(v)
