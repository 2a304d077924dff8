"""The honest sampling player ``pimc``: perfect-information Monte Carlo, guided by a policy.

A player who does not know the stock order plans by imagining it. At each
decision point (a point with more than one choice, counted as in
``policies.py``) ``pimc:samples=K,inner=R,guide=G,margin=M[,nodes=L]``:

1. lists its candidates (``candidates``): passing (dealing, or stopping when
   the stock is empty) when allowed, moves of cards that are not alone on
   their pile into the lowest-numbered empty pile only, and under
   ``discards=optional`` the discards ``xN``. The choices left out are worth
   exactly what a kept one is worth to a player who does not see the stock
   (RULES.md: they only relabel piles);
2. draws K orders of the unseen cards (``sample_orders``; the real order is
   never read);
3. solves the position after each candidate under each order with the exact
   solver, under the game's rules plus the inner restrictions R, with at most
   L positions per solve when ``nodes=L`` (a solve that gives up counts with
   the best score it found, and as a win only if that is 48);
4. takes the candidate that wins under the most orders (ties: the highest
   mean best score, then the first candidate), unless a guide G is named
   (default ``lookahead``): then it plays as the policy G of ``policies.py``
   would, and takes the sampled choice only when that wins under at least M
   more orders (default ceil(3K/8)).

Why a guide, why that margin and why those inner rules is measured and
written down in ``docs/pimc.md``: inner solves are clairvoyant, so small
differences between sampled wins are mostly strategy fusion, and following
them costs score.

Randomness: sample ``s`` (0..K-1) at decision point ``k`` of deal ``index``
is a Fisher-Yates shuffle of the unseen cards in ascending order, exactly as
``deals.py`` shuffles a deck, with the words of Philox4x32-10 blocks
b = 0, 1, … with key ``(seed & 0xFFFFFFFF, seed >> 32)`` and counter
``(k << 20 | s << 8 | b, STREAM_SAMPLE, index & 0xFFFFFFFF, index >> 32)``.
So a game depends only on (seed, index, deck, rules, player). K is at most
4096 and a game has fewer than 4096 decision points; 256 blocks are never
used up in practice, and an error is raised if they were.

The real stock is used only to apply the chosen action (``game.apply``).

Each row of the registry's entry (``play_pimc_batch``) also carries the game's
penalised value 1{won} - z (``penalised_values``, docs/bracket.md): an estimate
of the win rate with a far smaller variance, which the honest bracket's report
compares with adp's on the same deals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .batch import BatchResult, check_batch_input
from .deals import STREAM_SAMPLE, philox_shuffle
from .errors import InputRangeError
from .game import (DEAL, WIN_SCORE, Action, State, apply, fills_from_a_stack, format_line, legal_actions,
                   legal_moves, new_game)
from .players import (PIMC_INNER_OPTIONS, PIMC_MAX_SAMPLES, PlayerSpec, PlayResult, UnknownPlayerError,
                      parse_player, pimc_default_margin)
from .policies import MAX_ACTIONS, GameResult, decide
from .rules import Rules, rules_by_name
from .solver import solve_positions

PIMC_KIND = "pimc"
INNER_OPTIONS = PIMC_INNER_OPTIONS
MAX_SAMPLES = PIMC_MAX_SAMPLES
default_margin = pimc_default_margin


@dataclass(frozen=True)
class PimcSpec:
    """A parsed ``pimc`` player as typed fields (the grammar and the defaults are in players.py).

    samples: K sampled orders; inner: the inner restriction options; guide: the
    guiding policy ('' for none, pure PIMC); margin: sampled wins needed to
    override the guide (0 stands for the default, ``default_margin(samples)``);
    nodes: node limit per solve (0 = none).
    """

    samples: int = 8
    inner: tuple[str, ...] = PIMC_INNER_OPTIONS
    guide: str = "lookahead"
    margin: int = 0
    nodes: int = 0

    @property
    def override_margin(self) -> int:
        """How many more sampled wins the pure-PIMC choice needs to override the guide's."""
        return self.margin or default_margin(self.samples)

    @property
    def player(self) -> PlayerSpec:
        return PlayerSpec(PIMC_KIND, (("samples", self.samples), ("inner", self.inner),
                                      ("guide", self.guide or "none"),
                                      ("margin", self.override_margin if self.guide else 0), ("nodes", self.nodes)))

    @property
    def name(self) -> str:
        """The canonical name (players.py)."""
        return self.player.name

    def inner_rules(self, rules: Rules) -> Rules:
        """The rules of the inner solves: the game's rules with the inner options switched on."""
        return rules.with_options(*self.inner)

    def __str__(self) -> str:
        return self.name


