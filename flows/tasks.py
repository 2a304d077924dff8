"""The coarse Prefect tasks the flows are made of; each calls one library function.

Prefect orchestrates a handful of steps (plan, run on Ray, verify, catalog,
report, artifacts); Ray does the fan-out inside the one ``run_on_ray`` task,
so thousands of batches never become thousands of Prefect task runs.

Retries: a step that touches the cluster or the storage retries after a delay
(a batch that failed on every Ray attempt because a node or the object store
was away, a read that timed out). A retry resumes: the pipeline skips finished
batches, and every file is renamed into place whole, so a failed attempt
leaves valid data. An input error (bad spec, unknown policy, unwritable folder,
unreachable cluster, data folder locked by another run: the ``AcesUpError``
family of pipeline.errors) or a dataset that fails verification is never
retried: the same input fails the same way, so the run fails at once with the
message. Any other exception (a plain ``ValueError`` from a bug included) may
be a hiccup and is retried.
Planning has no retries at all: it only reads the spec and the manifests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from pipeline.errors import AcesUpError, UserError

RAY_RETRIES = 2
RAY_RETRY_DELAY_SECONDS = 120
STORAGE_RETRIES = 2
STORAGE_RETRY_DELAY_SECONDS = 20

HEADLINE_KEY = "acesup-headline-odds"
REPORT_KEY = "acesup-report"
PROGRESS_KEY = "acesup-ray-progress"
PROGRESS_LOG_SECONDS = 30.0


class DatasetInvalid(RuntimeError):
    """``verify_run`` found problems: missing, duplicate or corrupt rows (never retried)."""


def worth_retrying(task, task_run, state) -> bool:
    """Prefect retry condition: retry hiccups, never input errors (AcesUpError) or an invalid dataset."""
    exc = state.result(raise_on_failure=False)
    if isinstance(exc, BaseException):
        return not isinstance(exc, (AcesUpError, DatasetInvalid))
    return True


def _logger():
    return get_run_logger()


class RayProgress:
    """``execute_run``'s progress callback: a Prefect progress artifact and a log line now and then."""

    def __init__(self, run_id: str, every_seconds: float = PROGRESS_LOG_SECONDS):
        self.run_id = run_id
        self.every = every_seconds
        self.last = 0.0
        self.artifact_id = None

    def __call__(self, done: int, total: int) -> None:
        import time

        from prefect.artifacts import create_progress_artifact, update_progress_artifact

        now = time.monotonic()
        if now - self.last < self.every and done < total:
            return
        self.last = now
        percent = 100.0 * done / total if total else 100.0
        if self.artifact_id is None:
            self.artifact_id = create_progress_artifact(
                progress=percent, key=PROGRESS_KEY, description=f"Games of run {self.run_id} played on Ray")
        else:
            update_progress_artifact(self.artifact_id, progress=percent)
        _logger().info("run %s: %s of %s games (%.1f%%)", self.run_id, f"{done:,}", f"{total:,}", percent)


# -- the steps -----------------------------------------------------------------------------


@task(name="plan tonight's run", cache_policy=NO_CACHE)
def plan_night(spec_file: str | None, deals_per_night: int | None, data: str | None):
    """The spec for tonight: the standing run extended by the next block (flows.plan)."""
    from pipeline.manifest import list_runs, read_manifest
    from pipeline.spec import load_spec
    from pipeline.storage import DataStore

    from .plan import next_night_spec

    base = load_spec(spec_file, data=data)
    store = DataStore(base.data)
    manifest = read_manifest(store, base.run_id)
    info = {r.run_id: r for r in list_runs(store)}.get(base.run_id)
    complete = info is not None and info.covered_rows >= info.requested_rows
    spec = next_night_spec(base, manifest.requested if manifest else None, complete, deals_per_night)
    log = _logger()
    if manifest is None:
        log.info("run %s is new: tonight runs the spec as given, %s deals", spec.run_id, f"{spec.deals:,}")
    elif not complete:
        log.warning("run %s is unfinished (%s of %s rows): tonight finishes it before adding deals",
                    spec.run_id, f"{info.covered_rows:,}", f"{info.requested_rows:,}")
    else:
        log.info("run %s extends to %s deals (%s rows)", spec.run_id, f"{spec.deals:,}",
                 f"{spec.total_rows():,}")
    return spec


