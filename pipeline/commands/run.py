"""acesup run: play and solve a range of seeded deals on Ray, results to Parquet."""

from __future__ import annotations

NAME = "run"
HELP = "play/solve seeded deals on Ray (local or a cluster) into the Parquet data folder"
DESCRIPTION = """\
Play and solve deals START .. START+DEALS-1 of SEED for every variant x policy,
one row per deal x variant x policy, in Parquet under DATA/results/, with a
manifest per run under DATA/runs/<run id>/. With no arguments it runs the
embedded default (all four variants; nomove, greedy, human; the solver and
the restricted solver on fewer deals; a small pimc sample) in about 10 minutes
on 2 cores. A spec file (TOML, see pipeline/spec.py) sets every field; flags
override it. Re-running skips what the data folder already holds, so a killed
run resumes and a larger --deals computes only the new deals.

By default a local Ray is started on every core; --ray-address (or
RAY_ADDRESS) joins a running cluster instead (its workers must reach DATA,
e.g. a shared folder or s3://...).

example:
  acesup run
  acesup run --deals 100000 --variants standard,strict --policies greedy,solver --batch-size 5000
  acesup run --spec nightly.toml --start 1000000 --ray-address 10.0.0.5:6379
"""


def add_arguments(p):
    p.add_argument("--spec", metavar="FILE", help="TOML spec file (flags override its fields)")
    p.add_argument("--seed", type=int, help="deal seed, 0..2**64-1 (default 2026)")
    p.add_argument("--start", type=int, help="first deal index (default 0)")
    p.add_argument("--deals", type=int, help="number of deals (default 200000; caps may lower it per policy)")
    p.add_argument("--variants", metavar="A,B", help="variants: standard, strict, easy, reverse, X+optional")
    p.add_argument("--policies", metavar="P,Q",
                   help="players: nomove, greedy, human, ..., solver, solver:sensible+leftmost+must_fill, pimc:samples=8")
    p.add_argument("--cap", action="append", metavar="KEY=N",
                   help="fewer deals for a policy or variant/policy, e.g. --cap solver=2000 --cap easy/solver=100")
    p.add_argument("--batch-size", type=int, help="deals per batch (one task, one file)")
    p.add_argument("--data", metavar="PATH", help="data folder or URI (default ./acesup-data)")
    p.add_argument("--lines", action="store_true", default=None, help="store the game line of every row")
    p.add_argument("--node-limit", type=int, help="solver node limit per deal (0 = none)")
    p.add_argument("--ray-address", metavar="ADDR", help="join this Ray cluster (default: RAY_ADDRESS, else a local Ray)")
    p.add_argument("--num-cpus", type=int, help="CPUs of the local Ray (default: every core)")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def _caps(items):
    from pipeline.errors import UserError

    if not items:
        return None
    caps = {}
    for item in items:
        # A policy name may hold '=' (pimc:samples=8): the count follows the last '='.
        key, sep, n = item.rpartition("=")
        if not sep or not key.strip():
            raise UserError(f"--cap {item!r} is not KEY=N; write e.g. --cap solver=2000 or --cap easy/solver=100")
        caps[key.strip()] = n.strip()
    return caps


def run(args) -> int:
    import sys

    from pipeline.errors import UserError
    from pipeline.execute import BatchFailedError, execute_run
    from pipeline.odds import format_win_rates, win_rates
    from pipeline.spec import load_spec

    if args.num_cpus is not None and args.num_cpus < 1:
        raise UserError(f"--num-cpus {args.num_cpus} is not positive; give 1 or more")
    spec = load_spec(
        args.spec, seed=args.seed, start=args.start, deals=args.deals, variants=args.variants,
        policies=args.policies, caps=_caps(args.cap), batch_size=args.batch_size, data=args.data,
        lines=args.lines, node_limit=args.node_limit,
    )
    print(f"acesup run {spec.run_id}: {spec.total_rows():,} games ({len(spec.variants)} variants x "
          f"{len(spec.policies)} policies, deals {spec.start}.. of seed {spec.seed}) into {spec.data}",
          file=sys.stderr, flush=True)
    try:
        s = execute_run(spec, ray_address=args.ray_address, num_cpus=args.num_cpus,
                        progress=False if args.quiet else None)
    except BatchFailedError as exc:
        print(f"acesup run: failed: {exc}", file=sys.stderr)
        return 1
    for q in s.quarantined:
        print(f"acesup run: moved aside a file no manifest vouches for: {q}", file=sys.stderr)
    rate = s.rows_written / s.seconds if s.seconds > 0 else 0.0
    print(f"run {s.run_id}: {s.rows_written:,} games played in {s.batches_done} batches "
          f"({rate:,.0f}/s, {s.seconds:.1f} s); {s.rows_present:,} were already in the data folder")
    print(f"results:  {s.data}/results/  (Parquet, one row per deal x variant x policy)")
    print(f"manifest: {s.data}/runs/{s.run_id}/manifest.json   check it with: acesup verify {s.run_id}"
          + ("" if spec.data == "./acesup-data" else f" --data {spec.data}"))
    print()
    print(format_win_rates(win_rates(spec)))
    return 0