def parse_pimc(name: str | PlayerSpec | PimcSpec) -> PimcSpec:
    """The PimcSpec of a pimc player's name (players.parse_player; defaults filled in).

    >>> parse_pimc("pimc").name
    'pimc:samples=8,inner=sensible+leftmost+must_fill,guide=lookahead,margin=3'
    >>> parse_pimc("PIMC: inner = leftmost+sensible , samples=32").name
    'pimc:samples=32,inner=sensible+leftmost,guide=lookahead,margin=12'
    """
    if isinstance(name, PimcSpec):
        return name
    spec = parse_player(name)
    if spec.kind != PIMC_KIND:
        raise UnknownPlayerError(f"{spec.name!r} is not a pimc player; write e.g. 'pimc:samples=8'")
    guide = spec.param("guide")
    return PimcSpec(samples=spec.param("samples"), inner=spec.param("inner"),
                    guide="" if guide == "none" else guide, margin=spec.param("margin"), nodes=spec.param("nodes"))


# ----------------------------------------------------------------------------------------------
# Sampled stock orders (see the module docstring).


@nb.njit(cache=True)
def _sample_orders(unseen, samples, seed_lo, seed_hi, idx_lo, idx_hi, decision):
    """``int8[samples, n]``: the sampled orders of ``unseen`` (ascending card ids) at one decision point.

    Row s is ``unseen`` shuffled by Fisher-Yates with the Philox words of counter
    ``(decision << 20 | s << 8 | block, STREAM_SAMPLE, idx_lo, idx_hi)``. Returns
    an empty (0-row) array if a row used up its 256 blocks (never in practice).
    """
    n = unseen.shape[0]
    out = np.empty((samples, n), np.int8)
    for s in range(samples):
        row = out[s]
        for i in range(n):
            row[i] = unseen[i]
        base = (np.uint32(decision) << np.uint32(20)) | (np.uint32(s) << np.uint32(8))
        # at most 256 blocks: the block number lives in the low 8 bits of the counter
        if not philox_shuffle(row, n, base, np.uint32(STREAM_SAMPLE), idx_lo, idx_hi, seed_lo, seed_hi, 256):
            return np.empty((0, n), np.int8)
    return out


def sample_orders(unseen, samples: int, *, seed: int, index: int, decision: int) -> np.ndarray:
    """The ``samples`` sampled orders (``int8[samples, len(unseen)]``) of the unseen cards at a decision point.

    ``unseen`` is any collection of the unseen card ids; it is sorted first, so
    the result depends on the set of cards only, never on their real order.
    """
    if not 1 <= samples <= MAX_SAMPLES:
        raise InputRangeError(f"samples={samples} is out of range; use 1..{MAX_SAMPLES}")
    if not 0 <= decision < 4096:
        raise ValueError(f"decision point {decision} is out of range 0..4095")
    cards = np.array(sorted(int(c) for c in unseen), dtype=np.int8)
    seed, index = int(seed), int(index)
    out = _sample_orders(cards, samples, np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32),
                         np.uint32(index & 0xFFFFFFFF), np.uint32(index >> 32), decision)
    if out.shape[0] != samples:
        raise RuntimeError(f"sampled order ran out of random blocks (seed {seed}, deal {index}, decision {decision})")
    return out


# ----------------------------------------------------------------------------------------------
# Solving many positions in one compiled call.


# ----------------------------------------------------------------------------------------------
# The player.


