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
