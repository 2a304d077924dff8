"""Data files of schema version 1 (written before the ``value`` column) stay valid everywhere.

A folder written by an older acesup holds version-1 files: every column but
``value``, footer ``acesup.schema_version = 1``. They are written here by the
real worker with its table cut to version 1 (what the old writer wrote), then a
newer run adds version-2 rows beside them, of the same player and of a bracket
player. Nothing of version 1 is played again, verification passes, the
catalog's ``results`` view reads both (``value`` null in the old rows), the
aggregates count them, compaction merges old and new files into one file of
the current version with the same rows, and the fingerprint recheck of rows
from before fingerprints reads a version-1 file.
"""

from __future__ import annotations

import re
from dataclasses import replace

import duckdb
import pyarrow as pa
import pytest

import pipeline.worker as worker
from pipeline.compact import compact
from pipeline.fingerprint import check_here, recheck_file
from pipeline.plan import plan_run
from pipeline.schema import RESULT_SCHEMA, RESULT_SCHEMAS, SCHEMA_VERSION
from pipeline.spec import load_spec
from pipeline.storage import META_SCHEMA, DataStore, footer, footer_problem, read_table
from pipeline.verify import verify_run
from queries.aggregates import read_state, update_aggregates
from queries.catalog import build_catalog

ADP = "adp:w=w1,look=1,samples=4,exact=4,psamples=8,pexact=4"  # canonical, as the rows name it


def _version_1(result_table):
    def write_v1(*args, **kwargs):
        t = result_table(*args, **kwargs)
        meta = {**t.schema.metadata, META_SCHEMA.encode(): b"1"}
        return t.drop_columns(["value"]).replace_schema_metadata(meta)
    return write_v1


def run_here(spec, *, fingerprints=True):
    """Plan, fingerprint and play every batch of ``spec`` in this process; the jobs it played."""
    store = DataStore(spec.data)
    plan = plan_run(store, spec)
    fps = check_here(store, [(j.variant, j.policy) for j in plan.jobs], run_id=spec.run_id) if fingerprints else {}
    for job in plan.jobs:
        worker.run_batch(replace(job, fingerprint=fps.get((job.variant, job.policy), "")))
    plan_run(store, spec)  # adopts the files the batches wrote into the manifest
    return plan.jobs


def _rows(table: pa.Table) -> list[dict]:
    return table.select([f.name for f in RESULT_SCHEMA if f.name in table.column_names]) \
        .sort_by([("policy", "ascending"), ("deal", "ascending")]).to_pylist()