def candidates(state: State, rules: Rules) -> list[Action | None]:
    """The choices pimc weighs at a point (module docstring, step 1); None stands for stopping.

    Passing first (deal, or stop when the stock is empty, when allowed), then
    moves of cards that are not alone into the lowest-numbered empty pile, in
    contract order, then the optional discards.
    """
    moves = legal_moves(state, rules)
    out: list[Action | None] = []
    if not state.stock:
        out.append(None)
    elif not (rules.must_fill and fills_from_a_stack(state, moves)):
        out.append(DEAL)
    empties = state.empty_piles()
    if empties:
        first = empties[0]
        out.extend(m for m in moves if len(state.piles[m.src]) > 1 and m.dst == first)
    if rules.optional_discards:
        out.extend(a for a in legal_actions(state, rules) if a.kind == "x")
    return out


def choose(state: State, rules: Rules, spec: PimcSpec, *, seed: int, index: int, decision: int,
           inner_rules: Rules | None = None) -> Action | None:
    """The action pimc takes in ``state`` at decision point ``decision`` (None = stop).

    Reads ``state.stock`` only as the set of unseen cards.
    """
    cands = candidates(state, rules)
    if len(cands) == 1:
        return cands[0]
    wins, totals = candidate_values(state, rules, spec, cands, seed=seed, index=index, decision=decision,
                                    inner_rules=inner_rules)
    if spec.guide:
        # the guide plays as policies.py does: under optional discards it takes every discard first
        # (lowest pile first); decide() passes on only the piles and the stock's length
        discards = [a for a in cands if a is not None and a.kind == "x"]
        honest = discards[0] if discards else decide(state, rules, spec.guide)
        if honest in cands:
            best = max(range(len(cands)), key=lambda c: (wins[c], totals[c], -c))
            h = cands.index(honest)
            if wins[best] - wins[h] >= spec.override_margin:
                return cands[best]
            return honest
    best = 0
    for c in range(1, len(cands)):
        if (wins[c], totals[c]) > (wins[best], totals[best]):
            best = c
    return cands[best]


def candidate_values(state: State, rules: Rules, spec: PimcSpec, cands: list[Action | None], *, seed: int,
                     index: int, decision: int, inner_rules: Rules | None = None) -> tuple[list[int], list[int]]:
    """(wins, total max_score) of each candidate over the sampled orders (module docstring, steps 2-3)."""
    inner = inner_rules if inner_rules is not None else spec.inner_rules(rules)
    limit = spec.nodes or None
    unseen = state.stock
    k = spec.samples if unseen else 1
    orders = (sample_orders(unseen, k, seed=seed, index=index, decision=decision) if unseen
              else np.zeros((1, 0), np.int8))
    blank = State(state.piles, (), state.discarded)  # moves and discards never read the stock
    piles: list = []
    scores: list[int] = []
    deal_first: list[bool] = []
    solved: list[int] = []  # candidate number of each block of k rows
    wins = [0] * len(cands)
    totals = [0] * len(cands)
    for c, action in enumerate(cands):
        if action is None:  # stopping: worth the current score under every order
            wins[c] = k * int(state.score >= WIN_SCORE)
            totals[c] = k * state.score
            continue
        if action.kind == "d":
            after_piles, after_score, dealt = state.piles, state.score, True
        else:
            after = apply(blank, action, rules)
            after_piles, after_score, dealt = after.piles, after.score, False
        piles.extend([after_piles] * k)
        scores.extend([after_score] * k)
        deal_first.extend([dealt] * k)
        solved.append(c)
    if solved:
        stocks = np.tile(orders, (len(solved), 1))
        best = solve_positions(piles, stocks, scores, inner, deal_first=deal_first, node_limit=limit)
        best = best.reshape(len(solved), k).astype(np.int64)
        for row, c in enumerate(solved):
            wins[c] = int((best[row] >= WIN_SCORE).sum())
            totals[c] = int(best[row].sum())
    return wins, totals


