"""Behaviour fingerprints: a changed player is refused beside its old rows, and never pooled with them.

The change is real: ``greedy`` is patched to break its ties like ``aces``
(an Ace first), which is what a small edit of a policy's tie-break does. The
in-process tests run planning, fingerprinting and batches here (no Ray); the
command-line test patches every process, Ray workers included, through a
``sitecustomize`` module on PYTHONPATH.
"""

import os
import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest

from pipeline.errors import UserError
from pipeline.fingerprint import (FingerprintMismatch, check_here, compute, deck_set_for, file_fingerprint,
                                  read_record, record_path, retire_pair)
from pipeline.manifest import read_manifest
from pipeline.plan import plan_run
from pipeline.spec import load_spec
from pipeline.storage import DataStore
from pipeline.verify import verify_run
from pipeline.worker import BatchJob, run_batch

PATCH = '''
import engine_rs_free.batch as _batch

_play_batch = _batch.play_batch


def play_batch(decks, rules, policy, **kwargs):
    """greedy with a patched tie-break: an Ace first, as 'aces' plays."""
    return _play_batch(decks, rules, "aces" if str(policy) == "greedy" else policy, **kwargs)


_batch.play_batch = play_batch
'''

# The same patch for every process of a run, Ray's own included, as a sitecustomize module: it
# waits for engine_rs_free.batch to be imported (most of Ray's processes never import it, and
# importing numba in each of them at start-up slows a loaded machine's Ray past its start timeout).
SITECUSTOMIZE = '''
import sys

PATCH = %r


class _PatchBatchOnImport:
    def find_spec(self, name, path=None, target=None):
        if name != "engine_rs_free.batch":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            exec(PATCH, {})

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _PatchBatchOnImport())
''' % PATCH


def patch_greedy(monkeypatch):
    """Apply PATCH in this process (undone at the end of the test)."""
    import engine_rs_free.batch as batch

    namespace = {}
    exec(PATCH.replace("_batch.play_batch = play_batch", ""), namespace)
    monkeypatch.setattr(batch, "play_batch", namespace["play_batch"])


def run_here(spec, *, fingerprints=True):
    """One run of ``spec`` in this process: fingerprint, plan, play every batch, record them."""
    store = DataStore(spec.data)
    store.check_writable()
    plan = plan_run(store, spec)
    fps = check_here(store, [(j.variant, j.policy) for j in plan.jobs], run_id=spec.run_id) if fingerprints else {}
    for job in plan.jobs:
        run_batch(replace(job, fingerprint=fps.get((job.variant, job.policy), "")))
    plan_run(store, spec)  # adopts the files the batches wrote into the manifest
    return store


def folder_state(data):
    """Every file under ``data`` with its bytes: what a refused run must leave as it was."""
    out = {}
    for root, _, names in os.walk(data):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, data)] = f.read()
    return out


def test_a_fingerprint_is_a_function_of_the_code():
    a = compute("standard", "greedy")
    b = compute("standard", "greedy")
    assert a.digest == b.digest and len(a.digest) == 16
    assert a.decks == deck_set_for("standard", "greedy") and a.decks.count == 500
    assert compute("strict", "greedy").digest != a.digest
    assert compute("standard", "greedy", replace(a.decks, count=499)).digest != a.digest


def test_a_patched_tie_break_changes_the_fingerprint(monkeypatch):
    clean = compute("standard", "greedy")
    patch_greedy(monkeypatch)
    patched = compute("standard", "greedy")
    assert patched.digest != clean.digest
    assert patched.values == compute("standard", "aces").values  # greedy now plays as aces, deck for deck
    assert patched.values["score"] != clean.values["score"]


