"""The pipeline on a real local Ray (2 CPUs) with real Parquet files read back by pyarrow.

Runs are small (a few thousand games) so the module stays fast; the kill and
multi-node tests live in test_pipeline_slow.py.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from engine_rs_free.deals import deal_batch
from engine_rs_free.players import play
from pipeline.cli import main
from pipeline.execute import BatchFailedError, execute_run
from pipeline.manifest import list_runs, read_manifest, write_manifest
from pipeline.schema import KEY_COLUMNS, RESULT_SCHEMA, SCHEMA_VERSION
from pipeline.spec import engine_version, load_spec, with_overrides
from pipeline.storage import DataStore
from pipeline.verify import verify_run
from pipeline.worker import run_batch


def small_spec(data, **kw):
    values = dict(seed=11, start=5, deals=600, variants="standard,strict",
                  policies="nomove,greedy,solver,pimc:samples=8", caps={"solver": 25, "pimc:samples=8": 4},
                  batch_size=100, data=str(data))
    values.update(kw)
    return load_spec(None, **values)


def read_results(data):
    """The whole dataset (hive partitioning off: the columns are the truth), sorted by key."""
    ds = pads.dataset(os.path.join(data, "results"), format="parquet", partitioning=None)
    return ds.to_table().sort_by([(k, "ascending") for k in KEY_COLUMNS])


def assert_exactly_once(table, spec):
    keys = set(zip(*(table.column(k).to_pylist() for k in KEY_COLUMNS)))
    assert len(keys) == table.num_rows, "duplicate keys"
    want = {(spec.seed, d, v, p) for (v, p), (a, b) in spec.requested().items() for d in range(a, b + 1)}
    assert keys == want


@pytest.fixture(scope="module")
def first_run(ray_local, tmp_path_factory):
    data = tmp_path_factory.mktemp("run-a")
    spec = small_spec(data)
    seen = []
    summary = execute_run(spec, progress=lambda done, total: seen.append((done, total)))
    return spec, summary, seen


def test_run_writes_every_key_exactly_once(first_run):
    spec, summary, seen = first_run
    table = read_results(spec.data)
    assert table.num_rows == 2 * 2 * 600 + 2 * 25 + 2 * 4 == spec.total_rows() == summary.rows_written
    assert_exactly_once(table, spec)
    assert table.schema.remove_metadata().equals(RESULT_SCHEMA)
    assert summary.batches_done == 2 * 2 * 6 + 2 * 1 + 2 * 1
    assert seen[-1] == (spec.total_rows(), spec.total_rows())
    assert verify_run(spec.data, spec.run_id).ok


def test_rows_equal_the_engine_called_directly(first_run):
    spec, _, _ = first_run
    table = read_results(spec.data)
    for (v, p), (a, b) in spec.requested().items():
        mask = np.array([(vv == v and pp == p) for vv, pp in zip(table.column("variant").to_pylist(),
                                                                  table.column("policy").to_pylist())])
        got = table.filter(mask)
        want = play(deal_batch(spec.seed, a, b - a + 1), v, p, seed=spec.seed,
                    indices=np.arange(a, b + 1), want_lines=False).columns()
        assert got.column("deal").to_pylist() == list(range(a, b + 1))
        for col in ("score", "won", "moves", "decisions"):
            assert np.array_equal(got.column(col).to_numpy(), np.asarray(want[col])), (v, p, col)
        if p == "solver":
            assert got.column("nodes").to_pylist() == list(want["nodes"])
            assert got.column("status").to_pylist() == list(want["status"])
            assert got.column("line").to_pylist() == list(want["line"])
            won = got.column("won").to_pylist()
            assert all(ln for ln, w in zip(got.column("line").to_pylist(), won) if w)
        else:
            assert got.column("nodes").null_count == got.num_rows
            assert got.column("line").null_count == got.num_rows


def test_files_carry_footer_metadata_and_manifest_checksums(first_run):
    spec, _, _ = first_run
    store = DataStore(spec.data)
    m = read_manifest(store, spec.run_id)
    assert m.state == "done" and len(m.batches) == 28
    assert m.covered() == {k: [[a, b]] for k, (a, b) in m.requested.items()}
    import hashlib

    for b in m.batches:
        path = os.path.join(spec.data, b.path)
        assert hashlib.sha256(open(path, "rb").read()).hexdigest() == b.sha256
        meta = pq.ParquetFile(path).metadata
        kv = {k.decode(): v.decode() for k, v in meta.metadata.items()}
        assert kv["acesup.run_id"] == spec.run_id
        assert kv["acesup.schema_version"] == str(SCHEMA_VERSION)
        assert kv["acesup.engine_version"] == engine_version()
        assert meta.row_group(0).column(5).compression == "ZSTD"
        assert b.path.startswith(f"results/variant={b.variant}/policy=")
    assert any("policy=solver/" in b.path for b in m.batches)
    (run,) = list_runs(spec.data)
    assert (run.run_id, run.covered_rows, run.requested_rows, run.state) == (spec.run_id, spec.total_rows(), spec.total_rows(), "done")


def test_another_batch_size_gives_the_same_rows(first_run, tmp_path):
    spec, _, _ = first_run
    other = with_overrides(spec, batch_size=250, data=str(tmp_path))
    assert other.run_id == spec.run_id
    execute_run(other, progress=False)
    assert read_results(str(tmp_path)).equals(read_results(spec.data))
    assert len(read_manifest(DataStore(str(tmp_path)), spec.run_id).batches) == 2 * 2 * 3 + 2 + 2


def test_rerun_skips_and_extension_plays_only_new_deals(first_run, tmp_path):
    spec, _, _ = first_run
    data = str(tmp_path)
    base = with_overrides(spec, data=data, deals=300)
    s1 = execute_run(base, progress=False)
    again = execute_run(base, progress=False)
    assert again.rows_written == 0 and again.batches_done == 0 and again.rows_present == s1.rows_written
    bigger = with_overrides(base, deals=600, caps={"solver": 25, "pimc:samples=8": 4})
    s2 = execute_run(bigger, progress=False)
    assert s2.run_id == s1.run_id
    assert s2.rows_written == 2 * 2 * 300 and s2.rows_present == s1.rows_written
    assert read_results(data).equals(read_results(spec.data))
    assert verify_run(data, spec.run_id).ok
    # a second run whose keys overlap plays only the keys no file holds yet
    overlap = load_spec(None, seed=11, start=5, deals=700, variants="standard", policies="greedy", data=data)
    s3 = execute_run(overlap, progress=False)
    assert s3.run_id != spec.run_id and s3.rows_written == 100 and s3.rows_present == 600
    table = read_results(data)
    assert table.num_rows == spec.total_rows() + 100
    assert verify_run(data, overlap.run_id).ok and verify_run(data, spec.run_id).ok


def test_unrecorded_files_are_adopted_and_lost_files_replayed(first_run, tmp_path):
    spec, _, _ = first_run
    data = str(tmp_path)
    base = with_overrides(spec, data=data, policies="greedy", variants="standard")
    execute_run(base, progress=False)
    store = DataStore(data)
    m = read_manifest(store, base.run_id)
    # the driver died after a worker renamed its file and before the manifest said so
    orphan = m.batches.pop(2)
    os.remove(os.path.join(data, m.batches[0].path))  # and a file went missing
    write_manifest(store, m)
    assert not verify_run(data, base.run_id).ok
    s = execute_run(base, progress=False)
    assert s.adopted == [orphan.path]
    assert s.rows_written == 100 and s.lost == [m.batches[0].path]
    assert_exactly_once(read_results(data), base)
    assert verify_run(data, base.run_id).ok


def test_a_file_that_differs_from_its_checksum_fails_verify(first_run, tmp_path):
    spec, _, _ = first_run
    data = str(tmp_path)
    base = with_overrides(spec, data=data, policies="greedy", variants="strict", deals=200)
    execute_run(base, progress=False)
    m = read_manifest(DataStore(data), base.run_id)
    path = os.path.join(data, m.batches[1].path)
    raw = bytearray(open(path, "rb").read())
    raw[len(raw) // 2] ^= 0xFF  # same size, one byte flipped
    open(path, "wb").write(bytes(raw))
    res = verify_run(data, base.run_id)
    assert not res.ok and any("SHA-256" in p and m.batches[1].path in p for p in res.problems)


def test_worker_killed_mid_batch_is_retried_and_every_row_lands_once(first_run, tmp_path):
    spec, _, _ = first_run
    marker = str(tmp_path / "crashed-once")

    def crash_first_time(job):
        # Kill this Ray worker process outright the first time any batch runs.
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
        return run_batch(job)

    base = with_overrides(spec, data=str(tmp_path / "d"), policies="greedy", deals=400)
    s = execute_run(base, progress=False, batch_fn=crash_first_time)
    assert os.path.exists(marker)
    assert s.rows_written == base.total_rows()
    assert_exactly_once(read_results(base.data), base)
    assert verify_run(base.data, base.run_id).ok


def test_every_batch_task_checks_its_nodes_compiled_cache_before_it_plays(first_run, tmp_path):
    spec, _, _ = first_run
    base = with_overrides(spec, data=str(tmp_path), policies="greedy", variants="standard", deals=1000)

    def checked_then_run(job):
        import engine_rs_free
        from pipeline import warm

        if str(Path(engine_rs_free.__file__).parent) not in warm._SOURCES_CHECKED:
            raise RuntimeError("a batch ran before its process checked the node's compiled cache")
        warm._SOURCES_CHECKED.clear()  # so the next task of this worker process has to check again
        return run_batch(job)

    s = execute_run(base, progress=False, max_retries=0, batch_fn=checked_then_run)
    assert s.rows_written == base.total_rows() and s.batches_done > 2  # some worker process ran two batches


def test_a_batch_that_keeps_failing_ends_the_run_naming_it_and_keeps_the_rest(first_run, tmp_path):
    spec, _, _ = first_run
    base = with_overrides(spec, data=str(tmp_path), policies="greedy", variants="standard", deals=500)

    def fail_one(job):
        if job.first == 405:  # the last batch: every other one is submitted before it fails
            raise RuntimeError("disk on fire")
        return run_batch(job)

    with pytest.raises(BatchFailedError) as err:
        execute_run(base, progress=False, max_retries=1, batch_fn=fail_one, max_in_flight=2)
    msg = str(err.value)
    assert "standard × greedy, deals 405..504 of seed 11" in msg and "disk on fire" in msg
    m = read_manifest(DataStore(str(tmp_path)), base.run_id)
    assert m.state == "failed" and [b.first for b in m.batches if b.state == "failed"] == [405]
    res = verify_run(str(tmp_path), base.run_id)
    assert res.problems == ["standard/greedy: deals 405..504 missing"]
    s = execute_run(base, progress=False)  # fixed: the same spec resumes
    assert s.rows_written == 100
    assert verify_run(str(tmp_path), base.run_id).ok


def test_cli_run_prints_where_and_the_odds(first_run, capsys, tmp_path):
    spec, _, _ = first_run
    argv = ["run", "--seed", "11", "--start", "5", "--deals", "600", "--variants", "standard,strict",
            "--policies", "nomove,greedy,solver,pimc:samples=8", "--cap", "solver=25",
            "--cap", "pimc:samples=8=4", "--batch-size", "100",
            "--data", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"manifest: {tmp_path}/runs/{spec.run_id}/manifest.json" in out
    assert "results:" in out and "95% interval" in out
    table = read_results(str(tmp_path))
    assert table.equals(read_results(spec.data))
    wins = sum(table.filter(np.array([p == "greedy" and v == "standard" for v, p in zip(
        table.column("variant").to_pylist(), table.column("policy").to_pylist())])).column("won").to_pylist())
    line = next(ln for ln in out.splitlines() if ln.startswith("standard ") and " greedy " in ln)
    assert line.split()[2:4] == ["600", f"{wins}"]
    assert main(["runs", "--data", str(tmp_path), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert run["run_id"] == spec.run_id and run["covered_rows"] == spec.total_rows()
    assert main(["verify", spec.run_id, "--data", str(tmp_path)]) == 0
    assert "ok" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["run", "--variants", "klondike"], "spec field 'variants': unknown variant 'klondike'"),
        (["run", "--deals", "-4"], "spec field 'deals': -4 is out of range"),
        (["run", "--cap", "solver"], "--cap 'solver' is not KEY=N"),
        (["run", "--data", "/proc/acesup-cannot-write", "--deals", "10", "--policies", "greedy"],
         "cannot write to data location '/proc/acesup-cannot-write'"),
        (["run", "--ray-address", "127.0.0.1:1", "--deals", "10", "--policies", "greedy", "--data", "{tmp}"],
         "cannot reach a Ray cluster at '127.0.0.1:1'"),
        (["verify", "0123456789ab", "--data", "{tmp}"], "no run '0123456789ab'"),
    ],
)
def test_user_errors_exit_2_with_one_line(argv, fragment, tmp_path):
    # A fresh process: this one already has Ray initialized (which execute_run would reuse).
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    p = subprocess.run([sys.executable, "-m", "pipeline.cli", *argv], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert fragment in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith(f"acesup {argv[0]}: error:")
