"""Faults as they happen, kept lean for the default suite (the long ones are in test_pipeline_slow.py).

- a Ray worker SIGKILLed while it writes a batch (its temporary file open and
  half written, before the rename): the run completes and its data equals an
  uninterrupted run's, row for row;
- two drivers started at the same moment on one data folder: one runs, the
  other says why;
- the ``s3://`` data location, for real, on a local S3-compatible server
  (moto): a run, verified, equal row for row to the same run on a local folder.

Every process a test starts is in a process group of its own and only those
are stopped.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pytest

from pipeline.execute import execute_run
from pipeline.schema import KEY_COLUMNS
from pipeline.spec import load_spec
from pipeline.storage import TMP_SUFFIX, DataStore
from pipeline.verify import verify_run

ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1", "RAY_AUTH_MODE": "disabled"}
ENV.pop("RAY_ADDRESS", None)


def read_results(data: str):
    """Every row of a data location (local folder or s3://), sorted by key."""
    store = DataStore(data)
    files = sorted(f for f in store.list_files("results") if f.endswith(".parquet"))
    ds = pads.dataset([store.path(f) for f in files], filesystem=store.fs, format="parquet", partitioning=None)
    return ds.to_table().sort_by([(k, "ascending") for k in KEY_COLUMNS])


def cli(*args):
    return [sys.executable, "-m", "pipeline.cli", *args]


def test_a_worker_killed_while_it_writes_a_batch(ray_local, tmp_path):
    killed, clean = str(tmp_path / "killed"), str(tmp_path / "clean")
    spec = load_spec(None, seed=21, deals=2000, variants="standard", policies="greedy,solver:sensible+leftmost",
                     caps={"solver:sensible+leftmost": 400}, batch_size=200, batch_sizes={"solver:sensible+leftmost": 100},
                     data=killed)
    control = tmp_path / "control"
    control.mkdir()

    def write_half_then_hang(job):
        """The batch of deals 1000..1199 stops inside its write, once: temporary file open, half written."""
        from pipeline import storage
        from pipeline.worker import run_batch

        marker = control / "writing.json"
        if job.policy == "greedy" and job.first == 1000 and not marker.exists():
            def stuck_write(self, rel, data):
                folder, _, name = rel.rpartition("/")
                self.makedirs(folder)
                tmp = f"{folder}/.{name}.killed{TMP_SUFFIX}"
                f = self.fs.open_output_stream(self.path(tmp))
                f.write(data[: len(data) // 2])
                f.flush()
                marker.write_text(json.dumps({"pid": os.getpid(), "tmp": tmp}))
                time.sleep(600)  # the rename never comes: the worker is killed here

            storage.DataStore.write_atomic = stuck_write
        return run_batch(job)

    killed_pid = []
    finished = threading.Event()

    def killer():
        marker = control / "writing.json"
        while not marker.exists() and not finished.is_set():  # no deadline: a cold compile takes minutes
            time.sleep(0.05)
        if marker.exists():
            info = json.loads(marker.read_text())
            killed_pid.append(info)
            os.kill(info["pid"], signal.SIGKILL)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    try:
        summary = execute_run(spec, progress=False, batch_fn=write_half_then_hang, max_retries=3)
    finally:
        finished.set()
        t.join(timeout=10)
    assert killed_pid, "the worker was never caught in its write"
    info = killed_pid[0]
    store = DataStore(killed)
    assert store.exists(info["tmp"]), "the killed worker's half file stays a temporary file"
    assert summary.rows_written == spec.total_rows()
    execute_run(load_spec(None, **{**_spec_args(spec), "data": clean}), progress=False)
    assert read_results(killed).equals(read_results(clean))
    assert verify_run(killed, spec.run_id).ok
    execute_run(spec, progress=False)  # the next run removes the leftover temporary file
    assert not store.exists(info["tmp"])
    assert read_results(killed).equals(read_results(clean))


def _spec_args(spec):
    d = spec.to_dict()
    return {k: d[k] for k in ("seed", "start", "deals", "variants", "policies", "caps", "batch_size", "batch_sizes")}


def test_two_drivers_started_at_the_same_moment_one_runs_the_other_says_why(tmp_path):
    data = str(tmp_path / "data")
    args = cli("run", "--seed", "4", "--deals", "3000", "--variants", "standard", "--policies", "greedy",
               "--batch-size", "500", "--num-cpus", "1", "--quiet", "--data", data)
    go = tmp_path / "go"
    # Both wait for the same file, so they reach the lock together (imports take seconds).
    starter = ("import os, sys, time, runpy\n"
               f"while not os.path.exists({str(go)!r}): time.sleep(0.005)\n"
               "sys.argv = ['acesup'] + sys.argv[1:]\n"
               "runpy.run_module('pipeline.cli', run_name='__main__')\n")
    procs = [subprocess.Popen([sys.executable, "-c", starter, *args[3:]], env=ENV, start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        time.sleep(3)  # both have imported the pipeline and wait at the line
        go.write_text("go")
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    loser = next(err for p, (_, err) in zip(procs, outs) if p.returncode == 2)
    winner = next(p for p in procs if p.returncode == 0)
    line = [ln for ln in loser.splitlines() if ln.startswith("acesup run: error:")]
    assert len(line) == 1 and "Traceback" not in loser, loser
    assert f"another acesup run (host {os.uname().nodename}, pid {winner.pid}) is writing to {data!r}" in line[0] \
        or "another acesup run (starting up) is writing to" in line[0], line[0]
    spec = load_spec(None, seed=4, deals=3000, variants="standard", policies="greedy", batch_size=500, data=data)
    assert verify_run(data, spec.run_id).ok


def test_an_s3_data_location_for_real(s3_data, ray_local, tmp_path):
    """acesup run on s3:// (moto's server), then the same run on a local folder: the same rows."""
    args = ["--seed", "8", "--deals", "1200", "--variants", "standard,strict", "--policies", "greedy,solver",
            "--cap", "solver=60", "--batch-size", "300", "--num-cpus", "2", "--quiet"]
    p = subprocess.run(cli("run", *args, "--data", s3_data), env={**ENV, **_aws_env()}, capture_output=True,
                       text=True, timeout=600, start_new_session=True)
    assert p.returncode == 0, p.stderr
    spec = load_spec(None, seed=8, deals=1200, variants="standard,strict", policies="greedy,solver",
                     caps={"solver": 60}, batch_size=300, data=s3_data)
    assert f"manifest: {s3_data}/runs/{spec.run_id}/manifest.json" in p.stdout
    store = DataStore(s3_data)
    assert isinstance(store.fs, pafs.S3FileSystem)
    assert not [f for f in store.list_files("") if f.endswith(TMP_SUFFIX)]
    res = verify_run(s3_data, spec.run_id)
    assert res.ok and res.rows_found == spec.total_rows(), res.problems
    assert store.exists("fingerprints/variant=standard/policy=greedy.json")
    local = str(tmp_path / "local")
    execute_run(load_spec(None, seed=8, deals=1200, variants="standard,strict", policies="greedy,solver",
                          caps={"solver": 60}, batch_size=300, data=local), progress=False)
    assert read_results(s3_data).equals(read_results(local))
    # the lock object is gone once the run is over
    assert not store.exists("runs/.lock")


def _aws_env():
    return {k: os.environ[k] for k in os.environ if k.startswith("AWS_")}
