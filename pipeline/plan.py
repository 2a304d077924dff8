"""Planning a run: what the spec asks for, minus what valid files already cover.

A run is a request for coverage. Planning reads the manifests of every run in
the data folder and the files present, and cuts the keys not yet covered into
batches on a fixed grid (``start + k * batch_size``), so re-running a spec
skips finished batches, extending ``deals`` plans only the new batches and a
killed run resumes where it stopped.

Before that it reconciles the folder with the manifests, so that no key can
end up in two files:

- a done batch whose file is missing or has another size stops counting as
  covered (its record becomes ``lost`` and the keys are planned again);
- a finished file that no manifest records (the driver died between a
  worker's rename and the next manifest write) is adopted into its run's
  manifest after its footer (with the pair's behaviour fingerprint, if the
  folder records one) and keys are checked, or moved to ``DATA/quarantine/``
  if it is not valid or overlaps recorded coverage;
- leftover temporary files (``.*.tmp``) of killed workers are removed, and so
  is what a killed compaction left (pipeline.compact.finish_interrupted).

Only one driver may work on a data folder at a time; ``DataLock``
(pipeline.lock) enforces it with an atomic lock on ``DATA/runs/.lock``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine_rs_free.players import parse_player

from .compact import finish_interrupted
from .lock import LOCK, DataLock  # noqa: F401  (planning runs under the lock; re-exported)
from .manifest import (BatchRecord, Manifest, coverage_index, merge_ranges, now_iso, pair_key,
                       read_all_manifests, spec_path, subtract_ranges, write_manifest)
from .schema import SCHEMA_VERSION
from .spec import RunSpec, engine_version
from .storage import RESULTS, TMP_SUFFIX, DataStore, file_sha256, footer, footer_problem, parse_batch_path, read_table
from .worker import BatchJob

QUARANTINE = "quarantine"


@dataclass
class Plan:
    """What a run still has to do, and what the folder already holds."""

    spec: RunSpec
    manifest: Manifest
    jobs: list[BatchJob]
    rows_total: int
    rows_present: int
    batches_present: int
    adopted: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)

    @property
    def rows_todo(self) -> int:
        return sum(j.rows for j in self.jobs)


def batch_grid(first: int, last: int, start: int, size: int) -> list[tuple[int, int]]:
    """``first..last`` cut at the grid points ``start + k * size``."""
    out = []
    at = first
    while at <= last:
        end = min(last, start + ((at - start) // size + 1) * size - 1)
        out.append((at, end))
        at = end + 1
    return out


def _file_keys_problem(store: DataStore, rel: str, seed: int, variant: str, policy: str,
                       first: int, last: int) -> str | None:
    """Why the file's key columns are not exactly deals first..last of (seed, variant, policy)."""
    t = read_table(store, rel, columns=["seed", "deal", "variant", "policy"])
    deal = t.column("deal").to_numpy()
    if len(deal) != last - first + 1 or not np.array_equal(np.sort(deal), np.arange(first, last + 1)):
        return f"deal column is not exactly {first}..{last}"
    for name, want in (("seed", seed), ("variant", variant), ("policy", policy)):
        values = set(t.column(name).unique().to_pylist())
        if values != {want}:
            return f"{name} column holds {sorted(values)!r}, expected {want!r}"
    return None


