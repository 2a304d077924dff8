"""Benchmark figures of the engine: dealing, the scalar game, the batch engine."""

from __future__ import annotations

from engine_rs_free.deals import deal_batch

from .bench import Measurement, figure, time_rate


@figure("deal")
def bench_deal() -> Measurement:
    n = 200_000
    state = {"start": 0}

    def step() -> int:
        deal_batch(2026, state["start"], n)
        state["start"] += n
        return n

    return time_rate(step)
