"""Benchmark figure of the whole pipeline: a 1,000,000-deal greedy run on a local Ray.

``acesup bench --pipeline`` (not in the default set: it takes a while). It
compares the run's wall time with the bare batch engine on the same cores:

- bare engine: the same batches as Ray tasks that only deal and play (no
  table, Parquet, checksum, file or manifest) on the same Ray, alternated with
  the pipeline for three rounds, best of each kept (the machine is shared:
  this pairs the conditions); also ``deal_batch`` + ``play_batch`` on one thread here, times
  the number of cores (the ideal parallel rate);
- pipeline: ``execute_run`` of 1,000,000 deals of ``standard`` × ``greedy``
  into a fresh data folder (best of three rounds), Ray already started and its workers warmed up by a
  small run first (cluster start-up and Numba compilation are one-time costs,
  kept out of the timing as the per-core figures keep compilation out).

Overhead = pipeline wall time / bare engine wall time - 1 (target: under 15%).
Also reported: the workers' own split (engine seconds of all batches vs their
total seconds: the rest is building tables, Parquet, checksums, writing) and
the driver's peak resident memory (target: under 1 GiB).
"""

from __future__ import annotations

import os
import resource
import shutil
import sys
import tempfile
import time

from .bench import Measurement, figure

DEALS = 1_000_000
BATCH = 50_000
ROUNDS = 3
VARIANT = "standard"
POLICY = "greedy"


def bare_engine_rate(n: int = 100_000, rounds: int = 3) -> float:
    """Deals per second of deal_batch + play_batch on one thread (best of ``rounds``)."""
    import numpy as np

    from engine_rs_free.deals import deal_batch
    from engine_rs_free.players import play

    def once(start: int) -> float:
        t = time.perf_counter()
        decks = deal_batch(7, start, n)
        play(decks, VARIANT, POLICY, seed=7, indices=np.arange(start, start + n))
        return time.perf_counter() - t

    once(0)  # compilation
    return n / min(once(n * (k + 1)) for k in range(rounds))


def bare_fanout_seconds(deals: int, batch: int) -> float:
    """Wall seconds of the batches as bare Ray tasks (deal + play, nothing kept)."""
    import ray

    @ray.remote(num_cpus=1)
    def bare(first: int, n: int) -> int:
        import numpy as np

        from engine_rs_free.deals import deal_batch
        from engine_rs_free.players import play

        res = play(deal_batch(2026, first, n), VARIANT, POLICY, seed=2026, indices=np.arange(first, first + n))
        return len(res)

    t = time.perf_counter()
    done = sum(ray.get([bare.remote(first, min(batch, deals - first)) for first in range(0, deals, batch)]))
    assert done == deals
    return time.perf_counter() - t


@figure("pipeline/greedy-1M", default=False)
def bench_pipeline() -> Measurement:
    import ray

    from .execute import execute_run
    from .manifest import read_manifest
    from .spec import load_spec
    from .storage import DataStore

    cores = os.cpu_count() or 1
    single = bare_engine_rate()
    started = False
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=cores, include_dashboard=False, log_to_driver=False,
                 logging_level="warning")
        started = True
    tmp = tempfile.mkdtemp(prefix="acesup-bench-")
    try:
        warm = load_spec(None, seed=1, deals=cores * 2 * 5000, variants=VARIANT, policies=POLICY,
                         batch_size=5000, data=os.path.join(tmp, "warm"))
        execute_run(warm, progress=False)
        bare_fanout_seconds(cores * 5000, 5000)  # warm the bare task's workers too
        # Alternate bare and pipeline rounds and keep the best of each: the machine is shared,
        # and the best round is the one least disturbed by other work.
        bares, walls = [], []
        for r in range(ROUNDS):
            spec = load_spec(None, seed=2026, start=r * DEALS, deals=DEALS, variants=VARIANT,
                             policies=POLICY, batch_size=BATCH, data=os.path.join(tmp, f"run{r}"))
            bares.append(bare_fanout_seconds(DEALS, BATCH))
            t = time.perf_counter()
            summary = execute_run(spec, progress=False)
            walls.append(time.perf_counter() - t)
            assert summary.rows_written == DEALS
            if walls[-1] == min(walls):
                m = read_manifest(DataStore(spec.data), spec.run_id)
                worker_total = sum(b.seconds for b in m.batches)
                worker_engine = sum(b.engine_seconds for b in m.batches)
                size = sum(b.bytes for b in m.batches)
            shutil.rmtree(spec.data, ignore_errors=True)
        wall, bare = min(walls), min(bares)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if started:
            ray.shutdown()
    rate = DEALS / wall
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return Measurement(
        rate=rate, unit="deals/s", items=DEALS, seconds=wall,
        extra={
            "cores": cores,
            "bare_engine_deals_per_s": round(DEALS / bare),
            "ratio_to_engine": round(bare / wall, 3),
            "overhead_pct": round(100 * (wall / bare - 1), 1),
            "ideal_deals_per_s": round(single * cores),
            "worker_write_pct": round(100 * (worker_total / worker_engine - 1), 1) if worker_engine else 0,
            "batches": summary.batches_done,
            "parquet_MB": round(size / 1e6, 1),
            "driver_peak_rss_MiB": round(peak_rss / 2**20),
        },
    )
