"""The nightly deployment: ``nightly_odds`` on a cron schedule, served or deployed.

Two ways to schedule it, both documented in the README:

- one machine, no Prefect server to run: ``acesup serve`` calls ``serve_nightly``,
  a long-running ``flow.serve`` of this deployment (02:00 local time by default);
- a team with a Prefect server: ``prefect deploy`` reads ``prefect.yaml`` at the
  repository root (same flow, same schedule, same parameters) for a process work
  pool, and ``prefect worker start --pool acesup`` runs the flows.

The entry point is the installed module (``flows.nightly:nightly_odds``), not a
file path, so it loads the same from any working directory.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DEPLOYMENT_NAME = "nightly"
FLOW_NAME = "nightly-odds"
ENTRYPOINT = "flows.nightly:nightly_odds"
DEFAULT_CRON = "0 2 * * *"
TAGS = ["acesup"]
DESCRIPTION = ("Each night: extend the standing acesup run by the next block of deals on Ray, "
               "verify it, refresh the SQL catalog and the report, publish the headline odds.")


def local_timezone() -> str:
    """The IANA name of this machine's time zone (``Europe/Paris``); ``UTC`` if unknown."""
    try:
        from tzlocal import get_localzone_name

        name = get_localzone_name()
    except Exception:  # tzlocal missing or the zone unreadable: schedule in UTC, say so
        name = None
    return name or "UTC"


def nightly_parameters(spec_file: str | None = None, deals_per_night: int | None = None,
                       ray_address: str | None = None, data: str | None = None) -> dict[str, Any]:
    """The flow parameters of the deployment (every parameter of ``nightly_odds``, None = its default)."""
    return {"spec_file": spec_file, "deals_per_night": deals_per_night,
            "ray_address": ray_address, "data": data}


def nightly_schedule(cron: str = DEFAULT_CRON, timezone: str | None = None):
    """A Prefect cron schedule; a bad expression or time zone raises UserError naming it."""
    from prefect.schedules import Cron

    from pipeline.errors import UserError

    tz = timezone or local_timezone()
    try:
        ZoneInfo(tz)
    except (ValueError, ZoneInfoNotFoundError):
        raise UserError(f"unknown time zone --timezone {tz!r}; give an IANA name such as 'Europe/Paris' "
                        f"or 'UTC'") from None
    try:
        return Cron(cron, timezone=tz)
    except ValueError as exc:
        raise UserError(f"bad schedule --cron {cron!r} --timezone {tz!r}: {str(exc).splitlines()[0]}; "
                        f"give a 5-field cron expression (e.g. '0 2 * * *') and an IANA time zone "
                        f"(e.g. 'Europe/Paris')") from None


def nightly_deployment(*, cron: str = DEFAULT_CRON, timezone: str | None = None,
                       parameters: dict[str, Any] | None = None, name: str = DEPLOYMENT_NAME):
    """The nightly deployment as a Prefect RunnerDeployment (what ``acesup serve`` serves)."""
    from prefect.deployments.runner import EntrypointType

    from flows.nightly import nightly_odds

    return nightly_odds.to_deployment(
        name=name,
        schedules=[nightly_schedule(cron, timezone)],
        parameters=parameters if parameters is not None else nightly_parameters(),
        description=DESCRIPTION,
        tags=TAGS,
        entrypoint_type=EntrypointType.MODULE_PATH,
    )


def serve_nightly(*, cron: str = DEFAULT_CRON, timezone: str | None = None,
                  parameters: dict[str, Any] | None = None, name: str = DEPLOYMENT_NAME) -> None:
    """Serve the nightly deployment until interrupted (runs each scheduled night in a subprocess)."""
    from prefect.deployments.runner import EntrypointType

    from flows.nightly import nightly_odds

    nightly_odds.serve(
        name=name,
        schedules=[nightly_schedule(cron, timezone)],
        parameters=parameters if parameters is not None else nightly_parameters(),
        description=DESCRIPTION,
        tags=TAGS,
        entrypoint_type=EntrypointType.MODULE_PATH,
        # One night at a time: two drivers on one data folder would wait on its lock.
        limit=1,
    )
