"""The one action code (engine_rs_free.actions): pack, unpack and text round trips.

The scalar game, the batch engine and the solver all speak these codes; the
twin tests compare their lines as text, so a code whose text another engine
read differently would show there too. Here the code itself is pinned down.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine_rs_free import actions
from engine_rs_free.actions import (CODE_TEXT, DEAL_CODE, KIND_DEAL, KIND_DISCARD, KIND_MOVE, N_CODES,
                                    ActionParseError, code_text, pack_discard, pack_move, parse_code, unpack)
from engine_rs_free.game import Action


def test_fields_are_the_documented_bits():
    assert DEAL_CODE == 0
    assert pack_move(2, 0) == 1 | 2 << 2 == 9
    assert pack_move(3, 1, depth=51) == 1 | 3 << 2 | 1 << 4 | 51 << 6
    assert pack_discard(3) == 2 | 3 << 2 == 14
    assert max(c for c in range(N_CODES) if CODE_TEXT[c]) < 2**15  # fits the int16 line buffers


@given(st.integers(0, 3), st.integers(0, 3), st.integers(0, 51))
def test_move_round_trips(src, dst, depth):
    code = pack_move(src, dst, depth)
    assert unpack(code) == (KIND_MOVE, src, dst, depth)
    text = code_text(code)
    assert parse_code(text) == code
    assert text == (f"{src}:{depth}>{dst}" if depth else f"{src}>{dst}")
    a = Action.from_code(code)
    assert (a.kind, a.src, a.dst, a.depth) == ("m", src, dst, depth)
    assert a.code == code and Action.from_text(text) == a and str(a) == text


def test_every_code_with_text_round_trips_and_the_others_are_refused():
    valid = 0
    for code in range(N_CODES):
        text = CODE_TEXT[code]
        if not text:
            with pytest.raises(ActionParseError, match="is no action"):
                code_text(code)
            continue
        valid += 1
        assert parse_code(text) == code
        assert Action.from_code(code).code == code
        assert Action.from_text(text.upper()).code == code  # the parser ignores case
    assert valid == 1 + 4 + 4 * 4 * 52  # the deal, four discards, every (src, dst, depth)
    assert unpack(pack_discard(1))[0] == KIND_DISCARD and unpack(DEAL_CODE)[0] == KIND_DEAL


@pytest.mark.parametrize("text,canonical", [("3:0>1", "3>1"), (" D ", "d"), ("X2", "x2"), ("0:12>3", "0:12>3")])
def test_text_is_written_canonically(text, canonical):
    assert code_text(parse_code(text)) == canonical


@pytest.mark.parametrize("text", ["", "dd", "4>0", "0>4", "x4", "x", "1:52>0", "1:-1>0", "a>b", "1>2>3"])
def test_bad_text_is_refused_naming_it(text):
    with pytest.raises(ActionParseError, match="unknown action"):
        parse_code(text)


def test_line_text_joins_codes():
    assert actions.line_text([DEAL_CODE, pack_move(1, 0), pack_discard(2)]) == "d 1>0 x2"