def reconcile(store: DataStore, manifests: dict[str, Manifest]) -> tuple[list[str], list[str], list[str]]:
    """Make manifests and files agree (see the module docstring); returns (adopted, quarantined, lost)."""
    finish_interrupted(store, manifests)  # a killed compaction's leftovers (pipeline.compact)
    files = store.list_files(RESULTS)
    changed: set[str] = set()
    lost = []
    recorded: set[str] = set()
    for m in manifests.values():
        for b in m.batches:
            if b.state != "done":
                continue
            if files.get(b.path) != b.bytes:
                b.state, b.error = "lost", f"file missing or resized (found {files.get(b.path)} bytes)"
                lost.append(b.path)
                changed.add(m.run_id)
            else:
                recorded.add(b.path)
    for rel in [r for r in files if r.rpartition("/")[2].endswith(TMP_SUFFIX)]:
        try:
            store.delete(rel)
        except OSError:
            pass
    adopted, quarantined = [], []
    cov = coverage_index(manifests)
    records = None
    for rel, size in sorted(files.items()):
        if rel in recorded or rel.endswith(TMP_SUFFIX):
            continue
        name = parse_batch_path(rel)
        m = manifests.get(name.run_id) if name else None
        problem = "no run manifest names it" if m is None else None
        if problem is None:
            if records is None:
                from .fingerprint import read_all_records

                records = read_all_records(store)
            rec = records.get((name.variant, name.policy))
            try:
                problem = footer_problem(footer(store, rel), run_id=name.run_id, rows=name.last - name.first + 1,
                                         fingerprint=rec.digest if rec else None)
                if problem is None:
                    problem = _file_keys_problem(store, rel, m.seed, name.variant, name.policy, name.first, name.last)
            except (OSError, ValueError) as exc:
                problem = f"unreadable ({exc})"
        key = (m.seed, pair_key(name.variant, name.policy)) if m is not None else None
        if problem is None and subtract_ranges(name.first, name.last, cov.get(key, [])) != [(name.first, name.last)]:
            problem = "overlaps deals another file already covers"
        if problem is not None:
            store.move(rel, f"{QUARANTINE}/{rel}")
            quarantined.append(f"{rel}: {problem}")
            continue
        digest, nbytes = file_sha256(store, rel)
        m.batches = [b for b in m.batches
                     if not (b.state != "done" and b.key == pair_key(name.variant, name.policy)
                             and b.first == name.first and b.last == name.last)]
        m.batches.append(BatchRecord(name.variant, name.policy, name.first, name.last, "done", rel,
                                     name.last - name.first + 1, digest, nbytes, finished=now_iso(),
                                     error=None, node="adopted"))
        cov[key] = merge_ranges(cov.get(key, []) + [[name.first, name.last]])
        adopted.append(rel)
        changed.add(m.run_id)
    for run_id in changed:
        write_manifest(store, manifests[run_id])
    return adopted, quarantined, lost


def order_jobs(jobs: list[BatchJob]) -> list[BatchJob]:
    """The order batches are submitted in.

    One batch of every pair first (so the time-left estimate knows every pair's
    cost early), then slow players first, so a long solver batch does not
    straggle at the end of the run.
    """
    firsts = {}
    for j in jobs:
        key = (j.variant, j.policy)
        if key not in firsts or j.first < firsts[key]:
            firsts[key] = j.first

    def key(job: BatchJob) -> tuple:
        slow = parse_player(job.policy).entry.slow
        return (job.first != firsts[(job.variant, job.policy)], not slow, job.variant, job.policy, job.first)

    return sorted(jobs, key=key)


def plan_run(store: DataStore, spec: RunSpec, *, write: bool = True) -> Plan:
    """Reconcile the folder, then plan the batches the spec still needs; writes the run's manifest and spec.toml.

    With ``write=False`` the plan is not written yet (``write_plan`` does it), so a run
    refused after planning leaves the run's manifest as it was. Call it with the
    folder's DataLock held.
    """
    manifests = read_all_manifests(store)
    adopted, quarantined, lost = reconcile(store, manifests)
    cov = coverage_index(manifests)
    run_id = spec.run_id
    ev = engine_version()
    m = manifests.get(run_id) or Manifest(run_id=run_id, seed=spec.seed, start=spec.start, spec={},
                                          engine_version=ev, schema_version=SCHEMA_VERSION)
    m.spec = spec.to_dict()
    for (v, p), (a, b) in spec.requested().items():
        key = pair_key(v, p)
        prev = m.requested.get(key)
        m.requested[key] = [a, max(b, prev[1]) if prev else b]
    m.batches = [b for b in m.batches if b.state == "done"]
    jobs = []
    rows_present = 0
    for (v, p), (a, b) in spec.requested().items():
        covered = cov.get((spec.seed, pair_key(v, p)), [])
        gaps = subtract_ranges(a, b, covered)
        rows_present += (b - a + 1) - sum(y - x + 1 for x, y in gaps)
        for ga, gb in gaps:
            for x, y in batch_grid(ga, gb, spec.start, spec.batch_size_for(v, p)):
                jobs.append(BatchJob(store.location, run_id, spec.seed, v, p, x, y, spec.lines,
                                     spec.node_limit, ev))
    jobs = order_jobs(jobs)
    for j in jobs:
        m.batches.append(BatchRecord(j.variant, j.policy, j.first, j.last, "pending", j.path, j.rows))
    requested = spec.requested()
    batches_present = sum(
        1 for mm in manifests.values() if mm.seed == spec.seed for bb in mm.done()
        if (bb.variant, bb.policy) in requested and bb.first <= requested[(bb.variant, bb.policy)][1]
    )
    m.state = "planned"
    m.error = None
    plan = Plan(spec, m, jobs, spec.total_rows(), rows_present, batches_present, adopted, quarantined, lost)
    if write:
        write_plan(store, plan)
    return plan


def write_plan(store: DataStore, plan: Plan) -> None:
    """Write the run's spec.toml and manifest as planned."""
    store.write_atomic(spec_path(plan.manifest.run_id), plan.spec.to_toml().encode())
    write_manifest(store, plan.manifest)
