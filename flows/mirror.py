"""A local copy of a data folder on object storage, for the catalog and the report.

Ray workers write results to shared storage (``s3://bucket/acesup``), but the
SQL catalog and the report read the Parquet files with DuckDB on a local disk
(queries.catalog.local_data_folder). So when the data location is a URI, the
flows copy it into a local folder first and build the catalog and the report
there; the copy is incremental (result files are immutable once renamed into
place: a file is copied when it is new or its size differs; manifests and
fingerprint records, small and rewritten, are always copied), and a result file that is gone from the
source (moved aside by the pipeline) is removed from the copy, so the copy
never holds a key twice.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.fingerprint import RECORDS
from pipeline.storage import RESULTS, RUNS, TMP_SUFFIX, DataStore
from queries.aggregates import AGG_DIR

MIRROR_ROOT = "acesup-mirror"


def is_remote(data: str) -> bool:
    """True for a data location that is not a local folder (``s3://…``, ``gs://…``).

    Decided from the text alone, as pipeline.storage does, without reaching the store.
    """
    text = str(data).strip()
    return "://" in text and not text.startswith("file://")


def local_folder_for(data: str, root: str | os.PathLike | None = None) -> str:
    """The local folder the catalog and report of ``data`` are built in.

    ``data`` itself if it is local; otherwise ``ROOT/<URI as a folder name>``, with ROOT
    ``./acesup-mirror`` of the working directory unless given.
    """
    text = str(data).strip()
    if not is_remote(text):
        text = text[len("file://"):] if text.startswith("file://") else text
        return os.path.abspath(os.path.expanduser(text))
    base = Path(root) if root is not None else Path.cwd() / MIRROR_ROOT
    # A readable folder name (s3://bucket/acesup -> s3_bucket_acesup); DuckDB globs stay plain.
    return str((base / re.sub(r"[^A-Za-z0-9_.-]+", "_", text.rstrip("/"))).resolve())


@dataclass(frozen=True)
class MirrorResult:
    """What ``mirror_data`` did."""

    source: str
    target: str
    copied: int
    removed: int
    files: int


def _wanted(rel: str) -> bool:
    name = rel.rpartition("/")[2]
    return not name.startswith(".") and not name.endswith(TMP_SUFFIX)


def mirror_data(source: str, target: str) -> MirrorResult:
    """Make ``target`` hold the result files run manifests and aggregates of ``source`` (see the module docstring)."""
    src = DataStore(source)
    dst = DataStore(target)
    folders = (RESULTS, RUNS, AGG_DIR, RECORDS)
    theirs = {rel: size for d in folders for rel, size in src.list_files(d).items() if _wanted(rel)}
    ours = {rel: size for d in folders for rel, size in dst.list_files(d).items() if _wanted(rel)}
    copied = removed = 0
    for rel, size in sorted(theirs.items()):
        if rel.startswith((RUNS + "/", RECORDS + "/")) or ours.get(rel) != size:
            dst.write_atomic(rel, src.read_bytes(rel))
            copied += 1
    for rel in sorted(set(ours) - set(theirs)):
        dst.delete(rel)
        removed += 1
    return MirrorResult(src.location, dst.location, copied, removed, len(theirs))


__all__ = ["MirrorResult", "is_remote", "local_folder_for", "mirror_data"]
