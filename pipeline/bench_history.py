"""``acesup bench --history N``: what a night costs on a folder that already holds N rows.

Builds a data folder with N rows of history (real games of the cheap players
``nomove`` and ``greedy`` on ``standard``, N/2 deals each, played on the local
Ray in large batches, then aggregated and compacted as the nights would have
left them), then times one night that adds a fixed block (``--night`` games,
200,000 by default: the next deals of the same run, in batches of the default
size) phase by phase, next to the same night (the same games) on an empty data
folder, in one run. Phases:

plan      the driver's part of ``execute_run`` before Ray: lock, reconcile, plan
play      the batches on Ray (play, write, record): the night's real work
verify    ``verify_run``: the night's new files read in full, invariants of the rest
aggregate ``update_aggregates``: the night's rows added to the report's tables
compact   ``compact``: the night's batch files merged
catalog   ``build_catalog``
report    ``build_report`` (aggregates already current: catalog, queries, files)

and, after the night: ``acesup report`` and ``acesup sql`` (a count of deals
and wins per variant and player over every row, the README's first example) as
commands in a fresh process, the size of ``acesup.duckdb`` and of the folder.
Bookkeeping is every phase but ``play``. The folders are made under ``--data``
(default: a temporary folder) and deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

SEED = 2026
VARIANT = "standard"
POLICIES = "nomove,greedy"
HISTORY_BATCH = 1_000_000
NIGHT_BATCH = 25_000
PHASES = ("plan", "play", "verify", "aggregate", "compact", "catalog", "report")
SQL = ("SELECT variant, policy, count(*) AS deals, count(*) FILTER (WHERE won) AS wins, "
       "wilson_low(wins, deals) AS low, wilson_high(wins, deals) AS high FROM results GROUP BY ALL ORDER BY ALL")


@dataclass
class Night:
    """Seconds per phase of one night, and facts about the folder after it."""

    seconds: dict[str, float] = field(default_factory=dict)
    rows_before: int = 0
    rows_after: int = 0
    files_after: int = 0
    catalog_bytes: int = 0
    folder_bytes: int = 0
    report_command: float = 0.0
    sql_command: float = 0.0

    @property
    def bookkeeping(self) -> float:
        return sum(v for k, v in self.seconds.items() if k != "play")


def _spec(data: str, start: int, deals: int, batch: int):
    from .spec import load_spec

    return load_spec(None, seed=SEED, start=start, deals=deals, variants=VARIANT, policies=POLICIES,
                     batch_size=batch, data=data)


def _folder_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _timed_command(argv: list[str]) -> float:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pipeline.cli", *argv], capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise RuntimeError(f"acesup {' '.join(argv)} failed: {p.stderr.strip()}")
    return time.perf_counter() - t


def build_history(data: str, rows: int, *, progress=print) -> None:
    """A folder with ``rows`` rows (rows/2 deals of each player), aggregated and compacted."""
    from queries.aggregates import update_aggregates
    from queries.catalog import build_catalog

    from .compact import compact
    from .execute import execute_run
    from .plan import DataLock
    from .storage import DataStore

    deals = rows // 2
    t = time.perf_counter()
    execute_run(_spec(data, 0, deals, HISTORY_BATCH), progress=False)
    progress(f"history: {rows:,} rows played in {time.perf_counter() - t:.0f} s")
    store = DataStore(data)
    with DataLock(store):
        t = time.perf_counter()
        update_aggregates(store)
        progress(f"history: aggregated in {time.perf_counter() - t:.0f} s")
        t = time.perf_counter()
        compact(store, max_bytes=1 << 62)
        progress(f"history: compacted in {time.perf_counter() - t:.0f} s")
    build_catalog(data)


def run_night(data: str, start: int, games: int, *, spec_start: int = 0) -> Night:
    """One night of ``games`` games (deals ``start ..`` of both players), phase by phase."""
    from queries.aggregates import read_state, update_aggregates
    from queries.catalog import build_catalog
    from queries.report import build_report

    from .compact import compact
    from .execute import execute_run
    from .plan import DataLock
    from .storage import DataStore
    from .verify import verify_run

    night = Night()
    store = DataStore(data)
    night.rows_before = read_state(store).total_rows if os.path.isdir(data) else 0
    spec = _spec(data, spec_start, start - spec_start + games // 2, NIGHT_BATCH)
    t = time.perf_counter()
    summary = execute_run(spec, progress=False)
    whole = time.perf_counter() - t
    assert summary.rows_written == games, (summary.rows_written, games)
    night.seconds["plan"] = summary.plan_seconds
    night.seconds["play"] = whole - summary.plan_seconds
    t = time.perf_counter()
    res = verify_run(store, spec.run_id)
    night.seconds["verify"] = time.perf_counter() - t
    assert res.ok, res.problems[:5]
    with DataLock(store):
        t = time.perf_counter()
        update_aggregates(store)
        night.seconds["aggregate"] = time.perf_counter() - t
        t = time.perf_counter()
        compact(store)
        night.seconds["compact"] = time.perf_counter() - t
    t = time.perf_counter()
    build_catalog(data)
    night.seconds["catalog"] = time.perf_counter() - t
    t = time.perf_counter()
    build_report(data)
    night.seconds["report"] = time.perf_counter() - t
    night.rows_after = read_state(store).total_rows
    night.files_after = sum(1 for _ in store.list_files("results"))
    night.catalog_bytes = os.path.getsize(os.path.join(data, "acesup.duckdb"))
    night.folder_bytes = _folder_bytes(data)
    night.report_command = _timed_command(["report", "--data", data, "--quiet"])
    night.sql_command = _timed_command(["sql", "--data", data, SQL])
    return night


def bench_history(rows: int, games: int = 200_000, root: str | None = None, keep: bool = False,
                  progress=print) -> tuple[Night, Night]:
    """(the night on an empty folder, the same night on a folder of ``rows`` rows): see the module docstring."""
    from .execute import connect_ray

    if rows < 2 or games < 2 or games % 2:
        raise ValueError(f"--history {rows} and --night {games} must be even and at least 2")
    base = tempfile.mkdtemp(prefix="acesup-bench-history-", dir=root)
    started = connect_ray(None)
    try:
        warm = os.path.join(base, "warm")
        run_night(warm, 0, 20_000)  # Ray workers up, Numba compiled: one-time costs kept out
        shutil.rmtree(warm)
        history = os.path.join(base, "history")
        build_history(history, rows, progress=progress)
        deals = rows // 2
        empty = run_night(os.path.join(base, "empty"), deals, games, spec_start=deals)
        progress(f"empty folder: {empty.bookkeeping:.1f} s of bookkeeping")
        full = run_night(history, deals, games)
        progress(f"history: {full.bookkeeping:.1f} s of bookkeeping")
        return empty, full
    finally:
        if started:
            import ray

            ray.shutdown()
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            progress(f"kept {base}")


def format_table(rows: int, empty: Night, full: Night) -> str:
    """The measured night as a Markdown table: empty folder, history, ratio."""
    def ratio(a, b):
        return f"{b / a:.2f}x" if a > 0 else "-"

    out = [f"| phase (night of {full.rows_after - full.rows_before:,} games) | empty folder | "
           f"{rows:,} rows of history | ratio |", "|---|---:|---:|---:|"]
    for p in PHASES:
        out.append(f"| {p} | {empty.seconds[p]:.2f} s | {full.seconds[p]:.2f} s | {ratio(empty.seconds[p], full.seconds[p])} |")
    out.append(f"| **bookkeeping** (all but play) | {empty.bookkeeping:.2f} s | {full.bookkeeping:.2f} s | "
               f"{ratio(empty.bookkeeping, full.bookkeeping)} |")
    out.append(f"| `acesup report` (command) | {empty.report_command:.2f} s | {full.report_command:.2f} s | "
               f"{ratio(empty.report_command, full.report_command)} |")
    out.append(f"| `acesup sql` count per player over all rows (command) | {empty.sql_command:.2f} s | "
               f"{full.sql_command:.2f} s | {ratio(empty.sql_command, full.sql_command)} |")
    out.append(f"| acesup.duckdb | {empty.catalog_bytes / 1e3:,.0f} kB | {full.catalog_bytes / 1e3:,.0f} kB | |")
    out.append(f"| data files after the night | {empty.files_after} | {full.files_after} | |")
    out.append(f"| data folder | {empty.folder_bytes / 1e6:,.1f} MB | {full.folder_bytes / 1e6:,.1f} MB | |")
    return "\n".join(out)


__all__ = ["Night", "bench_history", "build_history", "format_table", "run_night"]
