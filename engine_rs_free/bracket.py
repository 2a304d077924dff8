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


# -- one registry entry each (engine_rs_free.players) ------------------------------------------
# The registry parses and plans these players like any other; the worker calls run_bracket_player,
# which also returns the value column (PlayResult has none yet).


def _models() -> tuple[str, ...]:
    from importlib import resources

    folder = resources.files("engine_rs_free").joinpath("models")
    names = sorted({p.name[:-4] for p in folder.iterdir() if p.name.endswith(".npz") and "-strict" not in p.name})
    return tuple(names)


def play_registered(decks, rules, spec, *, seed, indices, want_lines=False, node_limit=None):
    """The registry's play function: the columns of run_bracket_player as a players.PlayResult."""
    from .players import PlayResult

    cols = run_bracket_player(decks, rules, spec.name, seed=seed, indices=indices, want_lines=want_lines)
    return PlayResult(cols["score"], cols["won"], cols["moves"], cols["decisions"], cols["nodes"], None,
                      cols["line"])


def _register() -> None:
    from .players import CHOICE, INT, REGISTRY, Param, PlayerKind, register

    if adp.ADP_KIND in REGISTRY:
        return
    models = _models()
    register(PlayerKind(
        adp.ADP_KIND, "engine_rs_free.bracket:play_registered",
        params=(Param("w", CHOICE, adp.PARAMS["w"], choices=models), Param("look", INT, 1, 0, 1),
                Param("samples", INT, 16, 1, 4095), Param("exact", CHOICE, "8", choices=("4", "8")),
                Param("psamples", INT, 32, 1, 4095), Param("pexact", CHOICE, "4", choices=("0", "4", "8"))),
        slow=True,
        summary="the honest bracket's lower end: before each deal, the moves whose position has the highest "
                "expected value W (a fitted model) after the next deal; exact with 8 cards or fewer undealt",
        display=lambda s: "ADP (value model)"))
    register(PlayerKind(
        bound.BOUND_KIND, "engine_rs_free.bracket:play_registered",
        params=(Param("w", CHOICE, bound.DEFAULT_MODEL, choices=("zero", *models)),
                Param("samples", INT, 32, 1, 4095), Param("exact", CHOICE, "4", choices=("0", "4", "8"))),
        slow=True,
        summary="the honest bracket's upper end: a clairvoyant search that pays a penalty for what it sees "
                "(information relaxation); its mean value bounds every honest player's win rate",
        display=lambda s: "upper bound"))


_register()
