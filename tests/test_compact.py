"""Compaction: few large files, every key exactly once, atomic and resumable after a kill.

Real runs on the session's local Ray; compaction is then killed at each point
of its protocol (pipeline/compact.py) and finished by the next call.
"""

from __future__ import annotations

import os

import pyarrow.dataset as pads
import pytest

from pipeline import compact as compact_mod
from pipeline.compact import compact, is_compacted_path
from pipeline.execute import execute_run
from pipeline.manifest import read_manifest
from pipeline.plan import plan_run
from pipeline.schema import KEY_COLUMNS
from pipeline.spec import load_spec
from pipeline.storage import DataStore
from pipeline.verify import verify_run


def read_results(data):
    ds = pads.dataset(os.path.join(data, "results"), format="parquet", partitioning=None)
    return ds.to_table().sort_by([(k, "ascending") for k in KEY_COLUMNS])


def spec(data, deals):
    return load_spec(None, seed=3, deals=deals, variants="standard", policies="nomove,greedy", batch_size=25,
                     data=str(data))


def files(data):
    return sorted(p.name for p in (data / "results").rglob("*.parquet"))


def assert_exactly_once(data, s):
    t = read_results(str(data))
    keys = set(zip(*(t.column(k).to_pylist() for k in KEY_COLUMNS)))
    want = {(s.seed, d, v, p) for (v, p), (a, b) in s.requested().items() for d in range(a, b + 1)}
    assert len(keys) == t.num_rows and keys == want
    return t


def test_nights_of_batches_become_few_files_in_tiers(ray_local, tmp_path, monkeypatch):
    monkeypatch.setattr(compact_mod, "FANIN", 3)
    data = tmp_path / "d"
    for night in range(1, 7):
        s = spec(data, 100 * night)
        execute_run(s, progress=False)
        before = assert_exactly_once(data, s)
        res = compact(str(data))
        assert res.problems == [] and res.files_in >= 4
        assert assert_exactly_once(data, s).equals(before)  # the same rows, in other files
        assert verify_run(str(data), s.run_id, deep=True).ok
    # 6 nights of 4 batches per player: each night's batches became one file, and every 3
    # adjacent files of a size tier (here all under 2 MiB) one file: nights 1-3, then 1-5.
    m = read_manifest(DataStore(str(data)), s.run_id)
    done = sorted(m.done(), key=lambda b: (b.policy, b.first))
    assert all(b.kind == "compacted" and b.verified and not b.replaces for b in done)
    assert [(b.policy, b.first, b.last, b.batches) for b in done] == [
        (p, a, b, n) for p in ("greedy", "nomove") for a, b, n in ((0, 499, 20), (500, 599, 4))]
    assert all(is_compacted_path(n) for n in files(data))
    # A night's files are read by the aggregates as well as batches are.
    from queries.aggregates import update_aggregates

    assert update_aggregates(str(data)).rows_added == 2 * 600


def test_a_compaction_killed_before_its_commit_leaves_an_orphan_that_is_removed(ray_local, tmp_path, monkeypatch):
    data = tmp_path / "d"
    s = spec(data, 100)
    execute_run(s, progress=False)
    before = assert_exactly_once(data, s)
    names = files(data)
    real = compact_mod.write_manifest

    def killed(store, m, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(compact_mod, "write_manifest", killed)
    with pytest.raises(KeyboardInterrupt):
        compact(str(data))
    # The merged file is in place but no record names it: the batch files are still the live ones.
    assert any(is_compacted_path(n) for n in files(data))
    m = read_manifest(DataStore(str(data)), s.run_id)
    assert {b.kind for b in m.done()} == {"batch"} and len(m.done()) == 8
    monkeypatch.setattr(compact_mod, "write_manifest", real)
    store = DataStore(str(data))
    plan = plan_run(store, s)  # planning finishes it: the orphan goes
    assert plan.jobs == [] and plan.quarantined == [] and files(data) == names
    assert verify_run(str(data), s.run_id).ok
    compact(str(data))
    assert assert_exactly_once(data, s).equals(before)
    assert len(files(data)) == 2


def test_a_compaction_killed_after_its_commit_is_finished(ray_local, tmp_path, monkeypatch):
    data = tmp_path / "d"
    s = spec(data, 100)
    execute_run(s, progress=False)
    before = assert_exactly_once(data, s)
    real = compact_mod._delete_replaced

    def killed(store, m, rec):
        raise KeyboardInterrupt

    monkeypatch.setattr(compact_mod, "_delete_replaced", killed)
    with pytest.raises(KeyboardInterrupt):
        compact(str(data))
    # Committed: the manifest names the merged file, whose record still lists the inputs.
    m = read_manifest(DataStore(str(data)), s.run_id)
    merged = [b for b in m.done() if b.kind == "compacted"]
    assert len(merged) == 1 and len(merged[0].replaces) == 4
    assert all((data / p).exists() for p in merged[0].replaces)
    assert verify_run(str(data), s.run_id).ok  # through the records: every key once
    monkeypatch.setattr(compact_mod, "_delete_replaced", real)
    res = compact(str(data))  # finishes the deletion, then merges the other player
    assert not any((data / p).exists() for p in merged[0].replaces)
    assert res.merges == 1 and len(files(data)) == 2
    assert assert_exactly_once(data, s).equals(before)
    assert verify_run(str(data), s.run_id, deep=True).ok


def test_an_input_that_differs_from_its_record_stops_its_merge(ray_local, tmp_path):
    data = tmp_path / "d"
    s = spec(data, 100)
    execute_run(s, progress=False)
    m = read_manifest(DataStore(str(data)), s.run_id)
    bad = next(b for b in m.done() if b.policy == "greedy")
    raw = bytearray((data / bad.path).read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (data / bad.path).write_bytes(bytes(raw))
    res = compact(str(data))
    assert len(res.problems) == 1 and bad.path in res.problems[0] and "SHA-256" in res.problems[0]
    assert res.merges == 1  # the other player's files were merged
    assert (data / bad.path).exists()
    assert not verify_run(str(data), s.run_id).ok


def test_verify_trusts_checked_files_unless_deep(ray_local, tmp_path):
    data = tmp_path / "d"
    s = spec(data, 100)
    execute_run(s, progress=False)
    res = verify_run(str(data), s.run_id)
    assert res.ok and res.files_checked == 8 and res.files_trusted == 0  # new batch files: read in full
    compact(str(data))
    res = verify_run(str(data), s.run_id)
    assert res.ok and res.files_checked == 0 and res.files_trusted == 2
    # A merged file corrupted later, same size: the nightly check trusts it, the deep one catches it.
    m = read_manifest(DataStore(str(data)), s.run_id)
    path = data / m.done()[0].path
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    assert verify_run(str(data), s.run_id).ok
    deep = verify_run(str(data), s.run_id, deep=True)
    assert not deep.ok and any("SHA-256" in p for p in deep.problems)
