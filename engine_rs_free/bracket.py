"""The two ends of the honest bracket as players, for the pipeline (one entry each in a player registry).

``adp:…`` (the lower end, ``adp.py``) and ``bound:…`` (the upper end,
``bound.py``). ``is_bracket_player(name)`` says whether a name is one of them,
``canonical_bracket_player(name)`` spells it canonically, and
``run_bracket_player`` plays a batch and returns the columns of
``pipeline.schema`` (as ``runner.run_player`` does) plus ``value``: the per-deal
penalised value, a float (the bound's value for ``bound``; for ``adp``, the
control-variate estimate ``1{won} - z`` of its win rate, see docs/bracket.md).
"""

from __future__ import annotations

import numpy as np

from . import adp, bound

KINDS = {adp.ADP_KIND: (adp.parse_adp, adp.play), bound.BOUND_KIND: (bound.parse_bound, bound.play)}


def _kind(name: str) -> str:
    return str(name).strip().lower().partition(":")[0].strip()


def is_bracket_player(name: str) -> bool:
    """True for ``adp…`` and ``bound…`` names."""
    return _kind(name) in KINDS


def canonical_bracket_player(name: str) -> str:
    """The canonical spelling (every parameter spelled out); ValueError naming the fix for a bad name."""
    parse, _ = KINDS[_kind(name)]
    return parse(name).name


def run_bracket_player(decks, rules, player: str, *, seed: int, indices, want_lines: bool = False) -> dict:
    """Play a batch with a bracket player; the columns of ``runner.run_player`` plus ``value`` (float64[N])."""
    kind = _kind(player)
    parse, play = KINDS[kind]
    spec = parse(player)
    if kind == adp.ADP_KIND:
        res = play(decks, rules, spec, seed=seed, indices=indices, want_lines=want_lines)
        lines = res.lines
        nodes = None
    else:
        res = play(decks, rules, spec, seed=seed, indices=indices)
        lines = None
        nodes = np.asarray(res.nodes, dtype=np.int64)
    return {
        "score": np.asarray(res.score, dtype=np.int8),
        "won": np.asarray(res.won, dtype=bool),
        "moves": np.asarray(res.moves, dtype=np.int16),
        "decisions": np.asarray(res.decisions, dtype=np.int16),
        "nodes": nodes,
        "status": None,
        "line": lines,
        "value": np.asarray(res.value, dtype=np.float64),
    }
