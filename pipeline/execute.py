"""Executing a run: plan it, fan its batches out to Ray tasks, record them in the manifest.

``execute_run(spec)`` is the one entry point (the CLI and the Prefect flows
call it). It

1. takes the data folder's lock and plans the run (pipeline.plan: what valid
   files do not cover yet, cut into batches);
2. connects to Ray: uses Ray if this process already initialized it (a test
   fixture, a Prefect flow) and leaves it running; otherwise joins
   ``ray_address`` / ``RAY_ADDRESS`` if given, or starts a local Ray on every
   core, and shuts down only what it started;
3. fingerprints every variant × policy it will write, one Ray task per pair
   on the workers (pipeline.fingerprint): a player whose behaviour differs
   from the rows the folder holds stops the run before any batch
   (FingerprintMismatch); every file's footer carries its pair's fingerprint;
4. keeps a bounded number of batch tasks in flight (a ``ray.wait`` loop), so
   driver memory stays flat for any run size; each task writes its own file
   (pipeline.worker) and returns path, rows, checksum and seconds;
5. records every finished batch in the manifest (only the driver writes it,
   atomically, at most every couple of seconds and at the end).

Failures: Ray retries a task whose worker died (node removed, process killed)
or that raised, up to ``max_retries`` times; a batch that still fails ends the
run with BatchFailedError naming the batch and its deals, after the batches
in flight have finished. A batch that fails with an input error of the
AcesUpError family (a full disk: storage.DiskFullError) is not retried: the run
stops with that error, one line naming the path and the fix. Everything
written stays valid, and running the spec again resumes.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .errors import AcesUpError, UserError
from .manifest import now_iso, write_manifest
from .lock import DataLock
from .plan import Plan, plan_run, write_plan
from .progress import Progress
from .spec import RunSpec
from .storage import DataStore
from .warm import expire_stale_kernels_once, units_for, warm
from .worker import BatchDone, BatchJob, run_batch

MANIFEST_WRITE_SECONDS = 2.0


class BatchFailedError(RuntimeError):
    """A batch failed on every attempt; the message names the batch, its deals and the cause."""


@dataclass
class RunSummary:
    """What ``execute_run`` did."""

    run_id: str
    data: str
    rows_total: int  # rows the spec covers
    rows_written: int  # rows this execution played and wrote
    rows_present: int  # rows already covered before it started
    batches_done: int  # batches this execution finished
    batches_skipped: int  # batches already in the folder (any run's) that the spec covers
    batches_reused: int  # planned batches whose finished file a worker found in place
    seconds: float
    fingerprint_seconds: float = 0.0  # fingerprinting the pairs at run start (wall time)
    engine_seconds: float = 0.0  # sum over batches of dealing + playing time in the workers
    plan_seconds: float = 0.0  # taking the lock, reconciling the folder and planning (in the driver)
    nodes: dict[str, int] = field(default_factory=dict)  # Ray node id -> batches it ran
    adopted: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)


def _check_reachable(address: str) -> None:
    """UserError unless ``host:port`` (or ``ray://host:port``) accepts a TCP connection."""
    if address in ("auto", "local"):
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"Ray address {address!r} is not host:port; give e.g. --ray-address 127.0.0.1:6379 "
                        f"(the address 'ray start --head' prints)")
    try:
        with socket.create_connection((host, int(port)), timeout=3):
            pass
    except OSError as exc:
        raise UserError(f"cannot reach a Ray cluster at {address!r} ({exc.strerror or exc}); start one with "
                        f"'ray start --head', or leave out --ray-address (and RAY_ADDRESS) to run on this machine") from None


def connect_ray(ray_address: str | None = None, *, num_cpus: int | None = None, before_local=None) -> bool:
    """Make sure Ray is initialized; True if this call started (or joined) it and must shut it down.

    ``before_local()``, if given, runs just before this call starts a Ray of its own on this machine.
    """
    import ray

    if ray.is_initialized():
        return False
    address = ray_address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _check_reachable(address)
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            raise UserError(f"cannot join the Ray cluster at {address!r}: {str(exc).splitlines()[0]}; "
                            f"check the address that 'ray start --head' printed") from None
    else:
        if before_local is not None:
            before_local()
        ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False,
                 log_to_driver=False, logging_level=logging.WARNING)
    return True


