"""Run manifests: one small JSON file per run, the record of what its batches wrote.

``DATA/runs/<run_id>/manifest.json`` (written only by the driver, always to a
temporary name and renamed into place) holds::

    format       1
    run_id, seed, start, engine_version, schema_version
    spec         the spec of the latest execution (plain values, as spec.toml)
    requested    {"<variant>/<policy>": [first, last]}, the union of every execution's
                 request (executions only ever extend it: ranges are prefixes from start)
    covered      {"<variant>/<policy>": [[first, last], …]}, merged ranges of done batches
    batches      [{variant, policy, first, last, state, path, rows, sha256, bytes,
                   seconds, engine_seconds, node, error, finished}, …]
                 state: pending | done | failed
    state        planned | running | done | failed | interrupted
    created, updated (UTC ISO times), error (text or null)

A batch of one run may cover keys another run asks for: the key (seed, deal,
variant, policy) is unique across the whole data folder, so planning and
verification read the manifests of every run.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from .errors import UserError
from .storage import RUNS, DataStore

FORMAT = 1
MANIFEST = "manifest.json"
SPEC_FILE = "spec.toml"


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

    @property
    def key(self) -> str:
        return pair_key(self.variant, self.policy)


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

    def to_json(self) -> str:
        d = {
            "format": FORMAT,
            "run_id": self.run_id,
            "seed": self.seed,
            "start": self.start,
            "engine_version": self.engine_version,
            "schema_version": self.schema_version,
            "state": self.state,
            "created": self.created,
            "updated": self.updated,
            "error": self.error,
            "spec": self.spec,
            "requested": self.requested,
            "covered": self.covered(),
            "batches": [asdict(b) for b in self.batches],
        }
        return json.dumps(d, indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        d = json.loads(text)
        if d.get("format") != FORMAT:
            raise ValueError(f"manifest format {d.get('format')!r} is not {FORMAT}")
        return cls(
            run_id=d["run_id"], seed=int(d["seed"]), start=int(d["start"]), spec=d["spec"],
            engine_version=d.get("engine_version", ""), schema_version=int(d.get("schema_version", 0)),
            requested={k: [int(a), int(b)] for k, (a, b) in d.get("requested", {}).items()},
            batches=[BatchRecord(**b) for b in d.get("batches", [])],
            state=d.get("state", "planned"), created=d.get("created", ""), updated=d.get("updated", ""),
            error=d.get("error"),
        )


def manifest_path(run_id: str) -> str:
    return f"{RUNS}/{run_id}/{MANIFEST}"


def spec_path(run_id: str) -> str:
    return f"{RUNS}/{run_id}/{SPEC_FILE}"


def write_manifest(store: DataStore, manifest: Manifest) -> None:
    """Write the manifest atomically (temporary name, then rename)."""
    manifest.updated = now_iso()
    store.write_atomic(manifest_path(manifest.run_id), manifest.to_json().encode())


def read_manifest(store: DataStore, run_id: str) -> Manifest | None:
    """The run's manifest, or None if the run has none."""
    rel = manifest_path(run_id)
    if not store.exists(rel):
        return None
    try:
        return Manifest.from_json(store.read_bytes(rel).decode())
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"manifest {store.uri(rel)!r} is unreadable ({exc}); "
                         f"restore it or remove the run folder and re-run") from None


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
            batches_done=sum(b.state == "done" for b in m.batches),
            batches_pending=sum(b.state == "pending" for b in m.batches),
            batches_failed=sum(b.state == "failed" for b in m.batches),
            updated=m.updated, error=m.error,
        ))
    out.sort(key=lambda r: (r.updated, r.run_id))
    return out
