"""The exact clairvoyant solver: the best score a player who knows the stock order can reach.

``solve_deck(deck, rules)`` searches every line of play of one deal and returns
its ``max_score`` (0..48), ``won``, a game ``line`` that reaches exactly that
score (it replays through ``game.replay``), the ``nodes`` searched and a
``status``: ``'solved'``, or ``'gave_up'`` when ``node_limit`` stopped the
search (``max_score`` is then only the best score found, a lower bound, and
``won`` is False unless a win was found). ``solve_batch`` does the same for many
decks in one compiled loop.

How the search works (all in Numba, no Python per node):

- **Value.** Discards are never undone and the player may stop once the stock
  is empty (and can always go on dealing before), so the value of a position
  is the largest score of any position reachable from it. The search is a
  depth-first walk over every reachable position that keeps the best score
  seen, with the line that reached it, and stops at 48 (a win).
- **Transposition table = visited set.** Because the value is a maximum over
  reachable positions, a position met a second time can add nothing: every
  position below it was already scored (or cut off by a bound that the best
  score has only grown past since). So the table needs no values, only
  "seen", and a cycle is harmless: a position is marked when first entered.
  A position with no empty pile (its only child is a deal) is looked up only
  at every other stock position: a probe is a cache miss, and a position met
  again is then caught one deal later.
- **Exact key, pile order kept.** Cards reach a non-empty pile only by a deal,
  so a pile is always an optional *foreign* bottom card (one that was moved
  there) followed by cards dealt to that pile, in deal order. The position is
  therefore exactly ``(set of cards on the table, stock position, foreign
  bottom of each pile)``: a 52-bit mask plus 6 bits of stock position in one
  ``uint64``, and four card bytes in a ``uint32``. The table stores the whole
  key, so a hit is always the same position (no hash collisions).
- **Lone moves last.** Moving a lone card (the only card of its pile) into
  an empty pile discards nothing; it only changes which pile later cards
  land on. The search tries such moves after every other action, and the
  line it returns has each run of them cut to a shortest run to the same
  position (``_finish_line``). With the stock out pile labels no longer
  matter: the key is then that of the multiset of piles, and lone moves are
  not generated. (An earlier version searched over classes of placements of
  the lone cards instead; with the table as it is now, plain lone moves
  visit about 5% more positions but run 4-20% faster, and need no line
  expansion.)
- **Bounded memory.** The table is a fixed array of 4-way buckets whatever the
  deal (1 MiB by default: it stays in cache); when a bucket is full the entry
  deepest in the deal (most stock dealt, smallest subtree) is replaced. A lost
  entry only costs time. Cycles come only from lone moves (every other action
  deals, discards, or takes a card off a pile of two or more, which only a
  deal can refill); the search refuses a lone move back into a position on
  the current run of lone moves, so it terminates even when the table
  forgets.
- **Native piles.** From a fresh deal (``solve_batch``, ``solve_deck``) with
  forced discards, every variant but ``easy`` is searched by
  ``_search_native``: the cards dealt to each pile are known in advance, so
  a position is a 52-bit mask over (pile, place in its deal order) plus the
  foreign bottoms, a pile's top is the highest bit of its field, and a
  search frame holds its whole position in two words, so stepping back
  undoes nothing. The first round of discards after a deal is among the four
  dealt cards alone and is worked out once per deck. It visits the same
  positions as ``_search`` (the tests hold them to the same scores) and runs
  1.5-1.9 times as fast; ``_search`` stays for ``easy``, optional discards
  and ``solve_position`` (any position, whose piles need not be in deal
  order).
- **Bound.** A branch is cut when no position below it can beat the best score
  found: a card that can never be discarded is counted out (see
  ``_upper_bound``). Working the bound out costs about as much as the rest of
  a node, and it can only cut when few cards are left to win, so it is
  worked out once the best score found reaches ``BOUND_FROM`` (40), and only
  at positions with a choice (a dead card stays dead, so a cut is at worst
  made a few deals later): strict searches visit 3% more positions and run
  faster. Only ``_search`` works it out: it cuts about 6% of strict
  positions for about 7% of the time, and a stronger version (stuck cards
  that cover stronger cards of their suit, stock cards) cut only 2% more.
  So ``_search_native`` has no bound.
- **No reference counting, few calls.** The hot functions are compiled
  without Numba's NRT (``_nrt=False``): they allocate nothing, and counting
  references to the arrays passed on every call cost about half the time.
  A call that passes arrays still costs about as much as a deal (every array
  is passed as a struct of seven words), so the search inlines its per-node
  steps (an action with its forced discards and its undo, the key, the
  table and the list of actions) and skips work where the answer is known: a
  position with no empty pile has dealing as its only action, and a leaf
  (stock out, no pile empty) needs no key and no table entry. A card's
  suit and strength are one table read (its code). The cold compile takes
  about 60 s (both searches), once per machine (the cache is on disk); the
  line's finish and the root of the native search call compiled helpers
  (``_nat_*_call``) instead of inlining them, which saved 25 s of it.
- **One replay of the line.** Turning the best line into the result (its
  lone-move runs shortened, its moves and decision points counted) is one
  replay (``_finish_line``); a position with no empty pile needs no call to
  list its actions there either.

Action codes inside the search (``int32``): ``kind + 4*src + 16*dst + 64*depth``
with kind 0 = deal, 1 = move, 2 = discard; ``line_text`` turns them into the
game's action text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .actions import KIND_DEAL, KIND_DISCARD, KIND_MOVE, line_text
from .cards import N_CARDS, SUIT
from .game import N_PILES, WIN_SCORE, State, new_game
from .rules import FILL_ACE, FILL_ANY, Rules, rules_by_name, strength_table

# Sizes derived from the game (see the module docstring for the bounds).
MAX_HEIGHT = 64  # cards a pile can hold: 52 at most
MAX_ACTIONS = 512  # legal actions of one position: easy moves (<=48 cards x 6 placements) + 24 deals + 4 discards
MAX_DEPTH = 8192  # path length: <=~250 progressing actions, each followed by <=23 lone moves
BUCKET = 4  # entries per bucket of the transposition table; an entry is 16 bytes
# The table is a visited set whose replacement keeps the shallow entries, so a
# small one loses little: 2**14 buckets (1 MiB, cache-resident) search 0.5% more
# positions than 2**18 on standard deals but each ~30% faster.
DEFAULT_TT_BITS = 14  # 2**14 buckets = 64 Ki entries = 1 MiB
STRICT_TT_BITS = 12  # 256 KiB: strict searches ~100 positions a deal (max ~3,300); 2-4% faster than 1 MiB
OPTIONAL_TT_BITS = 20  # 2**20 buckets = 4 Mi entries = 64 MiB: optional discards search far more positions
EASY_TT_BITS = 22  # 2**22 buckets = 16 Mi entries = 256 MiB: easy has far more positions

STATUS_SOLVED = 0
STATUS_GAVE_UP = 1
STATUS_NAMES = ("solved", "gave_up")


_NO_FOREIGN = 255
MASK52 = np.uint64((1 << 52) - 1)
BOUND_FROM = 40  # the bound is worked out only once the best score found is this high (see _search)  # the card bits of a key's first word


@dataclass(frozen=True)
class Solution:
    """The result of solving one deal (see the module docstring)."""

    max_score: int
    won: bool
    line: str
    nodes: int
    status: str  # 'solved' | 'gave_up'

    @property
    def solved(self) -> bool:
        return self.status == "solved"


@dataclass
class SolveBatchResult:
    """Column results of ``solve_batch``, one row per deck.

    max_score: int8[N]   best score (a lower bound where status is 'gave_up')
    won:       bool[N]   a winning line was found
    nodes:     int64[N]  positions searched
    status:    list[str] 'solved' | 'gave_up'
    lines:     list[str] the best line found (None for every deck when want_lines=False)
    moves:     int16[N]  move actions in the line
    decisions: int16[N]  points of the line with more than one choice (stopping counts once the stock is empty)
    """

    max_score: np.ndarray
    won: np.ndarray
    nodes: np.ndarray
    status: list
    lines: list | None
    moves: np.ndarray
    decisions: np.ndarray


# --------------------------------------------------------------------------- compiled core


@nb.njit(cache=True, inline="always", _nrt=False)
def _mix(k1, k2):
    """splitmix64 finaliser of the two key words: the bucket index source."""
    z = k1 ^ (np.uint64(k2) * np.uint64(0x9E3779B97F4A7C15))
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True, inline="always", _nrt=False)
def _tt_seen_or_add(tt, k1, k2, epoch, sp, mask_bits):
    """True when the exact key is in the table (this deck); else add it and return False.

    ``tt`` is ``uint64[2 * entries]``: entry i is ``tt[2i] = k1`` and
    ``tt[2i+1] = k2 | tag << 32`` with ``tag = epoch << 8 | sp``. A bucket of
    four entries is one 64-byte cache line. Entries of another epoch (deck)
    are free slots, so the table is never cleared between decks.
    """
    b = np.int64(_mix(k1, k2) & mask_bits) * BUCKET
    victim = b
    victim_sp = -1
    for s in range(BUCKET):
        i = b + s
        w = tt[2 * i + 1]
        tag = np.uint32(w >> np.uint64(32))
        if (tag >> np.uint32(8)) != epoch:
            if victim_sp < 1000:
                victim = i
                victim_sp = 1000  # a free slot beats any replacement
            continue
        if tt[2 * i] == k1 and np.uint32(w & np.uint64(0xFFFFFFFF)) == k2:
            return True
        esp = np.int64(tag & np.uint32(255))
        if victim_sp < 1000 and esp >= victim_sp:
            victim = i
            victim_sp = esp
    tt[2 * victim] = k1
    tag = (np.uint64(epoch) << np.uint64(8)) | np.uint64(sp)
    tt[2 * victim + 1] = np.uint64(k2) | (tag << np.uint64(32))
    return False


@nb.njit(cache=True, inline="always", _nrt=False)
def _top_code(piles, hp, p, code):
    """The top card of pile p (height hp) as its code (``suit * 16 + strength``); -64 for an empty pile."""
    t = np.int64(code[piles[p, max(hp - 1, 0)]])
    return t if hp > 0 else np.int64(-64)


@nb.njit(cache=True, inline="always", _nrt=False)
def _beaten(a, b, c, d):
    """Top code a (-64: an empty pile) is beaten by one of b, c, d (same suit, stronger).

    Written out in full: it is the heart of the forced discards, and spelling it
    through a two-card helper measured 5% slower on strict.
    """
    sa = a >> 4
    return a >= 0 and (((b >> 4) == sa and b > a) or ((c >> 4) == sa and c > a) or ((d >> 4) == sa and d > a))


@nb.njit(cache=True, inline="always", _nrt=False)
def _discardable(piles, h, i, code):
    """The top card of pile i may be discarded (another pile's top beats it)."""
    t0 = _top_code(piles, h[0], 0, code)
    t1 = _top_code(piles, h[1], 1, code)
    t2 = _top_code(piles, h[2], 2, code)
    t3 = _top_code(piles, h[3], 3, code)
    if i == 0:
        return _beaten(t0, t1, t2, t3)
    if i == 1:
        return _beaten(t1, t0, t2, t3)
    if i == 2:
        return _beaten(t2, t0, t1, t3)
    return _beaten(t3, t0, t1, t2)


@nb.njit(cache=True, inline="always", _nrt=False)
def _resolve(piles, h, code, rec_pile, rec_card, rtop):
    """Make every forced discard; push (pile, card) of each onto the undo stack; return the new top.

    Each round discards every top card that is weaker than another top card of
    its suit, all at once: the strongest top of each suit stays, so this is one
    of the orders of single discards, and every order ends in the same
    position (RULES.md rule 3). (A version without data-dependent branches
    ran 2% faster on strict and 10% slower on standard+sensible.)
    """
    while True:
        t0 = _top_code(piles, h[0], 0, code)
        t1 = _top_code(piles, h[1], 1, code)
        t2 = _top_code(piles, h[2], 2, code)
        t3 = _top_code(piles, h[3], 3, code)
        d0 = _beaten(t0, t1, t2, t3)
        d1 = _beaten(t1, t0, t2, t3)
        d2 = _beaten(t2, t0, t1, t3)
        d3 = _beaten(t3, t0, t1, t2)
        if not (d0 or d1 or d2 or d3):
            return rtop
        for i in range(4):
            if (i == 0 and d0) or (i == 1 and d1) or (i == 2 and d2) or (i == 3 and d3):
                h[i] -= 1
                rec_pile[rtop] = i
                rec_card[rtop] = piles[i, h[i]]
                rtop += 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _only_deal(h, optional):
    """No pile is empty and discards are forced: no move or discard is legal, only a deal (if any)."""
    return h[0] > 0 and h[1] > 0 and h[2] > 0 and h[3] > 0 and not optional


@nb.njit(cache=True, inline="always", _nrt=False)
def _write_moves(piles, h, strength, fill, sensible, leftmost, out, n, which):
    """Append the legal moves to ``out[n:]`` in game.py's order; return the new count.

    which: 0 = every move, 1 = moves of a card that is not alone, 2 = lone moves only.
    """
    first_empty = -1
    for p in range(4):
        if h[p] == 0:
            first_empty = p
            break
    if first_empty < 0:
        return n
    for src in range(4):
        hs = h[src]
        if hs == 0:
            continue
        if sensible and hs == 1:
            continue
        if which == 1 and hs == 1:
            continue
        if which == 2 and hs != 1:
            continue
        maxd = hs if fill == 2 else 1
        for depth in range(maxd):
            card = piles[src, hs - 1 - depth]
            if fill == 1 and strength[card] != 12:
                continue
            for dst in range(4):
                if h[dst] != 0:
                    continue
                if leftmost and dst != first_empty:
                    continue
                out[n] = KIND_MOVE + 4 * src + 16 * dst + 64 * depth
                n += 1
    return n


# An explicit signature for _gen_actions, which the search and the line replay call with
# different integer types: one compiled version instead of several.
_PILES = nb.types.Array(nb.int8, 2, "C")
_I8 = nb.types.Array(nb.int8, 1, "C")
_I32 = nb.types.Array(nb.int32, 1, "C")
_SIG_GEN_ACTIONS = nb.int64(_PILES, _I32, nb.int64, nb.int64, _I8, _I8, nb.int64, nb.boolean, nb.boolean,
                            nb.boolean, nb.boolean, _I32, nb.boolean)


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


@nb.njit(cache=True, _nrt=False)
def _write_discards(piles, h, code, out, n):
    """Append the optional discards ``xN`` (by pile) to ``out[n:]``; return the new count."""
    for p in range(4):
        if _discardable(piles, h, p, code):
            out[n] = KIND_DISCARD + 4 * p
            n += 1
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _gen_actions_inline(piles, h, sp, nstock, strength, code, fill, optional, sensible, leftmost, must_fill, out,
                        contract_order):
    """``_gen_actions``, inlined where it is called in the search loop.

    Write the legal actions of the position into ``out``; return how many.

    ``contract_order``: game.py's order (deal, moves by src/depth/dst, discards).
    Otherwise the search order: discards, moves of a card that is not alone,
    deal, lone moves (a lone move only relabels piles, so it is tried last).
    """
    n = 0
    can_deal = sp < nstock
    if contract_order:
        # moves first (to know whether must_fill blocks the deal), then shift them right by one;
        # must_fill blocks it only while a card of a pile of two or more may move (RULES.md)
        nm = _write_moves(piles, h, strength, fill, sensible, leftmost, out, 0, 0)
        blocks = False
        if must_fill:
            for i in range(nm):
                if h[(out[i] >> 2) & 3] >= 2:
                    blocks = True
                    break
        if can_deal and not blocks:
            for i in range(nm, 0, -1):
                out[i] = out[i - 1]
            out[0] = KIND_DEAL
            nm += 1
        n = nm
        if optional:
            n = _write_discards(piles, h, code, out, n)
        return n
    if optional:
        n = _write_discards(piles, h, code, out, n)
    n0 = n
    if not can_deal:
        # Endgame: with the stock empty no card will ever land on a pile again, so
        # the value depends only on the multiset of pile contents. A lone move
        # changes nothing then, and which empty pile a card moves into does not
        # matter: try only moves of cards that are not alone, into the first empty pile.
        return _write_moves(piles, h, strength, fill, sensible, True, out, n, 1)
    n = _write_moves(piles, h, strength, fill, sensible, leftmost, out, n, 1)
    n1 = n
    n = _write_moves(piles, h, strength, fill, sensible, leftmost, out, n, 2)
    if can_deal and not (must_fill and n1 > n0):
        # the deal goes between the moves of cards that are not alone and the lone moves (which never
        # block it under must_fill: RULES.md)
        for i in range(n, n1, -1):
            out[i] = out[i - 1]
        out[n1] = KIND_DEAL
        n += 1
    return n


@nb.njit(_SIG_GEN_ACTIONS, cache=True, _nrt=False)
def _gen_actions(piles, h, sp, nstock, strength, code, fill, optional, sensible, leftmost, must_fill, out,
                 contract_order):
    """Write the legal actions of the position into ``out``; return how many (``_gen_actions_inline``)."""
    return _gen_actions_inline(piles, h, sp, nstock, strength, code, fill, optional, sensible, leftmost, must_fill,
                               out, contract_order)


@nb.njit(cache=True, inline="always", _nrt=False)
def _deal(piles, h, stock, sp, code, optional, rec_pile, rec_card, rtop):
    """Deal the next four cards (and make the forced discards); (new sp, new undo-stack top)."""
    for p in range(4):
        piles[p, h[p]] = stock[sp + p]
        h[p] += 1
    if not optional:
        rtop = _resolve(piles, h, code, rec_pile, rec_card, rtop)
    return sp + 4, rtop


@nb.njit(cache=True, inline="always", _nrt=False)
def _undo_deal(h, sp):
    """Take back a deal whose discards are already put back; returns the old sp."""
    for p in range(4):
        h[p] -= 1
    return sp - 4


@nb.njit(cache=True, inline="always", _nrt=False)
def _apply(a, piles, h, stock, sp, code, optional, rec_pile, rec_card, rtop):
    """Apply action code ``a`` (and the forced discards); returns (new sp, new undo-stack top)."""
    kind = a & 3
    if kind == KIND_DEAL:
        return _deal(piles, h, stock, sp, code, optional, rec_pile, rec_card, rtop)
    if kind == KIND_MOVE:
        src = (a >> 2) & 3
        dst = (a >> 4) & 3
        depth = (a >> 6) & 63
        pos = h[src] - 1 - depth
        card = piles[src, pos]
        for i in range(pos, h[src] - 1):
            piles[src, i] = piles[src, i + 1]
        h[src] -= 1
        piles[dst, h[dst]] = card
        h[dst] += 1
    else:
        p = (a >> 2) & 3
        h[p] -= 1
        rec_pile[rtop] = p
        rec_card[rtop] = piles[p, h[p]]
        rtop += 1
        return sp, rtop
    if not optional:
        rtop = _resolve(piles, h, code, rec_pile, rec_card, rtop)
    return sp, rtop


@nb.njit(cache=True, inline="always", _nrt=False)
def _undo_discards(piles, h, rec_pile, rec_card, rtop, rbase):
    """Put back the discards of undo-stack entries rbase..rtop-1, last first."""
    while rtop > rbase:
        rtop -= 1
        p = rec_pile[rtop]
        piles[p, h[p]] = rec_card[rtop]
        h[p] += 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _undo(a, piles, h, sp, rec_pile, rec_card, rtop, rbase):
    """Undo action ``a`` whose discards are undo-stack entries rbase..rtop-1; returns the old sp."""
    _undo_discards(piles, h, rec_pile, rec_card, rtop, rbase)
    kind = a & 3
    if kind == KIND_DEAL:
        sp = _undo_deal(h, sp)
    elif kind == KIND_MOVE:
        src = (a >> 2) & 3
        dst = (a >> 4) & 3
        depth = (a >> 6) & 63
        h[dst] -= 1
        card = piles[dst, h[dst]]
        pos = h[src] - depth
        for i in range(h[src], pos, -1):
            piles[src, i] = piles[src, i - 1]
        piles[src, pos] = card
        h[src] += 1
    return sp


@nb.njit(cache=True, _nrt=False)
def _key(piles, h, sp, nstock, native):
    """The exact position key (see the module docstring): (mask | sp << 52, foreign bottoms).

    With the stock empty (``sp == nstock``) pile labels no longer matter (no
    card will land on a pile again), so the key is that of the multiset of
    piles: the lone cards are written in ascending order into the labels not
    held by a pile of two or more cards (254 for an empty one). A pile of two
    or more has cards dealt to its own label above its bottom, so its label is
    fixed by its content, and the key stays exact for the multiset.
    """
    mask = np.uint64(0)
    for p in range(4):
        for i in range(h[p]):
            mask |= np.uint64(1) << np.uint64(piles[p, i])
    return _key_of(mask, piles, h, sp, nstock, native)


@nb.njit(cache=True, inline="always", _nrt=False)
def _key_of(mask, piles, h, sp, nstock, native):
    """``_key`` given the mask of the cards on the table (the search keeps it up to date)."""
    k1 = mask | (np.uint64(sp) << np.uint64(52))
    k2 = np.uint32(0)
    if sp < nstock:
        for p in range(4):
            b = np.uint32(_NO_FOREIGN)
            if h[p] > 0 and native[piles[p, 0]] != p:
                b = np.uint32(piles[p, 0])
            k2 |= b << np.uint32(8 * p)
        return k1, k2
    l0 = l1 = l2 = l3 = np.int64(255)
    nl = 0
    for p in range(4):
        if h[p] == 1:
            l0, l1, l2, l3 = _set4(l0, l1, l2, l3, nl, np.int64(piles[p, 0]))
            nl += 1
    l0, l1, l2, l3 = _sort4(l0, l1, l2, l3)
    taken = 0
    for p in range(4):
        if h[p] >= 2:
            b = np.uint32(_NO_FOREIGN)
            if native[piles[p, 0]] != p:
                b = np.uint32(piles[p, 0])
        else:
            c = _get4(l0, l1, l2, l3, taken)
            taken += 1
            b = np.uint32(c) if c != 255 else np.uint32(254)
        k2 |= b << np.uint32(8 * p)
    return k1, k2


@nb.njit(cache=True, _nrt=False)
def _upper_bound(piles, h, sp, smax, strength, fill, mask, top_mask):
    """An upper bound of the score of every position reachable from this one.

    48 minus the cards that can never be discarded. In ``strict`` only the top
    rank moves, so every other card stays on its pile until it is discarded,
    and a stock card lands on a known pile (``stock[i]`` on pile ``i % 4``).
    A card x that is not the top rank, of suit t on pile p, is *dead* when
    the top rank of t lies under x on p (it cannot leave before x does) and
    no higher card of t lies on another pile or in the stock bound for
    another pile (``smax[sp, p, t]``): then no higher card of t can ever be a
    top card on another pile while x is one, so x and every card under it stay
    for good. In the other variants any top card may move into an empty pile,
    so no card is provably dead this way and the bound is 48 (only the win
    stops the search early).

    Only piles with a buried top rank are examined (``mask``: the cards on
    the table; ``top_mask``: the cards of the top rank).
    """
    if fill != 1:
        return WIN_SCORE
    buried = mask & top_mask
    for p in range(4):
        if h[p] > 0:
            buried &= ~(np.uint64(1) << np.uint64(piles[p, h[p] - 1]))
    if buried == 0:
        return WIN_SCORE
    # the cards of each pile as a bit mask; a card's id is suit * 13 + rank index, and
    # in strict its strength is its rank index, so within a suit a higher bit is stronger
    m0 = m1 = m2 = m3 = np.uint64(0)
    for p in range(4):
        m = np.uint64(0)
        for i in range(h[p]):
            m |= np.uint64(1) << np.uint64(piles[p, i])
        m0, m1, m2, m3 = _set4(m0, m1, m2, m3, p, m)
    d0 = d1 = d2 = d3 = np.int64(-1)  # per pile, the position of its highest dead card
    for t in range(4):
        ace = t * 13 + 12
        if not (buried >> np.uint64(ace)) & np.uint64(1):
            continue
        p = 0
        while not (_get4(m0, m1, m2, m3, p) >> np.uint64(ace)) & np.uint64(1):
            p += 1
        in_p = _get4(m0, m1, m2, m3, p)
        suit_bits = np.uint64(0x1FFF) << np.uint64(13 * t)
        # the highest card of suit t on another pile or bound for one
        others = np.int64(smax[sp, p, t])
        elsewhere = mask & ~in_p & suit_bits
        for r in range(11, others, -1):
            if (elsewhere >> np.uint64(13 * t + r)) & np.uint64(1):
                others = r
                break
        # cards of suit t on pile p stronger than all of those (the Ace itself aside)
        cand = in_p & suit_bits & ~(np.uint64(1) << np.uint64(ace))
        cand &= ~((np.uint64(1) << np.uint64(13 * t + others + 1)) - np.uint64(1))
        if cand == 0:
            continue
        # the highest of them above the Ace is dead
        for j in range(h[p] - 1, -1, -1):
            c = piles[p, j]
            if c == ace:
                break
            if (cand >> np.uint64(c)) & np.uint64(1):
                if j > _get4(d0, d1, d2, d3, p):
                    d0, d1, d2, d3 = _set4(d0, d1, d2, d3, p, np.int64(j))
                break
    dead = 0
    for p in range(4):
        for i in range(_get4(d0, d1, d2, d3, p) + 1):
            if strength[piles[p, i]] != 12:
                dead += 1
    return WIN_SCORE - dead


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


@nb.njit(cache=True, _nrt=False)
def _search(stock, nstock, smax, piles, h, start_score, strength, code, native, fill, optional, sensible,
            leftmost, must_fill, node_limit, tt, tt_mask, epoch,
            acts, nacts, idx, path, lone, keys1, keys2, rbase, rec_pile, rec_card, best_line, top_mask):
    """Depth-first search from the position (piles, h, stock[0:nstock]); see the module docstring.

    Returns (best score, best line length, nodes, status); ``best_line[:length]``
    holds the action codes of the best line. ``piles`` and ``h`` are scratch:
    their content is undefined afterwards. ``node_limit`` <= 0 means no limit.
    """
    sp = 0
    rtop = 0
    score = start_score
    best = score
    best_len = 0
    nodes = 1
    status = STATUS_SOLVED
    k1, k2 = _key(piles, h, sp, nstock, native)
    _tt_seen_or_add(tt, k1, k2, epoch, sp, tt_mask)
    if best >= WIN_SCORE:
        return best, 0, nodes, status
    # the stock table of the strict bound is worked out when the bound is first needed
    smax_ready = False
    if fill == 1 and best >= BOUND_FROM:
        _stock_max(stock, nstock, code, smax)
        smax_ready = True
        if _upper_bound(piles, h, sp, smax, strength, fill, k1 & MASK52, top_mask) <= best:
            return best, 0, nodes, status
    keys1[0] = k1
    keys2[0] = k2
    nacts[0] = _gen_actions(piles, h, sp, nstock, strength, code, fill, optional, sensible, leftmost,
                            must_fill, acts[0], False)
    idx[0] = 0
    k = 0
    while True:
        if idx[k] >= nacts[k]:
            # every child of the position at depth k is done: step back
            if k == 0:
                break
            k -= 1
            score -= rtop - rbase[k]
            sp = _undo(path[k], piles, h, sp, rec_pile, rec_card, rtop, rbase[k])
            rtop = rbase[k]
            continue
        a = acts[k, idx[k]]
        idx[k] += 1
        is_lone = (a & 3) == KIND_MOVE and h[(a >> 2) & 3] == 1
        rbase[k] = rtop
        sp, rtop = _apply(a, piles, h, stock, sp, code, optional, rec_pile, rec_card, rtop)
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
                skip = _tt_seen_or_add(tt, n1, n2, epoch, sp, tt_mask)
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
                if best >= WIN_SCORE:
                    break
            # the bound (strict only) is checked where there is a choice: dead cards stay dead,
            # so a cut missed at a position with one action is made at the next choice
            go = not leaf
            if go and fill == 1 and best >= BOUND_FROM and not full:
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
                    # (inlined here: a call that passes arrays costs as much as a deal)
                    nacts[k] = _gen_actions_inline(piles, h, sp, nstock, strength, code, fill, optional, sensible,
                                                   leftmost, must_fill, acts[k], False)
                idx[k] = 0
                continue
        # the child was seen before, is a leaf or cannot beat the best: enter it with no
        # action left, so that the step back above undoes it (one inlined undo, not two)
        k += 1
        nacts[k] = 0
        idx[k] = 0
    return best, best_len, nodes, status


# --------------------------------------------------------------------------- the search on native piles
#
# A pile is always an optional foreign bottom card followed by cards dealt to it,
# in deal order (see the module docstring). From a fresh deal the cards dealt to
# pile p are fixed: ``deck[4*i + p]`` is its i-th card (i = 0..12). So a position
# is one 52-bit mask over (pile, i), bit ``13*p + i`` set while that card lies on
# its own pile, plus the foreign bottom of each pile (one byte each, 255 for
# none). The top of a pile is the highest bit of its 13-bit field, or its foreign
# bottom when the field is empty; a deal sets four bits, a discard clears one,
# and the position of a search frame is two words, so stepping back undoes
# nothing. The key of the table is the position itself.

@nb.njit(cache=True, inline="always", _nrt=False)
def _popcount(x):
    """The number of set bits of a uint64."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


DEAL_BITS = np.uint64(1 | 1 << 13 | 1 << 26 | 1 << 39)  # bit i of every pile's field, shifted by i
NO_FOREIGN4 = np.uint32(0xFFFFFFFF)  # no pile has a foreign bottom


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_field(mask, p):
    """The 13-bit field of pile p: which of its own cards lie on it."""
    return np.int64((mask >> np.uint64(13 * p)) & np.uint64(0x1FFF))


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_foreign(fw, p):
    """The foreign bottom card of pile p, 255 for none."""
    return np.int64((fw >> np.uint32(8 * p)) & np.uint32(255))


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_top(mask, fw, p, pcode, code, high_bit):
    """The top card of pile p as its code (``suit * 16 + strength``); -64 for an empty pile."""
    f = _nat_field(mask, p)
    if f != 0:
        return np.int64(pcode[13 * p + high_bit[f]])
    fb = _nat_foreign(fw, p)
    return np.int64(code[fb]) if fb != 255 else np.int64(-64)


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_count(mask, fw, p):
    """Cards on pile p, capped at 2 (0 empty, 1 lone, 2 two or more)."""
    f = _nat_field(mask, p)
    n = 0 if f == 0 else (1 if (f & (f - 1)) == 0 else 2)
    if _nat_foreign(fw, p) != 255:
        n += 1
    return min(n, 2)


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_resolve(mask, fw, pcode, code, high_bit):
    """Make every forced discard (as ``_resolve``); returns (mask, fw, discards, no pile is empty)."""
    nd = 0
    while True:
        t0 = _nat_top(mask, fw, 0, pcode, code, high_bit)
        t1 = _nat_top(mask, fw, 1, pcode, code, high_bit)
        t2 = _nat_top(mask, fw, 2, pcode, code, high_bit)
        t3 = _nat_top(mask, fw, 3, pcode, code, high_bit)
        d0 = _beaten(t0, t1, t2, t3)
        d1 = _beaten(t1, t0, t2, t3)
        d2 = _beaten(t2, t0, t1, t3)
        d3 = _beaten(t3, t0, t1, t2)
        if not (d0 or d1 or d2 or d3):
            return mask, fw, nd, t0 >= 0 and t1 >= 0 and t2 >= 0 and t3 >= 0
        for p in range(4):
            if (p == 0 and d0) or (p == 1 and d1) or (p == 2 and d2) or (p == 3 and d3):
                f = _nat_field(mask, p)
                if f != 0:
                    mask &= ~(np.uint64(1) << np.uint64(13 * p + high_bit[f]))
                else:
                    fw |= np.uint32(255) << np.uint32(8 * p)
                nd += 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_gen(mask, fw, sp, nstock, pcode, code, high_bit, fill, sensible, leftmost, must_fill, out):
    """The search order of ``_gen_actions`` on a native position: moves of a card that is not
    alone, the deal, lone moves; with the stock out only moves of a card that is not alone, into
    the first empty pile. Returns the count written to ``out``."""
    first_empty = -1
    for p in range(4):
        if _nat_count(mask, fw, p) == 0:
            first_empty = p
            break
    can_deal = sp < nstock
    if first_empty < 0:
        if can_deal:
            out[0] = KIND_DEAL
            return 1
        return 0
    end = not can_deal
    n = 0
    n_before_deal = 0
    for lone_pass in range(2):
        if lone_pass == 1:
            if end:
                break
            # the deal goes between the moves of cards that are not alone and the lone moves
            n_before_deal = n
            n += 1
        for src in range(4):
            c = _nat_count(mask, fw, src)
            if c == 0 or (c == 1) != (lone_pass == 1):
                continue
            if c == 1 and sensible:
                continue
            if fill == 1 and (_nat_top(mask, fw, src, pcode, code, high_bit) & 15) != 12:
                continue
            for dst in range(4):
                if _nat_count(mask, fw, dst) != 0:
                    continue
                if (leftmost or end) and dst != first_empty:
                    continue
                out[n] = KIND_MOVE + 4 * src + 16 * dst
                n += 1
    if end:
        return n
    # n_before_deal is the deal's slot; must_fill forbids it while a card that is not alone may move
    if must_fill and n_before_deal > 0:
        for i in range(n_before_deal, n - 1):
            out[i] = out[i + 1]
        return n - 1
    out[n_before_deal] = KIND_DEAL
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_end_key(mask, fw, sp, pcard, high_bit):
    """The table key of a position with the stock out: that of the multiset of piles (as ``_key``).

    A pile of two or more cards holds one of its own, so its label is fixed; the
    lone cards are taken off the mask and written in ascending order into the
    other labels (254 for an empty pile).
    """
    k1 = mask
    l0 = l1 = l2 = l3 = np.int64(255)
    nl = 0
    for p in range(4):
        if _nat_count(mask, fw, p) == 1:
            f = _nat_field(mask, p)
            if f != 0:
                bit = 13 * p + high_bit[f]
                k1 &= ~(np.uint64(1) << np.uint64(bit))
                card = np.int64(pcard[bit])
            else:
                card = _nat_foreign(fw, p)
            l0, l1, l2, l3 = _set4(l0, l1, l2, l3, nl, card)
            nl += 1
    l0, l1, l2, l3 = _sort4(l0, l1, l2, l3)
    k2 = np.uint32(0)
    taken = 0
    for p in range(4):
        if _nat_count(mask, fw, p) == 2:
            b = np.uint32(_nat_foreign(fw, p))
        else:
            c = _get4(l0, l1, l2, l3, taken)
            taken += 1
            b = np.uint32(c) if c != 255 else np.uint32(254)
        k2 |= b << np.uint32(8 * p)
    return k1 | (np.uint64(sp) << np.uint64(52)), k2


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_apply(a, mask, fw, sp, pcode, pcard, pbit, deal_clear, deal_nd, code, high_bit):
    """Apply action code ``a`` (a deal or a move) and its forced discards to a native position.

    Returns (mask, fw, sp, discards, no pile is empty, the move was a lone move).
    """
    is_lone = False
    if (a & 3) == KIND_DEAL:
        sp += 4
        i = sp >> 2
        mask |= DEAL_BITS << np.uint64(i)
        # the first round of discards is among the four dealt cards alone: known per deck
        c = deal_clear[i]
        if c == 0:
            return mask, fw, sp, np.int64(0), True, False
        mask &= ~c
        mask, fw, nd, full = _nat_resolve(mask, fw, pcode, code, high_bit)
        return mask, fw, sp, nd + deal_nd[i], full, False
    src = (a >> 2) & 3
    dst = (a >> 4) & 3
    f = _nat_field(mask, src)
    fb = _nat_foreign(fw, src)
    if f != 0:
        bit = 13 * src + high_bit[f]
        card = np.uint32(pcard[bit])
        mask &= ~(np.uint64(1) << np.uint64(bit))
        is_lone = (f & (f - 1)) == 0 and fb == 255
    else:
        card = np.uint32(fb)
        fw |= np.uint32(255) << np.uint32(8 * src)
        is_lone = True
    home = np.int64(pbit[card])
    if home // 13 == dst:
        # back on its own pile (which was empty): the same position as if it had never left
        mask |= np.uint64(1) << np.uint64(home)
    else:
        fw = (fw & ~(np.uint32(255) << np.uint32(8 * dst))) | (card << np.uint32(8 * dst))
    mask, fw, nd, full = _nat_resolve(mask, fw, pcode, code, high_bit)
    return mask, fw, sp, nd, full, is_lone


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_legal_count(mask, fw, sp, nstock, pcode, code, high_bit, fill, sensible, leftmost, must_fill):
    """The number of legal actions of a native position (as ``game.legal_actions``)."""
    n_empty = 0
    for p in range(4):
        if _nat_count(mask, fw, p) == 0:
            n_empty += 1
    moves = 0
    stacked = 0  # moves of a card of a pile of two or more: only these block a deal under must_fill
    if n_empty > 0:
        for src in range(4):
            c = _nat_count(mask, fw, src)
            if c == 0 or (c == 1 and sensible):
                continue
            if fill == 1 and (_nat_top(mask, fw, src, pcode, code, high_bit) & 15) != 12:
                continue
            moves += 1 if leftmost else n_empty
            if c == 2:
                stacked += 1
    deal = 1 if sp < nstock and not (must_fill and stacked > 0) else 0
    return moves + deal


# Compiled once, called (not inlined) where speed matters less than compile time: the
# line's finish and the root of the search. Explicit signatures: one compiled version.
_U64A = nb.types.Array(nb.uint64, 1, "C")
_I64A = nb.types.Array(nb.int64, 1, "C")


@nb.njit(nb.types.Tuple((nb.uint64, nb.uint32, nb.int64, nb.int64, nb.boolean, nb.boolean))(
    nb.int64, nb.uint64, nb.uint32, nb.int64, _I8, _I8, _I8, _U64A, _I64A, _I8, _I8), cache=True, _nrt=False)
def _nat_apply_call(a, mask, fw, sp, pcode, pcard, pbit, deal_clear, deal_nd, code, high_bit):
    """``_nat_apply``, called."""
    return _nat_apply(a, mask, fw, sp, pcode, pcard, pbit, deal_clear, deal_nd, code, high_bit)


@nb.njit(nb.types.Tuple((nb.uint64, nb.uint32, nb.int64, nb.boolean))(nb.uint64, nb.uint32, _I8, _I8, _I8),
         cache=True, _nrt=False)
def _nat_resolve_call(mask, fw, pcode, code, high_bit):
    """``_nat_resolve``, called."""
    return _nat_resolve(mask, fw, pcode, code, high_bit)


@nb.njit(nb.int64(nb.uint64, nb.uint32, nb.int64, nb.int64, _I8, _I8, _I8, nb.int64, nb.boolean, nb.boolean,
                  nb.boolean), cache=True, _nrt=False)
def _nat_legal_count_call(mask, fw, sp, nstock, pcode, code, high_bit, fill, sensible, leftmost, must_fill):
    """``_nat_legal_count``, called."""
    return _nat_legal_count(mask, fw, sp, nstock, pcode, code, high_bit, fill, sensible, leftmost, must_fill)


@nb.njit(nb.int64(nb.uint64, nb.uint32, nb.int64, nb.int64, _I8, _I8, _I8, nb.int64, nb.boolean, nb.boolean,
                  nb.boolean, _I32), cache=True, _nrt=False)
def _nat_gen_call(mask, fw, sp, nstock, pcode, code, high_bit, fill, sensible, leftmost, must_fill, out):
    """``_nat_gen``, called."""
    return _nat_gen(mask, fw, sp, nstock, pcode, code, high_bit, fill, sensible, leftmost, must_fill, out)


@nb.njit(cache=True, inline="always", _nrt=False)
def _nat_slot_pattern(mask, fw, pcard, high_bit, out):
    """``_slot_pattern`` of a native position: per pile its lone card, -1 when empty, -2 for two or more."""
    for p in range(4):
        c = _nat_count(mask, fw, p)
        if c == 0:
            out[p] = -1
        elif c == 2:
            out[p] = -2
        else:
            f = _nat_field(mask, p)
            out[p] = pcard[13 * p + high_bit[f]] if f != 0 else _nat_foreign(fw, p)


@nb.njit(cache=True, _nrt=False)
def _finish_line_native(line, nline, nstock, start_mask, pcode, pcard, pbit, deal_clear, deal_nd, code, high_bit,
                        strength, fill, sensible, leftmost, must_fill, small, bfs, best_keys1, best_keys2):
    """``_finish_line`` on native piles, for a line from a fresh deal: (length, moves, decisions).

    A line with no lone move is final as it is: its moves and decision points
    are counted on the positions the search kept along it (``best_keys1``/
    ``best_keys2``), with no replay. Otherwise each run of lone moves is cut to
    a shortest run to the same position (``_lone_path``), written in place,
    and moves and decision points are counted in the same replay.
    """
    lone_free = True
    for i in range(nline):
        a = line[i]
        if (a & 3) == KIND_MOVE and _nat_count(best_keys1[i] & MASK52, best_keys2[i], (a >> 2) & 3) == 1:
            lone_free = False
            break
    if lone_free:
        moves = 0
        decisions = 0
        for i in range(nline + 1):
            sp = np.int64(best_keys1[i] >> np.uint64(52))
            c = _nat_legal_count_call(best_keys1[i] & MASK52, best_keys2[i], sp, nstock, pcode, code, high_bit, fill,
                                 sensible, leftmost, must_fill)
            if sp == nstock:
                c += 1  # stopping is a choice once the stock is empty
            if c > 1 and (i < nline or sp == nstock):
                decisions += 1
            if i < nline and (line[i] & 3) == KIND_MOVE:
                moves += 1
        return nline, moves, decisions
    start = small[0, :4]
    goal = small[1, :4]
    path = small[2]
    mask = start_mask
    fw = NO_FOREIGN4
    sp = np.int64(0)
    moves = 0
    decisions = 0
    n = 0
    i = 0
    while True:
        if i < nline and (line[i] & 3) == KIND_MOVE and _nat_count(mask, fw, (line[i] >> 2) & 3) == 1:
            # a run of lone moves: where it ends, then the shortest run from where it starts
            _nat_slot_pattern(mask, fw, pcard, high_bit, start)
            mask_at, fw_at = mask, fw
            j = i
            while j < nline and (line[j] & 3) == KIND_MOVE and _nat_count(mask, fw, (line[j] >> 2) & 3) == 1:
                mask, fw, sp, _nd, _full, _lone = _nat_apply_call(line[j], mask, fw, sp, pcode, pcard, pbit, deal_clear,
                                                             deal_nd, code, high_bit)
                j += 1
            _nat_slot_pattern(mask, fw, pcard, high_bit, goal)
            m = _lone_path(start, goal, leftmost, fill == 1, strength, path, bfs)
            keep = m < 0 or m > j - i
            if keep:
                m = j - i
            mask, fw = mask_at, fw_at
            for t in range(m):
                b = line[i + t] if keep else path[t]
                if _nat_legal_count_call(mask, fw, sp, nstock, pcode, code, high_bit, fill, sensible, leftmost,
                                    must_fill) + (1 if sp == nstock else 0) > 1:
                    decisions += 1
                moves += 1
                mask, fw, sp, _nd, _full, _lone = _nat_apply_call(b, mask, fw, sp, pcode, pcard, pbit, deal_clear,
                                                             deal_nd, code, high_bit)
                line[n] = b
                n += 1
            i = j
            continue
        c = _nat_legal_count_call(mask, fw, sp, nstock, pcode, code, high_bit, fill, sensible, leftmost, must_fill)
        if sp == nstock:
            c += 1  # stopping is a choice once the stock is empty
        if c > 1 and (i < nline or sp == nstock):
            decisions += 1
        if i >= nline:
            break
        a = line[i]
        mask, fw, sp, _nd, _full, _lone = _nat_apply_call(a, mask, fw, sp, pcode, pcard, pbit, deal_clear, deal_nd,
                                                     code, high_bit)
        if (a & 3) == KIND_MOVE:
            moves += 1
        line[n] = a
        n += 1
        i += 1
    return n, moves, decisions


@nb.njit(cache=True, _nrt=False)
def _search_native(nstock, start_mask, start_score, pcode, pcard, pbit, deal_clear, deal_nd, code, high_bit, fill, sensible, leftmost,
                   must_fill, node_limit, tt, tt_mask, epoch, acts, nacts, idx, path, lone, keys1, keys2, scores,
                   best_line, best_keys1, best_keys2):
    """``_search`` on native piles (forced discards, a fresh deal, any variant but ``easy``).

    ``start_mask``: the native mask of the start (the first four cards, forced
    discards made), no foreign bottom, no card dealt from the stock. Frame k's
    position is ``keys1[k]`` (mask | sp << 52) and ``keys2[k]`` (foreign
    bottoms); ``scores[k]`` its score. Returns (best score, best line length,
    nodes, status) with the line in ``best_line`` (action codes of the search)
    and the positions along it in ``best_keys1``/``best_keys2`` (as the frames).
    """
    best = start_score
    best_len = 0
    nodes = 1
    status = STATUS_SOLVED
    fw = NO_FOREIGN4
    _tt_seen_or_add(tt, start_mask, fw, epoch, 0, tt_mask)
    if best >= WIN_SCORE:
        return best, 0, nodes, status
    keys1[0] = start_mask
    keys2[0] = fw
    scores[0] = start_score
    nacts[0] = _nat_gen_call(start_mask, fw, 0, nstock, pcode, code, high_bit, fill, sensible, leftmost, must_fill,
                            acts[0])
    idx[0] = 0
    k = 0
    a = -1  # an action already chosen (a deal from a position with no empty pile), or -1
    mask = start_mask
    sp = np.int64(0)
    while True:
        if a < 0:
            if idx[k] >= nacts[k]:
                if k == 0:
                    break
                k -= 1  # the parent's position is its frame: nothing to undo
                continue
            a = acts[k, idx[k]]
            idx[k] += 1
            mask = keys1[k] & MASK52
            sp = np.int64(keys1[k] >> np.uint64(52))
            fw = keys2[k]
        mask, fw, sp, nd, full, is_lone = _nat_apply(a, mask, fw, sp, pcode, pcard, pbit, deal_clear, deal_nd, code,
                                                     high_bit)
        score = scores[k] + nd
        path[k] = a
        lone[k] = is_lone
        leaf = full and sp == nstock
        n1 = mask | (np.uint64(sp) << np.uint64(52))
        skip = False
        if not leaf:
            if is_lone:
                skip = _on_lone_run(keys1, keys2, lone, k, n1, fw)
            # as in _search: a position with no empty pile is looked up at every other stock position
            if not skip and not (full and (sp & 4) != 0):
                if sp < nstock:
                    skip = _tt_seen_or_add(tt, n1, fw, epoch, sp, tt_mask)
                else:
                    e1, e2 = _nat_end_key(mask, fw, sp, pcard, high_bit)
                    skip = _tt_seen_or_add(tt, e1, e2, epoch, sp, tt_mask)
        a = -1
        if skip:
            continue
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
                best_keys1[i] = keys1[i]
                best_keys2[i] = keys2[i]
            best_keys1[k + 1] = n1
            best_keys2[k + 1] = fw
            if best >= WIN_SCORE:
                break
        if leaf:
            continue
        k += 1
        keys1[k] = n1
        keys2[k] = fw
        scores[k] = score
        if full:
            # no pile is empty: the deal is the only action; take it at once, from the registers
            nacts[k] = 1
            idx[k] = 1
            a = KIND_DEAL
        else:
            nacts[k] = _nat_gen(mask, fw, sp, nstock, pcode, code, high_bit, fill, sensible, leftmost, must_fill,
                                acts[k])
            idx[k] = 0
    return best, best_len, nodes, status


@nb.njit(cache=True, _nrt=False)
def _stock_max(stock, nstock, code, smax):
    """Fill ``smax[:nstock+1, 4, 4]``: ``smax[sp, p, t]`` is the highest strength of suit t among
    the cards of ``stock[sp:]`` that a deal puts on another pile than p (-1 if none)."""
    for p in range(4):
        for t in range(4):
            smax[nstock, p, t] = -1
    for sp in range(nstock - 1, -1, -1):
        suit_c = code[stock[sp]] >> 4
        strength_c = code[stock[sp]] & 15
        for p in range(4):
            for t in range(4):
                smax[sp, p, t] = smax[sp + 1, p, t]
            if p != sp % 4 and strength_c > smax[sp, p, suit_c]:
                smax[sp, p, suit_c] = strength_c


@nb.njit(cache=True, inline="always", _nrt=False)
def _is_decision(piles, h, sp, nstock, strength, code, fill, optional, sensible, leftmost, must_fill, scratch,
                 last):
    """1 when a point of a line is a decision point (as in policies.py), else 0.

    A decision point is one where the player had more than one choice: the
    legal actions plus, once the stock is empty, stopping. ``last``: the end
    of the line, which counts only when the player stopped by choice.
    """
    if _only_deal(h, optional):
        n = 1 if sp < nstock else 0
    else:
        n = _gen_actions(piles, h, sp, nstock, strength, code, fill, optional, sensible, leftmost, must_fill,
                         scratch, True)
    if sp == nstock:
        n += 1  # stopping is a choice once the stock is empty
    return 1 if n > 1 and (not last or sp == nstock) else 0


@nb.njit(cache=True, _nrt=False)
def _lone_path(start, goal, leftmost, aces_only, strength, out, bfs):
    """Shortest run of lone moves turning slot pattern ``start`` into ``goal``; returns its length.

    A slot pattern gives, per pile, the lone card (0..51), -1 for an empty pile
    or -2 for a pile of two or more (which a lone move never touches). Moves
    are written to ``out`` as action codes; -1 when ``goal`` is unreachable.
    ``aces_only`` (strict): only a card of the top rank may move. ``bfs``
    (int32[64, 6]) is scratch for the queue: pattern, parent, move.
    """
    cap = 64
    q = bfs[:, 0:4]
    parent = bfs[:, 4]
    via = bfs[:, 5]
    for p in range(4):
        q[0, p] = start[p]
    parent[0] = -1
    nq = 1
    head = 0
    found = -1
    while head < nq:
        same = True
        for p in range(4):
            if q[head, p] != goal[p]:
                same = False
        if same:
            found = head
            break
        first_empty = -1
        for p in range(4):
            if q[head, p] == -1:
                first_empty = p
                break
        for src in range(4):
            if q[head, src] < 0 or (aces_only and strength[q[head, src]] != 12):
                continue
            for dst in range(4):
                if q[head, dst] != -1 or (leftmost and dst != first_empty):
                    continue
                if nq >= cap:
                    continue
                for p in range(4):
                    q[nq, p] = q[head, p]
                q[nq, dst] = q[head, src]
                q[nq, src] = -1
                seen = False
                for j in range(nq):
                    eq = True
                    for p in range(4):
                        if q[j, p] != q[nq, p]:
                            eq = False
                            break
                    if eq:
                        seen = True
                        break
                if not seen:
                    parent[nq] = head
                    via[nq] = KIND_MOVE + 4 * src + 16 * dst
                    nq += 1
        head += 1
    if found < 0:
        return -1
    n = 0
    j = found
    while parent[j] >= 0:
        n += 1
        j = parent[j]
    j = found
    i = n - 1
    while parent[j] >= 0:
        out[i] = via[j]
        i -= 1
        j = parent[j]
    return n


@nb.njit(cache=True, inline="always", _nrt=False)
def _slot_pattern(piles, h, out):
    """Per pile: its lone card (0..51), -1 when empty, -2 when it holds two or more cards."""
    for p in range(4):
        out[p] = -1 if h[p] == 0 else (piles[p, 0] if h[p] == 1 else -2)


@nb.njit(cache=True, inline="always", _nrt=False)
def _set_slot_pattern(piles, h, pattern):
    """Put the lone cards and empty piles of ``pattern`` back (piles of two or more are kept)."""
    for p in range(4):
        if pattern[p] == -1:
            h[p] = 0
        elif pattern[p] >= 0:
            h[p] = 1
            piles[p, 0] = pattern[p]


@nb.njit(cache=True, inline="always", _nrt=False)
def _lone_move(piles, h, a):
    """Move the lone card of pile ``(a >> 2) & 3`` into the empty pile ``(a >> 4) & 3``.

    A lone move discards nothing: the same cards are on top before and after.
    """
    src = (a >> 2) & 3
    dst = (a >> 4) & 3
    piles[dst, 0] = piles[src, 0]
    h[dst] = 1
    h[src] = 0


@nb.njit(cache=True, _nrt=False)
def _finish_line(piles, h, stock, nstock, strength, code, fill, optional, sensible, leftmost, must_fill,
                 line, nline, small, bfs, scratch, rec_pile, rec_card):
    """Replay the best line from (piles, h) and shorten its runs of lone moves: (length, moves, decisions).

    The search may wander through several relabellings (a run of lone moves)
    before the step that needed one; each run is replaced by a shortest run to
    the same position (``_lone_path``), so the rest of the line and its score
    are unchanged. ``line[:length]`` becomes the final line, written in place
    (a shortened run is never longer, so no action is overwritten before it is
    read); the same replay counts its move actions and decision points
    (``_is_decision``). ``piles``/``h`` are left at the end of the line.
    """
    start = small[0, :4]
    goal = small[1, :4]
    path = small[2]
    sp = 0
    rtop = 0
    n = 0
    moves = 0
    decisions = 0
    i = 0
    while i < nline:
        a = line[i]
        if (a & 3) == KIND_MOVE and h[(a >> 2) & 3] == 1:
            # a run of lone moves: where it ends, then the shortest run from where it starts
            _slot_pattern(piles, h, start)
            j = i
            while j < nline and (line[j] & 3) == KIND_MOVE and h[(line[j] >> 2) & 3] == 1:
                _lone_move(piles, h, line[j])
                j += 1
            _slot_pattern(piles, h, goal)
            m = _lone_path(start, goal, leftmost, fill == 1, strength, path, bfs)
            keep = m < 0 or m > j - i
            if keep:
                m = j - i
            _set_slot_pattern(piles, h, start)
            for t in range(m):
                b = line[i + t] if keep else path[t]
                decisions += _is_decision(piles, h, sp, nstock, strength, code, fill, optional, sensible,
                                          leftmost, must_fill, scratch, False)
                moves += 1
                _lone_move(piles, h, b)
                line[n] = b
                n += 1
            i = j
            continue
        decisions += _is_decision(piles, h, sp, nstock, strength, code, fill, optional, sensible, leftmost,
                                  must_fill, scratch, False)
        if (a & 3) == KIND_MOVE:
            moves += 1
        sp, rtop = _apply(a, piles, h, stock, sp, code, optional, rec_pile, rec_card, rtop)
        line[n] = a
        n += 1
        i += 1
    decisions += _is_decision(piles, h, sp, nstock, strength, code, fill, optional, sensible, leftmost, must_fill,
                              scratch, True)
    return n, moves, decisions


class _Workspace:
    """Per-process search buffers and transposition table, reused across calls (compiled once)."""

    def __init__(self, tt_bits: int):
        size = (1 << tt_bits) * BUCKET
        self.tt_bits = tt_bits
        self.tt = np.zeros(2 * size, np.uint64)
        self.epoch = 0
        self.acts = np.zeros((MAX_DEPTH, MAX_ACTIONS), np.int32)
        self.nacts = np.zeros(MAX_DEPTH, np.int32)
        self.idx = np.zeros(MAX_DEPTH, np.int32)
        self.path = np.zeros(MAX_DEPTH, np.int32)
        self.lone = np.zeros(MAX_DEPTH, np.bool_)
        self.keys1 = np.zeros(MAX_DEPTH, np.uint64)
        self.keys2 = np.zeros(MAX_DEPTH, np.uint32)
        self.rbase = np.zeros(MAX_DEPTH, np.int32)
        self.rec_pile = np.zeros(64, np.int32)
        self.rec_card = np.zeros(64, np.int32)
        self.best_line = np.zeros(MAX_DEPTH, np.int32)
        self.best_keys1 = np.zeros(MAX_DEPTH + 1, np.uint64)
        self.best_keys2 = np.zeros(MAX_DEPTH + 1, np.uint32)

    def next_epochs(self, count: int) -> int:
        """Reserve ``count`` fresh epochs (one per search); returns the first. Clears the table on wrap."""
        if self.epoch + count + 1 >= (1 << 24):
            self.tt[:] = 0
            self.epoch = 0
        first = self.epoch + 1
        self.epoch += count
        return first


_WORKSPACES: dict[int, _Workspace] = {}


def tt_bits_for(rules: Rules) -> int:
    """The transposition table size (log2 of buckets) used for a rule set."""
    if rules.fill == FILL_ANY:
        return EASY_TT_BITS
    if rules.optional_discards:
        return OPTIONAL_TT_BITS
    return STRICT_TT_BITS if rules.fill == FILL_ACE else DEFAULT_TT_BITS


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


@nb.njit(cache=True)
def _solve_many(init_piles, init_h, stocks, nstocks, start_scores, natives, resolve_start, native, strength, code,
                fill, optional, sensible, leftmost, must_fill, node_limit,
                tt, tt_mask, first_epoch,
                acts, nacts, idx, path, lone, keys1, keys2, rbase, rec_pile, rec_card, best_line, best_keys1,
                best_keys2, out_score, out_nodes, out_status, out_moves, out_decisions, line_buf, line_off):
    """Solve every start position n (piles ``init_piles[n]``, stock ``stocks[n, :nstocks[n]]``).

    ``resolve_start``: make the forced discards of the start position first (a
    fresh deal, as game.new_game does). ``native``: every start is a fresh
    deal and the rules allow ``_search_native`` (forced discards, not easy). Lines go to ``line_buf`` with
    ``line_off[n]:line_off[n+1]``; returns the (possibly grown) line buffer.
    """
    piles = np.zeros((4, MAX_HEIGHT), np.int8)
    h = np.zeros(4, np.int32)
    piles0 = np.zeros((4, MAX_HEIGHT), np.int8)
    h0 = np.zeros(4, np.int32)
    scratch = np.zeros(MAX_ACTIONS, np.int32)
    smax = np.zeros((N_CARDS + 1, 4, 4), np.int8)
    small = np.zeros((3, 64), np.int32)
    bfs = np.zeros((64, 6), np.int32)
    top_mask = np.uint64(0)  # the cards of the top rank (for the strict bound)
    for c in range(N_CARDS):
        if strength[c] == 12:
            top_mask |= np.uint64(1) << np.uint64(c)
    high_bit = np.zeros(1 << 13, np.int8)  # the highest set bit of a pile's field
    for f in range(2, 1 << 13):
        high_bit[f] = high_bit[f >> 1] + 1
    mask0 = np.uint64(0)
    pcode = np.zeros(N_CARDS, np.int8)
    pcard = np.zeros(N_CARDS, np.int8)
    pbit = np.zeros(N_CARDS, np.int8)
    deal_clear = np.zeros(13, np.uint64)  # per deal, the dealt cards beaten by another dealt card
    deal_nd = np.zeros(13, np.int64)
    nl = 0
    line_off[0] = 0
    for n in range(init_piles.shape[0]):
        _set_position(piles, h, init_piles[n], init_h[n])
        start = start_scores[n]
        if resolve_start and not optional:
            start += _resolve(piles, h, code, rec_pile, rec_card, 0)
        _set_position(piles0, h0, piles, h)  # the start: the search and the line's replay start from it
        stock = stocks[n]
        ns = nstocks[n]
        if native:
            # the i-th card dealt to pile p is deck[4*i + p]: the first four, then the stock
            for p in range(4):
                for i in range(13):
                    card = init_piles[n, p, 0] if i == 0 else stock[4 * (i - 1) + p]
                    pcard[13 * p + i] = card
                    pcode[13 * p + i] = code[card]
                    pbit[card] = 13 * p + i
            for i in range(13):
                t0 = np.int64(pcode[i])
                t1 = np.int64(pcode[13 + i])
                t2 = np.int64(pcode[26 + i])
                t3 = np.int64(pcode[39 + i])
                clear = np.uint64(0)
                clear |= np.uint64(_beaten(t0, t1, t2, t3)) << np.uint64(i)
                clear |= np.uint64(_beaten(t1, t0, t2, t3)) << np.uint64(13 + i)
                clear |= np.uint64(_beaten(t2, t0, t1, t3)) << np.uint64(26 + i)
                clear |= np.uint64(_beaten(t3, t0, t1, t2)) << np.uint64(39 + i)
                deal_clear[i] = clear
                deal_nd[i] = _popcount(clear)
            mask0, _fw, nd, _full = _nat_resolve_call(DEAL_BITS, NO_FOREIGN4, pcode, code, high_bit)
            best, blen, nodes, status = _search_native(
                ns, mask0, start_scores[n] + nd, pcode, pcard, pbit, deal_clear, deal_nd, code, high_bit, fill, sensible, leftmost,
                must_fill, node_limit, tt, tt_mask, np.uint32(first_epoch + n),
                acts, nacts, idx, path, lone, keys1, keys2, rbase, best_line, best_keys1, best_keys2)
        else:
            best, blen, nodes, status = _search(
                stock, ns, smax, piles, h, start, strength, code, natives[n], fill, optional, sensible,
                leftmost, must_fill, node_limit, tt, tt_mask, np.uint32(first_epoch + n),
                acts, nacts, idx, path, lone, keys1, keys2, rbase, rec_pile, rec_card, best_line, top_mask)
        out_score[n] = best
        out_nodes[n] = nodes
        out_status[n] = status
        if native:
            blen, mv, dec = _finish_line_native(best_line, blen, ns, mask0, pcode, pcard, pbit, deal_clear, deal_nd,
                                                code, high_bit, strength, fill, sensible, leftmost, must_fill, small,
                                                bfs, best_keys1, best_keys2)
        else:
            _set_position(piles, h, piles0, h0)
            blen, mv, dec = _finish_line(piles, h, stock, ns, strength, code, fill, optional, sensible, leftmost,
                                         must_fill, best_line, blen, small, bfs, scratch, rec_pile, rec_card)
        out_moves[n] = mv
        out_decisions[n] = dec
        if nl + blen > line_buf.shape[0]:
            grown = np.zeros(max(2 * line_buf.shape[0], nl + blen), np.int32)
            grown[:nl] = line_buf[:nl]
            line_buf = grown
        for i in range(blen):
            line_buf[nl + i] = best_line[i]
        nl += blen
        line_off[n + 1] = nl
    return line_buf


# --------------------------------------------------------------------------- Python API


def _rule_args(rules: Rules):
    strength = strength_table(rules)
    if rules.fill == FILL_ACE:
        # the strict bound (_upper_bound) reads card strength from card id bits
        assert all(strength[c] == c % 13 for c in range(N_CARDS)), "strict needs strength == rank index"
    # a card's code is suit * 16 + strength: one table read gives both, and within
    # a suit a higher code is a stronger card (strength is 0..12)
    code = (SUIT.astype(np.int64) * 16 + strength).astype(np.int8)
    return (
        strength.astype(np.int8),
        code,
        int(rules.fill),
        bool(rules.optional_discards),
        bool(rules.sensible),
        bool(rules.leftmost),
        bool(rules.must_fill),
    )


def _run(init_piles, init_h, stocks, nstocks, start_scores, natives, resolve_start, rules, node_limit,
         want_lines, tt_bits=None, search="generic"):
    """Solve every start position; ``search='auto'`` only for fresh deals (``_deck_inputs``), which
    the native search needs (every pile holds its first card, the stock is the other 48)."""
    n = init_piles.shape[0]
    if node_limit is not None and int(node_limit) < 1:
        raise ValueError(f"node_limit {node_limit!r} is not positive; give 1 or more, or None for no limit")
    limit = 0 if node_limit is None else int(node_limit)
    ws = _workspace(tt_bits if tt_bits is not None else tt_bits_for(rules))
    first_epoch = ws.next_epochs(max(n, 1))
    out_score = np.zeros(n, np.int8)
    out_nodes = np.zeros(n, np.int64)
    out_status = np.zeros(n, np.int8)
    out_moves = np.zeros(n, np.int16)
    out_decisions = np.zeros(n, np.int16)
    line_off = np.zeros(n + 1, np.int64)
    line_buf = np.zeros(max(64 * n, 64), np.int32)
    line_buf = _solve_many(
        init_piles, init_h, stocks, nstocks, start_scores, natives, resolve_start,
        bool(search == "auto" and rules.fill != FILL_ANY and not rules.optional_discards),
        *_rule_args(rules), limit,
        ws.tt, np.uint64((1 << ws.tt_bits) - 1), first_epoch,
        ws.acts, ws.nacts, ws.idx, ws.path, ws.lone, ws.keys1, ws.keys2, ws.rbase, ws.rec_pile, ws.rec_card,
        ws.best_line, ws.best_keys1, ws.best_keys2, out_score, out_nodes, out_status, out_moves, out_decisions,
        line_buf, line_off)
    lines = None
    if want_lines:
        lines = [line_text(line_buf[line_off[i]:line_off[i + 1]]) for i in range(n)]
    return out_score, out_nodes, out_status, out_moves, out_decisions, lines


def _deck_inputs(decks: np.ndarray):
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
    natives = np.zeros((n, N_CARDS), np.int8)
    rows = np.arange(n)[:, None]
    natives[rows, decks] = (np.arange(N_CARDS) % N_PILES).astype(np.int8)[None, :]
    return init_piles, init_h, stocks, nstocks, start_scores, natives


def solve_batch(decks, rules: Rules | str, *, node_limit: int | None = None,
                want_lines: bool = True, search: str = "auto") -> SolveBatchResult:
    """Solve every deck of ``decks`` (``uint8[N, 52]``) in one compiled loop.

    ``node_limit`` caps the positions searched per deck (a deck that needs more
    is reported ``'gave_up'`` with the best score found so far). ``search``:
    ``'auto'`` (the native-pile search where the rules allow it) or
    ``'generic'`` (always ``_search``: the twin the tests hold the native one to).
    """
    if search not in ("auto", "generic"):
        raise ValueError(f"search {search!r} is not known; give 'auto' or 'generic'")
    rules = rules_by_name(rules)
    args = _deck_inputs(decks)
    score, nodes, status, moves, decisions, lines = _run(*args, True, rules, node_limit, want_lines,
                                                          search=search)
    return SolveBatchResult(
        max_score=score,
        won=score >= WIN_SCORE,
        nodes=nodes,
        status=[STATUS_NAMES[s] for s in status],
        lines=lines,
        moves=moves,
        decisions=decisions,
    )


def solve_deck(deck, rules: Rules | str = "standard", *, node_limit: int | None = None) -> Solution:
    """Solve one deal exactly (see the module docstring); ``line`` replays to ``max_score``."""
    deck = np.asarray(deck, dtype=np.uint8).reshape(1, N_CARDS)
    new_game(deck[0], rules_by_name(rules))  # validates the deck (52 distinct cards) with a clear message
    res = solve_batch(deck, rules, node_limit=node_limit, want_lines=True)
    return Solution(int(res.max_score[0]), bool(res.won[0]), res.lines[0], int(res.nodes[0]), res.status[0])


def _position_inputs(state: State):
    stock = list(state.stock)
    if len(stock) % N_PILES:
        raise ValueError(f"the stock holds {len(stock)} cards; a stock is dealt four at a time, so give a multiple of 4")
    height = max(1, max(len(p) for p in state.piles))
    if height > MAX_HEIGHT:
        raise ValueError(f"a pile holds {height} cards; at most {MAX_HEIGHT} are supported")
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
    return init_piles, init_h, stocks, nstocks, start_scores, natives


def solve_position(state: State, rules: Rules | str = "standard", *, node_limit: int | None = None) -> Solution:
    """Solve from any position (e.g. ``game.parse_position``), taken as it is (no discards made first).

    The line starts at ``state``; its score counts the cards already discarded.
    """
    rules = rules_by_name(rules)
    args = _position_inputs(state)
    score, nodes, status, _, _, lines = _run(*args, False, rules, node_limit, True)
    return Solution(int(score[0]), bool(score[0] >= WIN_SCORE), lines[0], int(nodes[0]), STATUS_NAMES[status[0]])