def _batch_task():
    import ray

    @ray.remote(num_cpus=1)
    def acesup_batch(job: BatchJob, fn) -> BatchDone | AcesUpError:
        expire_stale_kernels_once()  # a cluster's node: no driver warmed its cache (pipeline/warm.py)
        try:
            done = (fn or run_batch)(job)
        except AcesUpError as exc:
            return exc  # a full disk, a bad input: the same again would fail the same way, so no Ray retry
        done.node = ray.get_runtime_context().get_node_id()
        return done

    return acesup_batch


def _fingerprint_tasks():
    import ray

    from . import fingerprint

    @ray.remote(num_cpus=1)
    def acesup_fingerprint(variant: str, policy: str, decks):
        expire_stale_kernels_once()
        return fingerprint.compute(variant, policy, decks)

    @ray.remote(num_cpus=1)
    def acesup_recheck(data: str, rel: str, rows: int, node_limit):
        expire_stale_kernels_once()
        return fingerprint.recheck_file(data, rel, rows, node_limit)

    return acesup_fingerprint, acesup_recheck


def fingerprint_on_ray(store: DataStore, plan: Plan, max_retries: int,
                       say: Callable[[str], None] | None = None) -> dict[tuple[str, str], str]:
    """pipeline.fingerprint.check_run for the pairs the plan writes, its work as Ray tasks.

    ``say`` (a line of progress) hears when the fingerprints start and as they finish: on a
    machine's first run the workers compile the engine here, which takes minutes.
    """
    import ray

    from .fingerprint import check_run

    fp_task, recheck_task = (t.options(max_retries=max_retries) for t in _fingerprint_tasks())

    def compute_many(requests):
        refs = [fp_task.remote(v, p, d) for v, p, d in requests]
        if say is None:
            return ray.get(refs)
        say(f"fingerprinting {len(refs)} players (a first run on a cluster's node also compiles the engine "
            f"in each of its workers: a few minutes)")
        pending, done, started = list(refs), 0, time.monotonic()
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=30)
            done += len(ready)
            if not ready or not pending or done % 10 == 0:  # every 10, the last, and every 30 s
                say(f"fingerprints: {done} of {len(refs)} done, {time.monotonic() - started:.0f} s")
        return ray.get(refs)

    def recheck_many(requests):
        return ray.get([recheck_task.remote(store.location, rel, n, nl) for rel, n, nl in requests])

    pairs = [(j.variant, j.policy) for j in plan.jobs]
    return check_run(store, pairs, run_id=plan.manifest.run_id, compute_many=compute_many,
                     recheck_many=recheck_many)


