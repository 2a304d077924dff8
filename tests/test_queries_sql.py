"""acesup sql: read-only SQL over the catalog, output formats, refused writes, DuckDB errors."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from queries_data import fixture_data, raw_results

from pipeline.cli import main
from queries.catalog import catalog_path, ensure_catalog

COUNT_SQL = "SELECT variant, policy, count(*) AS deals, count(*) FILTER (WHERE won) AS wins FROM results GROUP BY ALL ORDER BY ALL"


@pytest.fixture(scope="session")
def data(ray_local, tmp_path_factory) -> Path:
    d = fixture_data(tmp_path_factory.getbasetemp() / "acesup-queries", batch_size=40)
    ensure_catalog(d)
    return d


def expected_counts(data) -> list[tuple]:
    df = raw_results(data)
    rows = {}
    for v, p, w in zip(df["variant"].to_list(), df["policy"].to_list(), df["won"].to_list()):
        d, k = rows.get((v, p), (0, 0))
        rows[(v, p)] = (d + 1, k + int(w))
    return [(v, p, d, k) for (v, p), (d, k) in sorted(rows.items())]


def test_table_format(data, capsys):
    assert main(["sql", "--data", str(data), COUNT_SQL]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["variant", "policy", "deals", "wins"]
    body = [ln.split() for ln in out[2:-1]]
    assert [(v, p, int(d), int(k)) for v, p, d, k in body] == expected_counts(data)
    assert out[-1] == f"({len(body)} rows)"


def test_csv_json_and_parquet_formats(data, capsys, tmp_path):
    want = expected_counts(data)
    assert main(["sql", "--data", str(data), "--format", "csv", COUNT_SQL]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["variant", "policy", "deals", "wins"]
    assert [(v, p, int(d), int(k)) for v, p, d, k in rows[1:]] == want

    out = tmp_path / "odds.json"
    assert main(["sql", "--data", str(data), "--format", "json", "--out", str(out), COUNT_SQL]) == 0
    assert [(r["variant"], r["policy"], r["deals"], r["wins"]) for r in json.loads(out.read_text())] == want

    out = tmp_path / "odds.parquet"
    assert main(["sql", "--data", str(data), "--format", "parquet", "--out", str(out), COUNT_SQL]) == 0
    t = pq.read_table(out)
    assert list(zip(*[t.column(c).to_pylist() for c in t.column_names])) == want


def test_max_rows_truncates_only_the_table(data, capsys):
    assert main(["sql", "--data", str(data), "--max-rows", "3", "SELECT deal FROM results ORDER BY deal"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 + 3 + 1 and "first 3 shown" in out[-1]


@pytest.mark.parametrize(
    "query",
    [
        "CREATE TABLE t AS SELECT 1 AS a",
        "INSERT INTO deals VALUES (1, 1, 'x')",
        "DROP VIEW results",
        "COPY (SELECT 1) TO '{out}'",
        "EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}'",
        "ATTACH '{out}' AS other",
        "SET threads = 1",
        "SELECT 1; CREATE TABLE t (a INT)",
    ],
)
def test_writes_are_refused_cleanly(data, capsys, tmp_path, query):
    target = tmp_path / "written.csv"
    catalog = catalog_path(data)
    before = hashlib.sha256(catalog.read_bytes()).hexdigest()
    rc = main(["sql", "--data", str(data), query.format(out=target)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("acesup sql: error: statement ") and "read-only" in err
    assert err.count("\n") == 1  # one line, no traceback
    assert not target.exists()
    assert hashlib.sha256(catalog.read_bytes()).hexdigest() == before


def test_bad_query_prints_duckdb_message(data, capsys):
    rc = main(["sql", "--data", str(data), "SELECT nope FROM results"])
    err = capsys.readouterr().err
    assert rc != 0
    assert 'Referenced column "nope" not found' in err and err.count("\n") == 1
    rc = main(["sql", "--data", str(data), "SELEC 1"])
    err = capsys.readouterr().err
    assert rc != 0 and "syntax error" in err
    assert main(["sql", "--data", str(data), "--format", "parquet", "SELECT 1"]) == 2
    assert "needs --out" in capsys.readouterr().err


def test_missing_data_folder_is_a_user_error(tmp_path, capsys):
    assert main(["sql", "--data", str(tmp_path / "nope"), "SELECT 1"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_installed_command_from_another_directory(data, tmp_path):
    rel = os.path.relpath(data, tmp_path)
    res = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "sql", "--data", rel, "--format", "csv",
         "SELECT count(*) AS n, deal_deck(11, 3) AS deck FROM results"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 0, res.stderr
    from engine_rs_free.cards import format_deck
    from engine_rs_free.deals import deal

    rows = list(csv.reader(io.StringIO(res.stdout)))
    assert rows == [["n", "deck"], [str(raw_results(data).height), format_deck(deal(11, 3))]]


@pytest.mark.parametrize(
    "query, first_line",
    [
        ("DESCRIBE results", "column_name"),
        ("SHOW TABLES", "name"),
        ("SUMMARIZE SELECT score FROM results", "column_name"),
        ("EXPLAIN SELECT count(*) FROM results", "explain_key"),
        ("WITH a AS (SELECT 41 AS x) SELECT x + 1 AS y FROM a", "y"),
        ("SELECT 1 AS a; SELECT 2 AS b", "b"),
    ],
)
def test_read_only_statements_run(data, capsys, query, first_line):
    assert main(["sql", "--data", str(data), query]) == 0
    out = capsys.readouterr().out
    assert out.split()[0] == first_line


@pytest.mark.parametrize("query", [
    "SELECT * FROM read_csv('/etc/hostname')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM read_parquet('{data}/../outside.parquet')",
    "SELECT * FROM read_csv('https://example.com/a.csv')",
])
def test_queries_read_only_the_data_folder(data, capsys, query, tmp_path):
    outside = Path(data).parent / "outside.parquet"
    pq.write_table(pq.read_table(next(Path(data).glob("results/**/*.parquet"))), outside)
    rc = main(["sql", "--data", str(data), query.format(data=data)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert "Permission Error" in err and f"acesup sql reads only files under the data folder {str(data)!r}" in err
    # a file inside the data folder is fine, and so are the catalog's views
    inside = next(Path(data).glob("results/**/*.parquet"))
    assert main(["sql", "--data", str(data), f"SELECT count(*) AS n FROM read_parquet('{inside}')"]) == 0
    assert capsys.readouterr().out.split()[0] == "n"


def test_sql_help_says_what_it_may_read(capsys):
    with pytest.raises(SystemExit):
        main(["sql", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "reads only the data folder" in out and "read_csv('/etc/hostname')" in out


def test_out_to_a_missing_folder_or_onto_a_folder_is_a_clear_error(data, capsys, tmp_path):
    for out, fragment in ((tmp_path / "no" / "such" / "x.csv", "does not exist; create it first"),
                          (tmp_path, "is a folder; give a file path")):
        for fmt in ("csv", "parquet"):
            rc = main(["sql", "--data", str(data), "--format", fmt, "--out", str(out), "SELECT 1 AS a"])
            err = capsys.readouterr().err
            assert rc == 2 and fragment in err and err.count("\n") == 1 and "Traceback" not in err, err
    os.chmod(tmp_path, 0o500)
    try:
        if not os.access(tmp_path, os.W_OK):  # not when the tests run as root
            rc = main(["sql", "--data", str(data), "--format", "csv", "--out", str(tmp_path / "x.csv"), "SELECT 1"])
            assert rc == 2 and "cannot write --out" in capsys.readouterr().err
    finally:
        os.chmod(tmp_path, 0o700)