def test_a_changed_player_is_refused_beside_its_old_rows_and_retire_lets_it_go_on(tmp_path, monkeypatch):
    spec = load_spec(None, seed=9, deals=600, variants="standard", policies="greedy,nomove", batch_size=200,
                     data=str(tmp_path / "data"))
    store = run_here(spec)
    clean = compute("standard", "greedy")
    rec = read_record(store, "standard", "greedy")
    assert rec.digest == clean.digest and rec.run_id == spec.run_id
    files = sorted(store.list_files("results/variant=standard/policy=greedy"))
    assert len(files) == 3 and {file_fingerprint(store, f) for f in files} == {clean.digest}
    assert verify_run(store, spec.run_id).ok

    # The same code again, extending the run: no complaint.
    more = load_spec(None, seed=9, deals=800, variants="standard", policies="greedy,nomove", batch_size=200,
                     data=spec.data)
    run_here(more)

    patch_greedy(monkeypatch)
    bigger = load_spec(None, seed=9, deals=1000, variants="standard", policies="greedy,nomove", batch_size=200,
                       data=spec.data)
    before = folder_state(spec.data)
    with pytest.raises(FingerprintMismatch) as err:
        check_here(store, [("standard", "greedy"), ("standard", "nomove")], run_id=bigger.run_id)
    msg = str(err.value)
    assert isinstance(err.value, UserError)
    assert msg.startswith("standard x greedy: this code plays it differently from the 800 rows in ")
    assert f"the rows have {clean.digest}" in msg and "score on " in msg and "of 500 decks (deal " in msg
    assert "--data NEW_FOLDER" in msg and f"acesup retire --variant standard --policy greedy --data {store.location}" in msg
    assert "nomove" not in msg  # nomove did not change
    assert folder_state(spec.data) == before, "a refused check writes nothing"

    # Retire the old rows: they move aside, the deals are planned again, and the patched code plays them.
    r = retire_pair(store, "standard", "greedy")
    assert len(r.files) == 4 and r.rows == 800 and r.kept == 0 and r.fingerprint != clean.digest
    assert all(os.path.exists(os.path.join(spec.data, "retired", r.folder.rpartition("/retired/")[2], f)) for f in r.files)
    assert read_record(store, "standard", "greedy").digest == r.fingerprint
    m = read_manifest(store, spec.run_id)
    assert {b.state for b in m.batches if b.policy == "greedy"} == {"lost"}
    run_here(bigger)
    files = sorted(store.list_files("results/variant=standard/policy=greedy"))
    assert {file_fingerprint(store, f) for f in files} == {r.fingerprint}
    assert verify_run(store, bigger.run_id).ok
    # nomove's rows were never touched
    assert len(store.list_files("results/variant=standard/policy=nomove")) == 5


def test_rows_from_before_fingerprints_are_rechecked(tmp_path, monkeypatch):
    spec = load_spec(None, seed=3, deals=300, variants="strict", policies="greedy", batch_size=300,
                     data=str(tmp_path / "data"))
    store = run_here(spec, fingerprints=False)  # files without a fingerprint, no record
    (rel,) = store.list_files("results")
    assert file_fingerprint(store, rel) is None and read_record(store, "strict", "greedy") is None
    # This code plays them the same way: they are kept and the record says they were rechecked.
    check_here(store, [("strict", "greedy")], run_id=spec.run_id)
    rec = read_record(store, "strict", "greedy")
    assert rec.legacy_checked == 300 and rec.digest == compute("strict", "greedy").digest
    store.delete(record_path("strict", "greedy"))

    patch_greedy(monkeypatch)
    with pytest.raises(FingerprintMismatch, match=r"strict x greedy: the 300 rows in .* were written before acesup "
                       r"recorded behaviour fingerprints, and this code plays them differently: 300 rows of "
                       r"results/.* played again differ in score on \d+ of 300 decks"):
        check_here(store, [("strict", "greedy")], run_id=spec.run_id)
    assert read_record(store, "strict", "greedy") is None


def test_the_catalog_never_pools_rows_of_two_fingerprints(tmp_path):
    from queries.catalog import build_catalog

    data = str(tmp_path / "data")
    spec = load_spec(None, seed=2, deals=200, variants="standard", policies="greedy,nomove", data=data)
    store = DataStore(data)
    for first, fp in ((0, "aaaaaaaaaaaaaaaa"), (100, "bbbbbbbbbbbbbbbb")):
        run_batch(BatchJob(data, spec.run_id, 2, "standard", "greedy", first, first + 99, fingerprint=fp))
    run_batch(BatchJob(data, spec.run_id, 2, "standard", "nomove", 0, 99, fingerprint="cccccccccccccccc"))
    run_batch(BatchJob(data, spec.run_id, 2, "standard", "nomove", 100, 199))  # no fingerprint: not a conflict
    with pytest.raises(UserError) as err:
        build_catalog(data)
    msg = str(err.value)
    assert "standard x greedy holds rows of 2 behaviours: aaaaaaaaaaaaaaaa in 1 file(s)" in msg
    assert "bbbbbbbbbbbbbbbb in 1 file(s)" in msg and "nomove" not in msg
    assert f"acesup retire --variant standard --policy greedy --data {store.location}" in msg
    assert not os.path.exists(os.path.join(data, "acesup.duckdb"))
    store.delete(sorted(store.list_files("results/variant=standard/policy=greedy"))[0])
    assert build_catalog(data).exists()


