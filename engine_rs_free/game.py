"""The scalar reference game: RULES.md as plain, readable Python.

This module is the spec in code. It favours clarity over speed; every faster
path (the batch engine, the solver) is tested against it.

A ``State`` holds four piles (bottom card first, top card last), the undealt
stock in deal order, and the set of discarded cards. States are immutable
values: ``apply`` returns a new one.

Actions are the codes of ``actions.py`` (shared with the batch engine and the
solver), wrapped here in a readable value ``Action(kind, src, dst, depth)``
with ``kind`` ``'d'`` (deal), ``'m'`` (move) or ``'x'`` (discard); their text
(``d``, ``2>0``, ``2:1>0``, ``x2``) is that of ``actions.code_text``.

The order of ``legal_actions`` is part of the contract (policies that pick by
index rely on it): ``d`` first when the stock is not empty, then moves by
source pile, then depth (top first), then target pile, then discards by pile.

Readings of RULES.md written down here (the seeds support each):

- Forced discards are resolved after the first four cards, after every deal
  and after every move; their order does not matter (RULES.md, rule 3).
- When the stock is empty the player may still move, and the game ends when
  the player stops; a game line therefore simply ends, and the score is the
  number of discards made so far. ``is_over`` is True when no action is left.
- ``must_fill`` forbids dealing while a move allowed by the other rules in
  force (variant, ``sensible``, ``leftmost``) takes a card from a pile of two
  or more cards (RULES.md). A lone card never blocks a deal: moving it only
  relabels piles, and read literally (the older wording) it could forbid
  dealing forever.
- ``strict`` admits only the variant's highest rank (the Ace) into an empty
  pile; ``easy`` lets a card at any depth move, the cards above it keeping
  their order; moving the only card of a pile is a legal move in every
  variant unless ``sensible`` is in force.
"""

from __future__ import annotations

from itertools import permutations
from typing import NamedTuple

import numpy as np

from . import actions
from .actions import ActionParseError  # noqa: F401  (re-exported: the error of Action.from_text)
from .cards import N_CARDS, SUIT, DeckParseError, format_card, format_cards, parse_cards
from .errors import AcesUpError, PositionParseError
from .rules import FILL_ACE, FILL_ANY, TOP_STRENGTH, Rules, rules_by_name, strength_table

N_PILES = 4
WIN_SCORE = 48

_STRENGTH_CACHE: dict[bool, tuple[int, ...]] = {}
_SUIT = tuple(int(x) for x in SUIT)  # plain ints: indexing a tuple is much faster than numpy


def strength_tuple(rules: Rules) -> tuple[int, ...]:
    """The strength of each card (0..12, the variant's top rank 12) as a tuple of plain ints, cached."""
    key = rules.ace_low
    if key not in _STRENGTH_CACHE:
        _STRENGTH_CACHE[key] = tuple(int(v) for v in strength_table(rules))
    return _STRENGTH_CACHE[key]


class IllegalActionError(AcesUpError):
    """A well-formed action that the rules do not allow in the given state."""


class ReplayError(IllegalActionError):
    """A game line stopped at an action that is malformed or illegal.

    ``position`` is the 1-based position of the action in the line.
    """

    def __init__(self, message: str, *, position: int, action: str, state: "State"):
        super().__init__(message)
        self.position = position
        self.action = action
        self.state = state


class Action(NamedTuple):
    """One player action. ``kind`` is ``'d'`` (deal), ``'m'`` (move) or ``'x'`` (discard).

    An immutable value (a named tuple: cheap to make, hashable, ordered), the
    readable form of an action code of ``actions.py``: ``Action.from_code(a.code) == a``.

    >>> Action.from_text("2:1>0")
    Action.from_text('2:1>0')
    >>> str(Action.from_text("3:0>1"))
    '3>1'
    >>> Action.from_text("x2").code == actions.pack_discard(2)
    True
    """

    kind: str
    src: int = -1
    dst: int = -1
    depth: int = 0

    @property
    def code(self) -> int:
        """The action code (``actions.py``)."""
        if self.kind == "d":
            return actions.DEAL_CODE
        if self.kind == "x":
            return actions.pack_discard(self.src)
        return actions.pack_move(self.src, self.dst, self.depth)

    @staticmethod
    def from_code(code: int) -> "Action":
        """The action of a code; ActionParseError for a code that is no action."""
        c = int(code)
        action = _BY_CODE[c] if 0 <= c < actions.N_CODES else None
        if action is None:
            actions.code_text(c)  # raises, naming the code
        return action

    @staticmethod
    def from_text(text: str) -> "Action":
        return Action.from_code(actions.parse_code(text))

    def __str__(self) -> str:
        return actions.code_text(self.code)

    def __repr__(self) -> str:
        return f"Action.from_text({str(self)!r})"


