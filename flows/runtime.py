"""Where the flows' Prefect API comes from when a command runs them.

- ``acesup nightly --now`` needs no server: Prefect 3 starts a temporary
  (ephemeral) API for the run and stops it at exit. ``quiet_defaults`` sets
  the environment so that this works on a fresh machine with no Prefect
  profile: no analytics, a start-up timeout that a busy 2-core machine meets.
- ``acesup serve`` needs a real API, since an ephemeral one runs no scheduler:
  ``prefect_api`` uses the one configured (``PREFECT_API_URL``), or one already
  listening on the local port, or starts ``prefect server start`` itself for as
  long as the command runs (the UI is then at http://127.0.0.1:PORT).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.errors import UserError

QUIET_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # The temporary server must start on a loaded 2-core machine (Prefect's default is 20 s).
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0",
}

DEFAULT_PORT = 4200
SERVER_START_SECONDS = 180


def quiet_defaults() -> None:
    """Set QUIET_ENV in os.environ where the user has not set it (call before importing prefect)."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)


def configured_api_url() -> str | None:
    """PREFECT_API_URL from the environment or the active Prefect profile, if any."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def api_healthy(url: str, timeout: float = 2.0) -> bool:
    """True if a Prefect API answers ``GET {url}/health``."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=timeout) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def check_api_or_ephemeral() -> str | None:
    """The configured Prefect API if it answers, None for Prefect's temporary one; UserError otherwise.

    Without this, a profile pointing at a server that is down makes a run wait on
    connection retries instead of failing.
    """
    url = configured_api_url()
    if url and not api_healthy(url, timeout=10.0):
        raise UserError(f"the Prefect API at PREFECT_API_URL={url} does not answer; start that server, or "
                        f"unset PREFECT_API_URL ('prefect config unset PREFECT_API_URL') to run without one")
    return url


@contextmanager
def _using_api(url: str) -> Iterator[None]:
    """Point this process (settings) and its children (environment) at the API ``url``."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    old = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = url
    try:
        with temporary_settings(updates={PREFECT_API_URL: url}):
            yield
    finally:
        if old is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = old


@contextmanager
def prefect_api(port: int = DEFAULT_PORT) -> Iterator[str]:
    """A Prefect API URL usable for scheduling; starts a local server if there is none.

    A server started here is stopped (terminated, then killed) when the block exits;
    one configured or already running is left alone.
    """
    url = configured_api_url()
    if url:
        if not api_healthy(url, timeout=10.0):
            raise UserError(f"the Prefect API at PREFECT_API_URL={url} does not answer; start that server "
                            f"('prefect server start') or unset PREFECT_API_URL to let acesup start one")
        yield url
        return
    url = f"http://127.0.0.1:{port}/api"
    if api_healthy(url):
        with _using_api(url):
            yield url
        return
    log_path = os.path.join(os.environ.get("PREFECT_HOME", os.path.expanduser("~/.prefect")),
                            f"acesup-server-{port}.log")
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while not api_healthy(url):
            if proc.poll() is not None:
                raise UserError(f"the Prefect server on port {port} exited with code {proc.returncode} "
                                f"(see {log_path}); is the port taken? give another with --port")
            if time.monotonic() > deadline:
                raise UserError(f"the Prefect server on port {port} did not answer within "
                                f"{SERVER_START_SECONDS} s (see {log_path})")
            time.sleep(1.0)
        with _using_api(url):
            yield url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
