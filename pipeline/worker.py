"""One batch of a run: deal the decks, play or solve them, write one Parquet file.

This is what a Ray task runs (pipeline.execute wraps it); it is a plain
function, callable and testable without Ray. A batch writes its file and
returns what the driver records in the manifest; only the driver writes
manifests.

Idempotent: a batch whose final file already exists and is a finished file
of the same batch (footer run id, schema version and row count) is not played
again; its checksum is returned. Otherwise the file is (re)written to a
temporary name and renamed over the final name, so a retried or re-executed
task leaves exactly one whole file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .storage import DataStore, batch_path, file_sha256, footer, footer_problem, parquet_bytes, result_table, sha256_bytes


@dataclass(frozen=True)
class BatchJob:
    """Decks ``first .. last`` of ``seed``, played by ``policy`` under ``variant``, for run ``run_id``."""

    data: str
    run_id: str
    seed: int
    variant: str
    policy: str
    first: int
    last: int
    lines: bool = False
    node_limit: int | None = None
    engine_version: str = ""
    fingerprint: str = ""  # the player's behaviour fingerprint (pipeline.fingerprint), for the footer

    @property
    def rows(self) -> int:
        return self.last - self.first + 1

    @property
    def path(self) -> str:
        """The final file, relative to the data location."""
        return batch_path(self.variant, self.policy, self.run_id, self.first, self.last)

    def describe(self) -> str:
        return f"{self.variant} × {self.policy}, deals {self.first}..{self.last} of seed {self.seed}"


@dataclass
class BatchDone:
    """A finished batch: its file, row count, SHA-256 of the file, size and timings."""

    path: str
    rows: int
    sha256: str
    bytes: int
    seconds: float
    engine_seconds: float
    reused: bool = False
    node: str = ""
    extra: dict[str, object] = field(default_factory=dict)


def play_batch_columns(job: BatchJob) -> dict[str, object]:
    """The result columns of the batch (engine_rs_free.players.play on its decks)."""
    from engine_rs_free.deals import deal_batch
    from engine_rs_free.players import play

    decks = deal_batch(job.seed, job.first, job.rows)
    indices = np.arange(job.first, job.last + 1, dtype=np.int64)
    return play(decks, job.variant, job.policy, seed=job.seed, indices=indices,
                want_lines=job.lines, node_limit=job.node_limit).columns()


def existing_batch(store: DataStore, job: BatchJob) -> BatchDone | None:
    """The batch's final file if it is already a finished file of this batch, else None."""
    if not store.exists(job.path):
        return None
    try:
        meta = footer(store, job.path)
    except (OSError, ValueError):
        return None
    if footer_problem(meta, run_id=job.run_id, rows=job.rows, fingerprint=job.fingerprint) is not None:
        return None
    digest, size = file_sha256(store, job.path)
    return BatchDone(job.path, job.rows, digest, size, 0.0, 0.0, reused=True)


def run_batch(job: BatchJob) -> BatchDone:
    """Play the batch and write its file (or reuse a finished one); see the module docstring."""
    t0 = time.perf_counter()
    store = DataStore(job.data)
    done = existing_batch(store, job)
    if done is not None:
        done.seconds = time.perf_counter() - t0
        return done
    columns = play_batch_columns(job)
    t1 = time.perf_counter()
    table = result_table(job.run_id, job.seed, job.variant, job.policy, job.first, columns,
                         engine_version=job.engine_version, fingerprint=job.fingerprint)
    data = parquet_bytes(table)
    store.write_atomic(job.path, data)
    return BatchDone(job.path, job.rows, sha256_bytes(data), len(data),
                     time.perf_counter() - t0, t1 - t0)