def _action_of(code: int) -> Action | None:
    kind, src, dst, depth = actions.unpack(code)
    if not actions.CODE_TEXT[code]:
        return None
    if kind == actions.KIND_DEAL:
        return Action("d")
    if kind == actions.KIND_DISCARD:
        return Action("x", src)
    return Action("m", src, dst, depth)


_BY_CODE: tuple[Action | None, ...] = tuple(_action_of(c) for c in range(actions.N_CODES))
DEAL = _BY_CODE[actions.DEAL_CODE]
# Every move, made once: _MOVE[src][depth][dst] == Action("m", src, dst, depth). Actions are
# immutable values, so legal_moves hands out these instead of building new ones on every call.
_MOVE = tuple(
    tuple(tuple(_BY_CODE[actions.pack_move(src, dst, depth)] for dst in range(N_PILES)) for depth in range(N_CARDS))
    for src in range(N_PILES)
)
_DISCARD = tuple(_BY_CODE[actions.pack_discard(p)] for p in range(N_PILES))


class State(NamedTuple):
    """A position: piles (bottom first, top last), stock (next card first), discarded cards.

    An immutable value (a named tuple); ``apply`` returns a new one.
    """

    piles: tuple[tuple[int, ...], ...]
    stock: tuple[int, ...]
    discarded: frozenset[int]

    @property
    def score(self) -> int:
        """The number of discarded cards (0..48)."""
        return len(self.discarded)

    @property
    def won(self) -> bool:
        return len(self.discarded) == WIN_SCORE

    @property
    def stock_left(self) -> int:
        return len(self.stock)

    def tops(self) -> tuple[int, ...]:
        """Top card of each pile, -1 for an empty pile."""
        return tuple(p[-1] if p else -1 for p in self.piles)

    def empty_piles(self) -> list[int]:
        """The empty piles, lowest first."""
        piles = self.piles
        return [i for i in range(N_PILES) if not piles[i]]

    def __str__(self) -> str:
        return picture(self)


def _discardable(piles, pile: int, strength: tuple[int, ...]) -> bool:
    """True when the top card of ``pile`` has a same-suit, higher top card on another pile."""
    if not piles[pile]:
        return False
    c = piles[pile][-1]
    suit, rank = _SUIT[c], strength[c]
    for j, other in enumerate(piles):
        if j != pile and other and _SUIT[other[-1]] == suit and strength[other[-1]] > rank:
            return True
    return False


def resolve_discards(state: State, rules: Rules, order: tuple[int, ...] | None = None) -> State:
    """Apply forced discards until none is left (no-op under ``discards=optional``).

    By default the discards are made a round at a time (``forced_discards``).
    With ``order``, they are made literally one card at a time, trying the
    piles in that order at each step; the result does not depend on the order
    (RULES.md rule 3), and the tests check that every order and the default
    give the same state.
    """
    if rules.optional_discards:
        return state
    strength = strength_tuple(rules)
    piles = list(state.piles)  # piles stay tuples; a discard replaces one pile by its shorter copy
    if order is None:
        gone = forced_discards(piles, strength)
    else:
        gone = []
        pile = _first_discardable(piles, order, strength)
        while pile >= 0:
            gone.append(piles[pile][-1])
            piles[pile] = piles[pile][:-1]
            pile = _first_discardable(piles, order, strength)
    if not gone:
        return state
    return State(tuple(piles), state.stock, state.discarded.union(gone))


