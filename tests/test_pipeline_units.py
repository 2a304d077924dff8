"""Pipeline pieces without Ray: progress output, the data folder lock, reconciling files and manifests."""

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pipeline.errors import UserError
from pipeline.manifest import Manifest, read_manifest, write_manifest
from pipeline.lock import LOCK, DataLock
from pipeline.plan import plan_run
from pipeline.progress import Progress
from pipeline.spec import load_spec
from pipeline.storage import DataStore, batch_path, parquet_bytes, result_table
from pipeline.worker import BatchJob, run_batch


class FakeTty(io.StringIO):
    def isatty(self):
        return True


def test_progress_logs_plain_lines_off_a_terminal_and_redraws_on_one():
    log = io.StringIO()
    p = Progress(1000, label="acesup run x", stream=log, interval=0.0)
    p.update(7)
    p.update(250, left=130.0)
    p.update(1000, left=0.0)
    p.close()
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("acesup run x: 7 of 1,000 games (0.7%), ") and lines[0].endswith("time left not known yet")
    assert lines[1].startswith("acesup run x: 250 of 1,000 games (25.0%), ") and lines[1].endswith("about 2:10 left")
    assert lines[-1].startswith("acesup run x: 1,000 of 1,000 games (100.0%)") and lines[-1].endswith("done in 0:00")
    tty = FakeTty()
    p = Progress(200, stream=tty)
    p.update(50, left=75.0, force=True)
    p.close()
    out = tty.getvalue()
    assert out.startswith("\r[######..................] 50/200 games  25.0%") and "1:15 left" in out
    assert out.endswith("\n") and out.count("\n") == 1


def test_time_left_is_shown_only_once_it_means_something():
    from pipeline.execute import WorkEstimate

    now = [0.0]
    cheap = [BatchJob("d", "r", 1, "standard", "greedy", i * 100, i * 100 + 99) for i in range(10)]
    slow = [BatchJob("d", "r", 1, "standard", "solver", i * 10, i * 10 + 9) for i in range(20)]
    est = WorkEstimate(cheap + slow, clock=lambda: now[0])
    now[0] = 4.0
    for j in cheap[:5]:
        est.finished(j, 0.1)
    est.finished(slow[0], 2.0)
    assert est.seconds_left() is None  # 4 s in: too early
    now[0] = 12.0
    assert est.seconds_left() is None  # the solver has one batch done: its cost is a guess
    est.finished(slow[1], 0.0, reused=True)  # found in place: costs nothing, says nothing
    est.finished(slow[2], 6.0)
    assert est.seconds_left() is None
    est.finished(slow[3], 4.0)  # three fresh solver batches: 12 s for 30 deals
    # work done 12.5 s of an estimated 12.5 + 5*0.1 + 16*10*0.4 = 77 s (16%); 12.5 s of work in 12 s
    assert est.seconds_left() == pytest.approx((5 * 0.1 + 16 * 4.0) / (12.5 / 12.0))
    # Three batches of every pair, but under 5% of the estimated work done: still no estimate.
    many = [BatchJob("d", "r", 1, "strict", "solver", i * 10, i * 10 + 9) for i in range(100)]
    est = WorkEstimate(many, clock=lambda: 100.0)
    est.t0 = 0.0
    for j in many[:3]:
        est.finished(j, 1.0)
    assert est.seconds_left() is None  # 3 s of an estimated 100 s
    for j in many[3:6]:
        est.finished(j, 1.0)
    assert est.seconds_left() == pytest.approx(94.0 / (6.0 / 100.0))
    # A pair with fewer batches than MIN_BATCHES needs all of them.
    two = [BatchJob("d", "r", 1, "easy", "solver", 0, 9), BatchJob("d", "r", 1, "easy", "solver", 10, 19),
           BatchJob("d", "r", 1, "easy", "greedy", 0, 19)]
    est = WorkEstimate(two, clock=lambda: 100.0)
    est.t0 = 0.0
    est.finished(two[0], 5.0)
    assert est.seconds_left() is None  # greedy has not started
    est.finished(two[2], 0.1)
    assert est.seconds_left() is None  # 1 of the 2 solver batches done: min(3, 2) = 2 needed


