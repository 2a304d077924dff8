"""The data folder: paths, atomic writes and the Parquet files of results.

Layout under the data location DATA (a local folder or any URI pyarrow.fs
understands, e.g. ``s3://bucket/acesup``)::

    DATA/results/variant=<v>/policy=<encoded policy>/<run_id>-<first>-<last>.parquet
    DATA/results/variant=<v>/policy=<encoded policy>/<run_id>-<first>-<last>-c<hash>.parquet  (pipeline.compact)
    DATA/runs/<run_id>/spec.toml
    DATA/runs/<run_id>/manifest.json, DATA/runs/<run_id>/log/*.jsonl  (pipeline.manifest)
    DATA/aggregates/<generation>/*.parquet, DATA/aggregates/<generation>.json  (queries.aggregates)

Policy names hold ``:``, ``=`` and ``+``, so folder names percent-encode every
byte outside ``[A-Za-z0-9_.-]`` (``pimc:samples=8`` -> ``pimc%3Asamples%3D8``);
``decode_name`` reverses it exactly. The ``variant`` and ``policy`` columns in
the file are the truth; the folders are for people and pruning.

Every file is written to a temporary name in its final folder (a dot-name
ending in ``.tmp``, which ``*.parquet`` globs never match) and then renamed into
place, so a reader never sees a partial file. On a local disk the rename is
atomic; on object stores ``move`` is copy-then-delete, but the final object
still appears whole, since an object store publishes an object only once its
upload completes.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import string
import uuid
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import UserError
from .schema import RESULT_SCHEMA, RESULT_SCHEMAS, SCHEMA_VERSION

RESULTS = "results"
RUNS = "runs"
_SAFE = frozenset(string.ascii_letters + string.digits + "_.-")
_FILE_RE = re.compile(r"^(?P<run>[0-9a-f]{12})-(?P<first>\d+)-(?P<last>\d+)\.parquet$")
TMP_SUFFIX = ".tmp"

META_SCHEMA = "acesup.schema_version"
META_ENGINE = "acesup.engine_version"
META_RUN = "acesup.run_id"
META_FINGERPRINT = "acesup.fingerprint"  # the player's behaviour fingerprint (pipeline.fingerprint)


class DiskFullError(UserError):
    """The data location has no space left (or the user's quota is used up)."""


_FULL = (errno.ENOSPC, errno.EDQUOT)
_FULL_TEXT = ("No space left on device", "Disk quota exceeded")


def is_disk_full(exc: BaseException) -> bool:
    """True for an OSError that says the disk (or the quota) is full, from Python or from pyarrow."""
    return isinstance(exc, OSError) and (exc.errno in _FULL or any(t in str(exc) for t in _FULL_TEXT))


def disk_full_error(location: str, rel: str) -> DiskFullError:
    return DiskFullError(
        f"the disk holding {location} is full (no space left writing {rel}); free some space there, or give "
        f"another --data folder, then run the same command again: it resumes where this one stopped")


def encode_name(text: str) -> str:
    """Percent-encode every byte outside ``[A-Za-z0-9_.-]``: a safe, reversible folder name.

    >>> encode_name("solver:sensible+leftmost+must_fill")
    'solver%3Asensible%2Bleftmost%2Bmust_fill'
    >>> decode_name(encode_name("pimc:samples=8,inner=sensible"))
    'pimc:samples=8,inner=sensible'
    """
    return "".join(chr(b) if chr(b) in _SAFE else f"%{b:02X}" for b in text.encode())


def decode_name(text: str) -> str:
    """The text ``encode_name`` encoded."""
    return unquote_to_bytes(text).decode()


def batch_path(variant: str, policy: str, run_id: str, first: int, last: int) -> str:
    """Path of a batch file relative to DATA (``results/variant=…/policy=…/<run>-<first>-<last>.parquet``)."""
    return (f"{RESULTS}/variant={encode_name(variant)}/policy={encode_name(policy)}/"
            f"{run_id}-{first}-{last}.parquet")


@dataclass(frozen=True)
class BatchName:
    """What a batch file's path says: variant, policy, run and inclusive deal range."""

    variant: str
    policy: str
    run_id: str
    first: int
    last: int


def parse_batch_path(rel: str) -> BatchName | None:
    """The parts of a path made by ``batch_path``, or None for any other path."""
    parts = rel.split("/")
    if len(parts) != 4 or parts[0] != RESULTS:
        return None
    if not parts[1].startswith("variant=") or not parts[2].startswith("policy="):
        return None
    m = _FILE_RE.match(parts[3])
    if not m:
        return None
    try:
        variant = decode_name(parts[1][len("variant="):])
        policy = decode_name(parts[2][len("policy="):])
    except UnicodeDecodeError:
        return None
    return BatchName(variant, policy, m["run"], int(m["first"]), int(m["last"]))


def _split_uri(data: str) -> tuple[pafs.FileSystem, str, str]:
    """(filesystem, root path inside it, normalized location text)."""
    data = str(data).strip()
    if "://" in data and not data.startswith("file://"):
        try:
            fs, root = pafs.FileSystem.from_uri(data)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, ValueError) as exc:
            raise UserError(f"data location {data!r} is not usable: {exc}; give a local folder "
                            f"or a URI pyarrow supports (e.g. s3://bucket/acesup)") from None
        return fs, root.rstrip("/"), data.rstrip("/")
    if data.startswith("file://"):
        data = data[len("file://"):]
    path = os.path.abspath(os.path.expanduser(data))
    return pafs.LocalFileSystem(), path, path