def test_the_command_line_refuses_a_changed_player_and_says_the_two_ways_out(tmp_path):
    """Real runs on a real local Ray; the patched code reaches the workers through sitecustomize."""
    patch = tmp_path / "patch"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(SITECUSTOMIZE)
    data = str(tmp_path / "data")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    patched_env = {**env, "PYTHONPATH": os.pathsep.join([str(patch), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)}

    def acesup(*args, deals, patched=False):
        argv = [sys.executable, "-m", "pipeline.cli", *args]
        if args[0] == "run":
            argv += ["--deals", str(deals), "--variants", "standard", "--policies", "greedy,solver:sensible",
                     "--batch-size", "200", "--num-cpus", "2", "--quiet"]
        return subprocess.run(argv + ["--data", data], env=patched_env if patched else env, capture_output=True,
                              text=True, timeout=600, start_new_session=True)

    p = acesup("run", deals=400)
    assert p.returncode == 0, p.stderr
    before = folder_state(data)
    p = acesup("run", deals=600, patched=True)
    assert p.returncode == 2, p.stderr
    errors = [ln for ln in p.stderr.splitlines() if "error" in ln.lower()]
    assert len(errors) == 1 and "Traceback" not in p.stderr, p.stderr
    assert errors[0].startswith("acesup run: error: standard x greedy: this code plays it differently from the 400 rows")
    assert "--data NEW_FOLDER" in errors[0] and "acesup retire --variant standard --policy greedy" in errors[0]
    assert folder_state(data) == before, "the refused run wrote something"

    p = acesup("retire", "--variant", "standard", "--policy", "greedy", deals=None, patched=True)
    assert p.returncode == 0 and p.stdout.startswith("retired 2 files (400 rows) of standard x greedy"), p.stdout + p.stderr
    p = acesup("run", deals=600, patched=True)
    assert p.returncode == 0, p.stderr
    store = DataStore(data)
    new = read_record(store, "standard", "greedy").digest
    assert {file_fingerprint(store, f) for f in store.list_files("results/variant=standard/policy=greedy")} == {new}
    after = folder_state(data)
    solver_files = [f for f in before if f.startswith("results/variant=standard/policy=solver%3Asensible/")]
    assert solver_files and all(after[f] == before[f] for f in solver_files), "the unchanged player's rows stay"
    run_id = load_spec(None, deals=600, variants="standard", policies="greedy,solver:sensible", data=data).run_id
    assert verify_run(store, run_id).ok


def test_compaction_and_the_aggregates_never_mix_two_fingerprints(tmp_path):
    """Files of one pair carrying two fingerprints are quarantined when a record vouches for one;
    if they get in anyway (no record), compaction will not merge them and the aggregates will not add them."""
    from pipeline.compact import compact
    from queries.aggregates import update_aggregates
    from queries.catalog import build_catalog

    data = str(tmp_path / "data")
    spec = load_spec(None, seed=4, deals=400, variants="standard", policies="greedy", batch_size=100, data=data)
    store = run_here(spec)
    first = read_record(store, "standard", "greedy").digest
    other = "f" * 16
    more = load_spec(None, seed=4, deals=500, variants="standard", policies="greedy", batch_size=100, data=data)

    def stray_file():
        return run_batch(BatchJob(data, more.run_id, 4, "standard", "greedy", 400, 499, fingerprint=other)).path

    rel = stray_file()  # a file of another behaviour that no manifest records (a driver died after its write)
    plan = plan_run(store, more)
    assert [q for q in plan.quarantined if q.startswith(rel) and f"footer fingerprint {other!r}" in q]
    store.delete(record_path("standard", "greedy"))  # without a record, it is adopted
    stray_file()
    plan_run(store, more)
    fps = {file_fingerprint(store, f) for f in store.list_files("results")}
    assert fps == {first, other}

    res = compact(data)
    assert res.merges == 0 and len(res.problems) == 1 and "carry behaviour fingerprints" in res.problems[0]
    assert {file_fingerprint(store, f) for f in store.list_files("results")} == {first, other}
    with pytest.raises(FingerprintMismatch, match="standard x greedy holds rows of 2 behaviours"):
        update_aggregates(data)
    with pytest.raises(UserError, match="standard x greedy holds rows of 2 behaviours"):
        build_catalog(data)
    r = retire_pair(store, "standard", "greedy")  # the way out the messages name
    assert r.files == [rel] and r.kept == 4
    assert compact(data).merges == 1
    assert {file_fingerprint(store, f) for f in store.list_files("results")} == {first}
    assert update_aggregates(data).rows_added == 400
