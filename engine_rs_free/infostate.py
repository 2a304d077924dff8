"""Honest information states in compiled code: piles, forced discards, the moves before a deal, the endgame.

An honest player knows the piles (every card visible) and the *set* of
undealt cards, never their order (RULES.md). This module has the compiled
primitives the bracket of issue 19 is built from (``expectimax``, ``value``,
``bound``, ``adp``); positions are plain arrays::

    piles: int8[4, MAXH]   card ids, bottom first; only piles[p, :h[p]] is meaningful
    h:     int64[4]        cards on each pile
    und:   uint64          bit c set: card c is undealt (its order is unknown)

Scratch positions live in one pool, ``P: int8[L, 4, MAXH]`` and ``H: int64[L, 4]``
(``new_pool``), addressed by row; a function that needs room is given a base
row and uses the rows above it, so nested calls never overwrite each other
(``REGION`` rows each, see the layout below).

Moves are those of ``sensible+leftmost``: the top card of a pile of two or
more cards into the lowest-numbered empty pile (only an Ace in ``strict``).
An honest player loses nothing by that restriction (RULES.md: a lone move or
the choice of another empty pile only relabels piles, and the unseen cards
are exchangeable), and with the stock empty it loses nothing either (labels
no longer matter). Under these rules there are no cycles: every move takes a
card off a pile of two or more, which only a deal refills.

Variants: ``standard``, ``strict`` and ``reverse`` with forced discards
(``fill`` 0 or 1, the strength table of ``rules.strength_table``); ``easy``
and optional discards are not supported here (``check_rules``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .cards import N_CARDS, SUIT
from .errors import AcesUpError, PositionParseError
from .rules import Rules, rules_by_name, strength_table

MAXH = 52  # cards a pile can hold
TOP = 12  # strength of the variant's top rank (the "Ace")
REGION = 256  # rows of the pool a reach list may use
# Pool layout (rows): the endgame stack, then one reach region per nesting level, then temporaries.
ROW_END = 0  # endgame search stack: 64 rows
ROW_R4 = 64  # reach list of exact value at 4 undealt
ROW_R8 = ROW_R4 + REGION  # reach list of exact value at 8 undealt
ROW_RW = ROW_R8 + REGION  # reach list of the model value
ROW_TMP = ROW_RW + REGION  # 32 temporaries: children of deals
ROW_CL = ROW_TMP + 32  # 64 rows: the stack of the clairvoyant probe of value.features
ROW_RL = ROW_CL + 64  # reach list of the look-ahead feature of value.look12_feature (inside a model value)
POOL_ROWS = ROW_RL + REGION + 2  # the last two rows belong to no region: callers keep their roots there
END_STACK = 64


class UnsupportedRulesError(AcesUpError):
    """The bracket's code covers standard, strict and reverse with forced discards only."""


def check_rules(rules: Rules | str) -> Rules:
    """The rule set, if the bracket code supports it (else UnsupportedRulesError naming the fix)."""
    from .players import bracket_rules_problem

    rules = rules_by_name(rules)
    problem = bracket_rules_problem(rules)
    if problem:
        raise UnsupportedRulesError(
            f"rules {rules.name!r} are not supported by the honest bracket: {problem}; use standard, strict or "
            f"reverse with forced discards (sensible and leftmost are implied, must_fill is not allowed)")
    return rules


def rule_tables(rules: Rules) -> tuple[np.ndarray, np.ndarray, int]:
    """(strength int8[52], suit int8[52], fill) of a supported rule set."""
    rules = check_rules(rules)
    return strength_table(rules).astype(np.int8), SUIT.astype(np.int8).copy(), int(rules.fill)


