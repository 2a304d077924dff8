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

example:
  acesup bench --only deal,play/greedy
  acesup bench --json > bench.json
"""


def add_arguments(p):
    p.add_argument("--only", metavar="NAMES", help="comma-separated figure names (see --list)")
    p.add_argument("--json", action="store_true", help="print one JSON object {name: rate}")
    p.add_argument("--list", action="store_true", help="list the figure names and exit")
    p.add_argument("--pipeline", action="store_true",
                   help="also run the whole-pipeline figure (a 1,000,000-deal greedy run on Ray)")


def run(args) -> int:
    # One core: the figures are per-core rates.
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    from pipeline.bench import load_figures
    from pipeline.errors import UserError

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
            print(f"{name:<36} {m.rate:>14,.1f} {m.unit:<8} {extra}", flush=True)
    if args.json:
        print(json.dumps({name: round(m.rate, 3) for name, m in results.items()}))
    return 0
