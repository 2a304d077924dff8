"""Benchmark figures of the engine: dealing, the scalar game, the batch engine."""

from __future__ import annotations

import time

import numpy as np

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


# Batch engine and its scalar twin (engine_rs_free.batch / engine_rs_free.policies). Decks are dealt
# before timing; the first call compiles (or loads the Numba cache) outside the timing.
BENCH_SEED = 2026
PLAY_POLICIES = ("nomove", "random", "greedy", "aces", "human", "lookahead")


@figure("scalar/greedy")
def bench_scalar_greedy() -> Measurement:
    """The scalar reference (policies.play_scalar on game.py), standard, greedy: decks per second."""
    from engine_rs_free.policies import play_scalar

    decks = deal_batch(BENCH_SEED, 0, 2_000)
    state = {"next": 0}

    def step() -> int:
        n = 100
        for k in range(n):
            i = (state["next"] + k) % len(decks)
            play_scalar(decks[i], "standard", "greedy", seed=BENCH_SEED, index=i, want_line=False)
        state["next"] += n
        return n

    return time_rate(step)


def _bench_play(policy: str) -> Measurement:
    from engine_rs_free.batch import play_batch

    n = 100_000 if policy != "lookahead" else 20_000
    decks = deal_batch(BENCH_SEED, 0, n)
    indices = np.arange(n, dtype=np.int64)

    def step() -> int:
        play_batch(decks, "standard", policy, seed=BENCH_SEED, indices=indices)
        return n

    step()  # compile, or load the Numba cache, outside the timing
    cpu = time.process_time()
    m = time_rate(step, warmup=False)
    cpu = time.process_time() - cpu
    m.extra["variant"] = "standard"
    # items per second of this process's CPU time: the per-core rate when the machine is shared
    m.extra["cpu_rate"] = round(m.items / cpu) if cpu > 0 else 0
    return m


for _policy in PLAY_POLICIES:
    figure(f"play/{_policy}")(lambda _p=_policy: _bench_play(_p))