def forced_discards(piles: list[tuple[int, ...]], strength: tuple[int, ...]) -> list[int]:
    """Make every forced discard in ``piles`` (a list of pile tuples, changed in place); the cards discarded.

    A round at a time: every top card weaker than the strongest top card of its
    suit is discarded, then the tops are looked at again, until a round
    discards nothing. This is the rule applied one card at a time: the
    strongest top of a suit is not discarded in its round, so each card of the
    round stays discardable while the others go (RULES.md rule 3).
    """
    gone: list[int] = []
    while True:
        strongest = [-1, -1, -1, -1]  # per suit, the highest strength among the top cards
        shared = False  # do two top cards share a suit? (if not, nothing can be discarded)
        for pile in piles:
            if pile:
                top = pile[-1]
                suit = _SUIT[top]
                if strongest[suit] >= 0:
                    shared = True
                if strength[top] > strongest[suit]:
                    strongest[suit] = strength[top]
        if not shared:
            return gone
        for i in range(N_PILES):
            pile = piles[i]
            if pile and strength[pile[-1]] < strongest[_SUIT[pile[-1]]]:
                gone.append(pile[-1])
                piles[i] = pile[:-1]


def _first_discardable(piles, order: tuple[int, ...], strength: tuple[int, ...]) -> int:
    """The first pile in ``order`` whose top card can be discarded, or -1.

    A top card can be discarded exactly when it is weaker than the strongest
    top card of its suit (which then necessarily lies on another pile).
    """
    strongest = [-1, -1, -1, -1]  # per suit, the highest strength among the top cards
    for pile in piles:
        if pile:
            top = pile[-1]
            if strength[top] > strongest[_SUIT[top]]:
                strongest[_SUIT[top]] = strength[top]
    for i in order:
        pile = piles[i]
        if pile and strength[pile[-1]] < strongest[_SUIT[pile[-1]]]:
            return i
    return -1


def new_game(deck, rules: Rules | str = "standard") -> State:
    """The position after the first four cards are dealt (and forced discards made)."""
    rules = rules_by_name(rules)
    deck = tuple(deck.tolist()) if isinstance(deck, np.ndarray) else tuple(int(c) for c in deck)
    if len(deck) != N_CARDS or len(set(deck)) != N_CARDS:
        raise DeckParseError(f"a deck is 52 distinct cards; got {len(deck)} cards, {len(set(deck))} distinct")
    state = State(tuple((c,) for c in deck[:N_PILES]), deck[N_PILES:], frozenset())
    return resolve_discards(state, rules)


def legal_moves(state: State, rules: Rules) -> list[Action]:
    """Moves into empty piles allowed by the variant and the restrictions in force, in contract order.

    By source pile, then depth (top first), then target pile. Which cards may
    move: the top card of every other pile (standard, reverse), only an Ace
    (strict), any card at any depth (easy); never the only card of a pile
    under ``sensible``; only into the lowest empty pile under ``leftmost``.
    """
    piles = state.piles
    if all(piles):
        return []  # no empty pile, no move
    empties = [i for i in range(N_PILES) if not piles[i]]
    targets = empties[:1] if rules.leftmost else empties
    fill = rules.fill
    strength = strength_tuple(rules)
    moves = []
    for src, pile in enumerate(piles):
        if not pile or (rules.sensible and len(pile) == 1):
            continue
        for depth in range(len(pile)) if fill == FILL_ANY else (0,):
            if fill == FILL_ACE and strength[pile[-1 - depth]] != TOP_STRENGTH:
                continue
            for dst in targets:
                if dst != src:
                    moves.append(_MOVE[src][depth][dst])
    return moves


def fills_from_a_stack(state: State, moves: list[Action]) -> bool:
    """True when one of ``moves`` takes a card from a pile of two or more cards.

    Under ``must_fill`` exactly these moves forbid dealing (RULES.md): a lone
    card's move only relabels piles, so it never blocks a deal.
    """
    piles = state.piles
    return any(len(piles[m.src]) > 1 for m in moves)


