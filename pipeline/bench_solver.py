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


def measure_solver(rules_name: str, *, decks: int, chunk: int) -> Measurement:
    """Solve the first ``decks`` deals of the bench seed, in chunks; decks/s plus node statistics.

    Node counts are heavy-tailed (a few deals need 100 times the median), so
    every run solves the same fixed deals: figures compare across runs and
    machines. ``cpu_rate`` is decks per second of this process's CPU time.
    """
    from engine_rs_free.rules import rules_by_name
    from engine_rs_free.solver import BUCKET, solve_batch, tt_bits_for

    rules = rules_by_name(rules_name)
    # compile / load the cache (capped: a deal with optional discards can take 10^8 positions)
    solve_batch(deal_batch(SEED + 1, 0, 2), rules, want_lines=False, node_limit=10_000)
    all_nodes = []
    # the decks are made before the clock starts (acesup bench --help): the figure is the solver's
    chunks = [deal_batch(SEED, start, min(chunk, decks - start)) for start in range(0, decks, chunk)]
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    for batch in chunks:
        res = solve_batch(batch, rules, want_lines=False)
        all_nodes.append(res.nodes)
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    nodes = np.concatenate(all_nodes)
    extra = _nodes_extra(nodes)
    extra["tt_mib"] = round(((1 << tt_bits_for(rules)) * BUCKET * 16) / (1 << 20), 2)
    extra["cpu_rate"] = round(decks / cpu, 1) if cpu > 0 else 0
    return Measurement(rate=decks / elapsed, unit="decks/s", items=decks, seconds=elapsed, extra=extra)


# rule set -> (deals solved, deals per solve_batch call): about 2-5 s each on one core
SOLVER_FIGURES = {
    "standard": (500, 50),
    "standard+sensible": (3_000, 500),
    "standard+sensible+leftmost+must_fill": (20_000, 5_000),
    "strict": (50_000, 10_000),
    "easy": (20, 2),
    "reverse": (500, 50),
    # optional discards (optional.py, pending.py): far more positions a deal (docs/solver.md, "Optional
    # discards"), so fewer deals; 20, not the 4 of before Dec 4 2026, whose cost was one deal (deal 2:
    # value 37, no cap), one of the two in 60 where the pending search is slower than the plain one:
    # a figure of 4 decks said the opposite of what a night of them costs (10-25 s a figure)
    "standard+optional": (20, 1),
    "strict+optional": (20, 10),
    "reverse+optional": (20, 1),
}

for _rules, (_decks, _chunk) in SOLVER_FIGURES.items():
    figure(f"solve/{_rules}")(lambda _r=_rules, _d=_decks, _c=_chunk: measure_solver(_r, decks=_d, chunk=_c))


DECK_FILE_DECKS = 50_000


@figure("solve/strict-deck-file")
def measure_deck_file() -> Measurement:
    """``acesup solve --decks FILE --format jsonl`` on strict deals, as a ratio to ``solve_batch`` on the same decks.

    Both are timed in this process (CPU time, output to a temporary file), so
    the ratio holds on a busy machine too; ``lines_ratio`` is the same with
    ``--lines``. Issue 16's target: ``engine_ratio`` of at least 0.6.
    """
    import contextlib
    import tempfile
    from pathlib import Path

    from engine_rs_free.cards import format_deck
    from engine_rs_free.solver import solve_batch

    from .cli import main

    decks = deal_batch(SEED, 0, DECK_FILE_DECKS)
    with tempfile.TemporaryDirectory(prefix="acesup-bench-") as tmp:
        path = Path(tmp) / "decks.txt"
        path.write_text("".join(format_deck(d) + "\n" for d in decks))

        def engine() -> float:
            cpu0 = time.process_time()
            for start in range(0, len(decks), 4096):
                solve_batch(decks[start:start + 4096], "strict", want_lines=False)
            return time.process_time() - cpu0

        def command(*extra: str) -> float:
            with open(Path(tmp) / "out.jsonl", "w") as out, contextlib.redirect_stdout(out):
                cpu0 = time.process_time()
                rc = main(["solve", "--decks", str(path), "--variant", "strict", "--format", "jsonl", *extra])
                cpu = time.process_time() - cpu0
            assert rc == 0, f"acesup solve --decks exited {rc}"
            return cpu

        solve_batch(decks[:2], "strict", want_lines=True)  # compile / load the cache
        engine_cpu = min(engine() for _ in range(2))
        t0 = time.perf_counter()
        file_cpu = min(command() for _ in range(2))
        elapsed = (time.perf_counter() - t0) / 2
        lines_cpu = command("--lines")
    return Measurement(rate=len(decks) / file_cpu, unit="decks/s", items=len(decks), seconds=elapsed, extra={
        "engine_rate": round(len(decks) / engine_cpu, 1),
        "engine_ratio": round(engine_cpu / file_cpu, 3),
        "lines_ratio": round(engine_cpu / lines_cpu, 3),
    })
