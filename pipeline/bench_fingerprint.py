"""Benchmark figure of the run-start check: fingerprinting every pair of the embedded default spec.

``acesup bench --only fingerprint/default-spec`` (not in the default set). Every
variant × policy the default run writes (30 pairs) is fingerprinted on one
core in this process (pipeline.fingerprint.compute, each pair's default deck
set), after one warm-up round that compiles (or loads the compiled cache);
the rate is pairs per second, and the table shows the core-seconds of the
whole check and its slowest pair. A run does the same work as Ray tasks spread
over the cluster, so its wall time is about these core-seconds / cores.
"""

from __future__ import annotations

import time

from .bench import Measurement, figure


@figure("fingerprint/default-spec", default=False)
def bench_fingerprint() -> Measurement:
    from .fingerprint import compute
    from .spec import default_spec

    pairs = list(default_spec().requested())
    for v, p in pairs:
        compute(v, p)  # compile or load the cache: a one-time cost of a worker process
    seconds = {}
    for v, p in pairs:
        t = time.perf_counter()
        compute(v, p)
        seconds[(v, p)] = time.perf_counter() - t
    total = sum(seconds.values())
    (sv, sp), slow = max(seconds.items(), key=lambda kv: kv[1])
    return Measurement(rate=len(pairs) / total, unit="pairs/s", items=len(pairs), seconds=total,
                       extra={"core_seconds": round(total, 2), "pairs": len(pairs),
                              "slowest": f"{sv}/{sp.partition(',')[0]}:{slow:.2f}s"})