def _cluster_cpus() -> int:
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _failure_text(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


def execute_run(
    spec: RunSpec,
    *,
    ray_address: str | None = None,
    progress: Progress | bool | Callable[[int, int], None] | None = None,
    num_cpus: int | None = None,
    max_in_flight: int | None = None,
    max_retries: int = 3,
    batch_fn: Callable[[BatchJob], BatchDone] | None = None,
) -> RunSummary:
    """Run ``spec`` to completion (see the module docstring) and return what was done.

    progress:      None: a bar on a terminal, log lines to stderr otherwise; False: silent;
                   a callable: called as ``progress(games_done, games_to_do)``
    num_cpus:      CPUs of a local Ray this call starts (default: every core)
    max_in_flight: batch tasks submitted at once (default: twice the cluster's CPUs)
    max_retries:   retries of a failed batch before the run fails
    batch_fn:      what a task runs for a batch (default pipeline.worker.run_batch)
    """
    t0 = time.monotonic()
    store = DataStore(spec.data)
    store.check_writable()
    with DataLock(store) as lock:
        plan = plan_run(store, spec, write=False)
        plan_seconds = time.monotonic() - t0
        summary = RunSummary(
            run_id=spec.run_id, data=store.location, rows_total=plan.rows_total, rows_written=0,
            rows_present=plan.rows_present, batches_done=0, batches_skipped=plan.batches_present,
            batches_reused=0, seconds=0.0, adopted=plan.adopted, quarantined=plan.quarantined,
            lost=plan.lost, plan_seconds=plan_seconds,
        )
        if not plan.jobs:
            plan.manifest.state = "done"
            write_plan(store, plan)
            summary.seconds = time.monotonic() - t0
            return summary
        head = f"acesup run {plan.manifest.run_id}"
        say = None if progress is False else (lambda line: print(f"{head}: {line}", file=sys.stderr, flush=True))
        # local workers would each compile every kernel they meet; compile the run's once first, one group
        # per core (a cold first default night on 2 cores: 540 s -> 421 s; at once on a warm cache)
        started = connect_ray(ray_address, num_cpus=num_cpus,
                              before_local=lambda: warm(num_cpus, units=units_for(spec.pairs()), progress=say))
        try:
            t1 = time.monotonic()
            fingerprints = fingerprint_on_ray(store, plan, max_retries, say)  # refuses before anything is written
            summary.fingerprint_seconds = time.monotonic() - t1
            plan.jobs = [replace(j, fingerprint=fingerprints[(j.variant, j.policy)]) for j in plan.jobs]
            write_plan(store, plan)
            _run_jobs(store, plan, summary, progress, max_in_flight, max_retries, batch_fn, lock.renew)
        finally:
            if started:
                import ray

                ray.shutdown()
    summary.seconds = time.monotonic() - t0
    return summary


def _make_reporter(progress, total: int, label: str):
    if progress is False:
        return None, None
    if isinstance(progress, Progress):
        return progress, progress.update
    if callable(progress):
        return None, lambda done, left=None: progress(done, total)
    bar = Progress(total, label=label)
    return bar, bar.update


class WorkEstimate:
    """Seconds left, from each variant × policy's measured worker seconds per game.

    Work left = sum over unfinished batches of rows × that pair's seconds per game,
    divided by the work the cluster has been getting done per wall second.

    An estimate is given only once it means something (before that: None, shown as
    "not known yet"): every pair with work left has finished ``min(MIN_BATCHES, its
    batches)`` batches (players differ 1000x in cost, and a slow player's deals vary
    100x, so one batch says little), the work done is at least ``MIN_FRACTION`` of the
    estimated whole, and the run has been going ``MIN_SECONDS``. A batch whose file a
    worker found in place (reused) costs nothing and says nothing about the cost of a game.
    """

    MIN_BATCHES = 3
    MIN_FRACTION = 0.05
    MIN_SECONDS = 10.0

    def __init__(self, jobs: list[BatchJob], *, clock=time.monotonic):
        self.clock = clock
        self.t0 = clock()
        self.left_rows: dict[tuple[str, str], int] = {}
        self.batches: dict[tuple[str, str], int] = {}
        for j in jobs:
            key = (j.variant, j.policy)
            self.left_rows[key] = self.left_rows.get(key, 0) + j.rows
            self.batches[key] = self.batches.get(key, 0) + 1
        self.secs: dict[tuple[str, str], float] = {}
        self.rows: dict[tuple[str, str], int] = {}
        self.done: dict[tuple[str, str], int] = {}
        self.work_done = 0.0

    def finished(self, job: BatchJob, seconds: float, *, reused: bool = False) -> None:
        key = (job.variant, job.policy)
        self.left_rows[key] -= job.rows
        self.batches[key] -= 1
        if reused:
            return
        self.secs[key] = self.secs.get(key, 0.0) + seconds
        self.rows[key] = self.rows.get(key, 0) + job.rows
        self.done[key] = self.done.get(key, 0) + 1
        self.work_done += seconds

    def seconds_left(self) -> float | None:
        elapsed = self.clock() - self.t0
        if elapsed < self.MIN_SECONDS or self.work_done <= 0:
            return None
        for k, n in self.left_rows.items():
            if n > 0 and self.done.get(k, 0) < min(self.MIN_BATCHES, self.done.get(k, 0) + self.batches[k]):
                return None
        work_left = sum(n * self.secs[k] / self.rows[k] for k, n in self.left_rows.items() if n > 0)
        if self.work_done < self.MIN_FRACTION * (self.work_done + work_left):
            return None
        speed = self.work_done / elapsed
        return work_left / speed


def _write_manifest_if_possible(store: DataStore, m) -> None:
    """Record how the run ended, unless the storage is what failed (a full disk): the error says it."""
    try:
        write_manifest(store, m)
    except (OSError, AcesUpError):
        pass


def _run_jobs(store: DataStore, plan: Plan, summary: RunSummary, progress, max_in_flight,
              max_retries: int, batch_fn, renew_lock: Callable[[], None] = lambda: None) -> None:
    import ray
    from ray.exceptions import RayError

    m = plan.manifest
    records = {(b.variant, b.policy, b.first): b for b in m.batches if b.state == "pending"}
    todo = plan.rows_todo
    bar, report = _make_reporter(progress, todo, f"acesup run {m.run_id}")
    task = _batch_task().options(max_retries=max_retries, retry_exceptions=True)
    fn_ref = ray.put(batch_fn) if batch_fn is not None else None
    pending = deque(plan.jobs)
    estimate = WorkEstimate(plan.jobs)
    inflight: dict = {}
    failure: tuple[BatchJob, BaseException] | None = None
    limit_checked = 0.0
    limit = max_in_flight or 2 * _cluster_cpus()
    last_write = time.monotonic()
    m.state = "running"
    write_manifest(store, m)
    try:
        while pending or inflight:
            now = time.monotonic()
            if max_in_flight is None and now - limit_checked > 5.0:
                limit, limit_checked = 2 * _cluster_cpus(), now  # nodes may join or leave
            while pending and failure is None and len(inflight) < limit:
                job = pending.popleft()
                inflight[task.remote(job, fn_ref)] = job
            if not inflight:
                break
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=1.0)
            for ref in ready:
                job = inflight.pop(ref)
                rec = records[(job.variant, job.policy, job.first)]
                try:
                    done: BatchDone | AcesUpError = ray.get(ref)
                except RayError as exc:
                    done = exc
                if isinstance(done, BaseException):
                    rec.state, rec.error, rec.finished = "failed", _failure_text(done), now_iso()
                    if failure is None or (isinstance(done, AcesUpError) and not isinstance(failure[1], AcesUpError)):
                        failure = (job, done)
                    continue
                rec.state, rec.finished, rec.error = "done", now_iso(), None
                rec.path, rec.rows, rec.sha256, rec.bytes = done.path, done.rows, done.sha256, done.bytes
                rec.seconds, rec.engine_seconds, rec.node = round(done.seconds, 4), round(done.engine_seconds, 4), done.node
                summary.batches_done += 1
                summary.rows_written += done.rows
                summary.batches_reused += done.reused
                summary.engine_seconds += done.engine_seconds
                summary.nodes[done.node] = summary.nodes.get(done.node, 0) + 1
                estimate.finished(job, done.seconds, reused=done.reused)
            if report:
                report(summary.rows_written, left=estimate.seconds_left())
            if time.monotonic() - last_write >= MANIFEST_WRITE_SECONDS:
                write_manifest(store, m)
                renew_lock()
                last_write = time.monotonic()
    except BaseException as exc:
        for ref in inflight:
            ray.cancel(ref, force=True)
        m.state, m.error = "interrupted", f"{type(exc).__name__}: {_failure_text(exc)}"
        _write_manifest_if_possible(store, m)
        raise
    finally:
        if bar is not None:
            bar.close()
    if failure is not None:
        job, exc = failure
        m.state = "failed"
        if isinstance(exc, AcesUpError):
            m.error = f"batch {job.describe()}: {exc}"
            _write_manifest_if_possible(store, m)
            raise exc
        m.error = (f"batch {job.describe()} failed after {max_retries} retries: {_failure_text(exc)}")
        write_manifest(store, m)
        raise BatchFailedError(f"run {m.run_id}: {m.error}; the {summary.batches_done} batches that "
                               f"finished are saved; fix the cause and run the same spec again to resume")
    m.state = "done"
    write_manifest(store, m)