class DataStore:
    """A data location: relative paths (``results/…``, ``runs/…``) on one pyarrow filesystem."""

    def __init__(self, data: str):
        self.fs, self.root, self.location = _split_uri(data)
        self.local = isinstance(self.fs, pafs.LocalFileSystem)

    def __repr__(self) -> str:
        return f"DataStore({self.location!r})"

    def path(self, rel: str) -> str:
        """Full path of ``rel`` inside the filesystem."""
        return f"{self.root}/{rel}" if rel else self.root

    def uri(self, rel: str = "") -> str:
        """``rel`` as a location text a user (or a worker) can use."""
        return f"{self.location}/{rel}" if rel else self.location

    def info(self, rel: str) -> pafs.FileInfo:
        return self.fs.get_file_info(self.path(rel))

    def exists(self, rel: str) -> bool:
        return self.info(rel).type == pafs.FileType.File

    def read_bytes(self, rel: str) -> bytes:
        with self.fs.open_input_stream(self.path(rel)) as f:
            return f.read()

    def makedirs(self, rel: str) -> None:
        self.fs.create_dir(self.path(rel), recursive=True)

    def write_atomic(self, rel: str, data: bytes) -> None:
        """Write ``data`` to a temporary name beside ``rel`` and rename it into place."""
        folder, _, name = rel.rpartition("/")
        if folder:
            self.makedirs(folder)
        tmp = f"{folder}/.{name}.{uuid.uuid4().hex[:8]}{TMP_SUFFIX}" if folder else f".{name}.tmp"
        try:
            with self.fs.open_output_stream(self.path(tmp)) as f:
                f.write(data)
            self.fs.move(self.path(tmp), self.path(rel))
        except BaseException as exc:
            try:
                self.fs.delete_file(self.path(tmp))
            except OSError:
                pass
            if is_disk_full(exc):
                raise disk_full_error(self.location, rel) from None
            raise

    def delete(self, rel: str) -> None:
        self.fs.delete_file(self.path(rel))

    def move(self, rel_src: str, rel_dst: str) -> None:
        folder = rel_dst.rpartition("/")[0]
        if folder:
            self.makedirs(folder)
        self.fs.move(self.path(rel_src), self.path(rel_dst))

    def list_files(self, rel_dir: str) -> dict[str, int]:
        """Every file under ``rel_dir`` (recursively): relative path -> size in bytes."""
        sel = pafs.FileSelector(self.path(rel_dir), recursive=True, allow_not_found=True)
        out = {}
        prefix = self.root + "/"
        for fi in self.fs.get_file_info(sel):
            if fi.type == pafs.FileType.File:
                out[fi.path[len(prefix):] if fi.path.startswith(prefix) else fi.path] = fi.size
        return out

    def list_dirs(self, rel_dir: str) -> list[str]:
        """Names of the folders directly under ``rel_dir``."""
        sel = pafs.FileSelector(self.path(rel_dir), recursive=False, allow_not_found=True)
        return sorted(fi.base_name for fi in self.fs.get_file_info(sel) if fi.type == pafs.FileType.Directory)

    def check_writable(self) -> None:
        """Create DATA/runs and write a probe file there, or raise UserError saying what to do."""
        try:
            self.makedirs(RUNS)
            probe = f"{RUNS}/.write-probe-{uuid.uuid4().hex[:8]}{TMP_SUFFIX}"
            with self.fs.open_output_stream(self.path(probe)) as f:
                f.write(b"ok")
            self.fs.delete_file(self.path(probe))
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full_error(self.location, RUNS) from None
            raise UserError(f"cannot write to data location {self.location!r} ({exc}); "
                            f"give a writable folder with --data PATH") from None


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(store: DataStore, rel: str) -> tuple[str, int]:
    """(SHA-256 hex digest, size) of a stored file, read in 4 MiB blocks."""
    h = hashlib.sha256()
    size = 0
    with store.fs.open_input_stream(store.path(rel)) as f:
        while True:
            block = f.read(4 << 20)
            if not block:
                break
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


# -- result tables ---------------------------------------------------------------------


def _repeat_string(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value])).cast(pa.string())


