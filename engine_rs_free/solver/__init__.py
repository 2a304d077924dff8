"""The exact clairvoyant solver: the best score a player who knows the stock order can reach.

``solve_deck(deck, rules)`` searches every line of play of one deal and returns
its ``max_score`` (0..48), ``won``, a game ``line`` that reaches exactly that
score (it replays through ``game.replay``), the ``nodes`` searched and a
``status``: ``'solved'``, or ``'gave_up'`` when ``node_limit`` stopped the
search (``max_score`` is then only the best score found, a lower bound, and
``won`` is False unless a win was found). ``solve_batch`` does the same for
many decks in one compiled loop, ``solve_position`` from any position, and
``solve_positions`` for many positions at once (what pimc calls).

The search is exact: a depth-first walk over every reachable position with a
visited set of exact keys, so its value is the largest score reachable. How
it is made fast, and what was measured on the way, is in ``docs/solver.md``.
The modules: ``table`` (the visited set), ``position`` (a position as piles
and heights, its actions and key), ``generic`` (the search over that form),
``native`` (the search over a fresh deal's 52-bit form, 1.5-1.9x faster),
``native_easy`` (the same for ``easy``),
``optional`` and ``pending`` (the searches with optional discards: the
plain one with its dominance rules, which the solver restrictions use, and
the one over pending discards that the rest use, each after the forced
search), ``bounds`` (the strict bound), ``lines`` (the best line turned
into the result), ``core`` (the compiled batch loop and its buffers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cards import N_CARDS
from ..game import N_PILES, WIN_SCORE, State, new_game
from ..rules import Rules, rules_by_name
from .common import STATUS_GAVE_UP, STATUS_NAMES, STATUS_SOLVED, Starts  # noqa: F401 (public)
from .core import SEARCH_GENERIC, deck_inputs, position_inputs, run, search_mode
from .table import BUCKET, tt_bits_for  # noqa: F401 (public: the table's size bounds memory)


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


def solve_batch(decks, rules: Rules | str, *, node_limit: int | None = None,
                want_lines: bool = True, search: str = "auto") -> SolveBatchResult:
    """Solve every deck of ``decks`` (``uint8[N, 52]``) in one compiled loop.

    ``node_limit`` caps the positions searched per deck (a deck that needs more
    is reported ``'gave_up'`` with the best score found so far). ``search``:
    ``'auto'`` (the native-pile search where the rules allow it) or
    ``'generic'`` (always the generic search: the twin the tests hold the native one to).
    """
    if search not in ("auto", "generic"):
        raise ValueError(f"search {search!r} is not known; give 'auto' or 'generic'")
    rules = rules_by_name(rules)
    # the natives of each card are read by the generic search alone
    args = deck_inputs(decks, natives=search_mode(rules, search) == SEARCH_GENERIC)
    score, nodes, status, moves, decisions, lines = run(args, True, rules, node_limit, want_lines, search=search)
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


def solve_position(state: State, rules: Rules | str = "standard", *, node_limit: int | None = None) -> Solution:
    """Solve from any position (e.g. ``game.parse_position``), taken as it is (no discards made first).

    The line starts at ``state``; its score counts the cards already discarded.
    """
    rules = rules_by_name(rules)
    args = position_inputs(state)
    score, nodes, status, _, _, lines = run(args, False, rules, node_limit, True)
    return Solution(int(score[0]), bool(score[0] >= WIN_SCORE), lines[0], int(nodes[0]), STATUS_NAMES[status[0]])


def solve_positions(piles: list[tuple[tuple[int, ...], ...]], stocks: np.ndarray, scores, rules: Rules, *,
                    deal_first, node_limit: int | None = None) -> np.ndarray:
    """Max scores (``int8[N]``) of N positions: ``piles[n]`` with stock ``stocks[n]`` and ``scores[n]`` discarded.

    ``deal_first[n]``: position n is the position *before* dealing the first
    four cards of its stock (they are dealt, then the forced discards are made,
    then the search starts; the deal is not part of the search's choices).
    ``solve_position`` solves one position per Python call; pimc needs hundreds
    per decision, so this solves them in one compiled call, each exactly as
    ``solve_position`` solves it (the tests check they agree).
    """
    n = len(piles)
    stocks = np.asarray(stocks, dtype=np.int8)
    deal_first = np.asarray(deal_first, dtype=bool)
    nstock = stocks.shape[1] if stocks.ndim == 2 else 0
    heights = np.array([[len(p) for p in pos] for pos in piles], dtype=np.int32).reshape(n, N_PILES)
    hmax = int(heights.max(initial=0)) + 1
    init_piles = np.zeros((n, N_PILES, hmax), np.int8)
    natives = np.full((n, N_CARDS), -1, np.int8)
    for r, pos in enumerate(piles):
        for p, pile in enumerate(pos):
            if pile:
                init_piles[r, p, : len(pile)] = pile
                natives[r, list(pile)] = p
    init_h = heights.copy()
    out_stocks = np.zeros((n, max(nstock, 1)), np.int8)
    nstocks = np.full(n, nstock, np.int32)
    if nstock:
        rows = np.arange(n)[:, None]
        natives[rows, stocks] = (np.arange(nstock) % N_PILES).astype(np.int8)[None, :]
        out_stocks[:, :nstock] = stocks
        dealt = np.flatnonzero(deal_first)
        if len(dealt):
            # deal the first four cards of the stock onto piles 0..3 (their natives are 0..3 already)
            h = init_h[dealt]
            for p in range(N_PILES):
                init_piles[dealt, p, h[:, p]] = stocks[dealt, p]
            init_h[dealt] += 1
            out_stocks[dealt, : nstock - N_PILES] = stocks[dealt, N_PILES:]
            out_stocks[dealt, nstock - N_PILES:] = 0
            nstocks[dealt] = nstock - N_PILES
    # positions that did not deal are already resolved (game.apply made their forced discards), so
    # making the forced discards of every start position only acts on the fresh deals
    start_scores = np.asarray(scores, dtype=np.int32)
    starts = Starts(init_piles, init_h, out_stocks, nstocks, start_scores, natives)
    score, _, _, _, _, _ = run(starts, True, rules_by_name(rules), node_limit, False)
    return score


def play_solver(decks, rules: Rules, spec, *, seed: int = 0, indices=None, want_lines: bool = False,
                node_limit: int | None = None):
    """The registry's entry point for ``solver[:restrictions]`` (players.py): one ``PlayResult`` row per deck.

    Solves under the game's rules plus the player's restrictions. Won rows always
    carry their line (it proves the win); the others only with ``want_lines``.
    The solver draws nothing at random, so ``seed`` and ``indices`` change nothing.
    """
    from ..players import PlayResult, solver_rules

    res = solve_batch(decks, solver_rules(spec, rules), node_limit=node_limit, want_lines=True)
    lines = list(res.lines)
    if not want_lines:
        lines = [ln if w else None for ln, w in zip(lines, res.won)]
    return PlayResult(np.asarray(res.max_score, dtype=np.int8), np.asarray(res.won, dtype=bool),
                      np.asarray(res.moves, dtype=np.int16), np.asarray(res.decisions, dtype=np.int16),
                      nodes=np.asarray(res.nodes, dtype=np.int64), status=list(res.status), line=lines)
