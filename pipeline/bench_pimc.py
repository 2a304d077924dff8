"""Benchmark figure of the honest sampling player: ``pimc/standard``, games per second for ``pimc:samples=32``.

One thread, after compilation (the warm-up game compiles the sampler and the
solver core, or loads their Numba cache). The figure uses the default inner
restriction (``engine_rs_free.lookahead.DEFAULT_INNER``) and plays through
``players.play``, as a batch of the pipeline does, so it includes each row's
penalised value (``pimc.penalised_values``: about 3 ms a standard game since
Dec 6 2026); the table also shows the seconds per game and the decision points
per game.
"""

from __future__ import annotations

import numpy as np

from engine_rs_free.deals import deal_batch

from .bench import Measurement, figure, time_rate

BENCH_SEED = 2026
PIMC_PLAYER = "pimc:samples=32"


@figure("pimc/standard")
def bench_pimc_standard() -> Measurement:
    """pimc:samples=32 on standard deals: games per second on one core."""
    from engine_rs_free.players import play

    decks = deal_batch(BENCH_SEED, 0, 400)
    state = {"next": 0, "decisions": 0, "games": 0}

    def step() -> int:
        n = 4
        rows = (state["next"] + np.arange(n)) % len(decks)
        res = play(decks[rows], "standard", PIMC_PLAYER, seed=BENCH_SEED, indices=rows.astype(np.int64))
        state["next"] += n
        state["decisions"] += int(res.decisions.sum())
        state["games"] += n
        return n

    m = time_rate(step, min_seconds=3.0)
    m.unit = "games/s"
    m.extra["s/game"] = round(1.0 / m.rate, 4) if m.rate else float("nan")
    m.extra["decisions/game"] = round(state["decisions"] / max(state["games"], 1), 1)
    return m
