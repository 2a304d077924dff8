"""The nightly and backfill flows, end to end: real Prefect (test harness), real local Ray, real Parquet.

Small specs (a few hundred deals of greedy and the solver on two variants) so
that a whole night (plan, Ray, verify, catalog, report, artifacts) takes
seconds; the rules being checked do not depend on the size.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from flows.plan import next_night_spec, pair_counts
from flows.summary import changes_markdown, headline_lines, headline_table
from pipeline.errors import UserError
from pipeline.spec import spec_from_dict

SMALL_SPEC = """\
seed = 7
start = 0
deals = 200
variants = ["standard", "strict"]
policies = ["greedy", "solver"]
batch_size = 100

[caps]
"solver" = 100
"""
# Rows of a night of SMALL_SPEC with N deals: greedy on N deals, solver on N/2, two variants.


def rows_for(deals: int) -> int:
    return 2 * deals + 2 * (deals // 2)


def write_spec(tmp_path: Path, text: str = SMALL_SPEC) -> str:
    path = tmp_path / "nightly.toml"
    path.write_text(text)
    return str(path)


def read_rows(data: Path):
    """Every result row in the folder, read with hive partitioning off (the columns are the truth)."""
    files = sorted(str(p) for p in (data / "results").glob("**/*.parquet") if p.is_file())
    return ds.dataset(files, format="parquet", partitioning=None).to_table(
        columns=["seed", "deal", "variant", "policy", "won"])


def assert_keys_unique(table) -> None:
    keys = table.group_by(["seed", "deal", "variant", "policy"]).aggregate([([], "count_all")])
    assert keys.num_rows == table.num_rows, "a (seed, deal, variant, policy) key is in two rows"


def flow_artifacts(flow_run_id) -> dict[str, object]:
    """The artifacts a flow run created, by key, read back from the Prefect API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return {a.key: a for a in arts}


# -- the plan of a night (plain function) -------------------------------------------------------


BASE = spec_from_dict({"seed": 7, "deals": 1000, "variants": ["standard", "easy"],
                       "policies": ["greedy", "solver"], "caps": {"solver": 100, "easy/solver": 10}})


def requested(counts: dict[str, int]) -> dict[str, tuple[int, int]]:
    return {k: (0, n - 1) for k, n in counts.items() if n > 0}


def test_first_night_runs_the_spec_as_given():
    assert next_night_spec(BASE, None, False, 500) == BASE
    assert next_night_spec(BASE, {}, True, None) == BASE


def test_a_finished_run_grows_by_a_block_and_caps_keep_their_share():
    spec = next_night_spec(BASE, requested(pair_counts(BASE)), True, 500)
    assert spec.run_id == BASE.run_id, "extending must keep the run id (the standing run)"
    assert spec.deals == 1500
    assert pair_counts(spec) == {"standard/greedy": 1500, "standard/solver": 150,
                                 "easy/greedy": 1500, "easy/solver": 15}
    # Default block: the spec's own deal count.
    again = next_night_spec(BASE, requested(pair_counts(spec)), True)
    assert pair_counts(again) == {"standard/greedy": 2500, "standard/solver": 250,
                                  "easy/greedy": 2500, "easy/solver": 25}


def test_a_larger_spec_takes_effect_the_next_night():
    small = next_night_spec(BASE, requested(pair_counts(BASE)), True, 100)
    bigger = spec_from_dict({**BASE.to_dict(), "deals": 5000, "caps": {"solver": 500, "easy/solver": 50}})
    assert bigger.run_id == BASE.run_id
    spec = next_night_spec(bigger, requested(pair_counts(small)), True, 100)
    assert pair_counts(spec) == {"standard/greedy": 5000, "standard/solver": 500,
                                 "easy/greedy": 5000, "easy/solver": 50}


def test_an_unfinished_run_is_finished_before_it_grows():
    asked = {"standard/greedy": 1500, "standard/solver": 150, "easy/greedy": 1500, "easy/solver": 15}
    spec = next_night_spec(BASE, requested(asked), False, 500)
    assert spec.deals == 1500 and pair_counts(spec) == asked
    assert spec.run_id == BASE.run_id


def test_coverage_never_shrinks():
    # The standing run asked the solver for more than the spec's share (say the caps were edited).
    asked = {"standard/greedy": 1000, "standard/solver": 900, "easy/greedy": 1000, "easy/solver": 10}
    spec = next_night_spec(BASE, requested(asked), True, 100)
    counts = pair_counts(spec)
    assert counts["standard/solver"] == 900 and counts["standard/greedy"] == 1100
    assert all(counts[k] >= n for k, n in asked.items())


