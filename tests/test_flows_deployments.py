"""The deployments load as documented: `acesup serve` (flow.serve) and prefect.yaml (`prefect deploy`).

Both are checked against a real Prefect API (the session's test harness): the
served deployment and the deployed one are read back with their schedule,
parameters and entry point.
"""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from flows.deployments import (DEFAULT_CRON, DEPLOYMENT_NAME, ENTRYPOINT, FLOW_NAME, local_timezone,
                               nightly_deployment, nightly_parameters)

ROOT = Path(__file__).resolve().parents[1]


def flow_parameter_names(flow) -> list[str]:
    return list(inspect.signature(flow.fn).parameters)


def test_nightly_deployment_definition():
    from prefect.flows import load_flow_from_entrypoint

    from flows.nightly import nightly_odds

    params = nightly_parameters(spec_file="nightly.toml", deals_per_night=1000, data="/srv/acesup-data")
    d = nightly_deployment(parameters=params)
    assert d.name == DEPLOYMENT_NAME and d.flow_name == FLOW_NAME == nightly_odds.name
    (sched,) = d.schedules
    assert sched.schedule.cron == DEFAULT_CRON == "0 2 * * *"
    assert sched.schedule.timezone == local_timezone()
    assert d.parameters == {"spec_file": "nightly.toml", "deals_per_night": 1000, "ray_address": None,
                            "data": "/srv/acesup-data"}
    # Every flow parameter is a deployment parameter and the other way round.
    assert list(nightly_parameters()) == flow_parameter_names(nightly_odds)
    # The entry point is the installed module: it loads from any working directory.
    assert load_flow_from_entrypoint(d.entrypoint).name == FLOW_NAME
    assert load_flow_from_entrypoint(ENTRYPOINT).name == FLOW_NAME


def test_bad_schedule_is_a_user_error():
    from flows.deployments import nightly_schedule
    from pipeline.errors import UserError

    assert nightly_schedule("30 1 * * 1-5", "Europe/Paris").timezone == "Europe/Paris"
    with pytest.raises(UserError, match="bad schedule --cron 'at two'"):
        nightly_schedule("at two", "UTC")
    with pytest.raises(UserError, match="unknown time zone --timezone 'Mars/Olympus'"):
        nightly_schedule(DEFAULT_CRON, "Mars/Olympus")


def test_prefect_yaml_declares_the_same_deployment():
    from prefect.cli.deploy._models import PrefectYamlModel
    from prefect.flows import load_flow_from_entrypoint

    from flows.nightly import nightly_odds

    doc = PrefectYamlModel.model_validate(yaml.safe_load((ROOT / "prefect.yaml").read_text()))
    deployments = {d.name: d for d in doc.deployments}
    assert set(deployments) == {DEPLOYMENT_NAME, "backfill"}
    dep = deployments[DEPLOYMENT_NAME]
    assert dep.name == DEPLOYMENT_NAME and dep.entrypoint == ENTRYPOINT
    assert load_flow_from_entrypoint(dep.entrypoint).name == FLOW_NAME
    assert dep.parameters == nightly_parameters()
    assert list(dep.parameters) == flow_parameter_names(nightly_odds)
    (sched,) = dep.schedules
    assert sched.cron == DEFAULT_CRON and sched.timezone == "UTC" and sched.active
    assert dep.work_pool.name == "acesup" and dep.concurrency_limit == 1
    # The backfill deployment: by hand only, every parameter of the flow.
    from flows.backfill import backfill

    bf = deployments["backfill"]
    assert load_flow_from_entrypoint(bf.entrypoint).name == backfill.name
    assert list(bf.parameters) == flow_parameter_names(backfill) and not bf.schedules
    assert bf.work_pool.name == "acesup"
    # The README shows the commands that use this file.
    readme = (ROOT / "README.md").read_text()
    for command in ("prefect work-pool create acesup --type process", "prefect deploy --all",
                    "prefect worker start --pool acesup", "acesup serve"):
        assert command in readme, f"README.md does not show {command!r}"


def test_backfill_flow_parameters():
    from flows.backfill import backfill

    assert flow_parameter_names(backfill) == ["spec_file", "start", "deals", "ray_address", "data"]
    assert backfill.name == "backfill"


