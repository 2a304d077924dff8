"""acesup serve: run the nightly flow on a schedule (a long-running Prefect flow.serve)."""

from __future__ import annotations

from pipeline.commands import nightly

NAME = "serve"
HELP = "serve the nightly flow on a cron schedule (default 02:00 local time) until stopped"
DESCRIPTION = """\
Serve the nightly deployment of the flow (the same as 'acesup nightly --now',
see its help) with Prefect's flow.serve: a long-running process that starts
a run at every tick of the cron schedule, each in its own subprocess, until
you stop it (Ctrl-C). Scheduling needs a Prefect API: the one PREFECT_API_URL
names, or one already on 127.0.0.1:PORT, or else this command starts
'prefect server start' itself for as long as it runs; watch the runs, their
logs and artifacts in its UI at http://127.0.0.1:PORT. 'prefect deployment
run nightly-odds/nightly' starts a run outside the schedule.

example:
  acesup serve
  acesup serve --cron "30 1 * * *" --timezone Europe/Paris --deals-per-night 1000000
  acesup serve --spec nightly.toml --data s3://bucket/acesup --ray-address 10.0.0.5:6379
"""


def add_arguments(p):
    from flows.deployments import DEFAULT_CRON
    from flows.runtime import DEFAULT_PORT

    p.add_argument("--cron", default=DEFAULT_CRON, metavar="EXPR",
                   help=f"cron schedule, 5 fields (default {DEFAULT_CRON!r}: 02:00 every day)")
    p.add_argument("--timezone", metavar="TZ", help="IANA time zone of the schedule (default: this machine's)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port of the local Prefect server if one is started (default {DEFAULT_PORT})")
    nightly.add_arguments(p, now_flag=False)


def run(args) -> int:
    import sys

    from flows.runtime import prefect_api, quiet_defaults

    nightly.check_arguments(args)
    quiet_defaults()
    from flows.deployments import DEPLOYMENT_NAME, FLOW_NAME, local_timezone, nightly_parameters, nightly_schedule, serve_nightly

    tz = args.timezone or local_timezone()
    nightly_schedule(args.cron, tz)  # a bad expression or zone fails here, before any server starts
    params = nightly_parameters(spec_file=args.spec, deals_per_night=args.deals_per_night,
                                ray_address=args.ray_address, data=args.data)
    with prefect_api(args.port) as url:
        ui = url[:-len("/api")] if url.endswith("/api") else url
        print(f"acesup serve: {FLOW_NAME}/{DEPLOYMENT_NAME} on cron {args.cron!r} ({tz}); "
              f"Prefect API {url} (UI {ui}); Ctrl-C stops", file=sys.stderr, flush=True)
        serve_nightly(cron=args.cron, timezone=tz, parameters=params)
    return 0
