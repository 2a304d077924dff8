"""``acesup warm``: the engine compiled once into the on-disk cache, and a stamp that knows the code.

The test session itself warms the cache first (tests/conftest.py), so the full
compile is exercised by every cold run of the suite; these tests check what
decides whether it runs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import engine_rs_free
from engine_rs_free.players import play_problem
from pipeline.warm import UNITS, engine_stamp, stamp_path


def test_every_unit_is_a_player_its_variant_can_play():
    for variant, player in UNITS:
        assert play_problem(player, variant) == "", (variant, player)


def test_the_stamp_follows_the_engine_sources(tmp_path):
    from pathlib import Path

    copy = tmp_path / "engine_rs_free"
    shutil.copytree(Path(engine_rs_free.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert engine_stamp(copy) == engine_stamp()
    rules = copy / "rules.py"
    rules.write_text(rules.read_text() + "\n# one more line\n")
    assert engine_stamp(copy) != engine_stamp()


def test_warm_on_a_warm_cache_returns_at_once_and_says_so():
    # the session warmed the cache (conftest), so the stamp of this code is there
    assert stamp_path().exists()
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "warm"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "already warm for this code" in out.stdout


def test_warm_refuses_a_process_count_below_one():
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "warm", "--processes", "0"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2
    assert "--processes 0 is not positive" in out.stderr