def test_bad_deals_per_night_is_a_user_error():
    with pytest.raises(UserError, match="deals per night 0 is not positive"):
        next_night_spec(BASE, requested(pair_counts(BASE)), True, 0)


def test_changes_summary_shows_before_and_after():
    before = [{"variant": "standard", "player": "solver", "kind": "clairvoyant", "deals": 100, "wins": 11,
               "rate": 0.11, "low": 0.0625, "high": 0.1862, "one_in": 9.09}]
    after = [dict(before[0], deals=200, wins=25, rate=0.125, low=0.0861, high=0.1778, one_in=8.0),
             {"variant": "strict", "player": "greedy", "kind": "honest", "deals": 400, "wins": 0,
              "rate": 0.0, "low": 0.0, "high": 0.0095, "one_in": None}]
    md = changes_markdown("night", before, after, [("deals", "100 -> 200")])
    assert "| standard | solver | 100 | 200 | 11.000% | 12.500% | 8.610% .. 17.780% | 12.370% | 9.170% |" in md
    assert "| strict | greedy | 0 | 400 | - | 0.000% |" in md
    assert "- **deals**: 100 -> 200" in md
    table = headline_table(after)
    assert [r["odds"] for r in table] == ["1 in 8.0", "never"]
    lines = headline_lines(after)
    assert lines[0].split()[:4] == ["standard", "clairvoyant", "solver", "12.500%"]
    assert lines[1].split()[:4] == ["strict", "honest", "greedy", "0.000%"]
    assert len({line.index("[") for line in lines}) == 1, "columns are aligned"


def test_mirror_copies_new_and_changed_files_and_drops_removed_ones(tmp_path):
    from flows.mirror import is_remote, local_folder_for, mirror_data

    src, dst = tmp_path / "src", tmp_path / "dst"
    files = {
        "results/variant=standard/policy=greedy/abc-0-99.parquet": b"x" * 100,
        "results/variant=standard/policy=greedy/abc-100-199.parquet": b"y" * 100,
        "runs/abc/manifest.json": b"{}",
        "runs/abc/spec.toml": b"seed = 1",
    }
    for rel, content in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(content)
    (src / "results/variant=standard/policy=greedy/.abc-200-299.parquet.1234.tmp").write_bytes(b"partial")
    (src / "runs/.lock").write_text("held")

    first = mirror_data(str(src), str(dst))
    assert (first.copied, first.removed, first.files) == (4, 0, 4)
    assert {str(p.relative_to(dst)) for p in dst.rglob("*") if p.is_file()} == set(files)
    kept = dst / "results/variant=standard/policy=greedy/abc-0-99.parquet"
    stamp = kept.stat().st_mtime_ns

    # The source moves a file aside, rewrites a manifest and gains a file.
    (src / "results/variant=standard/policy=greedy/abc-100-199.parquet").unlink()
    (src / "runs/abc/manifest.json").write_bytes(b'{"state": "done"}')
    (src / "results/variant=standard/policy=greedy/abc-200-299.parquet").write_bytes(b"z" * 100)
    second = mirror_data(str(src), str(dst))
    assert (second.removed, second.files) == (1, 4)
    assert second.copied == 3  # the new file and both run files (manifests are always copied)
    assert kept.stat().st_mtime_ns == stamp, "an unchanged result file was copied again"
    assert (dst / "runs/abc/manifest.json").read_bytes() == b'{"state": "done"}'
    assert not (dst / "results/variant=standard/policy=greedy/abc-100-199.parquet").exists()

    assert not is_remote(str(src)) and local_folder_for(str(src)) == str(src)
    assert is_remote("s3://bucket/acesup")
    assert local_folder_for("s3://bucket/acesup/", tmp_path) == str(tmp_path / "s3_bucket_acesup")


def test_retries_are_for_hiccups_not_for_user_errors():
    from prefect.states import Failed

    from engine_rs_free.policies import UnknownPolicyError
    from flows.tasks import DatasetInvalid, worth_retrying
    from pipeline.execute import BatchFailedError

    def retried(exc):
        return worth_retrying(None, None, Failed(data=exc))

    assert retried(BatchFailedError("batch failed after 3 retries: connection reset"))
    assert retried(OSError("s3 timeout"))
    assert not retried(UserError("spec field 'deals': ..."))
    assert not retried(UnknownPolicyError("unknown policy 'greedier'"))
    assert retried(ValueError("internal: a bug, not the user's input"))
    assert not retried(DatasetInvalid("2 keys twice"))


# -- the nightly flow, end to end ---------------------------------------------------------------


