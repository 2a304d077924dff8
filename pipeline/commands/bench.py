"""acesup bench: throughput per core."""

from __future__ import annotations

import json
import os

NAME = "bench"
HELP = "measure throughput on one core (decks per second) after compilation"
DESCRIPTION = """\
Measure throughput on one core, after Numba compilation, on decks generated
before timing starts. Prints a table, or with --json one object mapping each
figure's name to its rate.

With --history N it measures instead what a night costs on a data folder that
already holds N rows (pipeline/bench_history.py): it builds the folder (real
nomove and greedy games, aggregated and compacted), then times a night of
--night games phase by phase (plan, play on Ray, verify, aggregate, compact,
catalog, report) next to the same night on an empty folder, plus 'acesup
report' and an 'acesup sql' count over every row as commands, and prints a
Markdown table. The folders are deleted afterwards (--keep keeps them).
10^8 rows take about 1 GB of disk and several minutes to build.

example:
  acesup bench --only deal,play/greedy
  acesup bench --json > bench.json
  nice -n 15 acesup bench --history 10000000
  nice -n 15 acesup bench --history 100000000 --night 200000 --data /srv/scratch
"""


def add_arguments(p):
    p.add_argument("--only", metavar="NAMES", help="comma-separated figure names (see --list)")
    p.add_argument("--json", action="store_true", help="print one JSON object {name: rate}")
    p.add_argument("--list", action="store_true", help="list the figure names and exit")
    p.add_argument("--pipeline", action="store_true",
                   help="also run the whole-pipeline figure (a 1,000,000-deal greedy run on Ray)")
    p.add_argument("--history", type=int, metavar="N",
                   help="time a night on a folder of N rows of history against an empty folder (see above)")
    p.add_argument("--night", type=int, default=200_000, metavar="GAMES",
                   help="with --history: games the measured night adds (default 200000)")
    p.add_argument("--data", metavar="DIR", help="with --history: where to build the folders (default: a temp folder)")
    p.add_argument("--keep", action="store_true", help="with --history: keep the folders")


def run(args) -> int:
    if args.history is not None:
        return _history(args)
    # One core: the figures are per-core rates.
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    from pipeline.bench import load_figures
    from pipeline.errors import UserError
    from pipeline.warm import expire_for_new_sources

    # edited sources: no figure may time a kernel compiled from the old ones (pipeline/warm.py)
    expire_for_new_sources()

    figures = load_figures()
    if args.list:
        for name, (_, default) in figures.items():
            print(name if default else f"{name} (not in the default set)")
        return 0
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in figures]
        if unknown:
            raise UserError(f"unknown figure(s) {', '.join(unknown)}; known: {', '.join(figures)}")
    else:
        names = [n for n, (_, default) in figures.items() if default]
        if args.pipeline:
            names += [n for n in figures if n.startswith("pipeline") and n not in names]
    results = {}
    for name in names:
        m = figures[name][0]()
        results[name] = m
        if not args.json:
            extra = "  ".join(f"{k}={v}" for k, v in m.extra.items())
            # three significant figures below 10 a second (the w3 bound's 0.046 would print as 0.0)
            rate = f"{m.rate:>14,.1f}" if m.rate >= 10 else f"{m.rate:>14.3g}"
            print(f"{name:<36} {rate} {m.unit:<8} {extra}", flush=True)
    if args.json:
        print(json.dumps({name: round(m.rate, 3) for name, m in results.items()}))
    return 0


def _history(args) -> int:
    import sys

    from pipeline.bench_history import bench_history, format_table
    from pipeline.errors import UserError

    if args.history < 2 or args.night < 2 or args.history % 2 or args.night % 2:
        raise UserError(f"--history {args.history} and --night {args.night} must be even numbers of rows, "
                        f"at least 2 (each is split between the two players)")

    def progress(msg):
        print(f"acesup bench: {msg}", file=sys.stderr, flush=True)

    empty, full = bench_history(args.history, args.night, root=args.data, keep=args.keep, progress=progress)
    if args.json:
        print(json.dumps({"history_rows": args.history, "night_games": args.night,
                          "empty": {**empty.seconds, "bookkeeping": empty.bookkeeping,
                                    "report_command": empty.report_command, "sql_command": empty.sql_command,
                                    "catalog_bytes": empty.catalog_bytes},
                          "history": {**full.seconds, "bookkeeping": full.bookkeeping,
                                      "report_command": full.report_command, "sql_command": full.sql_command,
                                      "catalog_bytes": full.catalog_bytes}}))
    else:
        print(format_table(args.history, empty, full))
    return 0
