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
from typing import NamedTuple

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


class DeckChunk(NamedTuple):
    """The decks of a run of deck-file lines, parsed at once (``iter_deck_chunks``).

    decks:        uint8[n, 52]  the well-formed decks, in file order
    line_numbers: int64[n]      the 1-based file line of each deck
    errors:       list of (line_number, DeckParseError), the malformed lines in file order
    """

    decks: np.ndarray
    line_numbers: np.ndarray
    errors: list


# Lookup tables of the canonical fast path: byte -> rank index or suit (255 = not a rank / suit character).
_RANK_OF_BYTE = np.full(256, 255, dtype=np.uint8)
_SUIT_OF_BYTE = np.full(256, 255, dtype=np.uint8)
for _i, _ch in enumerate(RANK_CHARS):
    _RANK_OF_BYTE[ord(_ch)] = _RANK_OF_BYTE[ord(_ch.lower())] = _i
for _i, _ch in enumerate(SUIT_CHARS):
    _SUIT_OF_BYTE[ord(_ch)] = _SUIT_OF_BYTE[ord(_ch.lower())] = _i
_LINE_WIDTH = 3 * N_CARDS - 1  # 52 two-character codes and 51 single spaces
_FULL_DECK = np.uint64((1 << N_CARDS) - 1)


def _parse_canonical(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Decode lines of 52 two-character ASCII codes separated by single spaces, all at once.

    Returns ``(cards uint8[n, 52], ok bool[n])``; a row is ok only when every
    code is a rank character then a suit character (either case) and the 52
    cards are distinct. Rows not ok are left to ``parse_deck``, which accepts
    every other spelling and writes the error message, so this fast path
    never decides what an error says.
    """
    raw = np.frombuffer("".join(texts).encode("ascii"), dtype=np.uint8).reshape(len(texts), _LINE_WIDTH)
    ranks = _RANK_OF_BYTE[raw[:, 0::3]]
    suits = _SUIT_OF_BYTE[raw[:, 1::3]]
    ok = (raw[:, 2::3] == ord(" ")).all(axis=1) & (ranks != 255).all(axis=1) & (suits != 255).all(axis=1)
    cards = (suits.astype(np.uint16) * N_RANKS + ranks).astype(np.uint8)  # garbage where not ok
    bits = np.left_shift(np.uint64(1), np.minimum(cards, N_CARDS - 1).astype(np.uint64))
    ok &= np.bitwise_or.reduce(bits, axis=1) == _FULL_DECK
    return cards, ok


def iter_deck_chunks(lines: Iterable[str], sizes: Iterable[int]) -> Iterator[DeckChunk]:
    """Stream a deck file in chunks of deck lines: the fast twin of ``iter_deck_lines``.

    Each chunk holds the next ``size`` deck lines (blank and ``#`` lines are
    skipped and not counted) for each size of ``sizes`` in turn, the last
    size repeating; the last chunk may be shorter. Canonical lines (what
    ``format_deck`` writes, in either case) are decoded with NumPy all at
    once; any other line goes through ``parse_deck``, so the decks, line
    numbers and error messages are exactly those of ``iter_deck_lines``
    (tests/test_cards.py holds them to it).
    """
    it = iter(enumerate(lines, start=1))
    size_iter = iter(sizes)
    size = next(size_iter)
    while True:
        numbers: list[int] = []
        texts: list[str] = []
        for number, text in it:
            stripped = text.strip()
            if not stripped or stripped.startswith("#"):
                continue
            numbers.append(number)
            texts.append(stripped)
            if len(texts) == size:
                break
        if not texts:
            return
        fast = [k for k, t in enumerate(texts) if len(t) == _LINE_WIDTH and t.isascii()]
        decks = np.empty((len(texts), N_CARDS), dtype=np.uint8)
        done = np.zeros(len(texts), dtype=bool)
        if fast:
            cards, ok = _parse_canonical([texts[k] for k in fast])
            rows = np.asarray(fast)[ok]
            decks[rows] = cards[ok]
            done[rows] = True
        errors = []
        for k in np.flatnonzero(~done).tolist():
            try:
                decks[k] = parse_deck(texts[k], line=numbers[k])
                done[k] = True
            except DeckParseError as exc:
                errors.append((numbers[k], exc))
        yield DeckChunk(decks[done], np.asarray(numbers, dtype=np.int64)[done], errors)
        if len(texts) < size:
            return
        size = next(size_iter, size)


def read_deck_file(lines: Iterable[str]) -> np.ndarray:
    """Parse a whole deck file into ``uint8[n, 52]``, all or nothing.

    The first malformed line raises DeckParseError naming its line number;
    nothing is returned half-processed.
    """
    decks = []
    for chunk in iter_deck_chunks(lines, [4096]):
        if chunk.errors:
            raise chunk.errors[0][1]
        decks.append(chunk.decks)
    return np.concatenate(decks) if decks else np.empty((0, N_CARDS), dtype=np.uint8)