def legal_actions(state: State, rules: Rules | str) -> list[Action]:
    """Every legal action, in the contract order of the module docstring."""
    rules = rules_by_name(rules)
    moves = legal_moves(state, rules)
    legal = []
    if state.stock and not (rules.must_fill and fills_from_a_stack(state, moves)):
        legal.append(DEAL)
    legal.extend(moves)
    if rules.optional_discards:
        strength = strength_tuple(rules)
        legal.extend(_DISCARD[i] for i in range(N_PILES) if _discardable(state.piles, i, strength))
    return legal


def why_illegal(state: State, action: Action, rules: Rules | str) -> str | None:
    """None when ``action`` is legal, else a sentence saying why not."""
    rules = rules_by_name(rules)
    if action in legal_actions(state, rules):
        return None
    if action.kind == "d":
        if not state.stock:
            return "the stock is empty"
        return "must_fill is in force and a card of a pile of two or more can move into an empty pile"
    if action.kind == "x":
        if not rules.optional_discards:
            return "discards are forced in this variant; 'x' actions need discards=optional"
        if not state.piles[action.src]:
            return f"pile {action.src} is empty"
        return f"no top card of the same suit and higher rank is on another pile than {action.src}"
    src, dst, depth = action.src, action.dst, action.depth
    if src == dst:
        return "a card cannot move onto its own pile"
    if state.piles[dst]:
        return f"pile {dst} is not empty"
    if not state.piles[src]:
        return f"pile {src} is empty"
    if depth >= len(state.piles[src]):
        return f"pile {src} has only {len(state.piles[src])} card(s); depth {depth} does not exist"
    if depth and rules.fill != FILL_ANY:
        return "only the top card of a pile may move in this variant (depth moves need 'easy')"
    if rules.fill == FILL_ACE:
        return f"only an Ace may move into an empty pile in {rules.preset}"
    if rules.sensible and len(state.piles[src]) == 1:
        return "sensible is in force: the only card of a pile may not move"
    if rules.leftmost:
        return f"leftmost is in force: moves go into pile {state.empty_piles()[0]}"
    return "not a legal action here"


def apply(state: State, action: Action | str, rules: Rules | str) -> State:
    """The state after a legal action (and the forced discards that follow).

    Raises IllegalActionError with the reason when the action is not legal.
    """
    rules = rules_by_name(rules)
    if isinstance(action, str):
        action = Action.from_text(action)
    reason = why_illegal(state, action, rules)
    if reason is not None:
        raise IllegalActionError(f"illegal action {str(action)!r}: {reason}")
    return apply_legal(state, action, rules)


def apply_legal(state: State, action: Action, rules: Rules) -> State:
    """``apply`` for an action already known to be legal (taken from ``legal_actions``): no check.

    Callers that pick their action from the list ``legal_actions`` just gave
    (the policies, ``play_scalar``) use it to skip generating that list again.
    """
    stock, discarded = state.stock, state.discarded
    if action.kind == "d":
        p = state.piles  # the next four cards go onto piles 0..3, card i onto pile i
        piles = [p[0] + (stock[0],), p[1] + (stock[1],), p[2] + (stock[2],), p[3] + (stock[3],)]
        stock = stock[N_PILES:]
    elif action.kind == "m":
        piles = list(state.piles)
        move_card(piles, action)
    else:
        piles = list(state.piles)
        discarded = discarded | {piles[action.src][-1]}
        piles[action.src] = piles[action.src][:-1]
    if not rules.optional_discards:
        gone = forced_discards(piles, strength_tuple(rules))  # resolve_discards, on the list at hand
        if gone:
            discarded = discarded.union(gone)
    return State(tuple(piles), stock, discarded)


def move_card(piles: list[tuple[int, ...]], move: Action) -> None:
    """Make ``move`` (a legal move) in ``piles``, a list of pile tuples changed in place; no discards.

    The moved card goes into the empty target pile; on its source pile the
    cards above it keep their order.
    """
    src = piles[move.src]
    at = len(src) - 1 - move.depth  # the moved card's index
    piles[move.src] = src[:at] + src[at + 1:]
    piles[move.dst] = piles[move.dst] + (src[at],)


def is_over(state: State, rules: Rules | str) -> bool:
    """True when no legal action is left (the player may also stop earlier once the stock is empty)."""
    return not legal_actions(state, rules)


