"""Run manifests: a small header per run and an append-only log of its files.

``DATA/runs/<run_id>/manifest.json`` (format 2, written only by the driver,
atomically) is the run's header, small whatever the run's size::

    format       2
    run_id, seed, start, engine_version, schema_version
    spec         the spec of the latest execution (plain values, as spec.toml)
    requested    {"<variant>/<policy>": [first, last]}, the union of every execution's
                 request (executions only ever extend it: ranges are prefixes from start)
    state        planned | running | done | failed | interrupted
    created, updated (UTC ISO times), error (text or null)

The run's file records live in ``DATA/runs/<run_id>/log/``, one whole object
per write, never rewritten (object stores have no append)::

    <seq>.jsonl            records changed since the previous segment: a BatchRecord as
                           a JSON object (it replaces the record with the same path), or
                           {"remove": path} (a record dropped: replaced by compaction,
                           or a lost batch planned again)
    <seq>.snapshot.jsonl   every record at that point; earlier segments are then deleted

A record is one data file (``kind`` ``batch``: one Ray task's file, or
``compacted``: several batches merged by pipeline.compact) or a batch not done
(``state`` pending | failed | lost). The driver writes a segment every couple of
seconds with only what changed, and a snapshot when an execution ends, so a
write costs what changed, not the run's history, and the records in memory are
the live files (few, after compaction) plus the current execution's batches.

``manifest.json`` of format 1 (the whole document with every batch, written by
older versions) is read as it is and rewritten as format 2 with a snapshot on
the next write: an existing data folder keeps working.

A batch of one run may cover keys another run asks for: the key (seed, deal,
variant, policy) is unique across the whole data folder, so planning and
verification read the manifests of every run.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone

from .errors import UserError
from .storage import RUNS, TMP_SUFFIX, DataStore

FORMAT = 2
READABLE_FORMATS = (1, 2)
MANIFEST = "manifest.json"
SPEC_FILE = "spec.toml"
LOG = "log"
SNAPSHOT_EVERY = 200  # segments between snapshots while a run goes on
_SEGMENT_RE = re.compile(r"^(?P<seq>\d{8})(?P<snap>\.snapshot)?\.jsonl$")


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def pair_key(variant: str, policy: str) -> str:
    return f"{variant}/{policy}"


def split_pair_key(key: str) -> tuple[str, str]:
    variant, _, policy = key.partition("/")
    return variant, policy


def merge_ranges(ranges) -> list[list[int]]:
    """Sorted, merged inclusive ranges (adjacent ones joined)."""
    out: list[list[int]] = []
    for a, b in sorted((int(a), int(b)) for a, b in ranges):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def subtract_ranges(first: int, last: int, covered: list[list[int]]) -> list[tuple[int, int]]:
    """The parts of ``first..last`` outside the merged ranges ``covered``."""
    gaps = []
    at = first
    for a, b in covered:
        if b < at:
            continue
        if a > last:
            break
        if a > at:
            gaps.append((at, min(a - 1, last)))
        at = max(at, b + 1)
        if at > last:
            break
    if at <= last:
        gaps.append((at, last))
    return gaps


@dataclass
class BatchRecord:
    """One batch of a run as the manifest records it."""

    variant: str
    policy: str
    first: int
    last: int
    state: str = "pending"
    path: str = ""
    rows: int = 0
    sha256: str = ""
    bytes: int = 0
    seconds: float = 0.0
    engine_seconds: float = 0.0
    node: str = ""
    error: str | None = None
    finished: str | None = None
    kind: str = "batch"  # batch: one task's file; compacted: batches merged by pipeline.compact
    batches: int = 1  # batches whose rows the file holds
    verified: bool = False  # content checked (SHA-256, footer, keys, values) since it was written
    replaces: list[str] = field(default_factory=list)  # compacted: inputs not yet deleted

    @property
    def key(self) -> str:
        return pair_key(self.variant, self.policy)


_RECORD_FIELDS = {f.name for f in fields(BatchRecord)}


def _record(d: dict) -> BatchRecord:
    return BatchRecord(**{k: v for k, v in d.items() if k in _RECORD_FIELDS})


@dataclass
class Manifest:
    """A run's manifest (see the module docstring)."""

    run_id: str
    seed: int
    start: int
    spec: dict
    engine_version: str = ""
    schema_version: int = 0
    requested: dict[str, list[int]] = field(default_factory=dict)
    batches: list[BatchRecord] = field(default_factory=list)
    state: str = "planned"
    created: str = field(default_factory=now_iso)
    updated: str = field(default_factory=now_iso)
    error: str | None = None
    # What the data folder holds of this manifest (set by read_manifest and write_manifest).
    _written_header: dict | None = field(default=None, repr=False, compare=False)
    _written_records: dict[str, dict] = field(default_factory=dict, repr=False, compare=False)
    _next_seq: int = field(default=1, repr=False, compare=False)
    _since_snapshot: int = field(default=0, repr=False, compare=False)

    def done(self) -> list[BatchRecord]:
        return [b for b in self.batches if b.state == "done"]

    def covered(self) -> dict[str, list[list[int]]]:
        """Merged deal ranges of this run's done batches, per ``variant/policy``."""
        by_pair: dict[str, list[tuple[int, int]]] = {}
        for b in self.done():
            by_pair.setdefault(b.key, []).append((b.first, b.last))
        return {k: merge_ranges(v) for k, v in sorted(by_pair.items())}

    def requested_rows(self) -> int:
        return sum(b - a + 1 for a, b in self.requested.values())

    def header(self) -> dict:
        """The header document (manifest.json) without its ``updated`` time."""
        return {
            "format": FORMAT,
            "run_id": self.run_id,
            "seed": self.seed,
            "start": self.start,
            "engine_version": self.engine_version,
            "schema_version": self.schema_version,
            "state": self.state,
            "created": self.created,
            "error": self.error,
            "spec": self.spec,
            "requested": self.requested,
        }

    def to_json(self) -> str:
        """manifest.json: the header (format 2); the file records are in the log."""
        d = self.header()
        d["updated"] = self.updated
        return json.dumps(d, indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        """A header of format 2, or a whole manifest of format 1 (its batches included)."""
        d = json.loads(text)
        if d.get("format") not in READABLE_FORMATS:
            raise ValueError(f"manifest format {d.get('format')!r} is not one of {READABLE_FORMATS} "
                             f"(written by a newer acesup?)")
        return cls(
            run_id=d["run_id"], seed=int(d["seed"]), start=int(d["start"]), spec=d["spec"],
            engine_version=d.get("engine_version", ""), schema_version=int(d.get("schema_version", 0)),
            requested={k: [int(a), int(b)] for k, (a, b) in d.get("requested", {}).items()},
            batches=[_record(b) for b in d.get("batches", [])],
            state=d.get("state", "planned"), created=d.get("created", ""), updated=d.get("updated", ""),
            error=d.get("error"),
        )


def manifest_path(run_id: str) -> str:
    return f"{RUNS}/{run_id}/{MANIFEST}"


def spec_path(run_id: str) -> str:
    return f"{RUNS}/{run_id}/{SPEC_FILE}"


def log_dir(run_id: str) -> str:
    return f"{RUNS}/{run_id}/{LOG}"


def _segment_name(seq: int, snapshot: bool) -> str:
    return f"{seq:08d}{'.snapshot' if snapshot else ''}.jsonl"


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows).encode()


