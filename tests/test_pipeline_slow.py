"""Slow pipeline tests: a killed driver resumes; two Ray nodes on this machine, one removed mid-run.

Every Ray process these tests start is in a process group of its own (the
``ray start --block`` or ``acesup run`` they launched), and only those groups
are stopped: never a bare ``ray stop``, which would kill other people's clusters.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pyarrow.dataset as pads
import pytest

from pipeline.execute import execute_run
from pipeline.manifest import read_manifest
from pipeline.schema import KEY_COLUMNS
from pipeline.spec import load_spec
from pipeline.storage import DataStore
from pipeline.verify import verify_run

pytestmark = pytest.mark.slow

ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1",
       "RAY_AUTH_MODE": "disabled"}  # loopback test cluster: no token to hand around
ENV.pop("RAY_ADDRESS", None)


def read_results(data):
    ds = pads.dataset(os.path.join(data, "results"), format="parquet", partitioning=None)
    return ds.to_table().sort_by([(k, "ascending") for k in KEY_COLUMNS])


def assert_exactly_once(data, spec):
    t = read_results(data)
    keys = set(zip(*(t.column(k).to_pylist() for k in KEY_COLUMNS)))
    want = {(spec.seed, d, v, p) for (v, p), (a, b) in spec.requested().items() for d in range(a, b + 1)}
    assert len(keys) == t.num_rows and keys == want
    return t


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(proc, *, hard=False, timeout=20):
    """Stop a process we started with start_new_session=True, and everything in its group.

    ``hard``: SIGKILL at once (a crash); otherwise SIGTERM, then SIGKILL for what is left.
    """
    for sig in ((signal.SIGKILL,) if hard else (signal.SIGTERM, signal.SIGKILL)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        time.sleep(1)  # the group's other members may still be shutting down


def done_batches(data, run_id):
    try:
        m = read_manifest(DataStore(data), run_id)
    except (ValueError, OSError):
        return 0
    return 0 if m is None else sum(b.state == "done" for b in m.batches)


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def cli(*args):
    return [sys.executable, "-m", "pipeline.cli", *args]


# Sized by solver work (16,000 deals at ~400/s/core: ~40 core-seconds), not by plain
# policies: on a quiet machine a plain run finishes in a second or two, before a kill
# could land midway. (solver:sensible+leftmost has no cap in the default spec.)
RESUME_SPEC = dict(seed=3, deals=16000, variants="standard", policies="greedy,solver:sensible+leftmost",
                   batch_size=500)
RESUME_ARGS = ["--seed", "3", "--deals", "16000", "--variants", "standard",
               "--policies", "greedy,solver:sensible+leftmost", "--batch-size", "500",
               "--num-cpus", "2", "--quiet"]


def finished_files(data):
    """Data files renamed into place so far (temporary files are dot-named and not counted)."""
    root = os.path.join(data, "results")
    return sum(1 for _, _, names in os.walk(root) for n in names if n.endswith(".parquet") and not n.startswith("."))


def test_killed_driver_resumes_to_the_same_dataset(ray_local, tmp_path):
    killed, clean = str(tmp_path / "killed"), str(tmp_path / "clean")
    spec = load_spec(None, **RESUME_SPEC, data=killed)
    wanted = sum(b - a + 1 for (a, b) in spec.requested().values())
    proc = subprocess.Popen(cli("run", *RESUME_ARGS, "--data", killed), env=ENV, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Kill as soon as a few batch files are in place (the manifest is only rewritten every
        # few seconds, so the files, not the manifest, tell that the run is midway).
        wait_for(lambda: finished_files(killed) >= 3, 240, "some batches done")
    finally:
        stop_group(proc, hard=True)  # a crash: no clean shutdown
    before = read_results(killed).num_rows
    assert finished_files(killed) > 0 and 0 < before < wanted, f"kill the run midway ({before} of {wanted} rows)"
    p = subprocess.run(cli("run", *RESUME_ARGS, "--data", killed), env=ENV, capture_output=True,
                       text=True, timeout=600, start_new_session=True)
    assert p.returncode == 0, p.stderr
    m = read_manifest(DataStore(killed), spec.run_id)
    assert m.state == "done" and all(b.state == "done" for b in m.batches)
    # an uninterrupted run of the same spec elsewhere, on the test's own Ray
    execute_run(load_spec(None, **RESUME_SPEC, data=clean), progress=False)
    got = assert_exactly_once(killed, spec)
    assert got.equals(read_results(clean))
    assert verify_run(killed, spec.run_id).ok


class RayNodes:
    """A head and worker nodes on this machine, each a ``ray start --block`` in its own process group."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.procs = []
        self.port = free_port()
        self.address = None

    def _start(self, args, name):
        log = open(self.tmp / f"{name}.log", "w")
        proc = subprocess.Popen(["ray", "start", "--block", "--num-cpus=1", "--disable-usage-stats",
                                 f"--dashboard-agent-listen-port={free_port()}",
                                 f"--runtime-env-agent-port={free_port()}",
                                 f"--metrics-export-port={free_port()}", *args],
                                env=ENV, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def start_head(self):
        self._start(["--head", f"--port={self.port}", "--node-ip-address=127.0.0.1",
                     "--include-dashboard=false", f"--ray-client-server-port={free_port()}"], "head")
        log = self.tmp / "head.log"

        def ready():
            m = re.search(r"--address='([^']+)'", log.read_text())
            if m:
                self.address = m.group(1)
            return self.address is not None

        wait_for(ready, 120, "the head node")
        return self.address

    def add_worker(self, name):
        return self._start([f"--address={self.address}"], name)

    def alive_nodes(self):
        code = ("import ray; ray.init(address=%r, logging_level='error');"
                "print(sum(n['Alive'] for n in ray.nodes()))" % self.address)
        p = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120)
        return int(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 and p.stdout.strip() else 0

    def stop(self):
        for proc in reversed(self.procs):
            stop_group(proc)


@pytest.fixture
def two_nodes(tmp_path):
    nodes = RayNodes(tmp_path)
    try:
        nodes.start_head()
        worker = nodes.add_worker("worker")
        wait_for(lambda: nodes.alive_nodes() == 2, 180, "two alive nodes")
        yield nodes, worker
    finally:
        nodes.stop()


def test_run_on_two_nodes_spreads_batches_and_survives_losing_one(two_nodes, tmp_path):
    nodes, worker = two_nodes
    data = str(tmp_path / "data")
    # about 100 core-seconds of exact-solver batches of about a second each (standard solves
    # ~200 deals/s, reverse ~150): many batches are left when both nodes have done one
    args = ["--seed", "5", "--deals", "9000", "--variants", "standard,reverse",
            "--policies", "greedy,solver", "--batch-size", "200", "--data", data, "--quiet"]
    spec = load_spec(None, seed=5, deals=9000, variants="standard,reverse",
                     policies="greedy,solver", batch_size=200, data=data)
    proc = subprocess.Popen(cli("run", *args, "--ray-address", nodes.address), env=ENV,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # wait until both nodes have finished batches, then take the worker node away
        def both_nodes_worked():
            m = read_manifest(DataStore(data), spec.run_id) if os.path.exists(os.path.join(data, "runs")) else None
            return m is not None and len({b.node for b in m.batches if b.state == "done"}) >= 2

        wait_for(both_nodes_worked, 300, "batches done on both nodes")
        stop_group(worker, hard=True)
        m = read_manifest(DataStore(data), spec.run_id)
        assert sum(b.state == "done" for b in m.batches) < len(m.batches), "remove the node midway"
        out, err = proc.communicate(timeout=600)
    finally:
        stop_group(proc)
    assert proc.returncode == 0, err
    m = read_manifest(DataStore(data), spec.run_id)
    assert m.state == "done" and all(b.state == "done" for b in m.batches)
    nodes_used = {b.node for b in m.batches}
    assert len(nodes_used) == 2
    assert_exactly_once(data, spec)
    assert verify_run(data, spec.run_id).ok
    assert "95% interval" in out
    json.dumps(m.spec)  # the manifest stays plain JSON
