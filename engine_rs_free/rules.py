"""Rule sets as data: one frozen dataclass, presets, and names.

A rule set is a variant preset of RULES.md (``standard``, ``strict``, ``easy``,
``reverse``) plus options, written as ``preset+option+option``:

- ``optional``: discards are the player's choice (``discards=optional``);
- ``sensible``, ``leftmost``, ``must_fill``: solver restrictions (RULES.md),
  never defaults, allowed alone or together.

Options are always written in that canonical order, so
``rules_by_name(r.name) == r`` and the name of a rule set is a stable key
(``strict+optional``, ``standard+sensible+leftmost+must_fill``).

>>> rules_by_name("strict+optional").name
'strict+optional'
>>> rules_by_name("standard+must_fill+sensible").name
'standard+sensible+must_fill'
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .cards import RANK, SUIT
from .errors import AcesUpError

# Which card may move into an empty pile.
FILL_TOP = 0  # the top card of any other pile (standard, reverse)
FILL_ACE = 1  # as FILL_TOP, but only the variant's highest rank (strict)
FILL_ANY = 2  # any single card of any other pile, at any depth (easy)
TOP_STRENGTH = 12  # strength_table value of the variant's top rank (the "Ace"; the King in reverse)

PRESETS = ("standard", "strict", "easy", "reverse")
OPTIONS = ("optional", "sensible", "leftmost", "must_fill")


class UnknownRulesError(AcesUpError):
    """A rule set name that is not a preset with known options."""


@dataclass(frozen=True)
class Rules:
    """One rule set. Every engine, solver and policy reads only these fields.

    preset:            the variant of RULES.md this is based on
    fill:              FILL_TOP | FILL_ACE | FILL_ANY, which card may move into an empty pile
    ace_low:           True for `reverse`: the Ace ranks lowest and the Kings are the goal
    optional_discards: True for `discards=optional`
    sensible:          never move the only card of a pile into an empty pile
    leftmost:          a move may only go into the lowest-numbered empty pile
    must_fill:         no deal while a card of a pile of two or more may be moved into an empty pile
    """

    preset: str = "standard"
    fill: int = FILL_TOP
    ace_low: bool = False
    optional_discards: bool = False
    sensible: bool = False
    leftmost: bool = False
    must_fill: bool = False

    @property
    def name(self) -> str:
        """Canonical name: preset then the options in fixed order, joined by ``+``."""
        flags = (self.optional_discards, self.sensible, self.leftmost, self.must_fill)
        return "+".join([self.preset, *(opt for opt, on in zip(OPTIONS, flags) if on)])

    @property
    def game_name(self) -> str:
        """The name without solver restrictions: the game being played (preset + ``optional``)."""
        return self.preset + ("+optional" if self.optional_discards else "")

    @property
    def restrictions(self) -> tuple[str, ...]:
        """The solver restrictions in force, in canonical order (empty for none)."""
        flags = (self.sensible, self.leftmost, self.must_fill)
        return tuple(opt for opt, on in zip(OPTIONS[1:], flags) if on)

    def with_options(self, *options: str) -> "Rules":
        """This rule set with more options switched on (names as in OPTIONS)."""
        r = self
        for opt in options:
            if opt not in OPTIONS:
                raise UnknownRulesError(
                    f"unknown option {opt!r}; known options: {', '.join(OPTIONS)}"
                )
            field = "optional_discards" if opt == "optional" else opt
            r = replace(r, **{field: True})
        return r

    def without_restrictions(self) -> "Rules":
        """The same game with none of the solver restrictions."""
        return replace(self, sensible=False, leftmost=False, must_fill=False)

    def __str__(self) -> str:
        return self.name


STANDARD = Rules("standard", FILL_TOP, False)
STRICT = Rules("strict", FILL_ACE, False)
EASY = Rules("easy", FILL_ANY, False)
REVERSE = Rules("reverse", FILL_TOP, True)
PRESET_RULES = {r.preset: r for r in (STANDARD, STRICT, EASY, REVERSE)}


def rules_by_name(name: str | Rules) -> Rules:
    """Look a rule set up by name (``standard``, ``strict+optional``, …).

    Raises UnknownRulesError listing the known presets and options.
    """
    if isinstance(name, Rules):
        return name
    parts = [p.strip() for p in str(name).strip().lower().replace("-", "_").split("+")]
    preset, options = parts[0], parts[1:]
    if preset not in PRESET_RULES:
        raise UnknownRulesError(
            f"unknown variant {name!r}; known variants: {', '.join(PRESETS)}, "
            f"optionally followed by +{'/+'.join(OPTIONS)} (e.g. 'strict+optional')"
        )
    if len(set(options)) != len(options):
        raise UnknownRulesError(f"variant {name!r} names an option twice")
    try:
        return PRESET_RULES[preset].with_options(*options)
    except UnknownRulesError as exc:
        raise UnknownRulesError(f"variant {name!r}: {exc}") from None


def strength_table(rules: Rules) -> np.ndarray:
    """``int8[52]``: each card's rank order in this rule set, 0 (lowest) .. 12 (highest).

    In ``reverse`` the Ace is 0 and the King 12; otherwise ``2`` is 0 and the Ace 12.
    A card is discarded when a card of its suit with a higher strength is on
    top of another pile.
    """
    if rules.ace_low:
        return ((RANK.astype(np.int16) + 1) % 13).astype(np.int8)
    return RANK.copy()


def relabel_reverse_to_standard(deck: np.ndarray) -> np.ndarray:
    """Map a deck to its twin in which ``standard`` plays as ``reverse`` plays the original.

    RULES.md: K plays the part of A, Q of K, …, A of 2. A card of strength s in
    ``reverse`` becomes the card of the same suit with strength s in ``standard``.
    """
    deck = np.asarray(deck)
    rev = strength_table(REVERSE)
    return (SUIT[deck].astype(np.int16) * 13 + rev[deck]).astype(np.uint8)