def write_manifest(store: DataStore, manifest: Manifest, *, snapshot: bool | None = None) -> None:
    """Record what changed since the last write: the header if it changed, a log segment of the
    records that changed (see the module docstring).

    ``snapshot``: also write a snapshot of every record and delete the segments before it
    (default: when the run is not running, i.e. at the end of an execution or of planning,
    and every SNAPSHOT_EVERY segments).
    """
    m = manifest
    header = m.header()
    records = {b.path: asdict(b) for b in m.batches}
    changed = [r for p, r in records.items() if m._written_records.get(p) != r]
    removed = [{"remove": p} for p in m._written_records if p not in records]
    first = not m._written_records
    if snapshot is None:
        # Not running: the end of planning or of an execution. A snapshot also starts the log of a
        # new run, or of a run read from a format 1 manifest (no record of it in a log yet).
        snapshot = (m.state != "running" and bool(changed or removed or m._since_snapshot > 0)) \
            or m._since_snapshot >= SNAPSHOT_EVERY or (first and bool(records))
    logs = log_dir(m.run_id)
    if first:
        # Leftovers of a run whose header was never written (killed at once): start after them.
        seqs = [int(mm["seq"]) for rel in store.list_files(logs)
                if (mm := _SEGMENT_RE.match(rel.rpartition("/")[2]))]
        m._next_seq = max([m._next_seq - 1, *seqs]) + 1
    # The log before the header: a header never points at records that are not written yet.
    if snapshot:
        store.write_atomic(f"{logs}/{_segment_name(m._next_seq, True)}", _jsonl(records.values()))
        for rel in store.list_files(logs):
            mm = _SEGMENT_RE.match(rel.rpartition("/")[2])
            if mm and int(mm["seq"]) < m._next_seq:
                try:
                    store.delete(rel)
                except OSError:
                    pass  # already gone; a reader ignores segments before the last snapshot anyway
        m._next_seq += 1
        m._since_snapshot = 0
    elif changed or removed:
        store.write_atomic(f"{logs}/{_segment_name(m._next_seq, False)}", _jsonl(changed + removed))
        m._next_seq += 1
        m._since_snapshot += 1
    m._written_records = records
    if header != m._written_header:
        m.updated = now_iso()
        store.write_atomic(manifest_path(m.run_id), m.to_json().encode())
        m._written_header = header


