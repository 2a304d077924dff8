"""Compaction: a run's many small files of one variant × policy merged into few large ones.

Every batch is a file (one Ray task, one retry unit), so a night writes
hundreds of small files and a year would write a hundred thousand. After each
night ``compact(data)`` merges them, per run × variant × policy, in deal order,
into files of up to about TARGET_BYTES (DuckDB reads files of 100 MB and more,
with row groups of 100,000 rows and more, fastest), tiered so that no row is
rewritten more than a few times:

1. adjacent batch files (a night's batches) become one file;
2. FANIN adjacent compacted files of one size tier (under 2 MiB, under 16 MiB)
   become one file of the next tier; a file of TARGET_BYTES / FANIN or more is
   final and never rewritten.

A call rewrites at most ``max_bytes`` (default: four times the batch files it
merges, and at least MIN_BUDGET_BYTES), so the cost of a night stays a small
multiple of what the night wrote; merges over the budget wait for the next night.

Exactly once, atomic, resumable, on any storage (no rename is relied on to be
atomic, no object is appended to):

1. the inputs are read whole and checked against their records (size,
   SHA-256, footer, deal column exactly their range, sane values);
2. the merged file is written to its final name
   ``<run>-<first>-<last>-c<hash>.parquet`` (the hash names the inputs, so a retry
   writes the same name);
3. the commit: one manifest log segment that adds the merged file's record
   (its SHA-256 and size as written, and ``replaces``: the inputs) and removes the
   inputs' records;
4. the inputs are deleted, and ``replaces`` is cleared.

Killed before 3, the merged file is an orphan that no record names:
``finish_interrupted`` (run by planning and by every compaction) deletes it, and
the inputs are still the live files. Killed after 3, the inputs are what
``replaces`` lists: ``finish_interrupted`` deletes them. A reader that lists
``results/`` itself (not through the manifests or the catalog's views of them)
can see a key twice only between 2 and 4, a moment of a compaction that runs
under the data folder's lock.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from .manifest import BatchRecord, Manifest, now_iso, read_all_manifests, write_manifest
from .storage import DataStore, footer_problem, parquet_bytes, sha256_bytes

TARGET_BYTES = 128 << 20
FANIN = 8
TIER_BYTES = (2 << 20, 16 << 20)  # upper bounds of the tiers below TARGET_BYTES / FANIN
MIN_BUDGET_BYTES = 256 << 20
BUDGET_FACTOR = 4
ROW_GROUP_ROWS = 131_072
COMPACTED_RE = re.compile(r"^(?P<run>[0-9a-f]{12})-(?P<first>\d+)-(?P<last>\d+)-c(?P<hash>[0-9a-f]{8})\.parquet$")


class CompactionError(RuntimeError):
    """An input file of a merge does not match its record; the message names it (nothing was changed)."""


@dataclass
class CompactResult:
    """What ``compact`` did."""

    merges: int = 0
    files_in: int = 0
    files_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    rows: int = 0
    seconds: float = 0.0
    deferred: int = 0  # merges left for a later call (over the budget)
    problems: list[str] = field(default_factory=list)


def compacted_name(run_id: str, first: int, last: int, inputs: list[str]) -> str:
    """The file name of the merge of ``inputs`` (deals ``first..last`` of ``run_id``)."""
    h = hashlib.sha256("\n".join(inputs).encode()).hexdigest()[:8]
    return f"{run_id}-{first}-{last}-c{h}.parquet"


def is_compacted_path(rel: str) -> bool:
    return COMPACTED_RE.match(rel.rpartition("/")[2]) is not None


def _tier(b: BatchRecord) -> int | None:
    """0, 1 for a compacted file still to be merged by size; None for a final one."""
    for t, limit in enumerate(TIER_BYTES):
        if b.bytes < limit:
            return t
    return None


def _adjacent_groups(files: list[BatchRecord]) -> list[list[BatchRecord]]:
    """Maximal runs of files whose deal ranges follow one another without a gap."""
    groups: list[list[BatchRecord]] = []
    for b in sorted(files, key=lambda b: b.first):
        if groups and groups[-1][-1].last + 1 == b.first:
            groups[-1].append(b)
        else:
            groups.append([b])
    return groups


def plan_merges(m: Manifest) -> list[list[BatchRecord]]:
    """The merges compaction would do in run ``m`` now, batch merges first (each a list of inputs)."""
    by_pair: dict[tuple[str, str], list[BatchRecord]] = {}
    for b in m.done():
        by_pair.setdefault((b.variant, b.policy), []).append(b)
    batch_merges, tier_merges = [], []
    for files in by_pair.values():
        for group in _adjacent_groups([b for b in files if b.kind == "batch"]):
            # Cut at the size target: a big night makes several files, none much over TARGET_BYTES.
            cut: list[BatchRecord] = []
            for b in group:
                if cut and sum(x.bytes for x in cut) + b.bytes > TARGET_BYTES:
                    batch_merges.append(cut)
                    cut = []
                cut.append(b)
            batch_merges.append(cut)  # a lone batch file too: it becomes a compacted file of its tier
        for group in _adjacent_groups([b for b in files if b.kind == "compacted"]):
            run: list[BatchRecord] = []
            for b in group:
                tier = _tier(b)
                if tier is None or (run and _tier(run[0]) != tier):
                    run = []
                if tier is not None:
                    run.append(b)
                if len(run) == FANIN:
                    tier_merges.append(run)
                    run = []
    return batch_merges + tier_merges


def _check_values(t: pa.Table, policy: str, path: str) -> str | None:
    from .verify import VerifyResult, _check_values

    res = VerifyResult("", "")
    _check_values(t, policy, path, res)
    return "; ".join(res.problems) or None


def _read_input(store: DataStore, m: Manifest, b: BatchRecord) -> pa.Table:
    """The rows of one input, checked against its record (CompactionError if they differ)."""
    import numpy as np

    raw = store.read_bytes(b.path)
    if len(raw) != b.bytes or sha256_bytes(raw) != b.sha256:
        raise CompactionError(f"{b.path}: {len(raw)} bytes with SHA-256 {sha256_bytes(raw)[:12]}…, its record "
                              f"says {b.bytes} bytes and {b.sha256[:12]}…; run 'acesup verify {m.run_id} --deep'")
    pf = pq.ParquetFile(pa.BufferReader(raw))
    problem = footer_problem(pf.metadata, run_id=m.run_id, rows=b.last - b.first + 1)
    t = pf.read()
    deal = t.column("deal").to_numpy()
    if problem is None and not np.array_equal(deal, np.arange(b.first, b.last + 1)):
        problem = f"deal column is not {b.first}..{b.last} in order"
    if problem is None:
        problem = _check_values(t, b.policy, b.path)
    if problem is not None:
        raise CompactionError(f"{b.path}: {problem}; run 'acesup verify {m.run_id} --deep'")
    return t


def _merge(store: DataStore, m: Manifest, inputs: list[BatchRecord]) -> BatchRecord:
    """Steps 1-4 of the module docstring for one merge; returns the new record."""
    from .storage import META_FINGERPRINT

    first, last = inputs[0].first, inputs[-1].last
    tables = [_read_input(store, m, b) for b in inputs]
    # One behaviour per file: inputs of two fingerprints are never merged (the merged footer would
    # relabel one of them); files from before fingerprints take the others' (pipeline.fingerprint).
    fps = sorted({fp.decode() for t in tables if (fp := (t.schema.metadata or {}).get(META_FINGERPRINT.encode()))})
    if len(fps) > 1:
        raise CompactionError(f"{inputs[0].variant} x {inputs[0].policy}: the files {inputs[0].path} .. "
                              f"{inputs[-1].path} carry behaviour fingerprints {', '.join(fps)}; retire the old "
                              f"rows first: acesup retire --variant {inputs[0].variant} --policy {inputs[0].policy}")
    table = pa.concat_tables(tables)
    meta = dict(tables[0].schema.metadata or {})
    if fps:
        meta[META_FINGERPRINT.encode()] = fps[0].encode()
    table = table.replace_schema_metadata(meta)
    data = parquet_bytes(table, row_group_size=ROW_GROUP_ROWS)
    folder = inputs[0].path.rpartition("/")[0]
    rel = f"{folder}/{compacted_name(m.run_id, first, last, [b.path for b in inputs])}"
    store.write_atomic(rel, data)
    paths = {b.path for b in inputs}
    rec = BatchRecord(inputs[0].variant, inputs[0].policy, first, last, "done", rel, table.num_rows,
                      sha256_bytes(data), len(data), seconds=sum(b.seconds for b in inputs),
                      engine_seconds=sum(b.engine_seconds for b in inputs), node="compacted",
                      finished=now_iso(), kind="compacted", batches=sum(b.batches for b in inputs),
                      verified=True, replaces=sorted(paths))
    at = min(i for i, b in enumerate(m.batches) if b.path in paths)
    m.batches = [b for b in m.batches if b.path not in paths]
    m.batches.insert(at, rec)
    write_manifest(store, m, snapshot=False)  # the commit
    _delete_replaced(store, m, rec)
    return rec


def _delete_replaced(store: DataStore, m: Manifest, rec: BatchRecord) -> None:
    for p in rec.replaces:
        try:
            store.delete(p)
        except FileNotFoundError:
            pass
    rec.replaces = []
    write_manifest(store, m, snapshot=False)


def finish_interrupted(store: DataStore, manifests: dict[str, Manifest]) -> list[str]:
    """Finish what killed compactions left: delete inputs still listed by ``replaces`` and merged
    files that no record names (their inputs are still live). Returns the paths deleted."""
    deleted = []
    named = set()
    for m in manifests.values():
        for b in list(m.batches):
            named.add(b.path)
            if b.replaces:
                deleted += [p for p in b.replaces if store.exists(p)]
                _delete_replaced(store, m, b)
    from .storage import RESULTS

    for rel in store.list_files(RESULTS):
        if is_compacted_path(rel) and rel not in named:
            store.delete(rel)
            deleted.append(rel)
    return deleted


def compact(data: str | DataStore, *, max_bytes: int | None = None,
            manifests: dict[str, Manifest] | None = None) -> CompactResult:
    """Merge small files as the module docstring says. Call it with the data folder's DataLock held.

    An input that does not match its record stops that merge (named in ``problems``) and
    leaves the files as they are; the other merges go on.
    """
    t0 = time.monotonic()
    store = data if isinstance(data, DataStore) else DataStore(data)
    if manifests is None:
        manifests = read_all_manifests(store)
    finish_interrupted(store, manifests)
    res = CompactResult()
    plans = [(m, g) for m in manifests.values() for g in plan_merges(m)]
    batch_bytes = sum(b.bytes for _, g in plans for b in g if b.kind == "batch")
    budget = max_bytes if max_bytes is not None else max(MIN_BUDGET_BYTES, BUDGET_FACTOR * batch_bytes)
    spent = 0
    for m, inputs in plans:
        size = sum(b.bytes for b in inputs)
        batch_merge = inputs[0].kind == "batch"
        if spent + size > budget and not batch_merge:
            res.deferred += 1
            continue
        try:
            rec = _merge(store, m, inputs)
        except CompactionError as exc:
            res.problems.append(str(exc))
            continue
        spent += size
        res.merges += 1
        res.files_in += len(inputs)
        res.files_out += 1
        res.bytes_in += size
        res.bytes_out += rec.bytes
        res.rows += rec.rows
    for m in manifests.values():
        write_manifest(store, m)
    res.seconds = time.monotonic() - t0
    return res


__all__ = ["CompactResult", "CompactionError", "compact", "compacted_name", "finish_interrupted",
           "is_compacted_path", "plan_merges"]
