"""One action code for every engine: the scalar game, the batch engine and the solver.

A player's action is one small integer, packed by bit fields::

    code = kind | src << 2 | dst << 4 | depth << 6
    kind:  0 = deal, 1 = move, 2 = discard (``discards=optional``)
    src:   the pile a card leaves (a move) or is discarded from (a discard), 0..3
    dst:   the empty pile a moved card goes into, 0..3
    depth: how far below the top the moved card lies (0 = the top; ``easy`` only), 0..51

So the deal is 0, ``2>0`` is ``1 | 2 << 2 = 9`` and ``x3`` is ``2 | 3 << 2 = 14``;
every code is below ``N_CODES`` (3,328) and fits an ``int16``. Compiled code
reads the fields with the ``code_*`` helpers (inlined bit operations).

Text (a game line is actions separated by single spaces)::

    d        deal the next four cards onto piles 0..3
    2>0      move the top card of pile 2 into empty pile 0
    2:1>0    (easy) move the card one below the top of pile 2 into empty pile 0
    x2       (discards=optional) discard the top card of pile 2

``parse_code(code_text(c)) == c`` for every valid code, and ``code_text``
always writes the canonical form (``3:0>1`` is written ``3>1``). A move onto
its own pile (``2>2``) is well formed and never legal.

>>> code_text(pack_move(2, 0, depth=1))
'2:1>0'
>>> parse_code("x3") == pack_discard(3)
True
"""

from __future__ import annotations

from collections.abc import Iterable

import numba as nb

from .cards import N_CARDS
from .errors import AcesUpError

N_PILES = 4
KIND_DEAL = 0
KIND_MOVE = 1
KIND_DISCARD = 2
DEAL_CODE = 0
N_CODES = 64 * N_CARDS  # depth < 52: every code is below this (and fits an int16)


class ActionParseError(AcesUpError):
    """An action's text is not an action (``d``, ``2>0``, ``2:1>0``, ``x2``)."""


def pack_move(src: int, dst: int, depth: int = 0) -> int:
    """The code of moving the card ``depth`` below the top of pile ``src`` into empty pile ``dst``."""
    return KIND_MOVE | src << 2 | dst << 4 | depth << 6


def pack_discard(pile: int) -> int:
    """The code of discarding the top card of ``pile`` (``discards=optional``)."""
    return KIND_DISCARD | pile << 2


def unpack(code: int) -> tuple[int, int, int, int]:
    """``(kind, src, dst, depth)`` of a code (``src``/``dst``/``depth`` are 0 where they do not apply)."""
    code = int(code)
    return code & 3, (code >> 2) & 3, (code >> 4) & 3, code >> 6


def _text(code: int) -> str:
    kind, src, dst, depth = unpack(code)
    if kind == KIND_DEAL:
        return "d" if code == DEAL_CODE else ""
    if kind == KIND_DISCARD:
        return f"x{src}" if dst == 0 and depth == 0 else ""
    if kind != KIND_MOVE:
        return ""
    return f"{src}:{depth}>{dst}" if depth else f"{src}>{dst}"


CODE_TEXT: tuple[str, ...] = tuple(_text(c) for c in range(N_CODES))
"""``CODE_TEXT[code]``: the action text of each code, ``''`` for a code that is no action."""


def code_text(code: int) -> str:
    """The canonical text of an action code (``0`` -> ``'d'``); ActionParseError for a code that is no action."""
    c = int(code)
    text = CODE_TEXT[c] if 0 <= c < N_CODES else ""
    if not text:
        raise ActionParseError(f"action code {code!r} is no action; codes are kind | src << 2 | dst << 4 | depth << 6")
    return text


def line_text(codes: Iterable[int]) -> str:
    """A game line (actions separated by single spaces) from action codes."""
    table = CODE_TEXT
    return " ".join(table[c] for c in codes)


def parse_code(text: str) -> int:
    """The code of an action's text (``d``, ``2>0``, ``2:1>0``, ``x2``; case and spaces around ignored)."""
    t = text.strip().lower()
    try:
        if t == "d":
            return DEAL_CODE
        if t.startswith("x") and len(t) == 2:
            pile = int(t[1])
            if 0 <= pile < N_PILES:
                return pack_discard(pile)
        elif ">" in t:
            left, right = t.split(">")
            depth = 0
            if ":" in left:
                left, d = left.split(":")
                depth = int(d)
            src, dst = int(left), int(right)
            if 0 <= src < N_PILES and 0 <= dst < N_PILES and 0 <= depth < N_CARDS:
                return pack_move(src, dst, depth)
    except ValueError:
        pass
    raise ActionParseError(
        f"unknown action {text!r}; actions are 'd' (deal), '2>0' (move the top of pile 2 "
        f"into empty pile 0), '2:1>0' (easy: the card one below the top), 'x2' (optional discard)"
    )


# -- the fields in compiled code (inlined bit operations) ------------------------------------


@nb.njit(cache=True, inline="always", _nrt=False)
def code_kind(code):
    """KIND_DEAL, KIND_MOVE or KIND_DISCARD."""
    return code & 3


@nb.njit(cache=True, inline="always", _nrt=False)
def code_src(code):
    """The source pile of a move, the pile of a discard."""
    return (code >> 2) & 3


@nb.njit(cache=True, inline="always", _nrt=False)
def code_dst(code):
    """The target pile of a move."""
    return (code >> 4) & 3


@nb.njit(cache=True, inline="always", _nrt=False)
def code_depth(code):
    """How far below the top the moved card lies (0 = the top)."""
    return code >> 6