@task(name="load spec", cache_policy=NO_CACHE)
def load_run_spec(spec_file: str | None, data: str | None, start: int | None, deals: int | None):
    """A spec from a file and overrides (pipeline.spec.load_spec); bad specs fail here, once."""
    from pipeline.spec import load_spec

    return load_spec(spec_file, data=data, start=start, deals=deals)


@task(name="read last report", cache_policy=NO_CACHE)
def previous_headline(data: str) -> list[dict[str, Any]]:
    """The headline rows of the report now in the data folder (DATA/report/report.json), or [].

    Read before tonight's run, this is what the last night published: the
    "before" of the changes summary. A missing or unreadable report (first
    night, data on object storage) gives no rows, never a failure.
    """
    import json

    from queries.catalog import local_data_folder
    from queries.report import REPORT_DIR

    try:
        path = local_data_folder(data) / REPORT_DIR / "report.json"
        return list(json.loads(path.read_text(encoding="utf-8")).get("headline") or [])
    except (UserError, OSError, ValueError, AttributeError):
        return []


@task(name="run on Ray", cache_policy=NO_CACHE, retries=RAY_RETRIES,
      retry_delay_seconds=RAY_RETRY_DELAY_SECONDS, retry_condition_fn=worth_retrying)
def run_on_ray(spec, ray_address: str | None):
    """Execute the spec on Ray (pipeline.execute.execute_run); finished batches are skipped."""
    from pipeline.execute import execute_run

    summary = execute_run(spec, ray_address=ray_address, progress=RayProgress(spec.run_id))
    _logger().info("run %s: %s games played in %s batches (%s already present) in %.1f s on %d node(s)",
                   spec.run_id, f"{summary.rows_written:,}", summary.batches_done,
                   f"{summary.rows_present:,}", summary.seconds, len(summary.nodes))
    return summary


@task(name="verify dataset", cache_policy=NO_CACHE, retries=STORAGE_RETRIES,
      retry_delay_seconds=STORAGE_RETRY_DELAY_SECONDS, retry_condition_fn=worth_retrying)
def verify_dataset(data: str, run_id: str):
    """Check every key of the run is present exactly once (pipeline.verify.verify_run)."""
    from pipeline.verify import verify_run

    result = verify_run(data, run_id)
    if not result.ok:
        shown = "; ".join(str(p) for p in result.problems[:10])
        more = f" (and {len(result.problems) - 10} more)" if len(result.problems) > 10 else ""
        raise DatasetInvalid(f"run {run_id} in {data} failed verification: {shown}{more}; "
                             f"see 'acesup verify {run_id} --data {data}'")
    _logger().info("run %s verified: %s", run_id, result)
    return result


@task(name="update aggregates", cache_policy=NO_CACHE, retries=STORAGE_RETRIES,
      retry_delay_seconds=STORAGE_RETRY_DELAY_SECONDS, retry_condition_fn=worth_retrying)
def update_aggregates(data: str):
    """Add tonight's rows to the report's aggregate tables (queries.aggregates.update_aggregates)."""
    from pipeline.plan import DataLock
    from pipeline.storage import DataStore
    from queries.aggregates import update_aggregates as update

    store = DataStore(data)
    with DataLock(store):
        result = update(store)
    _logger().info("aggregates: generation %d, %s rows added, %s in all (%.1f s)%s", result.generation,
                   f"{result.rows_added:,}", f"{result.total_rows:,}", result.seconds,
                   f"; rebuilt: {result.reason}" if result.rebuilt else "")
    return result


@task(name="compact files", cache_policy=NO_CACHE, retries=STORAGE_RETRIES,
      retry_delay_seconds=STORAGE_RETRY_DELAY_SECONDS, retry_condition_fn=worth_retrying)
