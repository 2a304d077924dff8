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


# --------------------------------------------------------------------------- the chunked (fast) deck reader

def _mangle(rng, deck_text: str) -> str:
    """One deck line, spelled or broken in one of the ways a deck file may hold."""
    tokens = deck_text.split()
    kind = rng.integers(12)
    if kind == 0:  # lower case: still canonical width
        return deck_text.lower()
    if kind == 1:  # a duplicate card
        i, j = rng.choice(52, 2, replace=False)
        tokens[i] = tokens[j]
    elif kind == 2:  # one character replaced by any printable ASCII one (a rank, a suit or a space broken)
        chars = list(deck_text)
        chars[rng.integers(len(chars))] = chr(rng.integers(32, 127))
        return "".join(chars)
    elif kind == 3:  # a card missing or one too many
        return " ".join(tokens[:-1]) if rng.integers(2) else deck_text + " " + tokens[0]
    elif kind == 4:  # other spellings parse_deck accepts: 10, suit symbols, tabs, double spaces
        i = rng.integers(52)
        tokens[i] = {"T": "10"}.get(tokens[i][0], tokens[i][0]) + {"H": "♥", "S": "♠"}.get(tokens[i][1], tokens[i][1])
        return ("\t" if rng.integers(2) else "  ").join(tokens)
    elif kind == 5:  # padding around the line, a comment, a blank line
        return rng.choice(["  " + deck_text + " \r", "# " + deck_text, "", "   "])
    return " ".join(tokens)  # canonical (six kinds of twelve)


def _lines(seed: int, n: int) -> list[str]:
    from engine_rs_free.deals import deal_batch

    rng = np.random.default_rng(seed)
    return [_mangle(rng, format_deck(d)) + "\n" for d in deal_batch(seed, 0, n)]


def _chunked(lines, sizes):
    from engine_rs_free.cards import iter_deck_chunks

    decks, numbers, errors = [], [], []
    for chunk in iter_deck_chunks(lines, sizes):
        assert len(chunk.decks) == len(chunk.line_numbers)
        decks += list(chunk.decks)
        numbers += chunk.line_numbers.tolist()
        errors += [(n, str(e)) for n, e in chunk.errors]
    return decks, numbers, errors


def _one_by_one(lines):
    decks, numbers, errors = [], [], []
    for number, item in iter_deck_lines(lines):
        if isinstance(item, DeckParseError):
            errors.append((number, str(item)))
        else:
            decks.append(item)
            numbers.append(number)
    return decks, numbers, errors


def _assert_same(lines, sizes):
    fast, slow = _chunked(lines, sizes), _one_by_one(lines)
    assert fast[1] == slow[1] and fast[2] == slow[2]
    assert len(fast[0]) == len(slow[0]) and all((a == b).all() for a, b in zip(fast[0], slow[0]))
    return slow


def test_chunked_reader_equals_the_line_reader_on_thousands_of_lines():
    lines = _lines(17, 4000)
    decks, _, errors = _assert_same(lines, [1, 7, 256, 1000])
    assert len(decks) > 2000 and len(errors) > 500  # both paths and both outcomes are exercised


@given(st.integers(0, 2**32 - 1), st.integers(0, 60), st.lists(st.integers(1, 9), min_size=1, max_size=4))
def test_chunked_reader_equals_the_line_reader(seed, n, sizes):
    _assert_same(_lines(seed, n), sizes)


def test_read_deck_file_reads_canonical_and_other_spellings():
    from engine_rs_free.deals import deal_batch

    decks = deal_batch(3, 0, 5)
    lines = [format_deck(d) for d in decks]
    lines[2] = lines[2].lower().replace("t", "10")
    assert (read_deck_file(lines) == decks).all()
    assert read_deck_file([]).shape == (0, 52)