def test_the_lock_refuses_a_live_driver_and_takes_over_a_dead_ones(tmp_path):
    store = DataStore(str(tmp_path))
    store.check_writable()
    with DataLock(store):
        with pytest.raises(UserError, match="this process already runs a job"):
            DataLock(store).acquire()
    assert store.read_bytes(LOCK) == b""  # released: an empty lock file is a free lock
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        store.write_atomic(LOCK, json.dumps({"host": os.uname().nodename, "pid": other.pid, "since": 0}).encode())
        with pytest.raises(UserError, match=f"another acesup run .*pid {other.pid}.* is writing"):
            DataLock(store).acquire()
    finally:
        other.kill()
        other.wait()
    with DataLock(store):  # its driver is dead: the lock is stale
        assert json.loads(store.read_bytes(LOCK))["pid"] == os.getpid()


def _write_batch(store, spec, variant, policy, first, last):
    job = BatchJob(store.location, spec.run_id, spec.seed, variant, policy, first, last)
    return run_batch(job)


def test_planning_adopts_valid_orphans_quarantines_bad_ones_and_removes_temps(tmp_path):
    spec = load_spec(None, seed=4, deals=300, variants="strict", policies="nomove", batch_size=100,
                     data=str(tmp_path))
    store = DataStore(spec.data)
    store.check_writable()
    first = plan_run(store, spec)
    assert [(j.first, j.last) for j in first.jobs] == [(0, 99), (100, 199), (200, 299)]
    # a worker finished batch 0..99 but the driver died before recording it
    good = _write_batch(store, spec, "strict", "nomove", 0, 99)
    # a file claiming 100..199 that holds other rows (never written by this pipeline)
    cols = {"score": np.zeros(5, np.int8), "won": np.zeros(5, bool), "moves": np.zeros(5, np.int16),
            "decisions": np.zeros(5, np.int16)}
    bad = batch_path("strict", "nomove", spec.run_id, 100, 199)
    store.write_atomic(bad, parquet_bytes(result_table(spec.run_id, 4, "strict", "nomove", 100, cols,
                                                       engine_version="x")))
    tmp = "results/variant=strict/policy=nomove/.leftover.parquet.1234abcd.tmp"
    store.write_atomic(tmp, b"half a file")
    plan = plan_run(store, spec)
    assert plan.adopted == [good.path]
    assert len(plan.quarantined) == 1 and plan.quarantined[0].startswith(bad) and "holds 5 rows" in plan.quarantined[0]
    assert store.exists(f"quarantine/{bad}") and not store.exists(bad) and not store.exists(tmp)
    assert [(j.first, j.last) for j in plan.jobs] == [(100, 199), (200, 299)]
    m = read_manifest(store, spec.run_id)
    (rec,) = [b for b in m.done()]
    assert (rec.first, rec.last, rec.sha256, rec.bytes) == (0, 99, good.sha256, good.bytes)


def test_a_rewritten_batch_reuses_a_finished_file(tmp_path):
    spec = load_spec(None, seed=4, deals=100, variants="strict", policies="nomove", data=str(tmp_path))
    store = DataStore(spec.data)
    a = _write_batch(store, spec, "strict", "nomove", 0, 99)
    b = _write_batch(store, spec, "strict", "nomove", 0, 99)
    assert not a.reused and b.reused and (a.sha256, a.bytes) == (b.sha256, b.bytes)


def test_manifest_json_round_trip(tmp_path):
    store = DataStore(str(tmp_path))
    m = Manifest(run_id="0123456789ab", seed=1, start=0, spec={"deals": 3}, requested={"standard/greedy": [0, 2]})
    write_manifest(store, m)
    back = read_manifest(store, "0123456789ab")
    assert back.to_json() == m.to_json()
    assert json.loads(back.to_json())["format"] == 2 and "batches" not in json.loads(back.to_json())


