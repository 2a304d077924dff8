"""The honest sampling player ``pimc:samples=K[,inner=R][,guide=G][,margin=M][,nodes=L]``: perfect-information Monte Carlo.

A player who does not know the stock order plans by imagining it. At each
decision point of the game (a point with more than one choice: the legal
actions of ``game.legal_actions`` plus, once the stock is empty, stopping;
counted exactly as in ``policies.py``) ``pimc``:

1. lists its *candidates*: passing (dealing, or stopping when the stock is
   empty) when allowed, the moves of cards that are not alone on their pile,
   each into the lowest-numbered empty pile only, and (``discards=optional``)
   the discards ``xN``. The choices it leaves out are worth exactly what a kept
   one is worth to a player who does not see the stock (RULES.md: moving a
   lone card, or choosing another empty pile, gives the mirror image of a
   position, and the unseen cards are exchangeable), which is also why no
   policy of ``policies.py`` makes them;
2. draws K orders of the unseen cards (the cards neither on the table nor
   discarded, i.e. the real stock's cards, taken in ascending card id and
   shuffled; the real order is never read);
3. for every candidate and every sampled order, solves the position after the
   candidate with the exact solver of ``solver.py`` under the rules restricted
   by the *inner* options R (``sensible``, ``leftmost``, ``must_fill``, joined
   by ``+``; ``none`` for the unrestricted solver), with at most L nodes per
   solve when ``nodes=L`` is given (a solve that gives up counts with the best
   score it found, a lower bound, and as a win only if that is 48);
4. takes a choice. Pure PIMC (``guide=none``, the rule of issue 4) takes the
   candidate that wins under the most sampled orders; ties go to the highest
   mean max_score, then to the first candidate in the order above (passing
   first, as ``policies.py`` breaks ties). Guided PIMC (``guide=G``, default
   ``lookahead``) starts from what the honest policy G of ``policies.py``
   would do and takes the pure-PIMC choice instead only when that wins under
   at least M more sampled orders than G's choice (``margin=M``, default
   ceil(3K/8): 3 of 8, 6 of 16, 12 of 32).

   Why a guide: inner solves see their sampled stock, so they rate choices by
   what a clairvoyant could do after them (strategy fusion), and on standard
   deals pure PIMC played *worse* than the ``lookahead`` and ``greedy``
   policies (200 deals, samples=8: mean score 37.28 against 38.47 and 38.30;
   samples=32 no better, 37.20: the gap is bias, not noise). It dealt where
   the policies move an Ace into an empty pile, which clairvoyant solves rate
   alike. Guided by ``lookahead`` it keeps the policy's play and overrides it
   where the samples disagree clearly.

   Why that margin: the clairvoyant samples rate many choices apart that an
   honest player cannot tell apart (strategy fusion, luck of the draw), so a
   small difference in sampled wins is mostly noise. Measured paired with
   ``lookahead`` on the same standard deals of seed 2026 (samples=8; gaps
   pimc minus lookahead, 95 % intervals):

   ===========  ============  ======================  =================
   margin       deals         win-rate gap, points    mean-score gap
   ===========  ============  ======================  =================
   1            2000..5999    -0.80 ± 0.57            -0.48 ± 0.10
   1            10000..17999  -0.05 ± 0.38            -0.47 ± 0.08
   2            2000..5999    +0.10 ± 0.37            -0.02 ± 0.05
   **3**        0..7999       +0.39 ± 0.17            +0.005 ± 0.014
   **3**        10000..17999  +0.35 ± 0.14            +0.001 ± 0.012
   4            0..7999       +0.33 ± 0.13            +0.003 ± 0.004
   6            0..7999       +0.12 ± 0.08            +0.002 ± 0.002
   8            0..7999       +0.01 ± 0.02            +0.000 ± 0.001
   ===========  ============  ======================  =================

   (Margin 1, written max(1, K // 8), was the old default; 10000..17999
   was held out while the default was chosen.) samples=16 with margins 4, 6,
   8 and samples=32 with margins 6, 10, 14 on 0..7999 gave the same picture:
   +0.27..+0.47 points of wins, mean score +0.002..+0.009. So the default
   wins clearly more often than ``lookahead`` and ties it in mean score; no
   setting measured beats it in mean score by more than 0.01 point.

With the stock empty there is nothing left to sample: each candidate is
solved once, and stopping is worth the current score.

Why inner restrictions: an inner solve sees its sampled stock, so it values
choices that only relabel piles (a lone card moved, one empty pile chosen
over another), which the real player cannot use. The inner options keep the
sampled solves from spending their clairvoyance there (and make them much
faster). ``DEFAULT_INNER`` is the setting measured to play best (see its
comment).

Randomness: sample ``s`` (0..K-1) at decision point ``k`` (0, 1, …, counting
every decision point of the game, as ``policies.py`` numbers them) of deal
``index`` is a Fisher-Yates shuffle of the unseen cards in ascending order,
exactly as ``deals.py`` shuffles a deck (``i`` from n-1 down to 1, ``j``
uniform in 0..i by Lemire's multiply-shift with rejection), with the words of
Philox4x32-10 (``deals.philox4x32``) blocks b = 0, 1, … with key
``(seed & 0xFFFFFFFF, seed >> 32)`` and counter
``(k << 20 | s << 8 | b, STREAM_SAMPLE, index & 0xFFFFFFFF, index >> 32)``.
So a game depends only on (seed, index, deck, rules, player). K is at most
4096; a game has fewer than 4096 decision points (``MAX_ACTIONS``); 256 blocks
(1,024 words for at most 47 draws) are never used up in practice, and an
error is raised if they were.

The real stock is used only to apply the chosen action (``game.apply``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from . import solver as _solver
from .batch import BatchResult, check_batch_input
from .cards import N_CARDS
from .deals import STREAM_SAMPLE, philox_shuffle
from .game import (DEAL, N_PILES, WIN_SCORE, Action, State, apply, fills_from_a_stack, format_line, legal_actions,
                   legal_moves, new_game)
from .policies import MAX_ACTIONS, GameResult, UnknownPolicyError, decide
from .rules import Rules, rules_by_name

PIMC_KIND = "pimc"
INNER_OPTIONS = ("sensible", "leftmost", "must_fill")
DEFAULT_SAMPLES = 8
MAX_SAMPLES = 4096
# The inner restriction: with margin 3 (samples=8) on standard deals 0..7999, inner=sensible+leftmost and
# inner=sensible won 287 and 286 deals against 283 for sensible+leftmost+must_fill (paired gaps +0.05 and
# +0.04 points, each +-0.13; mean score -0.003 +-0.018) while taking 3-3.5x as long, so the cheapest is the
# default. (Pure PIMC on 200 deals had shown the same: alike in play, the first 17x faster.)
DEFAULT_INNER = ("sensible", "leftmost", "must_fill")
MAX_NODE_LIMIT = 10**12
# The policy that guides pimc (module docstring, step 4): pure PIMC (guide=none) lost to it in mean score.
DEFAULT_GUIDE = "lookahead"
GUIDES = ("none", "nomove", "greedy", "aces", "human", "lookahead")


def default_margin(samples: int) -> int:
    """The default override margin of guided pimc: ceil(3K/8) sampled orders (module docstring, step 4)."""
    return max(1, -(-3 * samples // 8))


@dataclass(frozen=True)
class PimcSpec:
    """A parsed ``pimc`` player: samples K, inner restriction options, guide, override margin, node limit.

    ``margin`` 0 stands for ``default_margin(samples)``; ``nodes`` 0 for no node limit per solve.
    """

    samples: int = DEFAULT_SAMPLES
    inner: tuple[str, ...] = DEFAULT_INNER
    nodes: int = 0
    guide: str = DEFAULT_GUIDE  # '' = none (pure PIMC)
    margin: int = 0

    @property
    def override_margin(self) -> int:
        """How many more sampled wins the pure-PIMC choice needs to override the guide's."""
        return self.margin or default_margin(self.samples)

    @property
    def name(self) -> str:
        """Canonical spelling: ``pimc:samples=K,inner=R,guide=G,margin=M`` (+ ``,nodes=L`` when limited).

        The margin is spelled out (default included) whenever there is a guide,
        so a change of the default never gives old results the new name.
        """
        inner = "+".join(self.inner) if self.inner else "none"
        text = f"{PIMC_KIND}:samples={self.samples},inner={inner},guide={self.guide or 'none'}"
        if self.guide:
            text += f",margin={self.override_margin}"
        return text + (f",nodes={self.nodes}" if self.nodes else "")

    def inner_rules(self, rules: Rules) -> Rules:
        """The rules of the inner solves: the game's rules with the inner options switched on."""
        return rules.with_options(*self.inner)

    def __str__(self) -> str:
        return self.name


