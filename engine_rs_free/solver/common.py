"""What the solver's modules share: sizes, statuses, small register helpers and card codes.

A card's *code* is ``suit * 16 + strength`` (one table read gives both, and
within a suit a higher code is a stronger card); an empty pile's top is -64.
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros

# Numba types of the solver's arrays, for explicit signatures (one compiled version each)
_PILES = nb.types.Array(nb.int8, 2, "C")
_I8 = nb.types.Array(nb.int8, 1, "C")
_I32 = nb.types.Array(nb.int32, 1, "C")

MAX_HEIGHT = 64  # cards a pile can hold: 52 at most
MAX_POSITION_ACTIONS = 512  # legal actions of one position: easy moves (<=48 cards x 6 placements) + 24 deals + 4 discards
MAX_DEPTH = 8192  # path length: <=~250 progressing actions, each followed by <=23 lone moves
EVENT_ROWS = 3 * MAX_DEPTH + 256  # events of a pending-discards line: per action at most a move or deal,
# a card made pending and one turned real, plus each card taken off once (pending.py)

STATUS_SOLVED = 0
STATUS_GAVE_UP = 1
STATUS_NAMES = ("solved", "gave_up")

_NO_FOREIGN = 255
MASK52 = np.uint64((1 << 52) - 1)


# -- the records the compiled code passes around (named tuples: Numba passes them by value) ---------


class SearchRules(NamedTuple):
    """A rule set as the searches read it (``core.search_rules`` makes one)."""

    strength: np.ndarray  # int8[52]   rank order of each card, 0 (lowest) .. 12 (the variant's top rank)
    code: np.ndarray  # int8[52]       suit * 16 + strength
    fill: int  # FILL_TOP | FILL_ACE | FILL_ANY (rules.py)
    optional: bool  # discards=optional
    sensible: bool
    leftmost: bool
    must_fill: bool


class Table(NamedTuple):
    """The transposition table (table.py)."""

    slots: np.ndarray  # uint64[2 * entries]   two words an entry, BUCKET entries a bucket
    mask: np.uint64  # buckets - 1


class Work(NamedTuple):
    """The search's buffers, one frame per depth of the path, reused from search to search."""

    acts: np.ndarray  # int32[MAX_DEPTH, MAX_POSITION_ACTIONS]  each frame's actions, in search order
    nacts: np.ndarray  # int32[MAX_DEPTH]       how many
    idx: np.ndarray  # int32[MAX_DEPTH]         the next one to try
    path: np.ndarray  # int32[MAX_DEPTH]        the action taken from each frame
    lone: np.ndarray  # bool[MAX_DEPTH]         it was a lone move (the cycle guard reads it)
    keys1: np.ndarray  # uint64[MAX_DEPTH]      each frame's key (the native search: its position)
    keys2: np.ndarray  # uint32[MAX_DEPTH]
    keys3: np.ndarray  # uint64[MAX_DEPTH]      the pending-discards search: each frame's pending cards
    rbase: np.ndarray  # int32[MAX_DEPTH]       generic search: the undo stack's top when the frame was entered
    scores: np.ndarray  # int32[MAX_DEPTH]      native search: each frame's score
    rec_pile: np.ndarray  # int32[64]           the undo stack of discards: pile and card
    rec_card: np.ndarray  # int32[64]
    best_line: np.ndarray  # int32[MAX_DEPTH]   the best line found
    best_keys1: np.ndarray  # uint64[MAX_DEPTH + 1]  native search: the positions along it
    best_keys2: np.ndarray  # uint32[MAX_DEPTH + 1]
    best_nacts: np.ndarray  # int32[MAX_DEPTH + 1]  native search: the frames' action counts along it
    events: np.ndarray  # int32[EVENT_ROWS, 4]  the pending-discards search: the replay of its line


class NativeDeck(NamedTuple):
    """One fresh deal's tables for the native search (native.py), filled per deck."""

    pcode: np.ndarray  # int8[52]      card code of native bit 13*p + i (the i-th card dealt to pile p)
    pcard: np.ndarray  # int8[52]      card id of that bit
    pbit: np.ndarray  # int8[52]       native bit of each card id
    deal_clear: np.ndarray  # uint64[13]  per deal, the dealt cards another dealt card beats
    deal_nd: np.ndarray  # int64[13]   how many
    high_bit: np.ndarray  # int8[8192]  highest set bit of a pile's 13-bit field
    code: np.ndarray  # int8[52]       card code of each card id (SearchRules.code)
    undealt: np.ndarray  # uint64[13]  after deal i (0: the first four cards), the cards still to deal, by card id


class NativeTops(NamedTuple):
    """What the native search needs to read a pile's top: the NativeDeck fields of that, alone.

    A call that is not inlined copies every array of its arguments (seven words each), so the
    helpers called from the line's finish, once per step of a line, take this and MoveFlags
    instead of the whole NativeDeck and SearchRules.
    """

    pcode: np.ndarray
    code: np.ndarray
    high_bit: np.ndarray


class MoveFlags(NamedTuple):
    """The SearchRules fields that decide which moves and deals are legal."""

    fill: int
    sensible: bool
    leftmost: bool
    must_fill: bool