def compact_files(data: str):
    """Merge tonight's batch files and small files into few large ones (pipeline.compact.compact)."""
    from pipeline.compact import compact
    from pipeline.plan import DataLock
    from pipeline.storage import DataStore

    store = DataStore(data)
    with DataLock(store):
        result = compact(store)
    _logger().info("compaction: %d files merged into %d (%s MB), %d merges left for later (%.1f s)",
                   result.files_in, result.files_out, f"{result.bytes_out / 1e6:,.1f}", result.deferred,
                   result.seconds)
    if result.problems:
        raise DatasetInvalid("compaction found files that differ from their records: "
                             + "; ".join(result.problems[:5]))
    return result


@task(name="copy data to a local folder", cache_policy=NO_CACHE, retries=STORAGE_RETRIES,
      retry_delay_seconds=STORAGE_RETRY_DELAY_SECONDS, retry_condition_fn=worth_retrying)
def copy_to_local(data: str, folder: str):
    """Mirror data on object storage into the local folder of the catalog and report (flows.mirror)."""
    from .mirror import mirror_data

    result = mirror_data(data, folder)
    _logger().info("copied %d of %d files from %s to %s (%d removed)", result.copied, result.files,
                   result.source, result.target, result.removed)
    return result


@task(name="refresh SQL catalog", cache_policy=NO_CACHE, retries=STORAGE_RETRIES,
      retry_delay_seconds=STORAGE_RETRY_DELAY_SECONDS, retry_condition_fn=worth_retrying)
def refresh_catalog(data: str) -> str:
    """Rebuild DATA/acesup.duckdb (queries.catalog.build_catalog)."""
    from queries.catalog import build_catalog

    return str(build_catalog(data))


@task(name="rebuild report", cache_policy=NO_CACHE, retries=STORAGE_RETRIES,
      retry_delay_seconds=STORAGE_RETRY_DELAY_SECONDS, retry_condition_fn=worth_retrying)
def rebuild_report(data: str) -> dict[str, Any]:
    """Rebuild DATA/report/ (queries.report.build_report): paths and headline rows."""
    from queries.report import build_report

    return build_report(data)


@task(name="report the failure", cache_policy=NO_CACHE)
def publish_failure(changes_key: str, title: str, data: str, run_id: str, error: str) -> str:
    """A markdown artifact saying what failed and what the data folder holds now (pipeline.manifest.list_runs)."""
    from prefect.artifacts import create_markdown_artifact

    from pipeline.manifest import list_runs

    info = next((r for r in list_runs(data) if r.run_id == run_id), None)
    lines = [f"# {title}: FAILED", "", f"- **error**: {error}"]
    if info is not None:
        lines += [
            f"- **games present**: {info.covered_rows:,} of {info.requested_rows:,} requested "
            f"({info.fraction:.1%})",
            f"- **batches**: {info.batches_done} done, {info.batches_failed} failed, "
            f"{info.batches_pending} not run",
        ]
    lines += ["", "Every file in the data folder is whole and recorded in the run's manifest. "
              "The next night (or a retry of this one) finishes this block before adding deals."]
    return str(create_markdown_artifact(markdown="\n".join(lines) + "\n", key=changes_key,
                                        description=f"Run {run_id}, data {data}: failed."))


@task(name="publish artifacts", cache_policy=NO_CACHE)
def publish_artifacts(changes_key: str, changes_md: str, headline: list[dict[str, Any]],
                      report_html: str | None, description: str) -> dict[str, str]:
    """The Prefect artifacts of a run: headline odds table, what changed, link to the report."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

    from .summary import headline_table

    ids = {}
    ids[HEADLINE_KEY] = str(create_table_artifact(
        table=headline_table(headline), key=HEADLINE_KEY,
        description=f"Headline odds with 95% Wilson intervals. {description}"))
    ids[changes_key] = str(create_markdown_artifact(
        markdown=changes_md, key=changes_key, description=description))
    if report_html:
        uri = Path(report_html).resolve().as_uri()
        ids[REPORT_KEY] = str(create_link_artifact(
            link=uri, link_text="acesup odds report", key=REPORT_KEY,
            description=f"The report (HTML, self-contained) on the machine that ran the flow. {description}"))
    return ids