def test_nightly_flow_end_to_end_then_next_block(prefect_harness, ray_local, tmp_path):
    from flows.nightly import CHANGES_KEY, nightly_odds
    from flows.tasks import HEADLINE_KEY, REPORT_KEY
    from pipeline.cli import main
    from pipeline.manifest import read_manifest
    from pipeline.storage import DataStore
    from pipeline.verify import verify_run

    spec_file = write_spec(tmp_path)
    data = tmp_path / "data"

    state = nightly_odds(spec_file=spec_file, deals_per_night=200, data=str(data), return_state=True)
    assert state.is_completed(), state.message
    result = state.result()
    run_id = result["run_id"]
    assert result["deals"] == 200 and result["rows"] == rows_for(200) == result["rows_written"]

    # Data written, exactly once, and verified independently of the flow.
    table = read_rows(data)
    assert table.num_rows == rows_for(200)
    assert_keys_unique(table)
    assert verify_run(str(data), run_id).ok
    # Catalog and report produced, and the headline agrees with the raw rows.
    assert (data / "acesup.duckdb").is_file()
    for key in ("index_html", "report_md", "report_json"):
        assert Path(result["report"][key]).is_file()
    solver_std = table.filter(pc.and_(pc.equal(table["variant"], "standard"), pc.equal(table["policy"], "solver")))
    head = {(r["variant"], r["player"]): r for r in result["headline"]}
    assert head[("standard", "solver")]["deals"] == 100
    assert head[("standard", "solver")]["wins"] == pc.sum(solver_std["won"]).as_py()

    # Artifacts of this flow run, read back from the Prefect API.
    arts = flow_artifacts(state.state_details.flow_run_id)
    assert {HEADLINE_KEY, CHANGES_KEY, REPORT_KEY} <= set(arts)
    table_rows = json.loads(arts[HEADLINE_KEY].data)
    assert {(r["variant"], r["player"]) for r in table_rows} == set(head)
    assert arts[HEADLINE_KEY].type == "table" and arts[CHANGES_KEY].type == "markdown"
    # Prefect keeps a link artifact as markdown: [text](link).
    assert f"({Path(result['report']['index_html']).resolve().as_uri()})" in arts[REPORT_KEY].data
    assert f"run {run_id}" in arts[CHANGES_KEY].data

    # The night's 6 batch files were compacted into one file per variant x player.
    first_files = {p: p.stat().st_mtime_ns for p in (data / "results").glob("**/*.parquet")}
    assert len(first_files) == 4 and all("-c" in p.name for p in first_files)

    # Night two, through the command line: the next block of 200 deals, nothing played twice.
    # (Not capsys: Prefect's log handler would keep its stream after the test closes it.)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["nightly", "--now", "--spec", spec_file, "--deals-per-night", "200", "--data", str(data)])
    out = out.getvalue()
    assert code == 0, out
    assert f"run {run_id}: 400 deals, {rows_for(400):,} games ({rows_for(200):,} played now), verified" in out
    assert "report:" in out and "index.html" in out and "headline odds" in out
    table = read_rows(data)
    assert table.num_rows == rows_for(400)
    assert_keys_unique(table)
    assert sorted(set(table["deal"].to_pylist())) == list(range(400))
    # Last night's files were not rewritten (no deal played twice; too few small files to merge yet).
    assert all(p.stat().st_mtime_ns == t for p, t in first_files.items())
    assert len(list((data / "results").glob("**/*.parquet"))) == 8
    m = read_manifest(DataStore(str(data)), run_id)
    assert m.requested["standard/greedy"] == [0, 399] and m.requested["standard/solver"] == [0, 199]
    assert verify_run(str(data), run_id).ok

    # The changes artifact of night two compares with night one's report.
    from prefect.artifacts import Artifact

    latest = Artifact.get(CHANGES_KEY)
    assert "| standard | solver | 100 | 200 |" in latest.data

    # A backfill of another index range: a run of its own, same steps, no key twice.
    from flows.backfill import CHANGES_KEY as BACKFILL_KEY
    from flows.backfill import backfill

    state = backfill(spec_file=spec_file, start=400, deals=100, data=str(data), return_state=True)
    assert state.is_completed(), state.message
    result = state.result()
    assert result["run_id"] != run_id and result["rows_written"] == rows_for(100) + 100
    table = read_rows(data)
    assert table.num_rows == rows_for(400) + rows_for(100) + 100
    assert_keys_unique(table)
    assert verify_run(str(data), result["run_id"]).ok
    assert BACKFILL_KEY in flow_artifacts(state.state_details.flow_run_id)


