"""``acesup warm``: the engine compiled once into the on-disk cache, and a stamp that knows the code.

A test session with Ray tests warms the cache first (tests/conftest.py), so
the full compile runs on every cold run of the suite; these tests check what
decides whether it runs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import engine_rs_free
from engine_rs_free.players import play_problem
from pipeline.warm import (
    LOCK_NAME,
    UNITS,
    WarmResult,
    engine_stamp,
    expire_compiled,
    expire_for_new_sources,
    stamp_path,
    units_for,
    warm,
    warm_lock,
)


def test_every_unit_is_a_player_its_variant_can_play():
    for variant, player in UNITS:
        assert play_problem(player, variant) == "", (variant, player)


def test_the_stamp_follows_the_engine_sources(tmp_path):
    copy = tmp_path / "engine_rs_free"
    shutil.copytree(Path(engine_rs_free.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert engine_stamp(copy) == engine_stamp()
    rules = copy / "rules.py"
    rules.write_text(rules.read_text() + "\n# one more line\n")
    assert engine_stamp(copy) != engine_stamp()


def test_warm_with_the_stamp_of_this_code_returns_at_once_and_says_so(tmp_path, monkeypatch):
    # a cache folder of its own, stamped for this code: nothing may be compiled (the call would take minutes)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    stamps = sorted(stamp_path(u) for u in UNITS)
    assert {s.parent for s in stamps} == {tmp_path}
    for s in stamps:
        s.touch()
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "warm"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "already warm for this code" in out.stdout
    assert sorted(tmp_path.iterdir()) == stamps  # no kernel compiled into it


def test_a_run_warms_the_units_of_its_players_only():
    assert units_for([("standard", "greedy"), ("strict", "nomove"), ("reverse", "human")]) == (("standard", "greedy"),)
    # forced discards: the native search; optional discards: the pending search (standard+optional
    # too, so it needs no unit of its own); a restriction turns the pending search off, so
    # strict+optional+sensible is searched like standard+optional+sensible, by the plain one
    assert units_for([("reverse", "solver"), ("standard+optional", "solver")]) == (
        ("strict+optional", "solver"), ("standard", "solver"))
    assert units_for([("strict+optional", "solver:sensible")]) == (("standard+optional", "solver:sensible"),)
    assert units_for([("easy", "solver:leftmost"), ("strict", "bound")]) == (("standard", "bound"), ("easy", "solver"))
    assert set(units_for([(v, p) for v, p in UNITS])) == set(UNITS)


def test_warm_refuses_a_process_count_below_one():
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "warm", "--processes", "0"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2
    assert "--processes 0 is not positive" in out.stderr


def test_a_caller_waits_for_the_one_compiling_then_finds_its_stamps(tmp_path, monkeypatch):
    """Two drivers, or the workers of a parallel test session, start together on a cold cache: the second
    waits on the lock, then finds the stamps the first wrote and compiles nothing."""
    import threading

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    unit = UNITS[-1]
    said, result = [], []
    with warm_lock():  # this test plays the process that compiles
        second = threading.Thread(target=lambda: result.append(warm(units=[unit], progress=said.append)))
        second.start()
        second.join(timeout=3)
        assert second.is_alive(), "the second caller did not wait for the lock"
        assert said == [f"waiting for another process that is compiling the engine into {tmp_path}"]
        stamp_path(unit).touch()  # what the first does when it has compiled
    second.join(timeout=60)
    assert result == [WarmResult(True, 0.0, 0, 0)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([LOCK_NAME, stamp_path(unit).name])


CALLER = """import numba as nb
from .callee import g


@nb.njit(cache=True)
def f():
    return g()
"""
CALLEE = """import numba as nb


@nb.njit(cache=True)
def g():
    return {}
"""


def test_expiring_the_cache_recompiles_a_kernel_whose_callee_changed_in_another_module(tmp_path):
    """The Numba behaviour expire_compiled exists for: a cached kernel keeps its callee's old code when only
    the callee's module changed. (If a Numba release stops doing that, the second assertion says so.)"""
    import os

    pkg = tmp_path / "kernels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "caller.py").write_text(CALLER)
    (pkg / "callee.py").write_text(CALLEE.format(1))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # the cache beside the sources

    def f():
        out = subprocess.run([sys.executable, "-c", "from kernels.caller import f; print(f())"], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return int(out.stdout)

    assert f() == 1
    (pkg / "callee.py").write_text(CALLEE.format(2))
    assert f() == 1, "Numba recompiled the caller by itself"
    assert expire_compiled(pkg) == 4  # index and data of f and of g
    assert f() == 2


def _engine_copy(tmp_path, monkeypatch):
    """A copy of the engine's sources with its cache under tmp_path: (copy, kernels, compiled), ``compiled()``
    putting a stand-in compiled kernel into each of the copy's cache folders."""
    from pipeline.warm import _kernel_cache_folders

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "engine_rs_free"
    shutil.copytree(Path(engine_rs_free.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    kernels = [folder / "rules.make-1.py311.nbi" for folder in sorted(_kernel_cache_folders(copy))]

    def compiled():
        for k in kernels:
            k.parent.mkdir(parents=True, exist_ok=True)
            k.touch()

    return copy, kernels, compiled


def test_the_cache_expires_once_per_version_of_the_sources(tmp_path, monkeypatch):
    copy, kernels, compiled = _engine_copy(tmp_path, monkeypatch)
    assert len(kernels) == 2 and all(str(k).startswith(str(tmp_path / "cache")) for k in kernels)
    compiled()
    assert expire_for_new_sources(root=copy)
    assert not any(k.exists() for k in kernels)
    compiled()
    assert not expire_for_new_sources(root=copy)  # marked for this version: nothing deleted
    assert all(k.exists() for k in kernels)
    rules = copy / "rules.py"
    rules.write_text(rules.read_text() + "\n# one more line\n")  # a new version
    assert expire_for_new_sources(root=copy)
    assert not any(k.exists() for k in kernels)


def test_a_task_process_expires_a_stale_cache_once_whatever_follows(tmp_path, monkeypatch):
    """What a Ray task runs first on a node that no driver warmed: the stale kernels of the first version it
    sees go, then nothing more in that process (it runs the sources it imported)."""
    from pipeline import warm as warm_module

    monkeypatch.setattr(warm_module, "_SOURCES_CHECKED", set())
    copy, kernels, compiled = _engine_copy(tmp_path, monkeypatch)
    compiled()
    assert warm_module.expire_stale_kernels_once(root=copy)
    assert not any(k.exists() for k in kernels)
    compiled()
    (copy / "rules.py").write_text((copy / "rules.py").read_text() + "\n# edited after the process started\n")
    assert not warm_module.expire_stale_kernels_once(root=copy)
    assert all(k.exists() for k in kernels)
    monkeypatch.setattr(warm_module, "_SOURCES_CHECKED", set())  # a new process on the edited sources
    assert warm_module.expire_stale_kernels_once(root=copy)
    assert not any(k.exists() for k in kernels)
