"""Named playing policies, and the scalar twin that plays them on game.py.

A *policy* is a rule of play a person could follow. It sees only what a
player sees: the piles, the discarded cards and the number of cards left in
the stock, never the order of the stock. Every policy is deterministic given
(seed, deal index).

Names: ``name`` or ``name:key=value,...``; ``parse_policy`` gives a
``PolicySpec`` whose ``.name`` is the canonical spelling, which always spells
out every parameter, defaults included, in a fixed order
(``human`` -> ``human:sacrifice=3``, ``lookahead`` -> ``lookahead:depth=1``).
That canonical name is what the pipeline stores in the ``policy`` column, so
``human`` and ``human:sacrifice=3`` are one policy.

The policies (what a player would do, in one paragraph each):

- ``nomove``: never moves a card. Deal whenever the stock is not empty and
  stop when it is; discards happen as they come. This is the floor.
- ``random``: at every point with a choice, pick one of the legal choices
  uniformly at random: dealing, every legal move (including moving a lone
  card), and, once the stock is empty, stopping.
- ``greedy``: when a pile is empty, look at every move into it and count the
  discards it causes at once (the card moved and the card it uncovers, and
  everything those set off). Make the move with the most; deal (or stop, when
  the stock is empty) when no move causes a discard.
- ``aces``: when an Ace can be moved into an empty pile, move it (if several
  can, the one that causes the most discards); otherwise play ``greedy``.
- ``human:sacrifice=K``: a published rule of thumb. Find the best move by
  immediate discards, with dealing counting as zero discards. If an Ace can be
  moved into an empty pile and the best such Ace move causes at most K fewer
  discards than that best choice, move the Ace; otherwise play ``greedy``.
  ``K`` is 0..48, default 3; with K=0 an Ace goes in whenever it costs
  nothing, and with K=48 the policy is ``aces``.
- ``lookahead:depth=D``: before choosing, try every choice now (dealing and
  every move), and for each play on until the next deal: the next D-1 moves
  are tried in every way too, after that ``greedy`` plays. Compare the
  positions reached just before the next deal: most discards first; then
  most Aces at the bottom of a pile (where they cover nothing and never need
  to move), then most empty piles; in ``easy``, where any card may move into
  an empty pile, empty piles count before Aces. Make the choice that leads
  to the best one (dealing on a tie). ``D`` is 1..4, default 1. (The order
  of the last two keys was chosen on 200,000 deals: Aces first won 2.82 %
  of standard and 0.51 % of strict deals against 2.60 % and 0.30 % with
  empty piles first, and 4.82 % of easy deals against 6.96 %.)

Rules shared by all of them (both engines follow these exactly):

- *Ace* means the variant's top rank (the King in ``reverse``).
- Except ``random``, no policy ever moves the only card of a pile into another
  empty pile: that changes nothing a player can see (RULES.md).
- Ties are broken by the contract order of ``game.legal_actions``: dealing
  (or stopping) first, then moves by source pile, depth, target pile. So
  ``greedy`` deals when the best move discards nothing.
- Under ``discards=optional`` every policy takes every available discard at
  once, lowest-numbered pile first, before each decision: it plays exactly as
  under forced discards (the line shows the ``xN`` actions). Only the solver
  and ``pimc`` exploit the option.
- When dealing is forbidden (``must_fill``: a card of a pile of two or more
  may move into an empty pile) and the stock is not empty, a policy that
  would deal plays its best move instead. A lone card never forbids a deal
  (RULES.md), so a policy always has a choice it would make.
- A game stops at the first decision point at which its line already holds
  ``max_actions`` actions (default ``MAX_ACTIONS``, 400). Only ``random`` can
  move lone cards about, and with dealing always allowed beside them it does
  not get near 400 in practice; the tests give a small cap to check that both
  engines stop alike.

Counting (the columns of pipeline.schema): ``moves`` is the number of cards
moved into empty piles; ``decisions`` is the number of points at which the
player had more than one choice: the legal actions of ``game.legal_actions``
plus, when the stock is empty, stopping (under ``discards=optional`` the
point is counted after the discards are taken).

Randomness (``random``): the k-th decision point of deal ``index`` (k = 0, 1,
…, counting only points with more than one choice) draws from Philox4x32-10
(``deals.philox4x32``) with key ``(seed & 0xFFFFFFFF, seed >> 32)`` and
counter ``(k, STREAM_POLICY, index & 0xFFFFFFFF, index >> 32)``. With n
choices, the choice is Lemire's exactly-uniform ``(w * n) >> 32`` over the
words w of that block in order, rejecting a word when ``(w * n) mod 2**32 <
(2**32 - n) mod n`` (as deals.py does); after four rejections (for the few
choices of this game, probability below 1e-30) it goes on with the words of the blocks with counter word 0 equal
to k+1, k+2, …. The choices are numbered in the order: deal, the legal moves
in contract order, stop.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from .deals import STREAM_POLICY, philox4x32
from .game import (
    DEAL,
    WIN_SCORE,
    Action,
    State,
    apply,
    apply_legal,
    fills_from_a_stack,
    forced_discards,
    format_line,
    legal_actions,
    legal_moves,
    move_card,
    new_game,
    strength_tuple,
)
from .players import POLICY_KINDS, PlayerSpec, UnknownPolicyError, parse_player  # noqa: F401 (re-exported)
from .rules import FILL_ANY, TOP_STRENGTH, Rules, rules_by_name

MAX_ACTIONS = 400  # a game stops at a decision point once its line holds this many actions

POLICY_NAMES = POLICY_KINDS  # the policy kinds, in the registry's order (players.py)
PolicySpec = PlayerSpec  # a parsed policy is a parsed player of a policy kind


def parse_policy(name: str | PlayerSpec) -> PlayerSpec:
    """Parse ``name`` or ``name:key=value,...`` into the PlayerSpec of a policy (players.parse_player).

    Raises UnknownPolicyError (players.UnknownPlayerError) naming the input,
    what is wrong and the known policies and parameters.

    >>> parse_policy("human").name
    'human:sacrifice=3'
    >>> parse_policy(" Lookahead : depth = 2 ").name
    'lookahead:depth=2'
    """
    return parse_player(name, kinds=POLICY_KINDS, noun="policy")


@dataclass(frozen=True)
class GameResult:
    """One game played by a policy: score 0..48, won, moves, decisions, and the game line (or None)."""

    score: int
    won: bool
    moves: int
    decisions: int
    line: str | None


# ----------------------------------------------------------------------------------------------
# Random choice: Philox words and Lemire's exactly-uniform reduction (see the module docstring).


def uniform_choice(n: int, seed: int, index: int, decision: int) -> int:
    """The choice 0..n-1 of the ``decision``-th decision point of deal ``index`` (module docstring)."""
    if n <= 1:
        return 0
    seed_lo, seed_hi = seed & 0xFFFFFFFF, seed >> 32
    idx_lo, idx_hi = index & 0xFFFFFFFF, index >> 32
    threshold = (2**32 - n) % n
    block = decision
    while True:
        words = philox4x32(block & 0xFFFFFFFF, STREAM_POLICY, idx_lo, idx_hi, seed_lo, seed_hi)
        for w in words:
            m = int(w) * n
            if (m & 0xFFFFFFFF) >= threshold:
                return m >> 32
        block += 1


# ----------------------------------------------------------------------------------------------
# What a player sees, and the policies on top of it. A policy gets a *view*: the State with its
# stock replaced by an empty tuple, plus the number of cards left in the stock. It cannot read
# the stock order because it never has it.


def _forced(rules: Rules) -> Rules:
    """The rule set with forced discards: policies evaluate moves as if discards were forced."""
    return replace(rules, optional_discards=False) if rules.optional_discards else rules


def _pass_ok(view: State, stock_left: int, moves: list[Action], rules: Rules) -> bool:
    """True when the player may deal (stock left, not blocked by must_fill) or stop (stock empty).

    ``moves`` is the list of legal moves of the position (``game.legal_moves``).
    """
    if stock_left == 0:
        return True
    return not (rules.must_fill and fills_from_a_stack(view, moves))


def _pass_action(stock_left: int) -> Action | None:
    """Passing is dealing while there is a stock, else stopping (None)."""
    return DEAL if stock_left else None


def _candidates(view: State, moves: list[Action]) -> list[Action]:
    """The legal moves (``moves``) a non-random policy considers: all but moves of the only card of a pile."""
    return [m for m in moves if len(view.piles[m.src]) > 1]


def _moved_card(view: State, move: Action) -> int:
    pile = view.piles[move.src]
    return pile[len(pile) - 1 - move.depth]


def _is_ace(view: State, move: Action, strength: tuple[int, ...]) -> bool:
    return strength[_moved_card(view, move)] == TOP_STRENGTH


def _after(view: State, move: Action, rules: Rules) -> State:
    """The view after a legal move and the forced discards it sets off (game.resolve_discards).

    The move comes from ``game.legal_moves``, so it is not validated again
    (``game.apply`` would check it at a cost of one more ``legal_actions``).
    """
    return apply_legal(view, move, _forced(rules))


def _discards_after(view: State, move: Action, strength: tuple[int, ...]) -> int:
    """The number of discards a legal move sets off at once: ``_after(view, move, rules).score - view.score``.

    Worked out on a copy of the pile list with the same two steps as
    ``game.apply_legal`` under forced discards (``move_card``, then
    ``forced_discards``), without building a State: the score ``apply_legal``
    returns is the old one plus exactly the cards ``forced_discards`` lists.
    """
    piles = list(view.piles)
    move_card(piles, move)
    return len(forced_discards(piles, strength))


def _best_by_discards(view: State, moves: list[Action], strength: tuple[int, ...]) -> tuple[Action | None, int]:
    """The first move with the most immediate discards, and that count (None, -1 for no moves)."""
    best, best_d = None, -1
    for m in moves:
        d = _discards_after(view, m, strength)
        if d > best_d:
            best, best_d = m, d
    return best, best_d


class _Ctx:
    """What a policy needs besides the view: rules, strength table, parameters."""

    def __init__(self, rules: Rules, spec: PolicySpec):
        self.rules = rules
        self.spec = spec
        self.strength = strength_tuple(rules)


@lru_cache(maxsize=256)
def _context(rules: Rules | str, policy: str | PolicySpec) -> _Ctx:
    """The _Ctx of a (rules, policy) pair, names parsed once: play_scalar is called deal after deal
    with the same pair. Rules, PolicySpec and _Ctx are never changed after they are made, so one
    can be shared; a bad name raises here every time (lru_cache keeps no exceptions)."""
    return _Ctx(rules_by_name(rules), parse_policy(policy))


# A policy is called as policy(view, stock_left, moves, ctx): the player's view of the position, the
# number of cards left in the stock, the legal moves of the position (game.legal_moves, contract
# order; the caller has them already) and the context. It returns an Action, or None to stop.


def _greedy(view: State, stock_left: int, moves: list[Action], ctx: _Ctx) -> Action | None:
    if not moves:
        return _pass_action(stock_left)  # nothing can move: passing is allowed (see _pass_ok) and all there is
    best, best_d = _best_by_discards(view, _candidates(view, moves), ctx.strength)
    pass_ok = _pass_ok(view, stock_left, moves, ctx.rules)
    if best is not None and (best_d > 0 or not pass_ok):
        return best
    return _pass_action(stock_left) if pass_ok else None  # None: stop, or give up (no candidate, no pass)


def _aces(view: State, stock_left: int, moves: list[Action], ctx: _Ctx) -> Action | None:
    aces = [m for m in _candidates(view, moves) if _is_ace(view, m, ctx.strength)]
    if aces:
        return _best_by_discards(view, aces, ctx.strength)[0]
    return _greedy(view, stock_left, moves, ctx)


def _human(view: State, stock_left: int, moves: list[Action], ctx: _Ctx) -> Action | None:
    cands = _candidates(view, moves)
    aces = [m for m in cands if _is_ace(view, m, ctx.strength)]
    if aces:
        best_ace, ace_d = _best_by_discards(view, aces, ctx.strength)
        others = [m for m in cands if not _is_ace(view, m, ctx.strength)]
        _, other_d = _best_by_discards(view, others, ctx.strength)  # -1 when there is none
        best_other = max(other_d, 0 if _pass_ok(view, stock_left, moves, ctx.rules) else -1)
        if ace_d >= best_other - ctx.spec.param("sacrifice"):
            return best_ace
    return _greedy(view, stock_left, moves, ctx)


def position_value(view: State, rules: Rules, strength: tuple[int, ...]) -> int:
    """The ``lookahead`` value of a position, higher is better (see the module docstring).

    Discards count first (x100); then Aces at the bottom of a pile and empty
    piles: Aces first (x10) except in easy (FILL_ANY), where empty piles come
    first.
    """
    empties = sum(1 for p in view.piles if not p)
    aces_down = sum(1 for p in view.piles if p and strength[p[0]] == TOP_STRENGTH)
    if rules.fill == FILL_ANY:
        return view.score * 100 + empties * 10 + aces_down
    return view.score * 100 + aces_down * 10 + empties


def _rollout_value(view: State, stock_left: int, ctx: _Ctx) -> int:
    """Play ``greedy`` until it would deal or stop; the value of the position reached."""
    while True:
        a = _greedy(view, stock_left, legal_moves(view, ctx.rules), ctx)
        if a is None or a.kind == "d":
            return position_value(view, ctx.rules, ctx.strength)
        view = _after(view, a, ctx.rules)


def _subtree_value(view: State, stock_left: int, ctx: _Ctx, levels: int) -> int:
    """Best value reachable before the next deal when the next ``levels`` moves are tried in every way."""
    if levels == 0:
        return _rollout_value(view, stock_left, ctx)
    moves = legal_moves(view, ctx.rules)
    cands = _candidates(view, moves)
    best = -1
    if _pass_ok(view, stock_left, moves, ctx.rules) or not cands:
        best = position_value(view, ctx.rules, ctx.strength)
    for m in cands:
        best = max(best, _subtree_value(_after(view, m, ctx.rules), stock_left, ctx, levels - 1))
    return best


def _lookahead(view: State, stock_left: int, moves: list[Action], ctx: _Ctx) -> Action | None:
    depth = ctx.spec.param("depth")
    cands = _candidates(view, moves)
    best_action, best_value = None, -1
    if _pass_ok(view, stock_left, moves, ctx.rules):
        best_action, best_value = _pass_action(stock_left), position_value(view, ctx.rules, ctx.strength)
    for m in cands:
        v = _subtree_value(_after(view, m, ctx.rules), stock_left, ctx, depth - 1)
        if v > best_value:
            best_action, best_value = m, v
    return best_action


def _nomove(view: State, stock_left: int, moves: list[Action], ctx: _Ctx) -> Action | None:
    if _pass_ok(view, stock_left, moves, ctx.rules):
        return _pass_action(stock_left)
    cands = _candidates(view, moves)  # must_fill forbids dealing: the first move in order
    return cands[0] if cands else None


_DETERMINISTIC = {
    "nomove": _nomove,
    "greedy": _greedy,
    "aces": _aces,
    "human": _human,
    "lookahead": _lookahead,
}


def decide(
    state: State,
    rules: Rules | str,
    policy: str | PolicySpec,
    *,
    seed: int = 0,
    index: int = 0,
    decision: int = 0,
) -> Action | None:
    """What ``policy`` does in ``state`` (after any discards are taken): an Action, or None to stop.

    ``decision`` is the number of earlier decision points of the game (it keys
    the random draw of ``random``). Only the piles, the discarded cards and the
    number of cards left in the stock are passed on to the policy.
    """
    rules = rules_by_name(rules)
    spec = parse_policy(policy)
    stock_left = len(state.stock)
    if spec.kind == "random":
        legal = legal_actions(state, rules)
        n_choices = len(legal) + (0 if stock_left else 1)
        k = uniform_choice(n_choices, seed, index, decision) if n_choices > 1 else 0
        return legal[k] if k < len(legal) else None
    view = State(state.piles, (), state.discarded)  # the player's view: no stock order
    return _DETERMINISTIC[spec.kind](view, stock_left, legal_moves(view, rules), _Ctx(rules, spec))


def _take_discards(state: State, rules: Rules, line: list[Action]) -> State:
    """Under discards=optional: take every available discard, lowest pile first, repeatedly."""
    while True:
        xs = [a for a in legal_actions(state, rules) if a.kind == "x"]
        if not xs:
            return state
        state = apply(state, xs[0], rules)
        line.append(xs[0])


def play_scalar(
    deck,
    rules: Rules | str,
    policy: str | PolicySpec,
    *,
    seed: int,
    index: int,
    want_line: bool = True,
    max_actions: int = MAX_ACTIONS,
) -> GameResult:
    """Play one deck with a policy on the scalar reference game (game.py): the twin of play_batch.

    ``seed`` and ``index`` (the deal index) key the random choices of ``random``;
    the deterministic policies ignore them. See the module docstring for the
    policies, the counting of ``moves`` and ``decisions``, and ``max_actions``
    (1..MAX_ACTIONS).
    """
    if not 1 <= max_actions <= MAX_ACTIONS:
        raise ValueError(f"max_actions={max_actions!r} is out of range; use 1..{MAX_ACTIONS}")
    ctx = _context(rules, policy)
    rules, spec = ctx.rules, ctx.spec
    policy_fn = _DETERMINISTIC.get(spec.kind)  # None for random
    state = new_game(deck, rules)
    line: list[Action] = []
    moves = decisions = 0
    while True:
        if rules.optional_discards:
            state = _take_discards(state, rules, line)
        if len(line) >= max_actions:
            break
        legal = legal_actions(state, rules)
        stock_left = len(state.stock)
        n_choices = len(legal) + (0 if stock_left else 1)
        if n_choices == 1 and not legal:
            break  # the stock is empty and nothing can move: stopping is all that is left
        decision = decisions
        if n_choices > 1:
            decisions += 1
        if policy_fn is None:  # random
            k = uniform_choice(n_choices, seed, index, decision) if n_choices > 1 else 0
            action = legal[k] if k < len(legal) else None
        else:
            view = State(state.piles, (), state.discarded)  # the player's view: no stock order
            legal_moves_here = [a for a in legal if a.kind == "m"]  # = legal_moves(view, rules), at hand
            action = policy_fn(view, stock_left, legal_moves_here, ctx)  # as decide(), without re-parsing
        if action is None:
            break
        if action.kind == "m":
            moves += 1
        if action not in legal:  # a policy only ever picks a legal action; say so loudly if not
            raise RuntimeError(f"policy {spec} chose {action}, which is not legal here: {legal}")
        state = apply_legal(state, action, rules)
        line.append(action)
    score = state.score
    return GameResult(score, score == WIN_SCORE, moves, decisions, format_line(line) if want_line else None)