def _api_env() -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    env = dict(os.environ)
    env["PREFECT_API_URL"] = PREFECT_API_URL.value()
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    return env


def _read_deployment(timeout: float, check):
    """The nightly deployment once ``check(deployment)`` holds (polled), or the last one read."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    deadline = time.monotonic() + timeout
    dep = None
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            try:
                dep = client.read_deployment_by_name(f"{FLOW_NAME}/{DEPLOYMENT_NAME}")
                if check(dep):
                    return dep
            except ObjectNotFound:
                pass
            time.sleep(1.0)
    return dep


def test_acesup_serve_registers_the_scheduled_deployment(prefect_harness, tmp_path):
    spec = tmp_path / "nightly.toml"
    spec.write_text('seed = 5\ndeals = 100\nvariants = ["standard"]\npolicies = ["greedy"]\n')
    cmd = [sys.executable, "-m", "pipeline.cli", "serve", "--cron", "15 3 * * *", "--timezone", "Europe/Paris",
           "--spec", str(spec), "--deals-per-night", "50", "--data", str(tmp_path / "data")]
    proc = subprocess.Popen(cmd, env=_api_env(), cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        dep = _read_deployment(150, lambda d: d.parameters.get("spec_file") == str(spec))
        assert dep is not None and proc.poll() is None, proc.stdout.read() if proc.poll() is not None else ""
        assert dep.entrypoint == "flows.nightly.nightly_odds"
        assert dep.parameters == {"spec_file": str(spec), "deals_per_night": 50, "ray_address": None,
                                  "data": str(tmp_path / "data")}
        (sched,) = dep.schedules
        assert sched.schedule.cron == "15 3 * * *" and sched.schedule.timezone == "Europe/Paris"
        assert sched.active
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert proc.returncode is not None


def test_prefect_deploy_reads_prefect_yaml(prefect_harness):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists

    with get_client(sync_client=True) as client:
        try:
            client.create_work_pool(WorkPoolCreate(name="acesup", type="process"))
        except ObjectAlreadyExists:
            pass
    env = _api_env()
    env["PWD"] = str(ROOT)  # what a shell in the repository sets
    out = subprocess.run([sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--all"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    dep = _read_deployment(30, lambda d: d.entrypoint == ENTRYPOINT)
    assert dep is not None and dep.entrypoint == ENTRYPOINT, dep
    assert dep.work_pool_name == "acesup"
    assert dep.parameters == nightly_parameters()
    (sched,) = dep.schedules
    assert sched.schedule.cron == DEFAULT_CRON and sched.schedule.timezone == "UTC"
    with get_client(sync_client=True) as client:
        bf = client.read_deployment_by_name("backfill/backfill")
    assert bf.entrypoint == "flows.backfill:backfill" and not bf.schedules
    # Flow runs happen in the folder `prefect deploy` ran in (its ./acesup-data is the default data).
    assert dep.pull_steps == [{"prefect.deployments.steps.set_working_directory": {"directory": str(ROOT)}}]


@pytest.mark.slow
def test_served_deployment_runs_a_night(prefect_harness, tmp_path):
    """A run of the served deployment (what the cron tick starts) executes the flow in a subprocess."""
    from prefect.client.orchestration import get_client

    spec = tmp_path / "nightly.toml"
    spec.write_text('seed = 5\ndeals = 60\nvariants = ["standard"]\npolicies = ["greedy"]\nbatch_size = 30\n')
    data = tmp_path / "data"
    env = _api_env()
    env["PREFECT_RUNNER_POLL_FREQUENCY"] = "2"
    cmd = [sys.executable, "-m", "pipeline.cli", "serve", "--spec", str(spec), "--data", str(data)]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        dep = _read_deployment(150, lambda d: d.parameters.get("spec_file") == str(spec))
        assert dep is not None and proc.poll() is None
        with get_client(sync_client=True) as client:
            run = client.create_flow_run_from_deployment(dep.id)
            deadline = time.monotonic() + 400
            while time.monotonic() < deadline:
                run = client.read_flow_run(run.id)
                if run.state.is_final():
                    break
                time.sleep(2)
        assert run.state.is_completed(), run.state
        from pipeline.manifest import list_runs

        (info,) = list_runs(str(data))
        assert info.covered_rows == info.requested_rows == 60
        assert (data / "report" / "index.html").is_file()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
