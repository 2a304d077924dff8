"""The game of Aces Up as RULES.md defines it: cards, seeded deals, rules, engines, players, the solver.

The public API, by layer (``docs/architecture.md`` explains them and which
module is the twin of which):

- cards and decks: ``parse_card``, ``format_card``, ``parse_deck``, ``format_deck`` (``cards``)
- seeded deals: ``deal``, ``deal_batch`` (``deals``)
- rule sets: ``Rules``, ``rules_by_name`` (``rules``)
- one action code: ``pack_move``, ``pack_discard``, ``unpack``, ``code_text``, ``parse_code`` (``actions``)
- the scalar reference game: ``State``, ``Action``, ``new_game``, ``legal_actions``, ``apply``,
  ``replay`` (``game``)
- players, one grammar and one registry: ``parse_player``, ``PlayerSpec``, ``play``, ``PlayResult``,
  ``REGISTRY`` (``players``)
- the honest policies and their scalar twin: ``decide``, ``play_scalar`` (``policies``); their compiled
  batch engine: ``play_batch`` (``batch``)
- the honest sampling player: ``play_pimc``, ``pimc_batch`` (``pimc``)
- the exact clairvoyant solver: ``solve_deck``, ``solve_batch``, ``solve_position``,
  ``solve_positions`` (``solver``)

Names are imported from their module on first use, so ``import engine_rs_free``
compiles nothing (the Numba engines compile, or load their on-disk cache, when
first called).
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "cards": ("parse_card", "format_card", "parse_deck", "format_deck", "read_deck_file"),
    "deals": ("deal", "deal_batch"),
    "rules": ("Rules", "rules_by_name"),
    "actions": ("pack_move", "pack_discard", "unpack", "code_text", "parse_code", "ActionParseError"),
    "game": ("State", "Action", "new_game", "legal_actions", "apply", "replay", "IllegalActionError"),
    "players": ("parse_player", "PlayerSpec", "play", "PlayResult", "REGISTRY", "UnknownPlayerError",
                "canonical_player", "display_name", "describe_player"),
    "policies": ("decide", "play_scalar"),
    "batch": ("play_batch",),
    "pimc": ("play_pimc", "pimc_batch"),
    "solver": ("solve_deck", "solve_batch", "solve_position", "solve_positions"),
}
_WHERE = {name: module for module, names in _PUBLIC.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'engine_rs_free' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
