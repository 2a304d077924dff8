"""Benchmark figures of the honest bracket: ``bracket/adp/<variant>`` and ``bracket/bound/<variant>``.

Games (deals) per second on one core after compilation, for the default ``adp`` and
``bound`` players (docs/bracket.md) on standard and strict deals of seed 2026, and for
both with the look-ahead models w3 and w4 on standard (``bracket/adp-w3/standard``,
``bracket/bound-w3/standard``, ``bracket/adp-w4/standard``, ``bracket/bound-w4/standard``); the bound's table rows also show the positions it expands
per deal. Not part of a bare ``acesup bench`` (the bound takes seconds a deal):
``acesup bench --only bracket/bound/standard``.
"""

from __future__ import annotations

import numpy as np

from engine_rs_free.deals import deal_batch

from .bench import Measurement, figure, time_rate

BENCH_SEED = 2026


def _bench(kind: str, variant: str, per_step: int, min_seconds: float, model: str = "") -> Measurement:
    from engine_rs_free import adp, bound

    decks = deal_batch(BENCH_SEED, 0, 400)
    state = {"next": 0, "nodes": 0, "games": 0}

    def step() -> int:
        rows = (state["next"] + np.arange(per_step)) % len(decks)
        idx = rows.astype(np.int64)
        player = f"{kind}:w={model}" if model else kind
        if kind == "adp":
            adp.play(decks[rows], variant, player, seed=BENCH_SEED, indices=idx)
        else:
            res = bound.play(decks[rows], variant, player, seed=BENCH_SEED, indices=idx)
            state["nodes"] += int(res.nodes.sum())
        state["next"] += per_step
        state["games"] += per_step
        return per_step

    m = time_rate(step, min_seconds=min_seconds)
    m.unit = "deals/s"
    m.extra["s/deal"] = round(1.0 / m.rate, 4) if m.rate else float("nan")
    if kind == "bound":
        m.extra["positions/deal"] = round(state["nodes"] / max(state["games"], 1))
    return m


for _kind, _variant, _n, _secs, _model in (("adp", "standard", 4, 5.0, ""), ("adp", "strict", 50, 3.0, ""),
                                           ("bound", "standard", 2, 10.0, ""), ("bound", "strict", 50, 3.0, ""),
                                           ("adp", "standard", 2, 10.0, "w3"), ("bound", "standard", 1, 60.0, "w3"),
                                           ("adp", "standard", 2, 10.0, "w4"), ("bound", "standard", 1, 60.0, "w4")):
    figure(f"bracket/{_kind}{'-' + _model if _model else ''}/{_variant}", default=False)(
        lambda k=_kind, v=_variant, n=_n, s=_secs, m=_model: _bench(k, v, n, s, m))
