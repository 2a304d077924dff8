"""Benchmark figures of the exact solver (``pimc/standard`` lives in pipeline.bench_pimc).

Each ``solve/<rules>`` figure solves fresh seeded deals with ``solve_batch``
(one compiled call per chunk) after a warm-up call that compiles; the rate is
decks per second on one thread, and ``extra`` gives the positions searched per
deck (median, p99, max) and the transposition table's size, which bounds the
memory whatever the deal.
"""

from __future__ import annotations

import time

import numpy as np

from engine_rs_free.deals import deal_batch

from .bench import Measurement, figure

SEED = 2026


def _nodes_extra(nodes: np.ndarray) -> dict[str, float | int | str]:
    return {
        "nodes_median": float(np.median(nodes)),
        "nodes_p99": round(float(np.percentile(nodes, 99)), 1),
        "nodes_max": int(nodes.max()),
    }


def measure_solver(rules_name: str, *, chunk: int, min_seconds: float = 2.0, max_decks: int = 100_000) -> Measurement:
    """Solve chunks of fresh deals until ``min_seconds`` pass; decks/s plus node statistics."""
    from engine_rs_free.rules import rules_by_name
    from engine_rs_free.solver import BUCKET, solve_batch, tt_bits_for

    rules = rules_by_name(rules_name)
    solve_batch(deal_batch(SEED + 1, 0, 2), rules, want_lines=False)  # compile / load the cache
    start_index = 0
    all_nodes = []
    items = 0
    t0 = time.perf_counter()
    while True:
        decks = deal_batch(SEED, start_index, chunk)
        res = solve_batch(decks, rules, want_lines=False)
        all_nodes.append(res.nodes)
        items += chunk
        start_index += chunk
        elapsed = time.perf_counter() - t0
        if elapsed >= min_seconds or items >= max_decks:
            break
    nodes = np.concatenate(all_nodes)
    extra = _nodes_extra(nodes)
    extra["tt_mib"] = ((1 << tt_bits_for(rules)) * BUCKET * 16) // (1 << 20)
    return Measurement(rate=items / elapsed, unit="decks/s", items=items, seconds=elapsed, extra=extra)


@figure("solve/standard")
def bench_solve_standard() -> Measurement:
    return measure_solver("standard", chunk=20)


@figure("solve/standard+sensible")
def bench_solve_sensible() -> Measurement:
    return measure_solver("standard+sensible", chunk=100)


@figure("solve/standard+sensible+leftmost+must_fill")
def bench_solve_restricted() -> Measurement:
    return measure_solver("standard+sensible+leftmost+must_fill", chunk=500)


@figure("solve/strict")
def bench_solve_strict() -> Measurement:
    return measure_solver("strict", chunk=5000)


@figure("solve/easy")
def bench_solve_easy() -> Measurement:
    return measure_solver("easy", chunk=2, min_seconds=5.0)


@figure("solve/reverse")
def bench_solve_reverse() -> Measurement:
    return measure_solver("reverse", chunk=20)
