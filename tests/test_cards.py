"""Cards and decks: codes, parsing, formatting, malformed input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine_rs_free.cards import (
    CARD_NAMES,
    RANK,
    SUIT,
    CardParseError,
    DeckParseError,
    format_card,
    format_deck,
    iter_deck_lines,
    parse_card,
    parse_deck,
    read_deck_file,
)

ORDERED = " ".join(CARD_NAMES)


def test_card_ids_and_tables():
    assert parse_card("2C") == 0 and parse_card("AC") == 12 and parse_card("2D") == 13 and parse_card("AS") == 51
    for c in range(52):
        assert CARD_NAMES[c][0] == "23456789TJQKA"[RANK[c]]
        assert CARD_NAMES[c][1] == "CDHS"[SUIT[c]]


@pytest.mark.parametrize(
    "text,canonical",
    [("TH", "TH"), ("10h", "TH"), ("10H", "TH"), ("th", "TH"), ("T♥", "TH"), ("a♠", "AS"), ("Q♦", "QD"), ("2♣", "2C")],
)
def test_parse_accepts_variants_and_writes_canonical(text, canonical):
    assert format_card(parse_card(text)) == canonical


@pytest.mark.parametrize(
    "text,fragment",
    [("1S", "unknown rank '1' in '1S'"), ("ZZ", "unknown rank 'Z'"), ("AX", "unknown suit 'X' in 'AX'"),
     ("A", "unknown rank"), ("11S", "unknown rank '11'")],
)
def test_parse_card_errors_name_the_text(text, fragment):
    with pytest.raises(CardParseError, match=fragment):
        parse_card(text)


@given(st.permutations(list(range(52))))
def test_deck_text_round_trip(perm):
    deck = np.asarray(perm, dtype=np.uint8)
    text = format_deck(deck)
    assert np.array_equal(parse_deck(text), deck)
    assert format_deck(parse_deck(text)) == text
    # The alternative spellings parse to the same deck.
    loose = text.replace("T", "10").lower().replace("h", "♥")
    assert np.array_equal(parse_deck(loose), deck)


def test_short_deck_message():
    with pytest.raises(DeckParseError, match=r"52 cards expected, got 51; missing JD"):
        parse_deck(ORDERED.replace(" JD", ""))


def test_long_deck_message():
    with pytest.raises(DeckParseError, match="duplicate 'AS' at positions 52 and 53"):
        parse_deck(ORDERED + " AS")


def test_duplicate_names_both_positions():
    cards = ORDERED.split()
    cards[39] = "QS"  # QS is at position 50 too
    with pytest.raises(DeckParseError, match=r"duplicate 'QS' at positions 40 and 50") as err:
        parse_deck(" ".join(cards))
    assert err.value.position == 50


def test_unknown_card_names_position_and_text():
    cards = ORDERED.split()
    cards[2] = "1S"
    with pytest.raises(DeckParseError, match=r"position 3: unknown rank '1' in '1S'") as err:
        parse_deck(" ".join(cards))
    assert err.value.position == 3


def test_deck_file_names_the_line_and_is_all_or_nothing():
    good = ORDERED
    lines = [good, "# a comment", "", good.replace("2C", "2X"), good]
    with pytest.raises(DeckParseError, match=r"^line 4: position 1: unknown suit 'X'") as err:
        read_deck_file(lines)
    assert err.value.line == 4
    assert read_deck_file([good, good]).shape == (2, 52)


def test_deck_stream_reports_bad_lines_and_goes_on():
    items = list(iter_deck_lines([ORDERED, "AS KS", ORDERED]))
    assert [n for n, _ in items] == [1, 2, 3]
    assert isinstance(items[1][1], DeckParseError) and "line 2" in str(items[1][1])
    assert not isinstance(items[2][1], DeckParseError)