def new_pool(extra: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A scratch pool: (P int8[L, 4, MAXH], H int64[L, 4], KM uint64[L], KF int64[L, 3]), L = POOL_ROWS + extra.

    KM and KF[:, 0] hold the keys of reach lists; KF[r, 1] is the list index of the position
    row r was reached from (-1 for the first) and KF[r, 2] the pile whose top moved.
    """
    rows = POOL_ROWS + extra
    return (np.zeros((rows, 4, MAXH), np.int8), np.zeros((rows, 4), np.int64),
            np.zeros(rows, np.uint64), np.zeros((rows, 3), np.int64))


@nb.njit(cache=True, inline="always")
def popcount(x):
    """Set bits of a uint64."""
    x = np.uint64(x)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@nb.njit(cache=True, inline="always")
def bit(c):
    return np.uint64(1) << np.uint64(c)


@nb.njit(cache=True)
def copy_row(P, H, src, dst):
    """Copy the position in pool row src to row dst."""
    for p in range(4):
        hp = H[src, p]
        H[dst, p] = hp
        for i in range(hp):
            P[dst, p, i] = P[src, p, i]


@nb.njit(cache=True)
def resolve(P, H, r, st, su):
    """Make every forced discard in row r (all beaten tops at once, RULES.md rule 3); returns their count."""
    n = 0
    while True:
        gone = 0
        for i in range(4):
            if H[r, i] == 0:
                continue
            c = P[r, i, H[r, i] - 1]
            for j in range(4):
                if j != i and H[r, j] > 0:
                    o = P[r, j, H[r, j] - 1]
                    if su[o] == su[c] and st[o] > st[c]:
                        gone |= 1 << i
                        break
        if gone == 0:
            return n
        for i in range(4):
            if gone & (1 << i):
                H[r, i] -= 1
                n += 1


@nb.njit(cache=True)
def deal4(P, H, r, c0, c1, c2, c3, st, su):
    """Deal c0..c3 onto piles 0..3 of row r, then the forced discards; returns their count."""
    P[r, 0, H[r, 0]] = c0
    H[r, 0] += 1
    P[r, 1, H[r, 1]] = c1
    H[r, 1] += 1
    P[r, 2, H[r, 2]] = c2
    H[r, 2] += 1
    P[r, 3, H[r, 3]] = c3
    H[r, 3] += 1
    return resolve(P, H, r, st, su)


@nb.njit(cache=True, inline="always")
def first_empty(H, r):
    for p in range(4):
        if H[r, p] == 0:
            return p
    return -1


@nb.njit(cache=True, inline="always")
def can_move(P, H, r, src, st, fill):
    """Pile src of row r offers a sensible move: two or more cards, and (strict) an Ace on top."""
    hs = H[r, src]
    return hs >= 2 and (fill != 1 or st[P[r, src, hs - 1]] == TOP)


@nb.njit(cache=True)
def move(P, H, r, src, dst, st, su):
    """Move the top of pile src into empty pile dst of row r, then the forced discards; returns their count."""
    hs = H[r, src] - 1
    H[r, src] = hs
    P[r, dst, 0] = P[r, src, hs]
    H[r, dst] = 1
    return resolve(P, H, r, st, su)


@nb.njit(cache=True)
def on_table(H, r):
    return H[r, 0] + H[r, 1] + H[r, 2] + H[r, 3]


@nb.njit(cache=True)
def table_mask(P, H, r):
    m = np.uint64(0)
    for p in range(4):
        for i in range(H[r, p]):
            m |= bit(P[r, p, i])
    return m


@nb.njit(cache=True)
def endgame_min(P, H, r, st, su, fill):
    """With the stock empty: the fewest cards left on the table over every line of moves from row r.

    4 means the game is won. A depth-first search on the pool rows ROW_END..ROW_END+63 (its
    stack; row r must not be among them); stops at 4.
    """
    best = on_table(H, r)
    if best <= 4:
        return best
    base = ROW_END
    copy_row(P, H, r, base)
    nxt = np.zeros(END_STACK, np.int64)
    d = 0
    nxt[0] = 0
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
        copy_row(P, H, row, row + 1)
        move(P, H, row + 1, found, e, st, su)
        t = on_table(H, row + 1)
        if t < best:
            best = t
            if best <= 4:
                return best
        d += 1
        nxt[d] = 0
    return best


@nb.njit(cache=True)
def _reach_key(P, H, r, root):
    """Key of a position reached from row root by moves alone: (cards on the table, pile bottoms).

    Exact among such positions: a pile whose bottom is the root's is a prefix of the root's pile
    (its cards are known from the mask, less the cards that are bottoms elsewhere), any other
    pile holds a single moved card (a bottom that is never a lone mover under sensible).
    """
    m = table_mask(P, H, r)
    f = np.int64(0)
    for p in range(4):
        b = np.int64(255) if H[r, p] == 0 else np.int64(P[r, p, 0])
        f |= b << np.int64(8 * p)
    return m, f


@nb.njit(cache=True)
def reach(P, H, KM, KF, base, st, su, fill):
    """Every position reachable from row ``base`` by sensible+leftmost moves, itself first.

    Breadth first; the list is rows base, base+1, … (duplicates dropped; KF[row, 1:3] say which
    listed position and which pile's top move led there); returns its length, or -1 when more
    than REGION positions are reachable (the caller raises).
    """
    n = 1
    KM[base], KF[base, 0] = _reach_key(P, H, base, base)
    KF[base, 1] = -1
    KF[base, 2] = -1
    i = 0
    while i < n:
        row = base + i
        e = first_empty(H, row)
        if e >= 0:
            for src in range(4):
                if not can_move(P, H, row, src, st, fill):
                    continue
                if n >= REGION:
                    return -1
                new = base + n
                copy_row(P, H, row, new)
                move(P, H, new, src, e, st, su)
                km, kf = _reach_key(P, H, new, base)
                dup = False
                for j in range(n):
                    if KM[base + j] == km and KF[base + j, 0] == kf:
                        dup = True
                        break
                if not dup:
                    KM[new] = km
                    KF[new, 0] = kf
                    KF[new, 1] = i
                    KF[new, 2] = src
                    n += 1
        i += 1
    return n


def pool_row(P, H, r: int, piles) -> None:
    """Write a position given as four card sequences (bottom first) into pool row r."""
    for p in range(4):
        pile = piles[p]
        H[r, p] = len(pile)
        if len(pile) > MAXH:
            raise PositionParseError(f"pile {p} holds {len(pile)} cards; at most {MAXH}")
        for i, c in enumerate(pile):
            P[r, p, i] = c


def undealt_mask(cards) -> np.uint64:
    """The uint64 mask of a collection of card ids."""
    m = 0
    for c in cards:
        m |= 1 << int(c)
    return np.uint64(m)


def mask_cards(mask) -> list[int]:
    """The card ids of a mask, ascending."""
    m = int(mask)
    return [c for c in range(N_CARDS) if (m >> c) & 1]