def result_table(run_id: str, seed: int, variant: str, policy: str, first: int,
                 columns: dict[str, object], *, engine_version: str, fingerprint: str = "") -> pa.Table:
    """One batch's rows as a table of RESULT_SCHEMA (footer metadata included).

    ``columns`` is ``engine_rs_free.players.play(...).columns()`` for decks
    ``first, first+1, …`` of ``seed``; ``fingerprint`` is the player's behaviour
    fingerprint (pipeline.fingerprint), written to the footer when given.
    """
    score = np.asarray(columns["score"], dtype=np.int8)
    n = len(score)
    for name in ("won", "moves", "decisions"):
        if len(columns[name]) != n:
            raise ValueError(f"player {policy!r} returned {len(columns[name])} {name} for {n} decks")
    nodes = columns.get("nodes")
    status = columns.get("status")
    line = columns.get("line")
    value = columns.get("value")
    arrays = [
        _repeat_string(run_id, n),
        pa.array(np.full(n, seed, dtype=np.uint64)),
        pa.array(np.arange(first, first + n, dtype=np.int64)),
        _repeat_string(variant, n),
        _repeat_string(policy, n),
        pa.array(score),
        pa.array(np.asarray(columns["won"], dtype=bool)),
        pa.array(np.asarray(columns["moves"], dtype=np.int16)),
        pa.array(np.asarray(columns["decisions"], dtype=np.int16)),
        pa.nulls(n, pa.int64()) if nodes is None else pa.array(np.asarray(nodes, dtype=np.int64)),
        pa.nulls(n, pa.string()) if status is None else pa.array(list(status), pa.string()),
        pa.nulls(n, pa.string()) if line is None else pa.array(list(line), pa.string()),
        pa.nulls(n, pa.float64()) if value is None else pa.array(np.asarray(value, dtype=np.float64)),
    ]
    meta = {META_SCHEMA: str(SCHEMA_VERSION), META_ENGINE: engine_version, META_RUN: run_id}
    if fingerprint:
        meta[META_FINGERPRINT] = fingerprint
    schema = RESULT_SCHEMA.with_metadata(meta)
    return pa.Table.from_arrays(arrays, schema=schema)


def parquet_bytes(table: pa.Table, *, row_group_size: int = 1 << 20) -> bytes:
    """The table as a zstd-compressed Parquet file, in memory."""
    sink = pa.BufferOutputStream()
    # Dictionary pages only where values repeat (the key strings, status); statistics only
    # on the columns queries filter by. Both keep the write well under a tenth of engine time.
    pq.write_table(table, sink, compression="zstd", row_group_size=row_group_size,
                   use_dictionary=["run_id", "variant", "policy", "status"],
                   write_statistics=["seed", "deal", "variant", "policy", "score", "won", "status"])
    return sink.getvalue().to_pybytes()


def footer(store: DataStore, rel: str) -> pq.FileMetaData:
    """The Parquet footer of a stored file (row count, schema, key-value metadata)."""
    with store.fs.open_input_file(store.path(rel)) as f:
        return pq.ParquetFile(f).metadata


def footer_problem(meta: pq.FileMetaData, *, run_id: str, rows: int, fingerprint: str | None = None) -> str | None:
    """Why a footer does not belong to a finished batch of ``run_id`` with ``rows`` rows (None: it does).

    A file of any schema version of pipeline.schema.RESULT_SCHEMAS belongs, with that version's
    columns. With ``fingerprint``, a footer that carries another behaviour fingerprint does not
    belong either.
    """
    kv = {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()}
    if fingerprint and kv.get(META_FINGERPRINT, fingerprint) != fingerprint:
        return f"footer fingerprint {kv.get(META_FINGERPRINT)!r} is not {fingerprint!r} (another version of the player)"
    if kv.get(META_RUN) != run_id:
        return f"footer run id {kv.get(META_RUN)!r} is not {run_id!r}"
    version = kv.get(META_SCHEMA, "")
    schema = RESULT_SCHEMAS.get(int(version)) if version.isdigit() else None
    if schema is None:
        return (f"footer schema version {kv.get(META_SCHEMA)!r} is not one of "
                f"{', '.join(map(str, RESULT_SCHEMAS))} (pipeline.schema)")
    if meta.num_rows != rows:
        return f"holds {meta.num_rows} rows, its name says {rows}"
    if not meta.schema.to_arrow_schema().remove_metadata().equals(schema):
        return f"columns differ from those of schema version {version} (pipeline.schema.RESULT_SCHEMAS)"
    return None


def current_table(table: pa.Table) -> pa.Table:
    """The rows of a data file of any schema version as a table of RESULT_SCHEMA (the current version).

    Columns an older version lacks are nulls (``value`` in version 1); the footer metadata is
    kept, with the schema version set to SCHEMA_VERSION. Compaction writes its merges from these.
    """
    meta = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in (table.schema.metadata or {}).items()}
    meta[META_SCHEMA] = str(SCHEMA_VERSION)
    arrays = [table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
              for f in RESULT_SCHEMA]
    return pa.Table.from_arrays(arrays, schema=RESULT_SCHEMA.with_metadata(meta))


def read_table(store: DataStore, rel: str, columns: list[str] | None = None) -> pa.Table:
    """Read one data file (whole, or some columns) with hive partitioning off.

    Through ParquetFile, not pq.read_table: read_table goes through pyarrow's dataset scanner,
    whose background thread outlives the read and, at interpreter exit, aborts the process now
    and then ("terminate called without an active exception", status 134; apache/arrow#34314).
    """
    with store.fs.open_input_file(store.path(rel)) as f:
        return pq.ParquetFile(f).read(columns=columns)