def test_version_1_files_stay_valid(tmp_path, monkeypatch):
    assert set(RESULT_SCHEMAS) == {1, SCHEMA_VERSION} and SCHEMA_VERSION == 2
    data = str(tmp_path / "data")
    store = DataStore(data)
    old = load_spec(None, data=data, seed=3, start=0, deals=120, variants="strict", policies="greedy", batch_size=40)
    with monkeypatch.context() as m:
        m.setattr(worker, "result_table", _version_1(worker.result_table))
        run_here(old, fingerprints=False)  # as an acesup from before fingerprints and the value column
    v1_files = sorted(store.list_files("results"))
    assert len(v1_files) == 3
    for rel in v1_files:
        meta = footer(store, rel)
        assert meta.metadata[META_SCHEMA.encode()] == b"1" and "value" not in meta.schema.to_arrow_schema().names
        assert footer_problem(meta, run_id=old.run_id, rows=40) is None
    bad = pa.table({c: [1] for c in ("a",)})  # a footer of no known version is still refused
    assert "columns differ" in footer_problem(
        footer_of(tmp_path, bad, {META_SCHEMA: "1", "acesup.run_id": "r"}), run_id="r", rows=1)
    assert "not one of 1, 2" in footer_problem(
        footer_of(tmp_path, bad, {META_SCHEMA: "3", "acesup.run_id": "r"}), run_id="r", rows=1)

    # the recheck of rows from before fingerprints reads a version-1 file (no value column)
    assert recheck_file(data, v1_files[0], 10, None).problems == []

    # a newer run: the old deals are not played again, version-2 rows join them
    new = load_spec(None, data=data, seed=3, start=0, deals=200, variants="strict", policies=["greedy", ADP],
                    batch_size=40)
    jobs = run_here(new)
    assert sorted((j.policy, j.first) for j in jobs) == sorted(
        [("greedy", 120), ("greedy", 160)] + [(ADP, f) for f in range(0, 200, 40)])
    assert verify_run(data, old.run_id, deep=True).problems == []
    assert verify_run(data, new.run_id, deep=True).problems == []
    before = _rows(pa.concat_tables([_as_v2(read_table(store, rel)) for rel in store.list_files("results")]))
    assert len(before) == 400 and sum(r["value"] is None for r in before) == 200

    # the aggregates and the catalog: every row, value null in the old ones
    update_aggregates(data)
    tallies = {r["policy"]: r for r in read_state(data).tables["tallies"].to_pylist()}
    assert tallies["greedy"]["deals"] == 200 and tallies["greedy"]["valued"] == 0
    assert tallies[ADP]["valued"] == 200
    con = duckdb.connect(str(build_catalog(data)), read_only=True)
    try:
        got = con.execute("SELECT policy, count(*), count(value) FROM results GROUP BY policy ORDER BY policy").fetchall()
        wins = con.execute("SELECT policy, deals, wins FROM tallies ORDER BY policy").fetchall()
        raw_wins = con.execute("SELECT policy, count(*), count(*) FILTER (WHERE won) FROM results "
                               "GROUP BY policy ORDER BY policy").fetchall()
    finally:
        con.close()
    assert got == [(ADP, 200, 200), ("greedy", 200, 0)]
    assert wins == raw_wins

    # compaction merges version-1 and version-2 files into files of the current version, same rows
    res = compact(data)
    assert res.merges >= 1 and res.problems == []
    files = sorted(store.list_files("results"))
    merged = [f for f in files if "-c" in f.rsplit("/", 1)[-1]]
    assert merged and all(footer(store, f).metadata[META_SCHEMA.encode()] == b"2" for f in merged)
    assert set(v1_files) - set(files)  # version-1 files were among the inputs merged
    after = _rows(pa.concat_tables([_as_v2(read_table(store, rel)) for rel in files]))
    assert after == before
    for run in (old, new):
        assert verify_run(data, run.run_id, deep=True).problems == []


def _as_v2(table: pa.Table) -> pa.Table:
    from pipeline.storage import current_table

    return current_table(table)


def footer_of(tmp_path, table: pa.Table, meta: dict):
    import pyarrow.parquet as pq

    p = tmp_path / "odd.parquet"
    pq.write_table(table.replace_schema_metadata(meta), p)
    return pq.ParquetFile(p).metadata


@pytest.mark.parametrize("version", [1, 2])
def test_current_table_is_the_identity_on_the_current_schema_and_fills_nulls(version):
    from pipeline.storage import current_table

    schema = RESULT_SCHEMAS[version]
    t = pa.table({f.name: pa.nulls(3, f.type) for f in schema}).replace_schema_metadata({META_SCHEMA: str(version)})
    got = current_table(t)
    assert got.schema.remove_metadata().equals(RESULT_SCHEMA)
    assert got.schema.metadata[META_SCHEMA.encode()] == str(SCHEMA_VERSION).encode()
    assert got.column("value").null_count == 3


@pytest.mark.parametrize("policy,tamper,message", [
    (ADP, "drop", r"40 rows without value \(adp rows carry value\)"),
    ("greedy", "add", r"40 rows with value \(greedy rows carry no optional column\)"),
])
def test_verify_holds_rows_to_the_columns_their_entry_carries(tmp_path, monkeypatch, policy, tamper, message):
    """verify reads what a player's rows carry from its registry entry (PlayerKind.carries), not its name."""
    import numpy as np

    result_table = worker.result_table

    def tampered(*args, **kwargs):
        t = result_table(*args, **kwargs)
        i = t.schema.get_field_index("value")
        col = pa.nulls(t.num_rows, pa.float64()) if tamper == "drop" else pa.array(np.full(t.num_rows, 0.5))
        return t.set_column(i, t.schema.field(i), col)

    data = str(tmp_path / "data")
    spec = load_spec(None, data=data, seed=3, start=0, deals=40, variants="strict", policies=[policy], batch_size=40)
    run_here(spec)
    assert verify_run(data, spec.run_id, deep=True).problems == []
    spec2 = load_spec(None, data=str(tmp_path / "data2"), seed=3, start=0, deals=40, variants="strict",
                      policies=[policy], batch_size=40)
    monkeypatch.setattr(worker, "result_table", tampered)
    run_here(spec2)
    problems = verify_run(spec2.data, spec2.run_id, deep=True).problems
    assert len(problems) == 1 and re.search(message, problems[0]), problems