def _log(store, run_id):
    return sorted(store.list_files(f"runs/{run_id}/log"))


def test_the_log_gets_only_what_changed_and_snapshots_replace_it(tmp_path):
    """A running run appends segments of the records that changed; a snapshot supersedes them."""
    from pipeline.manifest import BatchRecord

    store = DataStore(str(tmp_path))
    m = Manifest(run_id="0123456789ab", seed=1, start=0, spec={}, requested={"standard/greedy": [0, 299]})
    m.batches = [BatchRecord("standard", "greedy", a, a + 99, "pending", f"results/x-{a}.parquet", 100)
                 for a in (0, 100, 200)]
    write_manifest(store, m)  # planned: a snapshot
    assert [p.rpartition("/")[2] for p in _log(store, m.run_id)] == ["00000001.snapshot.jsonl"]
    m.state = "running"
    write_manifest(store, m)
    header = store.read_bytes("runs/0123456789ab/manifest.json")
    m.batches[1].state, m.batches[1].sha256 = "done", "ab" * 32
    write_manifest(store, m)
    write_manifest(store, m)  # nothing changed: nothing written
    m.batches.pop(0)
    write_manifest(store, m)
    names = [p.rpartition("/")[2] for p in _log(store, m.run_id)]
    assert names == ["00000001.snapshot.jsonl", "00000002.jsonl", "00000003.jsonl"]
    seg2 = [json.loads(x) for x in store.read_bytes(f"runs/{m.run_id}/log/00000002.jsonl").splitlines()]
    assert [(r["first"], r["state"]) for r in seg2] == [(100, "done")]  # only the changed record
    seg3 = [json.loads(x) for x in store.read_bytes(f"runs/{m.run_id}/log/00000003.jsonl").splitlines()]
    assert seg3 == [{"remove": "results/x-0.parquet"}]
    assert store.read_bytes("runs/0123456789ab/manifest.json") == header  # the header is not rewritten
    back = read_manifest(store, m.run_id)
    assert [(b.first, b.state, b.sha256) for b in back.batches] == [(100, "done", "ab" * 32), (200, "pending", "")]
    back.state = "done"
    write_manifest(store, back)
    assert [p.rpartition("/")[2] for p in _log(store, m.run_id)] == ["00000004.snapshot.jsonl"]
    again = read_manifest(store, m.run_id)
    assert [(b.first, b.state) for b in again.batches] == [(100, "done"), (200, "pending")]
    assert again.state == "done"


def test_a_format_1_manifest_is_read_and_rewritten_as_format_2(tmp_path):
    store = DataStore(str(tmp_path))
    v1 = {"format": 1, "run_id": "0123456789ab", "seed": 1, "start": 0, "engine_version": "e",
          "schema_version": 1, "state": "done", "created": "c", "updated": "u", "error": None,
          "spec": {"deals": 200}, "requested": {"standard/greedy": [0, 199]},
          "covered": {"standard/greedy": [[0, 199]]},
          "batches": [{"variant": "standard", "policy": "greedy", "first": a, "last": a + 99, "state": "done",
                       "path": f"results/p-{a}.parquet", "rows": 100, "sha256": "0" * 64, "bytes": 10,
                       "seconds": 1.0, "engine_seconds": 0.5, "node": "n", "error": None, "finished": "f"}
                      for a in (0, 100)]}
    store.write_atomic("runs/0123456789ab/manifest.json", json.dumps(v1).encode())
    m = read_manifest(store, "0123456789ab")
    assert [(b.first, b.kind, b.batches) for b in m.batches] == [(0, "batch", 1), (100, "batch", 1)]
    assert m.covered() == {"standard/greedy": [[0, 199]]}
    write_manifest(store, m)
    assert json.loads(store.read_bytes("runs/0123456789ab/manifest.json"))["format"] == 2
    back = read_manifest(store, "0123456789ab")
    assert [b.path for b in back.batches] == [b.path for b in m.batches]
