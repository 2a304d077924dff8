"""``nightly_odds``: each night, extend the standing run by the next block of deals.

Steps (each a Prefect task calling one library function, see flows.tasks):
plan tonight's spec (flows.plan: the standing run plus ``deals_per_night``) →
run it on Ray (pipeline.execute_run) → verify tonight's files and the dataset's
invariants (pipeline.verify_run) → add tonight's rows to the aggregates
(queries.aggregates) → compact the files (pipeline.compact) → refresh the SQL
catalog (queries.build_catalog) → rebuild the report from the aggregates
(queries.build_report) → publish artifacts: the headline odds with intervals
(table ``acesup-headline-odds``), what changed since the last night (markdown
``acesup-nightly-changes``) and a link to the report (``acesup-report``).

No deal is played twice: the data folder keys rows by (seed, deal, variant,
policy) and the pipeline plans only what is missing. A failed night leaves
valid data (whole files, a manifest that records what is done); the next night,
or a retry, finishes it first (see flows.plan).

Run it once now with ``acesup nightly --now``, on a schedule with ``acesup
serve`` (flows.deployments), or from a Prefect server (prefect.yaml).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from prefect import flow

from flows.mirror import is_remote, local_folder_for
from flows.summary import changes_markdown
from flows.tasks import (compact_files, copy_to_local, plan_night, previous_headline, publish_artifacts,
                         publish_failure, rebuild_report, refresh_catalog, run_on_ray, update_aggregates,
                         verify_dataset)

CHANGES_KEY = "acesup-nightly-changes"


def _facts(spec, summary, verified, aggregated=None, compacted=None) -> list[tuple[str, object]]:
    last = spec.start + spec.deals - 1
    return [
        ("run", f"{spec.run_id}: seed {spec.seed}, deals {spec.start:,}..{last:,} "
                f"({len(spec.variants)} variants x {len(spec.policies)} players)"),
        ("data", summary.data),
        ("games", f"{summary.rows_present:,} before, {summary.rows_written:,} played now, "
                  f"{summary.rows_total:,} in the run"),
        ("batches", f"{summary.batches_done} run now on {len(summary.nodes)} Ray node(s), "
                    f"{summary.batches_skipped} already present"),
        ("time on Ray", f"{summary.seconds:,.1f} s"),
        ("verification", f"passed: {verified.rows_found:,} rows, {verified.files_checked} new files read, "
                         f"{verified.files_trusted} verified before, each key once"),
    ] + ([("aggregates", f"generation {aggregated.generation}: {aggregated.rows_added:,} rows added, "
                         f"{aggregated.total_rows:,} in all")] if aggregated is not None else []) + (
        [("compaction", f"{compacted.files_in} files merged into {compacted.files_out}"
                        + (f", {compacted.deferred} merges left for later" if compacted.deferred else ""))]
        if compacted is not None else [])


def run_steps(spec, ray_address: str | None, *, title: str, changes_key: str) -> dict[str, Any]:
    """The steps after planning, shared by the nightly and backfill flows."""
    # Catalog and report need a local folder: the data folder, or a copy of data on object storage.
    folder = local_folder_for(spec.data)
    before = previous_headline(folder)
    try:
        summary = run_on_ray(spec, ray_address)
    except Exception as exc:
        # The UI shows what failed and what is saved, next to the failed task's traceback.
        publish_failure(changes_key, title, spec.data, spec.run_id, f"{type(exc).__name__}: {exc}")
        raise
    verified = verify_dataset(spec.data, spec.run_id)
    aggregated = update_aggregates(spec.data)
    compacted = compact_files(spec.data)
    if is_remote(spec.data):
        copy_to_local(spec.data, folder)
    catalog = refresh_catalog(folder)
    report = rebuild_report(folder)
    headline = list(report["headline"])
    md = changes_markdown(title, before, headline, _facts(spec, summary, verified, aggregated, compacted))
    artifacts = publish_artifacts(changes_key, md, headline, report["index_html"],
                                  f"Run {spec.run_id}, data {summary.data}.")
    return {
        "run_id": spec.run_id,
        "data": summary.data,
        "deals": spec.deals,
        "rows": summary.rows_total,
        "rows_written": summary.rows_written,
        "catalog": catalog,
        "report": {k: report[k] for k in ("index_html", "report_md", "report_json")},
        "headline": headline,
        "artifacts": artifacts,
    }


@flow(name="nightly-odds", log_prints=True,
      description="Extend the standing acesup run by the next block of deals, verify, refresh "
                  "the catalog and the report, publish the headline odds.")
def nightly_odds(
    spec_file: str | None = None,
    deals_per_night: int | None = None,
    ray_address: str | None = None,
    data: str | None = None,
) -> dict[str, Any]:
    """One night: extend the standing run, then verify, catalog, report and publish.

    spec_file:       TOML run spec (default: the embedded default of ``acesup run``)
    deals_per_night: deals added each night (default: the spec's deal count)
    ray_address:     Ray cluster to join (default: RAY_ADDRESS, else a local Ray)
    data:            data folder or URI (default: the spec's, ``./acesup-data``)
    """
    spec = plan_night(spec_file, deals_per_night, data)
    night = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return run_steps(spec, ray_address, title=f"acesup nightly {night}: run {spec.run_id}",
                     changes_key=CHANGES_KEY)