def _read_log(store: DataStore, run_id: str) -> tuple[list[BatchRecord], int, int] | None:
    """(records, next sequence number, segments since the last snapshot), or None without a log."""
    logs = log_dir(run_id)
    for _attempt in range(3):  # a snapshot written meanwhile deletes older segments: list again
        segments = []
        for rel in store.list_files(logs):
            name = rel.rpartition("/")[2]
            mm = _SEGMENT_RE.match(name)
            if mm and not name.endswith(TMP_SUFFIX):
                segments.append((int(mm["seq"]), bool(mm["snap"]), rel))
        if not segments:
            return None
        segments.sort()
        last_snap = max((i for i, s in enumerate(segments) if s[1]), default=0)
        records: dict[str, BatchRecord] = {}
        try:
            for _seq, _snap, rel in segments[last_snap:]:
                for line in store.read_bytes(rel).decode().splitlines():
                    if not line.strip():
                        continue
                    d = json.loads(line)
                    if "remove" in d:
                        records.pop(d["remove"], None)
                    else:
                        rec = _record(d)
                        records[rec.path] = rec
        except FileNotFoundError:
            continue
        return list(records.values()), segments[-1][0] + 1, len(segments) - last_snap - 1
    raise ValueError(f"the log {store.uri(logs)!r} kept changing while it was read; try again")


def read_manifest(store: DataStore, run_id: str) -> Manifest | None:
    """The run's manifest (header and the records of its log), or None if the run has none."""
    rel = manifest_path(run_id)
    if not store.exists(rel):
        return None
    try:
        m = Manifest.from_json(store.read_bytes(rel).decode())
        log = _read_log(store, run_id)
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"manifest {store.uri(rel)!r} is unreadable ({exc}); "
                         f"restore it or remove the run folder and re-run") from None
    if log is not None:
        m.batches, m._next_seq, m._since_snapshot = log
        m._written_records = {b.path: asdict(b) for b in m.batches}
        m._written_header = m.header()
    # A format 1 manifest: nothing of it is in a log yet, so the next write makes a snapshot.
    return m


def read_all_manifests(store: DataStore) -> dict[str, Manifest]:
    """Every run's manifest in the data folder, by run id."""
    out = {}
    for run_id in store.list_dirs(RUNS):
        m = read_manifest(store, run_id)
        if m is not None:
            out[run_id] = m
    return out


@dataclass(frozen=True)
class RunInfo:
    """One line of ``acesup runs``: a run and how much of its request is in the data folder."""

    run_id: str
    seed: int
    start: int
    variants: tuple[str, ...]
    policies: tuple[str, ...]
    state: str
    requested_rows: int
    covered_rows: int
    batches_done: int
    batches_pending: int
    batches_failed: int
    updated: str
    error: str | None

    @property
    def fraction(self) -> float:
        return self.covered_rows / self.requested_rows if self.requested_rows else 1.0


def coverage_index(manifests: dict[str, Manifest]) -> dict[tuple[int, str], list[list[int]]]:
    """(seed, ``variant/policy``) -> merged ranges covered by done batches of any run."""
    ranges: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for m in manifests.values():
        for b in m.done():
            ranges.setdefault((m.seed, b.key), []).append((b.first, b.last))
    return {k: merge_ranges(v) for k, v in ranges.items()}


def covered_rows(first: int, last: int, covered: list[list[int]]) -> int:
    """How many deals of ``first..last`` the merged ranges cover."""
    return (last - first + 1) - sum(b - a + 1 for a, b in subtract_ranges(first, last, covered))


def list_runs(data: str | DataStore) -> list[RunInfo]:
    """Every run in the data folder with its progress (rows of its request present in any run's files)."""
    store = data if isinstance(data, DataStore) else DataStore(data)
    manifests = read_all_manifests(store)
    cov = coverage_index(manifests)
    out = []
    for m in manifests.values():
        got = sum(covered_rows(a, b, cov.get((m.seed, k), [])) for k, (a, b) in m.requested.items())
        out.append(RunInfo(
            run_id=m.run_id, seed=m.seed, start=m.start,
            variants=tuple(m.spec.get("variants", ())), policies=tuple(m.spec.get("policies", ())),
            state=m.state, requested_rows=m.requested_rows(), covered_rows=got,
            batches_done=sum(b.batches for b in m.batches if b.state == "done"),
            batches_pending=sum(b.state == "pending" for b in m.batches),
            batches_failed=sum(b.state == "failed" for b in m.batches),
            updated=m.updated, error=m.error,
        ))
    out.sort(key=lambda r: (r.updated, r.run_id))
    return out
