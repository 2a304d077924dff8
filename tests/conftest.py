"""Shared fixtures: one real local Ray and one Prefect test harness per test session.

Both are started lazily (only by tests that ask for them) and stopped at the
end of the session. Ray is started with ``address="local"`` so a test never
attaches to some other Ray cluster left on the machine, and only what the
fixture started is shut down.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def pytest_collection_finish(session):
    """Before a session that starts Ray workers, compile the engine into Numba's on-disk cache, on every
    core (pipeline/warm.py).

    Otherwise a fresh checkout compiles each kernel in the driver and again in each Ray worker, as
    the tests reach them. Returns at once on a warm cache; a session without Ray tests skips it. Each
    worker of a parallel session (pytest-xdist) calls it: the first compiles, the others wait on its lock.
    """
    if not any("ray_local" in getattr(item, "fixturenames", ()) for item in session.items):
        return
    from pipeline.warm import warm

    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    say = tr.write_line if tr is not None else None
    res = warm(progress=say)
    if say and not res.skipped:
        say(f"compiled: {res.units} groups on {res.processes} processes in {res.seconds:.0f} s")


def pytest_sessionstart(session):
    """The controller of a parallel session (pytest-xdist) says when the cache is cold: its workers warm it
    before their first test (pytest_collection_finish) and report nothing until then."""
    config = session.config
    if not config.pluginmanager.has_plugin("dsession"):
        return
    from pipeline.warm import cold_units

    cold = cold_units()
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if cold and tr is not None:
        tr.write_line(f"the engine's on-disk cache is cold: before their first test with Ray the workers compile "
                      f"{len(cold)} groups of kernels, a few minutes (once per machine and engine version)")


@pytest.fixture(scope="session")
def ray_local():
    """A real local Ray with 2 CPUs, shared by the session; yields the ``ray`` module."""
    import ray

    started = False
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        started = True
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="session")
def prefect_harness():
    """One ``prefect_test_harness`` (temporary Prefect server and database) per session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def s3_server():
    """A local S3-compatible server (moto's, in a thread) for the session; yields its endpoint URL.

    The driver, its Ray workers and boto3 find it through the usual environment variables
    (AWS_ENDPOINT_URL, dummy credentials), which the fixture sets for the session and restores.
    """
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "acesup-test",
           "AWS_SECRET_ACCESS_KEY": "acesup-test", "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env["AWS_ENDPOINT_URL"]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


@pytest.fixture
def s3_data(s3_server, request):
    """A fresh bucket on the session's S3 server; yields ``s3://<bucket>/acesup``."""
    import re
    import uuid

    import boto3

    bucket = re.sub(r"[^a-z0-9-]", "-", f"t-{request.node.name.lower()}")[:40].strip("-") + "-" + uuid.uuid4().hex[:8]
    boto3.client("s3").create_bucket(Bucket=bucket)
    yield f"s3://{bucket}/acesup"