def play_pimc(deck, rules: Rules | str, player: str | PimcSpec, *, seed: int, index: int,
              want_line: bool = True) -> GameResult:
    """Play one deck with pimc on the scalar game (game.py); see the module docstring.

    Decision points and moves are counted as in ``policies.play_scalar``; the
    game stops at a decision point once its line holds ``MAX_ACTIONS`` actions.
    """
    rules = rules_by_name(rules)
    spec = parse_pimc(player)
    inner = spec.inner_rules(rules)
    state = new_game(deck, rules)
    line: list[Action] = []
    moves = decisions = 0
    while len(line) < MAX_ACTIONS:
        legal = legal_actions(state, rules)
        n_choices = len(legal) + (0 if state.stock else 1)
        if n_choices == 1 and not legal:
            break  # the stock is empty and nothing can move
        if n_choices == 1:
            action: Action | None = legal[0]
        else:
            action = choose(state, rules, spec, seed=seed, index=index, decision=decisions, inner_rules=inner)
            decisions += 1
        if action is None:
            break
        if action.kind == "m":
            moves += 1
        state = apply(state, action, rules)
        line.append(action)
    score = state.score
    return GameResult(score, score == WIN_SCORE, moves, decisions, format_line(line) if want_line else None)


def pimc_batch(decks, rules: Rules | str, player: str | PimcSpec, *, seed: int, indices=None,
               want_lines: bool = False) -> BatchResult:
    """Play every deck (``uint8[N, 52]``) with pimc; row n depends only on (seed, indices[n], deck n).

    ``indices`` (int64[N], the deal index of each deck; default 0..N-1) key the
    sampled orders. Returns a ``batch.BatchResult``.
    """
    rules = rules_by_name(rules)
    spec = parse_pimc(player)
    decks, indices, seed = check_batch_input(decks, indices, seed)
    n = decks.shape[0]
    score = np.empty(n, np.int8)
    moves = np.empty(n, np.int16)
    decisions = np.empty(n, np.int16)
    lines: list[str] | None = [] if want_lines else None
    for r in range(n):
        g = play_pimc(decks[r], rules, spec, seed=seed, index=int(indices[r]), want_line=want_lines)
        score[r], moves[r], decisions[r] = g.score, g.moves, g.decisions
        if lines is not None:
            lines.append(g.line)
    return BatchResult(score, score == WIN_SCORE, moves, decisions, lines)


def penalised_values(decks, rules: Rules | str, won, lines: list[str], *, seed: int, indices) -> np.ndarray:
    """Each game's penalised value 1{won} - z (float64[N]): z the penalty of the default ``bound``
    along the game's line (``bound.line_penalty``: W = the default model, the bound's own tuples).

    z has mean zero for an honest player (docs/bracket.md), so the mean of these values estimates the
    player's win rate as 1{won} does, with a far smaller variance: the lower end of the honest bracket
    reads it, and two players' values compare on the same deals. Where the bracket's W is not defined
    (``players.bracket_rules_problem``: easy, optional discards, must_fill) the penalty is that of
    W = 0, which is zero: the value is 1{won}.
    """
    from .bound import line_penalty
    from .players import bracket_rules_problem

    rules = rules_by_name(rules)
    value = np.asarray(won, np.float64).copy()
    if bracket_rules_problem(rules):
        return value
    for g, line in enumerate(lines):
        value[g] -= line_penalty(decks[g], line, rules, seed=seed, index=int(indices[g]))
    return value


def play_pimc_batch(decks, rules: Rules, spec: PlayerSpec, *, seed: int, indices, want_lines: bool = False,
                    node_limit: int | None = None) -> PlayResult:
    """The registry's entry point (players.py): ``pimc_batch`` as a ``PlayResult`` with the ``value``
    column (``penalised_values``).

    ``node_limit`` is for the solver; pimc's own limit per inner solve is its ``nodes`` parameter.
    """
    decks, indices, seed = check_batch_input(decks, indices, seed)
    res = pimc_batch(decks, rules, spec, seed=seed, indices=indices, want_lines=True)
    value = penalised_values(decks, rules, res.won, res.lines, seed=seed, indices=indices)
    return PlayResult(res.score, res.won, res.moves, res.decisions, line=res.lines if want_lines else None,
                      value=value)