def test_nightly_refuses_a_prefect_api_that_is_down(tmp_path):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from pipeline.cli import main

    err = io.StringIO()
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}), contextlib.redirect_stderr(err):
        code = main(["nightly", "--now", "--spec", write_spec(tmp_path), "--data", str(tmp_path / "data")])
    assert code == 2
    assert "Prefect API at PREFECT_API_URL=http://127.0.0.1:9/api does not answer" in err.getvalue()
    assert not (tmp_path / "data").exists()


def test_bad_spec_fails_the_night_at_once(prefect_harness, tmp_path):
    from flows.nightly import nightly_odds

    spec_file = write_spec(tmp_path, SMALL_SPEC.replace('"greedy"', '"greedier"'))
    state = nightly_odds(spec_file=spec_file, data=str(tmp_path / "data"), return_state=True)
    assert state.is_failed()
    with pytest.raises(UserError, match="unknown player 'greedier'"):
        state.result()
    assert not (tmp_path / "data").exists(), "nothing may run after a bad spec"


def test_failed_night_leaves_valid_data_and_the_next_night_completes(prefect_harness, ray_local, tmp_path,
                                                                      monkeypatch):
    import flows.nightly
    from pipeline.execute import BatchFailedError
    from pipeline.manifest import read_manifest
    from pipeline.spec import load_spec
    from pipeline.storage import DataStore, batch_path
    from pipeline.verify import verify_run

    spec_file = write_spec(tmp_path)
    data = tmp_path / "data"
    spec = load_spec(spec_file, data=str(data))
    # Storage that fails for one batch: a folder squats the final name of the file of
    # strict x greedy, deals 100..199, so its rename into place fails on every attempt.
    squat = data / batch_path("strict", "greedy", spec.run_id, 100, 199)
    squat.mkdir(parents=True)
    # Keep the flow's own retry (it resumes) but without the production delay.
    monkeypatch.setattr(flows.nightly, "run_on_ray",
                        flows.nightly.run_on_ray.with_options(retries=1, retry_delay_seconds=0))

    state = flows.nightly.nightly_odds(spec_file=spec_file, deals_per_night=200, data=str(data),
                                       return_state=True)
    assert state.is_failed()
    with pytest.raises(BatchFailedError, match="strict × greedy, deals 100..199"):
        state.result()
    # The UI says what failed and what is saved.
    failure = flow_artifacts(state.state_details.flow_run_id)[flows.nightly.CHANGES_KEY].data
    assert "FAILED" in failure and "deals 100..199" in failure
    assert f"games present**: {rows_for(200) - 100:,} of {rows_for(200):,}" in failure

    # What was written is valid: whole files, each recorded once with its checksum, no key twice.
    store = DataStore(str(data))
    m = read_manifest(store, spec.run_id)
    assert m.state == "failed" and "deals 100..199" in m.error
    done = m.done()
    assert sum(b.rows for b in done) == rows_for(200) - 100
    table = read_rows(data)
    assert table.num_rows == rows_for(200) - 100
    assert_keys_unique(table)
    problems = verify_run(str(data), spec.run_id).problems
    assert problems and all("strict" in p and "greedy" in p for p in problems), problems

    # The storage recovers; the next night finishes the same block before adding any deal.
    squat.rmdir()
    result = flows.nightly.nightly_odds(spec_file=spec_file, deals_per_night=200, data=str(data))
    assert result["deals"] == 200 and result["rows_written"] == 100
    table = read_rows(data)
    assert table.num_rows == rows_for(200)
    assert_keys_unique(table)
    assert verify_run(str(data), spec.run_id).ok
    # And the night after that grows it again.
    result = flows.nightly.nightly_odds(spec_file=spec_file, deals_per_night=100, data=str(data))
    assert result["deals"] == 300 and result["rows"] == 2 * 300 + 2 * 150


@pytest.mark.slow
def test_nightly_now_on_a_fresh_machine_without_a_prefect_server(tmp_path):
    """`acesup nightly --now` with no Prefect profile, no API and no Ray running: it runs and exits."""
    import os
    import subprocess
    import sys

    spec_file = write_spec(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_ADDRESS"))}
    env["PREFECT_HOME"] = str(tmp_path / "fresh-prefect-home")  # no profile, no database yet
    env["HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "nightly", "--now", "--spec", spec_file],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "run " in out.stdout and f"{rows_for(200):,} games" in out.stdout
    data = tmp_path / "acesup-data"  # the default data folder, in the working directory
    assert (data / "report" / "index.html").is_file() and (data / "acesup.duckdb").is_file()
    assert read_rows(data).num_rows == rows_for(200)
    assert "Stopping temporary server" in out.stderr + out.stdout