class OptionalDeck(NamedTuple):
    """One fresh deal's tables for the dominance rules of the optional-discards search (optional.py),
    indexed by native bit (``NativeDeck``), filled per deck."""

    weaker: np.ndarray  # uint64[52]        native bits of the weaker cards of its suit
    weaker_other: np.ndarray  # uint64[52]  the same, less those dealt to its own pile (strict: no targets)
    stronger: np.ndarray  # uint64[52]      native bits of the stronger cards of its suit (the lock bound)


class Starts(NamedTuple):
    """The start positions of one batch of searches (``core.deck_inputs``, ``core.position_inputs``)."""

    piles: np.ndarray  # int8[N, 4, H]    cards of each pile, bottom first
    heights: np.ndarray  # int32[N, 4]
    stocks: np.ndarray  # int8[N, S]      the stock, next card first
    nstocks: np.ndarray  # int32[N]
    scores: np.ndarray  # int32[N]        cards already discarded
    natives: np.ndarray  # int8[N, 52]    the pile each card is (or will be) dealt to; -1 for none


def _dummy_rules() -> SearchRules:
    return SearchRules(np.zeros(52, np.int8), np.zeros(52, np.int8), 0, False, False, False, False)


def _dummy_deck() -> NativeDeck:
    return NativeDeck(np.zeros(52, np.int8), np.zeros(52, np.int8), np.zeros(52, np.int8), np.zeros(13, np.uint64),
                      np.zeros(13, np.int64), np.zeros(1 << 13, np.int8), np.zeros(52, np.int8),
                      np.zeros(13, np.uint64))


def tops_of(deck):
    """The NativeTops of a NativeDeck."""
    return NativeTops(deck.pcode, deck.code, deck.high_bit)


def flags_of(rules):
    """The MoveFlags of a SearchRules."""
    return MoveFlags(rules.fill, rules.sensible, rules.leftmost, rules.must_fill)


# their Numba types, for explicit signatures
_RULES = nb.typeof(_dummy_rules())
_DECK = nb.typeof(_dummy_deck())
_TOPS = nb.typeof(tops_of(_dummy_deck()))
_FLAGS = nb.typeof(flags_of(_dummy_rules()))
tops_of = nb.njit(cache=True, inline="always", _nrt=False)(tops_of)
flags_of = nb.njit(cache=True, inline="always", _nrt=False)(flags_of)


class Results(NamedTuple):
    """The rows of one batch of searches."""

    score: np.ndarray  # int8[N]       best score found
    nodes: np.ndarray  # int64[N]      positions searched
    status: np.ndarray  # int8[N]      STATUS_SOLVED | STATUS_GAVE_UP
    moves: np.ndarray  # int16[N]      moves in the best line
    decisions: np.ndarray  # int16[N]  decision points along it
    line_off: np.ndarray  # int64[N + 1]  line n is line_buf[line_off[n]:line_off[n + 1]]


@nb.njit(cache=True, inline="always", _nrt=False)
def _set4(l0, l1, l2, l3, i, c):
    """A list of four cards held in registers: (l0, l1, l2, l3) with item i replaced by c."""
    return (c if i == 0 else l0, c if i == 1 else l1, c if i == 2 else l2, c if i == 3 else l3)


@nb.njit(cache=True, inline="always", _nrt=False)
def _get4(l0, l1, l2, l3, i):
    """Item i of a list of four cards held in registers."""
    return l0 if i == 0 else (l1 if i == 1 else (l2 if i == 2 else l3))


@nb.njit(cache=True, inline="always", _nrt=False)
def _sort4(l0, l1, l2, l3):
    """The four values in ascending order (a sorting network)."""
    if l0 > l1:
        l0, l1 = l1, l0
    if l2 > l3:
        l2, l3 = l3, l2
    if l0 > l2:
        l0, l2 = l2, l0
    if l1 > l3:
        l1, l3 = l3, l1
    if l1 > l2:
        l1, l2 = l2, l1
    return l0, l1, l2, l3


@nb.njit(cache=True, inline="always", _nrt=False)
def _beaten(a, b, c, d):
    """Top code a (-64: an empty pile) is beaten by one of b, c, d (same suit, stronger).

    Written out in full: it is the heart of the forced discards, and spelling it
    through a two-card helper measured 5% slower on strict.
    """
    sa = a >> 4
    return a >= 0 and (((b >> 4) == sa and b > a) or ((c >> 4) == sa and c > a) or ((d >> 4) == sa and d > a))


@nb.njit(cache=True, inline="always", _nrt=False)
def _high_bit(f):
    """The highest set bit of a non-zero field (a pile's 13-bit field): one ``lzcnt``, where a
    lookup table cost a dependent load on the path of every pile top (strict -3%)."""
    return np.int64(63) - np.int64(leading_zeros(np.uint64(f)))


@nb.njit(cache=True, inline="always", _nrt=False)
def _popcount(x):
    """The number of set bits of a uint64."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@nb.njit(cache=True, inline="always", _nrt=False)
def _on_lone_run(keys1, keys2, lone, k, n1, n2):
    """Cycle guard: the key (n1, n2) is that of a frame on the current run of lone moves (frames k, k-1, ...
    back to the one the run started from), so a lone move must not step back onto it."""
    j = k
    while True:
        if keys1[j] == n1 and keys2[j] == n2:
            return True
        if j == 0 or not lone[j - 1]:
            return False
        j -= 1
