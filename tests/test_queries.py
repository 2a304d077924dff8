"""The DuckDB catalog and the report queries, on a small data folder made by a real pipeline run.

Every query's rows are checked against an independent Polars recomputation from
the raw Parquet files (tests/queries_data.py); the catalog is opened read-only
by a plain DuckDB client from another working directory.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from queries_data import (
    CLAIMS,
    compare_rows,
    expected_tables,
    fixture_data,
    raw_results,
    wilson,
)

from queries.catalog import (
    REPORT_QUERIES,
    build_catalog,
    catalog_is_current,
    catalog_path,
    ensure_catalog,
    load_query,
    run_query,
)


@pytest.fixture(scope="session")
def data(ray_local, tmp_path_factory) -> Path:
    return fixture_data(tmp_path_factory.getbasetemp() / "acesup-queries", batch_size=40)


@pytest.fixture(scope="session")
def catalog(data) -> Path:
    from queries.aggregates import update_aggregates

    update_aggregates(str(data))
    return build_catalog(data)


@pytest.fixture(scope="session")
def expected(data, catalog) -> dict:
    # after the catalog fixture has brought the aggregates up to date: the nights twin reads their ledger
    return expected_tables(data)


@pytest.fixture()
def con(catalog):
    c = duckdb.connect(str(catalog), read_only=True)
    yield c
    c.close()


def test_fixture_is_a_real_run_with_what_the_queries_need(data):
    df = raw_results(data)
    assert set(df["variant"].unique()) == {"standard", "strict", "standard+optional"}
    assert (data / "runs").is_dir() and list((data / "runs").glob("*/manifest.json"))
    statuses = set(df.filter(df["policy"] == "solver")["status"].unique())
    assert "gave_up" in statuses and "solved" in statuses  # the gave_up convention is exercised
    assert df["won"].sum() > 0


# honest_bracket needs the bracket's players, which this fixture does not run (the bound takes seconds
# a deal): its recomputation twin runs on a data folder of its own in tests/test_bracket_report.py.
RECOMPUTED_HERE = tuple(q for q in REPORT_QUERIES if q != "honest_bracket")


@pytest.mark.parametrize("name", RECOMPUTED_HERE)
def test_query_matches_independent_recomputation(con, expected, name):
    got = run_query(con, name).to_pylist()
    assert got, f"{name} returned no rows"
    assert compare_rows(name, got, expected[name]) == []


@pytest.mark.parametrize("name", REPORT_QUERIES)
def test_query_rows_are_in_a_total_order(con, name):
    """Same data, same rows in the same order: what makes report.json byte-identical."""
    a = run_query(con, name).to_pylist()
    b = run_query(con, name).to_pylist()
    assert a == b
    from queries_data import TABLE_KEYS

    keys = [tuple(r[k] for k in TABLE_KEYS[name]) for r in a]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("name", REPORT_QUERIES)
def test_query_file_header_documents_grain_inputs_and_every_column(con, name):
    q = load_query(name)
    header = q.header
    for word in ("grain:", "inputs:", "parameters:", "columns:"):
        assert word in header, f"{name}.sql header lacks {word!r}"
    cols = run_query(con, name).column_names
    for c in cols:
        assert c in header, f"{name}.sql header does not document column {c!r}"


def test_parameters_are_bound_not_formatted(con, expected):
    q = load_query("policy_gap")
    assert q.params == {"reference": "solver"}
    assert "$reference" in q.text
    # Another reference: the restricted solver, with a name holding ':' and '+'.
    ref = "solver:sensible+leftmost+must_fill"
    rows = run_query(con, "policy_gap", reference=ref).to_pylist()
    assert rows and all(r["reference"] == ref and r["policy"] != ref for r in rows)
    # A quote in a bound value is data, not SQL.
    assert run_query(con, "policy_gap", reference="x' OR '1'='1").num_rows == 0
    with pytest.raises(ValueError, match="no parameter 'nope'"):
        run_query(con, "policy_gap", nope=1)
    with pytest.raises(ValueError, match="unknown query 'nope'.*win_odds"):
        load_query("nope")
    with pytest.raises(ValueError, match="unknown query"):
        load_query("../catalog")


def test_policy_gap_with_another_reference_matches_recomputation(con, data):
    ref = "solver:sensible+leftmost+must_fill"
    got = run_query(con, "policy_gap", reference=ref).to_pylist()
    assert compare_rows("policy_gap", got, expected_tables(data, reference=ref)["policy_gap"]) == []


def test_wilson_macros_match_the_formula_and_known_values(con):
    # Known value: 5 of 100 -> [0.0215, 0.1118] (Wilson 95%, z = 1.96).
    lo, hi = con.execute("SELECT wilson_low(5, 100), wilson_high(5, 100)").fetchall()[0]
    assert (round(lo, 4), round(hi, 4)) == (0.0215, 0.1118)
    for k, n in [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (1, 200), (57, 1000), (999_999, 1_000_000)]:
        got = con.execute("SELECT wilson_low($k, $n), wilson_high($k, $n)", {"k": k, "n": n}).fetchall()[0]
        want = wilson(k, n)
        assert math.isclose(got[0], want[0], rel_tol=1e-12, abs_tol=1e-15), (k, n)
        assert math.isclose(got[1], want[1], rel_tol=1e-12, abs_tol=1e-15), (k, n)
        assert 0 <= got[0] <= k / n <= got[1] <= 1
    assert con.execute("SELECT wilson_low(0, 0), wilson_high(0, 0), one_in(0, 5), one_in(2, 5)").fetchall()[0] == (
        None, None, None, 2.5)
    assert con.execute("SELECT player_kind('solver'), player_kind('solver:leftmost'), player_kind('greedy'), "
                       "player_kind('pimc:samples=8')").fetchall()[0] == ("clairvoyant", "clairvoyant", "honest", "honest")
    assert con.execute("SELECT solver_restriction('solver'), solver_restriction('solver:sensible+must_fill'), "
                       "solver_restriction('greedy'), variant_preset('strict+optional'), "
                       "variant_discards('strict+optional'), variant_discards('easy')").fetchall()[0] == (
        "none", "sensible+must_fill", None, "strict", "optional", "forced")


def test_deal_deck_macro_computes_the_engine_deck(con, data):
    """No deck is stored: deal_deck and deal_decks run the generator in SQL (tests/test_catalog_sql.py
    holds them to the engine on many more deals)."""
    from engine_rs_free.cards import format_deck
    from engine_rs_free.deals import deal

    df = raw_results(data)
    pairs = sorted(set(zip(df["seed"].to_list(), df["deal"].to_list())))
    for s, d in pairs[:: max(1, len(pairs) // 5)]:
        assert con.execute("SELECT deal_deck($s, $d)", {"s": s, "d": d}).fetchall()[0][0] == format_deck(deal(s, d))
    rows = con.execute("SELECT r.deal, d.deck FROM (SELECT DISTINCT deal FROM results WHERE deal < 5) r "
                       "JOIN deal_decks(11, 0, 5) d USING (deal) ORDER BY r.deal").fetchall()
    assert rows == [(i, format_deck(deal(11, i))) for i in range(5)]
    assert "deals" not in {r[0] for r in con.execute("SHOW TABLES").fetchall()}


def test_results_view_reads_the_columns_not_the_folders(con, data):
    """hive partitioning is off: the variant/policy columns are those in the files."""
    got = con.execute("SELECT count(*), count(DISTINCT policy) FROM results").fetchall()[0]
    df = raw_results(data)
    assert got == (df.height, df["policy"].n_unique())
    assert "solver:sensible+leftmost+must_fill" in {
        r[0] for r in con.execute("SELECT DISTINCT policy FROM results").fetchall()}
    cols = [r[0] for r in con.execute("DESCRIBE results").fetchall()]
    from pipeline.schema import RESULT_SCHEMA

    assert cols == RESULT_SCHEMA.names


def test_runs_and_files_views_read_the_manifests(con, data):
    from pipeline.manifest import read_all_manifests
    from pipeline.storage import DataStore

    manifests = read_all_manifests(DataStore(str(data)))
    rows = con.execute("SELECT run_id, seed, start, state, files, rows FROM runs ORDER BY run_id").fetchall()
    assert rows == sorted((m.run_id, m.seed, m.start, m.state, len(m.done()), sum(b.rows for b in m.done()))
                          for m in manifests.values())
    n_rows = con.execute("SELECT sum(rows) FROM files").fetchall()[0][0]
    assert n_rows == raw_results(data).height
    files = {r[0]: r[1:] for r in con.execute("SELECT path, sha256, bytes FROM files").fetchall()}
    import hashlib

    for rel, (sha, size) in files.items():
        raw = (data / rel).read_bytes()
        assert (hashlib.sha256(raw).hexdigest(), len(raw)) == (sha, size)
    spec_deals = con.execute("SELECT (spec::JSON->>'deals')::INT FROM runs").fetchall()[0][0]
    assert spec_deals == next(iter(manifests.values())).spec["deals"]


def test_catalog_opens_read_only_from_another_directory_with_a_plain_client(catalog, data, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import duckdb, json, sys\n"
        "con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "out = {'rows': con.execute('SELECT count(*) FROM results').fetchall()[0][0],\n"
        "       'runs': con.execute('SELECT count(*) FROM runs').fetchall()[0][0],\n"
        "       'deck': con.execute('SELECT deal_deck(11, 0)').fetchall()[0][0],\n"
        "       'wilson': con.execute('SELECT wilson_low(5, 100)').fetchall()[0][0]}\n"
        "try:\n"
        "    con.execute('CREATE TABLE t (a INT)')\n"
        "    out['write'] = 'allowed'\n"
        "except duckdb.Error as exc:\n"
        "    out['write'] = type(exc).__name__\n"
        "print(json.dumps(out))\n"
    )
    # A relative path to the catalog, from a folder that is not the data folder's parent.
    rel = os.path.relpath(catalog, elsewhere)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-c", code, rel], cwd=elsewhere, capture_output=True, text=True,
                         timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    from engine_rs_free.cards import format_deck
    from engine_rs_free.deals import deal

    assert out["rows"] == raw_results(data).height
    assert out["runs"] == 1
    assert out["deck"] == format_deck(deal(11, 0))
    assert round(out["wilson"], 4) == 0.0215
    assert out["write"] != "allowed"


def test_catalog_goes_stale_when_data_is_added_or_moved(data, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(data, copy, ignore=shutil.ignore_patterns("acesup.duckdb*", "report"))
    assert not catalog_is_current(copy)
    path = ensure_catalog(copy)
    assert path == catalog_path(copy) and catalog_is_current(copy)
    # Moved: the views point at the old place, so the catalog is stale there.
    moved = tmp_path / "moved"
    copy.rename(moved)
    assert not catalog_is_current(moved)
    ensure_catalog(moved)
    with duckdb.connect(str(catalog_path(moved)), read_only=True) as c:
        assert c.execute("SELECT count(*) FROM results").fetchall()[0][0] == raw_results(data).height
    # A new result file newer than the catalog makes it stale.
    time.sleep(0.05)
    newest = sorted((moved / "results").rglob("*.parquet"))[0]
    os.utime(newest, None)
    assert not catalog_is_current(moved)


def test_empty_data_folder_gives_empty_views(tmp_path):
    path = build_catalog(tmp_path)
    with duckdb.connect(str(path), read_only=True) as c:
        for view in ("results", "runs", "files", "tallies", "score_counts", "pairs", "deal_coverage", "nights",
                     "ledger"):
            assert c.execute(f"SELECT count(*) FROM {view}").fetchall()[0][0] == 0, view
        for name in REPORT_QUERIES:
            assert run_query(c, name).num_rows == 0


def test_missing_or_remote_data_folder_is_a_user_error(tmp_path):
    from pipeline.errors import UserError

    with pytest.raises(UserError, match="does not exist"):
        build_catalog(tmp_path / "nope")
    with pytest.raises(UserError, match="not a local folder"):
        build_catalog("s3://bucket/acesup")


def test_claims_cover_every_published_figure(con):
    rows = run_query(con, "claims").to_pylist()
    assert {r["claim_id"] for r in rows} == set(CLAIMS)
    for r in rows:
        preset, stated = CLAIMS[r["claim_id"]]
        assert r["claim_preset"] == preset and math.isclose(r["stated_rate"], stated)
        assert r["variant"].split("+")[0] == preset


def test_solver_ladder_is_consistent_with_the_rules(con):
    """Restrictions remove choices, optional discards add some: wins can only shrink or grow."""
    rows = run_query(con, "solver_ladder").to_pylist()
    by = {(r["variant"], r["restriction"]): r for r in rows}
    restricted = by[("standard", "sensible+leftmost+must_fill")]
    assert restricted["rung_wins"] <= restricted["base_wins"]
    assert restricted["share_of_base"] is not None and restricted["share_of_base"] <= 1
    assert by[("standard", "none")]["share_of_base"] == 1.0
    assert by[("standard+optional", "none")]["discards"] == "optional"
    assert [r["rung"] for r in rows if r["preset"] == "standard"] == sorted(
        r["rung"] for r in rows if r["preset"] == "standard")
    strict = [r["restriction"] for r in rows if r["preset"] == "strict"]
    assert strict == ["none", "sensible", "leftmost", "must_fill", "sensible+leftmost+must_fill"]
    for r in rows:
        if r["preset"] == "strict" and r["gave_up"] == 0:
            # A restriction removes choices: its wins are among the unrestricted solver's.
            assert r["rung_wins"] <= r["base_wins"] and r["base_deals"] == r["deals"]


def test_the_catalog_holds_no_rows_and_is_written_for_old_clients(catalog, data):
    """Views only: its size does not grow with the results; storage format 1.0 (version 64)."""
    assert catalog.stat().st_size < 2 << 20
    with duckdb.connect(str(catalog), read_only=True) as c:
        tables = c.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall()
        assert {t for _, t in tables} == {"VIEW"}
        assert c.execute("SELECT tags FROM duckdb_databases() WHERE database_name = current_database()")
    with open(catalog, "rb") as f:
        head = f.read(16)
    assert head[8:12] == b"DUCK" and int.from_bytes(head[12:16], "little") == 64
    sql = (data / "acesup.sql").read_text()
    assert "CREATE MACRO deal_deck" in sql and "CREATE VIEW results" in sql


def test_half_built_catalog_of_a_dead_process_is_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    leftover = tmp_path / f"acesup.duckdb.building-{pid}"
    leftover.write_bytes(b"half a catalog")
    (tmp_path / f"acesup.duckdb.building-{pid}.wal").write_bytes(b"x")
    build_catalog(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acesup.duckdb", "acesup.sql", "catalog"]
