"""acesup nightly: run the nightly Prefect flow once, now."""

from __future__ import annotations

NAME = "nightly"
HELP = "run the nightly flow once now: extend the standing run on Ray, verify, catalog, report"
DESCRIPTION = """\
Run the nightly Prefect flow (flows/nightly.py) once, right now, without a
Prefect server (Prefect starts a temporary one for the run): extend the
standing run of the spec by the next block of deals on Ray, verify the
dataset, refresh the SQL catalog DATA/acesup.duckdb, rebuild the report
DATA/report/, and publish Prefect artifacts (headline odds, what changed, a
link to the report). The first run of a spec runs it as given; each later run
adds --deals-per-night deals (default: the spec's deal count); a run that
failed is finished first. With no spec it is the embedded default of
'acesup run' into ./acesup-data/.

To run it every night: 'acesup serve', or a Prefect server with prefect.yaml.

example:
  acesup nightly --now
  acesup nightly --now --spec nightly.toml --deals-per-night 1000000 --data /srv/acesup-data
  acesup nightly --now --ray-address 10.0.0.5:6379 --data s3://bucket/acesup
"""


def add_arguments(p, *, now_flag: bool = True):
    if now_flag:
        p.add_argument("--now", action="store_true", help="run the flow once, now (required)")
    p.add_argument("--spec", metavar="FILE", help="TOML run spec (default: the embedded default of 'acesup run')")
    p.add_argument("--deals-per-night", type=int, metavar="N",
                   help="deals a night adds to the standing run (default: the spec's deal count)")
    p.add_argument("--data", metavar="PATH", help="data folder or URI (default: the spec's, ./acesup-data)")
    p.add_argument("--ray-address", metavar="ADDR",
                   help="join this Ray cluster (default: RAY_ADDRESS, else a local Ray on every core)")


def check_arguments(args):
    """Validate the flow's inputs before Prefect starts: a bad spec fails in a second, on one line."""
    from pipeline.errors import UserError
    from pipeline.spec import load_spec

    if args.deals_per_night is not None and args.deals_per_night < 1:
        raise UserError(f"--deals-per-night {args.deals_per_night} is not positive; give 1 or more")
    return load_spec(args.spec, data=args.data)


def run(args) -> int:
    import sys

    from flows.runtime import quiet_defaults
    from pipeline.errors import UserError

    if not args.now:
        raise UserError("give --now to run the nightly flow once now ('acesup serve' runs it every night)")
    spec = check_arguments(args)
    quiet_defaults()
    from flows.runtime import check_api_or_ephemeral

    api = check_api_or_ephemeral()
    from flows.nightly import nightly_odds
    from flows.summary import headline_lines
    from flows.tasks import DatasetInvalid
    from pipeline.execute import BatchFailedError

    where = f"Prefect API {api}" if api else "Prefect starts a temporary API for this run"
    print(f"acesup nightly: run {spec.run_id} into {spec.data} ({where})", file=sys.stderr, flush=True)
    try:
        result = nightly_odds(spec_file=args.spec, deals_per_night=args.deals_per_night,
                              ray_address=args.ray_address, data=args.data)
    except (BatchFailedError, DatasetInvalid) as exc:
        print(f"acesup nightly: failed: {exc}", file=sys.stderr)
        return 1
    report = result["report"]
    print(f"run {result['run_id']}: {result['deals']:,} deals, {result['rows']:,} games "
          f"({result['rows_written']:,} played now), verified")
    print(f"results: {result['data']}/results/  (Parquet, one row per deal x variant x policy)")
    print(f"catalog: {result['catalog']}  (acesup sql \"SELECT ...\"" +
          ("" if args.data is None else f" --data {args.data}") + ")")
    for key in ("index_html", "report_md", "report_json"):
        if report.get(key):
            print(f"report:  {report[key]}")
    print()
    print("headline odds (95% Wilson intervals):")
    for line in headline_lines(result["headline"]):
        print(f"  {line}")
    return 0
