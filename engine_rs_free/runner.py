"""One entry point to play or solve a batch of decks with any named player.

``run_player`` is what the pipeline calls for every batch. A *player* is a
policy name of ``policies.py`` (``greedy``, ``human:sacrifice=3``, …), the
honest sampling policy ``pimc:samples=K[,inner=…]`` of ``lookahead.py``, or
the exact solver ``solver`` / ``solver:opt+opt`` (options of RULES.md:
``sensible``, ``leftmost``, ``must_fill``) of ``solver.py``.

It returns plain columns, one row per deck (names as in pipeline.schema):
``score`` int8, ``won`` bool, ``moves`` int16, ``decisions`` int16, and for
the solver ``nodes`` int64 and ``status`` (``solved``/``gave_up``); ``line``
is a list of game lines or None.
"""

from __future__ import annotations

import numpy as np

from .errors import AcesUpError
from .rules import Rules, UnknownRulesError, rules_by_name

SOLVER_PREFIX = "solver"
PIMC_PREFIX = "pimc"


class UnknownPlayerError(AcesUpError):
    """A player name that is neither a policy, ``pimc:…`` nor ``solver[:…]``."""


SOLVER_OPTIONS = ("sensible", "leftmost", "must_fill")


def is_solver(player: str) -> bool:
    """True for ``solver`` and ``solver:…`` (any case, spaces around the kind allowed, as for pimc)."""
    return str(player).strip().lower().partition(":")[0].strip() == SOLVER_PREFIX


def solver_rules(player: str, rules: Rules) -> Rules:
    """The rule set the solver plays for ``solver`` or ``solver:opt+opt``.

    The options are read with the grammar of a rule set name (rules.rules_by_name):
    case and ``-``/``_`` do not matter, and an option given twice, an empty one or
    an unknown one is refused, so ``solver:sensible+sensible`` gets the same answer
    as ``--variant standard+sensible+sensible``.

    >>> solver_rules("solver:Leftmost+must-fill", rules_by_name("strict")).name
    'strict+leftmost+must_fill'
    """
    _, colon, opts = str(player).strip().partition(":")
    if colon and not opts.strip():
        raise UnknownPlayerError(f"player {player!r} ends with ':'; write 'solver' or e.g. "
                                 f"'solver:sensible+leftmost+must_fill'")
    options = [o.strip().lower().replace("-", "_") for o in opts.split("+")] if colon else []
    for o in options:
        if o not in SOLVER_OPTIONS:
            raise UnknownPlayerError(
                f"unknown solver option {o!r} in {player!r}; options are sensible, leftmost, must_fill "
                f"(e.g. 'solver:sensible+leftmost+must_fill')"
            )
    twice = sorted({o for o in options if options.count(o) > 1})
    if twice:
        raise UnknownPlayerError(f"solver option {twice[0]!r} is given twice in {player!r}; name each option "
                                 f"once (e.g. 'solver:sensible+leftmost')")
    try:
        return rules_by_name("+".join([rules.name, *options]))
    except UnknownRulesError as exc:
        raise UnknownPlayerError(f"player {player!r} under {rules.name!r}: {exc}") from None


def canonical_player(player: str) -> str:
    """The canonical spelling of a player name (stable across runs and files)."""
    player = player.strip()
    if is_solver(player):
        restrictions = solver_rules(player, rules_by_name("standard")).restrictions
        return SOLVER_PREFIX + (":" + "+".join(restrictions) if restrictions else "")
    if player.lower().partition(":")[0].strip() == PIMC_PREFIX:
        from .lookahead import parse_pimc

        return parse_pimc(player).name
    from .policies import parse_policy

    return parse_policy(player).name


def run_player(
    decks: np.ndarray,
    rules: Rules | str,
    player: str,
    *,
    seed: int,
    indices: np.ndarray,
    want_lines: bool = False,
    node_limit: int | None = None,
) -> dict[str, object]:
    """Play (or solve) every deck; see the module docstring for the columns.

    ``seed`` and ``indices`` (the deal index of each deck) key every random
    choice a policy makes, so a row depends only on (seed, deal, variant, player).
    """
    rules = rules_by_name(rules)
    decks = np.ascontiguousarray(decks, dtype=np.uint8)
    indices = np.asarray(indices, dtype=np.int64)
    if is_solver(player):
        from .solver import solve_batch

        res = solve_batch(decks, solver_rules(player, rules), node_limit=node_limit, want_lines=True)
        lines = list(res.lines)
        if not want_lines:
            lines = [ln if w else None for ln, w in zip(lines, res.won)]
        return {
            "score": np.asarray(res.max_score, dtype=np.int8),
            "won": np.asarray(res.won, dtype=bool),
            "moves": np.asarray(res.moves, dtype=np.int16),
            "decisions": np.asarray(res.decisions, dtype=np.int16),
            "nodes": np.asarray(res.nodes, dtype=np.int64),
            "status": list(res.status),
            "line": lines,
        }
    if player.startswith(PIMC_PREFIX + ":") or player == PIMC_PREFIX:
        from .lookahead import pimc_batch

        res = pimc_batch(decks, rules, player, seed=seed, indices=indices, want_lines=want_lines)
    else:
        from .batch import play_batch

        res = play_batch(decks, rules, player, seed=seed, indices=indices, want_lines=want_lines)
    return {
        "score": np.asarray(res.score, dtype=np.int8),
        "won": np.asarray(res.won, dtype=bool),
        "moves": np.asarray(res.moves, dtype=np.int16),
        "decisions": np.asarray(res.decisions, dtype=np.int16),
        "nodes": None,
        "status": None,
        "line": list(res.lines) if want_lines and res.lines is not None else None,
    }
