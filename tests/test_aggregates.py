"""Incremental aggregates equal a full rebuild from the rows, and both equal the Polars twin.

Real pipeline runs on the session's local Ray, night after night, in the ways
that make the two sides of a pair arrive apart: a capped solver whose deals
of a later night were played by the other players nights before, a night that
fails and is finished the next night, a player added months later and
backfilled by another run, compaction between the nights, and steps of the
aggregation and of compaction killed halfway.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from queries_data import TABLE_KEYS, compare_rows, expected_tables

from pipeline.compact import compact
from pipeline.execute import BatchFailedError, execute_run
from pipeline.spec import load_spec
from pipeline.storage import DataStore
from pipeline.worker import run_batch
from queries import aggregates
from queries.aggregates import read_state, update_aggregates
from queries.report import build_report

BASE = dict(seed=5, start=0, variants="standard,strict,strict+optional", policies="nomove,greedy,solver", batch_size=40,
            node_limit=5_000)


def night(data: Path, deals: int, solver: int, **kw):
    spec = load_spec(None, data=str(data), deals=deals, caps={"solver": solver}, **{**BASE, **kw})
    summary = execute_run(spec, progress=False)
    return spec, summary


def step(data: Path):
    res = update_aggregates(str(data))
    compact(str(data))
    return res


@pytest.fixture(scope="module")
def history(ray_local, tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("nights") / "data"
    night(data, 120, 30)
    step(data)
    # Night 2 fails on one batch; the aggregates take what is there, compaction runs.
    spec = load_spec(None, data=str(data), deals=240, caps={"solver": 60}, **BASE)

    def fail_one(job):
        if job.policy == "greedy" and job.variant == "strict" and job.first == 200:
            raise RuntimeError("node lost")
        return run_batch(job)

    with pytest.raises(BatchFailedError):
        execute_run(spec, progress=False, batch_fn=fail_one, max_retries=0)
    step(data)
    # Night 3 finishes night 2 and adds more; the solver's new deals were played by the others before.
    night(data, 240, 60)
    step(data)
    night(data, 320, 90)
    step(data)
    # A player added later, backfilled over every deal by a run of its own.
    load = load_spec(None, data=str(data), **{**BASE, "policies": "human"}, deals=320)
    execute_run(load, progress=False)
    step(data)
    return data


def test_the_history_has_what_the_test_is_about(history):
    state = read_state(str(history))
    assert state.generation >= 5
    gens = {r["generation"] for r in state.tables["ledger"].to_pylist()
            if r["policy"] == "solver" and r["variant"] == "standard"}
    assert len(gens) >= 3  # the solver's deals came in several nights
    files = list((history / "results").rglob("*.parquet"))
    assert any("-c" in f.name for f in files)  # compaction ran
    assert not any(p.name.endswith(".tmp") for p in history.rglob("*"))


def test_incremental_report_equals_the_independent_recomputation(history):
    doc = json.loads(Path(build_report(history)["report_json"]).read_text())
    want = expected_tables(history)
    for name in TABLE_KEYS:
        if name == "honest_bracket":  # needs the bracket's players: tests/test_bracket_report.py
            continue
        assert doc["tables"][name], name
        assert compare_rows(name, doc["tables"][name], want[name]) == [], name
    assert doc["provenance"]["duplicate_keys"] == 0


def test_a_rebuild_from_the_rows_gives_the_same_bytes(history, tmp_path):
    before = build_report(history)
    report_json = Path(before["report_json"]).read_bytes()
    report_md = Path(before["report_md"]).read_bytes()
    inc = read_state(str(history))
    after = build_report(history, rebuild=True)
    assert Path(after["report_json"]).read_bytes() == report_json
    assert Path(after["report_md"]).read_bytes() == report_md
    reb = read_state(str(history))
    assert reb.generation == inc.generation + 1 and reb.record.get("rebuilt")
    for name in aggregates.TABLES:
        if name == "nights":
            continue  # the rebuild keeps each night's time; its own step is one more row
        assert reb.tables[name].equals(inc.tables[name]), name
    # A copy without any aggregates (a folder of an older version) gets them in one step.
    copy = tmp_path / "copy"
    shutil.copytree(history, copy, ignore=shutil.ignore_patterns("aggregates", "report", "acesup.*", "catalog"))
    fresh = build_report(copy)
    doc_a = json.loads(report_json)
    doc_b = json.loads(Path(fresh["report_json"]).read_text())
    # the same numbers; night by night, the copy knows only its one step (the history is in the aggregates)
    nights_a, nights_b = doc_a["tables"].pop("nights"), doc_b["tables"].pop("nights")
    assert doc_b["tables"] == doc_a["tables"] and doc_b["headline"] == doc_a["headline"]
    assert {n["nights"] for n in nights_a} == {len(set(n["night"] for n in nights_a))} and len(nights_a) > len(nights_b)
    assert {n["nights"] for n in nights_b} == {1}
    assert read_state(str(copy)).generation == 1


def test_the_figures_night_by_night_add_up(history):
    import duckdb

    build_report(history)
    with duckdb.connect(str(history / "acesup.duckdb"), read_only=True) as con:
        nights = con.execute("SELECT generation, variant, policy, deals, total_deals FROM nights "
                             "ORDER BY variant, policy, generation").fetchall()
        totals = dict(((v, p), d) for v, p, d in con.execute("SELECT variant, policy, deals FROM tallies").fetchall())
    last = {}
    for _g, v, p, d, total in nights:
        assert total == last.get((v, p), 0) + d
        last[(v, p)] = total
    assert last == totals


def test_an_aggregation_killed_before_its_commit_is_redone(history, tmp_path, monkeypatch):
    copy = tmp_path / "copy"
    shutil.copytree(history, copy)
    state = read_state(str(copy))
    # New rows: another night.
    night(copy, 360, 90)
    real = aggregates.write_state

    def killed(store, st, extra):
        # the tables are written, the commit record is not
        for name in aggregates.TABLES:
            store.write_atomic(f"{aggregates.AGG_DIR}/{st.generation:08d}/{name}.parquet", b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(aggregates, "write_state", killed)
    with pytest.raises(KeyboardInterrupt):
        update_aggregates(str(copy))
    assert read_state(str(copy)).generation == state.generation  # nothing committed
    monkeypatch.setattr(aggregates, "write_state", real)
    res = update_aggregates(str(copy))
    # 40 new deals for nomove and greedy in each of the three variants
    assert res.generation == state.generation + 1 and res.rows_added == 2 * 40 * 3 and not res.rebuilt
    doc = json.loads(Path(build_report(copy)["report_json"]).read_text())
    want = expected_tables(copy)
    for name in ("win_odds", "policy_gap", "score_distribution", "solver_ladder", "value_of_optional"):
        assert compare_rows(name, doc["tables"][name], want[name]) == [], name


def test_aggregates_that_count_rows_no_file_holds_are_rebuilt(history, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(history, copy)
    # The backfill run is removed by hand: its rows are gone from the folder.
    store = DataStore(str(copy))
    from pipeline.manifest import read_all_manifests

    (human,) = [m for m in read_all_manifests(store).values() if m.spec["policies"][0].startswith("human")]
    for b in human.done():
        (copy / b.path).unlink()
    shutil.rmtree(copy / "runs" / human.run_id)
    res = update_aggregates(str(copy))
    assert res.rebuilt and "no live file holds" in res.reason
    doc = json.loads(Path(build_report(copy)["report_json"]).read_text())
    assert not any(r["policy"].startswith("human") for r in doc["tables"]["win_odds"])
    assert compare_rows("policy_gap", doc["tables"]["policy_gap"], expected_tables(copy)["policy_gap"]) == []


def test_reading_the_state_leaves_no_reader_thread_behind(history):
    # pyarrow's dataset scanner (pq.read_table) leaves a thread that made a process abort at exit
    # now and then, after its work was done (status 134); read_state must start no thread at all.
    probe = (
        "import os, sys\n"
        "import pyarrow.parquet\n"
        "from queries.aggregates import read_state\n"
        "before = len(os.listdir('/proc/self/task'))\n"
        "state = read_state(sys.argv[1])\n"
        "assert state.generation > 0, state.generation\n"
        "print(before, len(os.listdir('/proc/self/task')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(history)], capture_output=True, text=True, check=True)
    before, after = map(int, out.stdout.split())
    assert after == before, f"read_state started {after - before} thread(s)"