def parse_line(line: str) -> list[Action]:
    """Parse a game line (actions separated by white space)."""
    return [Action.from_text(tok) for tok in line.split()]


def format_line(line) -> str:
    """A game line: actions separated by single spaces."""
    return " ".join(str(a) for a in line)


def replay_states(deck, line: str, rules: Rules | str = "standard") -> list[State]:
    """The states of a game line: the start state, then one after each action.

    Stops at the first malformed or illegal action with a ReplayError naming
    its position, the action, the state before it and why it is illegal.
    """
    rules = rules_by_name(rules)
    state = new_game(deck, rules)
    states = [state]
    for pos, tok in enumerate(line.split(), start=1):
        try:
            action = Action.from_text(tok)
            state = apply(state, action, rules)
        except (ActionParseError, IllegalActionError) as exc:
            raise ReplayError(
                f"action {pos} {tok!r} of the line: {exc}\nstate before it:\n{picture(state)}",
                position=pos,
                action=tok,
                state=state,
            ) from None
        states.append(state)
    return states


def replay(deck, line: str, rules: Rules | str = "standard") -> State:
    """The state at the end of a game line (see ``replay_states`` for errors)."""
    return replay_states(deck, line, rules)[-1]


def picture(state: State) -> str:
    """A compact text picture: one pile a line, bottom card first, top card last.

    >>> print(picture(parse_position("AS KS | 7H | - | 2C 9D")))
    0: AS KS
    1: 7H
    2: -
    3: 2C 9D
    stock 0, score 47
    """
    lines = [f"{i}: {format_cards(p) if p else '-'}" for i, p in enumerate(state.piles)]
    lines.append(f"stock {len(state.stock)}, score {state.score}")
    return "\n".join(lines)


def format_position(state: State) -> str:
    """Piles as ``"AS KS | 7H | - | 2C 9D"`` (bottom first; ``-`` for an empty pile)."""
    return " | ".join(format_cards(p) if p else "-" for p in state.piles)


def parse_position(piles: str, stock: str = "", discarded: str | None = None) -> State:
    """Build a state from short strings, for tests and hand analysis.

    ``piles``: four piles separated by ``|``, bottom card first, ``-`` for empty.
    ``stock``: undealt cards, next card first. ``discarded``: the discarded
    cards; by default every card not on a pile or in the stock.
    """
    parts = [p.strip() for p in piles.split("|")]
    if len(parts) != N_PILES:
        raise PositionParseError(f"position {piles!r} has {len(parts)} piles; write 4 separated by '|'")
    pile_cards = tuple(tuple(parse_cards(p)) if p not in ("-", "") else () for p in parts)
    stock_cards = tuple(parse_cards(stock))
    present = [c for p in pile_cards for c in p] + list(stock_cards)
    if len(set(present)) != len(present):
        dup = sorted({format_card(c) for c in present if present.count(c) > 1})
        raise PositionParseError(f"position {piles!r} names {', '.join(dup)} more than once")
    if discarded is None:
        gone = frozenset(set(range(N_CARDS)) - set(present))
    else:
        gone = frozenset(parse_cards(discarded))
    return State(pile_cards, stock_cards, gone)


def all_discard_orders() -> list[tuple[int, ...]]:
    """Every order of the four piles, for the discard-order property test."""
    return list(permutations(range(N_PILES)))


def state_from_arrays(piles: np.ndarray, heights: np.ndarray, deck: np.ndarray, stock_pos: int,
                      discarded: np.ndarray | None = None) -> State:
    """Build a State from array form (``piles: int8[4, 52]``, ``heights: int8[4]``).

    Used to compare the batch engine's arrays with the scalar game.
    """
    pile_t = tuple(tuple(int(c) for c in piles[i, : heights[i]]) for i in range(N_PILES))
    stock_t = tuple(int(c) for c in deck[stock_pos:])
    present = {c for p in pile_t for c in p} | set(stock_t)
    gone = frozenset(set(range(N_CARDS)) - present) if discarded is None else frozenset(int(c) for c in discarded)
    return State(pile_t, stock_t, gone)
