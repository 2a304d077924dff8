"""``backfill``: run a given spec over a given deal index range, with the nightly flow's steps.

For filling a range the nightly run does not cover (another block of indices,
a new variant or player over past deals) or re-running a night by hand. The
spec's ``start`` and ``deals`` are replaced by the range given; keys already in
the data folder (from any run) are skipped, so a backfill never duplicates a
row and can be stopped and re-run. Steps: run on Ray → verify → catalog →
report → artifacts (``acesup-headline-odds``, ``acesup-backfill-changes``,
``acesup-report``), each a task of flows.tasks.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.nightly import run_steps
from flows.tasks import load_run_spec

CHANGES_KEY = "acesup-backfill-changes"


@flow(name="backfill", log_prints=True,
      description="Run a spec over a given deal index range on Ray, verify, refresh the catalog and "
                  "the report, publish the headline odds.")
def backfill(
    spec_file: str | None = None,
    start: int | None = None,
    deals: int | None = None,
    ray_address: str | None = None,
    data: str | None = None,
) -> dict[str, Any]:
    """Deals ``start .. start+deals-1`` of the spec (default: the spec's own range).

    spec_file:   TOML run spec (default: the embedded default of ``acesup run``)
    start:       first deal index (part of the run id: a backfill range is a run of its own)
    deals:       number of deals (caps of the spec still apply per player)
    ray_address: Ray cluster to join (default: RAY_ADDRESS, else a local Ray)
    data:        data folder or URI (default: the spec's, ``./acesup-data``)
    """
    spec = load_run_spec(spec_file, data, start, deals)
    last = spec.start + spec.deals - 1
    return run_steps(spec, ray_address, title=f"acesup backfill of deals {spec.start:,}..{last:,}: run {spec.run_id}",
                     changes_key=CHANGES_KEY)