def _pimc_help() -> str:
    return (f"pimc:samples=K (1..{MAX_SAMPLES}, default {DEFAULT_SAMPLES}),inner=R (none, or options of "
            f"{', '.join(INNER_OPTIONS)} joined by '+'; default {'+'.join(DEFAULT_INNER)}),nodes=L "
            f"(node limit per inner solve, 0 = none),guide=G ({', '.join(GUIDES)}; default {DEFAULT_GUIDE}),"
            f"margin=M (1..{MAX_SAMPLES}: sampled wins needed to override the guide; default ceil(3K/8))")


def parse_pimc(name: str | PimcSpec) -> PimcSpec:
    """Parse ``pimc`` or ``pimc:samples=K,inner=R,guide=G,margin=M,nodes=L`` (any order, defaults filled in).

    >>> parse_pimc("pimc").name
    'pimc:samples=8,inner=sensible+leftmost+must_fill,guide=lookahead,margin=3'
    >>> parse_pimc("PIMC: inner = leftmost+sensible , samples=32").name
    'pimc:samples=32,inner=sensible+leftmost,guide=lookahead,margin=12'
    >>> parse_pimc("pimc:samples=4,inner=none,nodes=5000,guide=none").name
    'pimc:samples=4,inner=none,guide=none,nodes=5000'
    """
    if isinstance(name, PimcSpec):
        return name
    raw = name
    text = str(name).strip().lower()
    kind, colon, rest = text.partition(":")
    if kind.strip() != PIMC_KIND:
        raise UnknownPolicyError(f"{raw!r} is not a pimc player; write {_pimc_help()}")
    if colon and not rest.strip():
        raise UnknownPolicyError(f"player {raw!r} ends with ':'; write 'pimc' or {_pimc_help()}")
    values: dict[str, object] = {}
    for item in rest.split(",") if rest.strip() else []:
        key, eq, value = (part.strip() for part in item.partition("="))
        if key not in ("samples", "inner", "nodes", "guide", "margin"):
            raise UnknownPolicyError(f"unknown parameter {key!r} in player {raw!r}; write {_pimc_help()}")
        if key in values:
            raise UnknownPolicyError(f"parameter {key!r} is given twice in player {raw!r}")
        if not eq or not value:
            raise UnknownPolicyError(f"parameter {key!r} in player {raw!r} needs a value; write {_pimc_help()}")
        if key == "guide":
            if value not in GUIDES:
                raise UnknownPolicyError(f"guide={value!r} in player {raw!r} is not one of {', '.join(GUIDES)}")
            values[key] = "" if value == "none" else value
            continue
        if key == "inner":
            opts = [] if value == "none" else [o.strip() for o in value.split("+")]
            bad = [o for o in opts if o not in INNER_OPTIONS]
            if bad or len(set(opts)) != len(opts):
                raise UnknownPolicyError(
                    f"inner={value!r} in player {raw!r} is not 'none' or distinct options of "
                    f"{', '.join(INNER_OPTIONS)} joined by '+' (e.g. inner=sensible+leftmost)")
            values[key] = tuple(o for o in INNER_OPTIONS if o in opts)
            continue
        if not value.isdigit():
            raise UnknownPolicyError(f"parameter {key}={value!r} in player {raw!r} needs a whole number")
        v = int(value)
        lo, hi = (0, MAX_NODE_LIMIT) if key == "nodes" else (1, MAX_SAMPLES)
        if not lo <= v <= hi:
            raise UnknownPolicyError(f"parameter {key}={v} in player {raw!r} is out of range; use {lo}..{hi}")
        values[key] = v
    return PimcSpec(
        samples=int(values.get("samples", DEFAULT_SAMPLES)),
        inner=values.get("inner", DEFAULT_INNER),  # type: ignore[arg-type]
        nodes=int(values.get("nodes", 0)),
        guide=str(values.get("guide", DEFAULT_GUIDE)),
        margin=int(values.get("margin", 0)),
    )


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
        raise ValueError(f"samples={samples} is out of range; use 1..{MAX_SAMPLES}")
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


def solve_positions(piles: list[tuple[tuple[int, ...], ...]], stocks: np.ndarray, scores, rules: Rules, *,
                    deal_first, node_limit: int | None = None) -> np.ndarray:
    """Max scores (``int8[N]``) of N positions: ``piles[n]`` with stock ``stocks[n]`` and ``scores[n]`` discarded.

    ``deal_first[n]``: position n is the position *before* dealing the first
    four cards of its stock (they are dealt, then the forced discards are made,
    then the search starts; the deal is not part of the search's choices).
    This is the smallest wrapper over the solver's compiled batch core
    (``solver._run``, the loop behind ``solve_batch`` and ``solve_position``):
    ``solver.solve_position`` solves one position per Python call, and pimc
    needs hundreds per decision. A position is solved exactly as
    ``solver.solve_position`` solves it (the tests check they agree).
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
    score, _, _, _, _, _ = _solver._run(init_piles, init_h, out_stocks, nstocks, start_scores, natives, True, rules,
                                        node_limit, False)
    return score


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
