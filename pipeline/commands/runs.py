"""acesup runs: list the runs in a data folder and their progress."""

from __future__ import annotations

NAME = "runs"
HELP = "list the runs in the data folder with their progress"
DESCRIPTION = """\
One line per run in DATA/runs/: run id, state, games present of games
requested (counting files of any run, since keys are unique across the
folder), batches done/pending/failed, seed and start, variants and policies.

example:
  acesup runs
  acesup runs --data /mnt/shared/acesup-data --json
"""


def add_arguments(p):
    p.add_argument("--data", metavar="PATH", default="./acesup-data", help="data folder or URI (default ./acesup-data)")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")


def run(args) -> int:
    import json
    from dataclasses import asdict

    from pipeline.manifest import list_runs

    runs = list_runs(args.data)
    if args.json:
        print(json.dumps([asdict(r) for r in runs], indent=1))
        return 0
    if not runs:
        print(f"no runs in {args.data} (start one with 'acesup run')")
        return 0
    print(f"{'run':<12}  {'state':<11} {'games':>25} {'done':>6} {'pend':>5} {'fail':>5}  {'updated':<20} "
          f"seed/start  variants x policies")
    for r in runs:
        games = f"{r.covered_rows:,}/{r.requested_rows:,} {r.fraction:6.1%}"
        print(f"{r.run_id:<12}  {r.state:<11} {games:>25} {r.batches_done:>6} {r.batches_pending:>5} "
              f"{r.batches_failed:>5}  {r.updated:<20} {r.seed}/{r.start}  "
              f"{','.join(r.variants)} x {','.join(r.policies)}")
        if r.error:
            print(f"{'':<14}error: {r.error}")
    return 0
