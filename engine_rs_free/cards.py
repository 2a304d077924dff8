"""Cards and decks: one small integer per card, 52 of them per deck.

Card id layout (``uint8``)::

    card = suit * 13 + rank_index
    rank_index: 0..12 for 2 3 4 5 6 7 8 9 T J Q K A   (Ace high, as in `standard`)
    suit:       0..3  for C D H S                     (suits have no order)

So ``2C`` is 0, ``AC`` is 12, ``2D`` is 13, ``AS`` is 51. ``RANK[card]`` and
``SUIT[card]`` are lookup tables built once at import. A deck is a
``uint8[52]`` array of distinct card ids in deal order.

Text (RULES.md): a card is one rank character of ``23456789TJQKA`` then one
suit character of ``CDHS`` (``TH``, ``AS``). Parsers also accept ``10`` for
``T``, lower case, and the suit symbols ``♣ ♦ ♥ ♠``; writers always emit the
canonical two-character form, so ``parse_deck(format_deck(d)) == d``.

>>> format_card(parse_card("10h"))
'TH'
>>> format_card(parse_card("A♠"))
'AS'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from .errors import AcesUpError

RANK_CHARS = "23456789TJQKA"
SUIT_CHARS = "CDHS"
SUIT_SYMBOLS = {"♣": "C", "♦": "D", "♥": "H", "♠": "S"}
N_CARDS = 52
N_RANKS = 13
N_SUITS = 4
ACE_INDEX = 12  # rank_index of the Ace

RANK = np.arange(N_CARDS, dtype=np.int8) % N_RANKS  # int8[52]  rank_index 0..12
SUIT = np.arange(N_CARDS, dtype=np.int8) // N_RANKS  # int8[52]  suit 0..3
RANK.flags.writeable = False
SUIT.flags.writeable = False

CARD_NAMES = tuple(RANK_CHARS[c % 13] + SUIT_CHARS[c // 13] for c in range(N_CARDS))
_CARD_BY_NAME = {name: i for i, name in enumerate(CARD_NAMES)}


class CardParseError(AcesUpError):
    """A card's text is not a card."""


class DeckParseError(AcesUpError):
    """A deck's text is not 52 distinct cards.

    ``line`` is the 1-based line of a deck file (None for a single deck) and
    ``position`` the 1-based position of the offending card, where one applies.
    """

    def __init__(self, message: str, *, line: int | None = None, position: int | None = None):
        super().__init__(message)
        self.line = line
        self.position = position


def card_id(rank_index: int, suit: int) -> int:
    """The card id of a rank index (0 = 2 … 12 = A) and a suit (0..3 = C D H S)."""
    return suit * N_RANKS + rank_index


def parse_card(text: str) -> int:
    """Parse one card code (``TH``, ``10h``, ``t♥``) into its card id.

    Raises CardParseError naming the text and what is wrong with it.
    """
    raw = text
    t = text.strip()
    if not t:
        raise CardParseError("empty card text; expected a rank of 23456789TJQKA then a suit of CDHS, e.g. 'TH'")
    suit_char = SUIT_SYMBOLS.get(t[-1], t[-1].upper())
    rank_part = t[:-1].upper()
    if rank_part == "10":
        rank_part = "T"
    if len(t) < 2 or len(rank_part) != 1 or rank_part not in RANK_CHARS:
        bad = rank_part if rank_part else t
        raise CardParseError(
            f"unknown rank {bad!r} in {raw!r}; ranks are 2-9, T (or 10), J, Q, K, A"
        )
    if suit_char not in SUIT_CHARS:
        raise CardParseError(f"unknown suit {t[-1]!r} in {raw!r}; suits are C D H S (or ♣ ♦ ♥ ♠)")
    return _CARD_BY_NAME[rank_part + suit_char]


def format_card(card: int) -> str:
    """The canonical two-character code of a card id (``0`` -> ``'2C'``)."""
    if not 0 <= int(card) < N_CARDS:
        raise CardParseError(f"card id {card!r} is out of range 0..51")
    return CARD_NAMES[int(card)]


def parse_cards(text: str) -> list[int]:
    """Parse whitespace-separated card codes (any count, duplicates allowed)."""
    return [parse_card(tok) for tok in text.split()]


def format_cards(cards: Iterable[int]) -> str:
    """Card codes separated by single spaces."""
    return " ".join(format_card(c) for c in cards)


def parse_deck(text: str, *, line: int | None = None) -> np.ndarray:
    """Parse a deck: 52 distinct card codes in deal order -> ``uint8[52]``.

    Raises DeckParseError whose message names the problem, the position and
    the text (and ``line`` when given, for deck files):

    >>> parse_deck("AS KS")
    Traceback (most recent call last):
    ...
    engine_rs_free.cards.DeckParseError: 52 cards expected, got 2; missing 2C 3C 4C 5C 6C 7C 8C 9C …
    """
    where = f"line {line}: " if line is not None else ""
    tokens = text.split()
    cards: list[int] = []
    first_seen: dict[int, int] = {}
    for pos, tok in enumerate(tokens, start=1):
        try:
            c = parse_card(tok)
        except CardParseError as exc:
            raise DeckParseError(f"{where}position {pos}: {exc}", line=line, position=pos) from None
        if c in first_seen:
            raise DeckParseError(
                f"{where}duplicate {CARD_NAMES[c]!r} at positions {first_seen[c]} and {pos}",
                line=line,
                position=pos,
            )
        first_seen[c] = pos
        cards.append(c)
    if len(cards) != N_CARDS:
        missing = [CARD_NAMES[c] for c in range(N_CARDS) if c not in first_seen]
        hint = f"; missing {' '.join(missing[:8])}{' …' if len(missing) > 8 else ''}" if missing else ""
        raise DeckParseError(f"{where}52 cards expected, got {len(cards)}{hint}", line=line)
    return np.asarray(cards, dtype=np.uint8)


def format_deck(deck: Iterable[int]) -> str:
    """A deck as 52 canonical codes separated by single spaces."""
    return format_cards(deck)


def iter_deck_lines(lines: Iterable[str]) -> Iterator[tuple[int, np.ndarray | DeckParseError]]:
    """Stream a deck file: yield ``(line_number, deck or DeckParseError)`` per deck line.

    Blank lines and lines starting with ``#`` are skipped. Errors are yielded,
    not raised, so a caller can report a bad line and go on with the others
    in bounded memory.
    """
    for number, text in enumerate(lines, start=1):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            yield number, parse_deck(stripped, line=number)
        except DeckParseError as exc:
            yield number, exc


def read_deck_file(lines: Iterable[str]) -> np.ndarray:
    """Parse a whole deck file into ``uint8[n, 52]``, all or nothing.

    The first malformed line raises DeckParseError naming its line number;
    nothing is returned half-processed.
    """
    decks = []
    for _, item in iter_deck_lines(lines):
        if isinstance(item, DeckParseError):
            raise item
        decks.append(item)
    return np.asarray(decks, dtype=np.uint8).reshape(len(decks), N_CARDS)
