"""The catalog's SQL deal generator against the engine, and the catalog in an older DuckDB client.

``deal_deck``/``deal_decks`` re-implement engine_rs_free.deals (Philox4x32-10 and
the Lemire-drawn Fisher-Yates shuffle) in SQL; they are held to the engine on
thousands of (seed, index) pairs, huge seeds and indices included, and on a
deal whose shuffle rejects a draw. The DuckDB command-line client 1.5.6 from the
package index (``duckdb-cli``, a dev dependency) opens the catalog read-only and
runs the same queries, and runs ``acesup.sql`` into an empty database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from queries_data import fixture_data, raw_results

from engine_rs_free.cards import format_deck
from engine_rs_free.deals import MAX_INDEX, MAX_SEED, deal, deal_batch
from queries.catalog import _MACROS, _deal_macros, build_catalog

CLI_VERSION = "v1.5.6"
# Deal 14,642,963 of seed 2026 draws a word that Lemire's method rejects (found by a scan
# of the first 30 million deals of that seed): the SQL must draw the next word, as the engine does.
REJECTING = (2026, 14_642_963)


@pytest.fixture(scope="module")
def sql():
    con = duckdb.connect()
    con.execute(_MACROS + _deal_macros())
    yield con
    con.close()


def _decks(con, seed, first, count):
    return [r[0] for r in con.execute("SELECT deck FROM deal_decks($s, $f, $n) ORDER BY deal",
                                      {"s": seed, "f": first, "n": count}).fetchall()]


@pytest.mark.parametrize("seed", [0, 1, 2026, 2**32 - 1, 2**32, 2**63, MAX_SEED])
@pytest.mark.parametrize("first", [0, 2**32 - 100, 2**62, MAX_INDEX - 199])
def test_deal_decks_equal_the_engine(sql, seed, first):
    want = [format_deck(d) for d in deal_batch(seed, first, 200)]
    assert _decks(sql, seed, first, 200) == want


def test_a_rejected_draw_is_redrawn(sql):
    seed, index = REJECTING
    got = sql.execute("SELECT deal_deck($s, $i)", {"s": seed, "i": index}).fetchall()[0][0]
    assert got == format_deck(deal(seed, index))
    assert _decks(sql, seed, index - 2, 5) == [format_deck(deal(seed, i)) for i in range(index - 2, index + 3)]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, MAX_SEED), st.integers(0, MAX_INDEX))
def test_deal_deck_of_any_seed_and_index(sql, seed, index):
    got = sql.execute("SELECT deal_deck($s, $i)", {"s": seed, "i": index}).fetchall()[0][0]
    assert got == format_deck(deal(seed, index))


def test_deal_deck_row_by_row(sql):
    rows = sql.execute("SELECT deal, deal_deck(7, deal) FROM range(20) AS t(deal) ORDER BY deal").fetchall()
    assert rows == [(i, format_deck(deal(7, i))) for i in range(20)]


# --- an older client ------------------------------------------------------------------------


def _cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "duckdb_cli", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def data(ray_local, tmp_path_factory) -> Path:
    from queries.aggregates import update_aggregates

    d = fixture_data(tmp_path_factory.getbasetemp() / "acesup-queries", batch_size=40)
    update_aggregates(str(d))
    build_catalog(d)
    return d


QUERIES = {
    "version": "SELECT version()",
    "rows": "SELECT count(*) FROM results",
    "wins": "SELECT sum(wins)::BIGINT FROM tallies",
    "pairs": "SELECT count(*) FROM pairs",
    "runs": "SELECT count(*) FROM runs",
    "deck": "SELECT deal_deck(11, 0)",
    "rejecting": f"SELECT deal_deck({REJECTING[0]}, {REJECTING[1]})",
    "decks": "SELECT count(DISTINCT deck) FROM deal_decks(11, 0, 50)",
    "low": "SELECT round(wilson_low(5, 100), 4)",
}


def _run_all(args, cwd):
    out = {}
    for key, q in QUERIES.items():
        p = _cli("-json", *args, "-c", q, cwd=cwd)
        assert p.returncode == 0, (key, p.stderr)
        out[key] = list(json.loads(p.stdout)[0].values())[0]
    return out


def _expected(data):
    df = raw_results(data)
    return {"rows": df.height, "wins": int(df["won"].sum()), "deck": format_deck(deal(11, 0)),
            "rejecting": format_deck(deal(*REJECTING)), "decks": 50, "low": 0.0215, "runs": 1}


def test_the_catalog_opens_in_duckdb_cli_1_5_6(data, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rel = os.path.relpath(data / "acesup.duckdb", elsewhere)
    got = _run_all(["-readonly", rel], elsewhere)
    assert got["version"] == CLI_VERSION
    assert got.pop("pairs") > 0
    got.pop("version")
    assert got == _expected(data)
    # read-only: a write is refused
    p = _cli("-readonly", rel, "-c", "CREATE TABLE t (a INT)", cwd=elsewhere)
    assert p.returncode != 0 and "read-only" in (p.stderr + p.stdout).lower()


def test_acesup_sql_runs_in_duckdb_cli_1_5_6(data, tmp_path):
    got = _run_all(["-init", str(data / "acesup.sql")], tmp_path)
    got.pop("version"), got.pop("pairs")
    assert got == _expected(data)
