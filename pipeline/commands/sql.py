"""acesup sql: run a read-only SQL query against the data folder's DuckDB catalog."""

from __future__ import annotations

NAME = "sql"
HELP = "query the results with SQL (DuckDB, read-only)"
DESCRIPTION = """\
Run a SQL query against the DuckDB catalog of a data folder (DATA/acesup.duckdb,
built or refreshed first if results were added since). The catalog holds the
views `results` (one row per seed x deal x variant x policy), the aggregates
the report reads (`tallies`: deals, wins, gave_up, score and moves sums per
variant x policy; `score_counts`; `pairs`: every two players on the deals both
played; `nights`: what each night added, with running totals; `deal_coverage`;
`ledger`), `runs` (one row per run) and `files` (one row per live data file),
and the macros wilson_low(k, n), wilson_high(k, n) (95% Wilson interval),
one_in(k, n), player_kind(policy), deal_deck(seed, deal) and the table macro
deal_decks(seed, first, count) (decks computed in SQL: none is stored).
The aggregates are brought up to date by 'acesup report' and by every night.
The connection is read-only: only SELECT (WITH, DESCRIBE, SHOW, SUMMARIZE) and
EXPLAIN run; anything that writes is refused. It reads only the data folder:
files outside DATA (read_csv('/etc/hostname'), other folders, URLs) are
refused (DuckDB's enable_external_access = false with allowed_directories =
[DATA], configuration locked). Any DuckDB client can open the catalog too,
without those limits: duckdb -readonly DATA/acesup.duckdb

examples:
  acesup sql "SELECT variant, policy, count(*) AS deals, avg(won::INT) AS rate
              FROM results GROUP BY ALL ORDER BY ALL"
  acesup sql --format csv --out odds.csv "SELECT * FROM results WHERE policy = 'solver'"
  acesup sql "SELECT deal_deck(2026, 0)"
  acesup sql "SELECT generation, at, policy, total_deals, total_wins FROM nights ORDER BY ALL"
"""

FORMATS = ("table", "csv", "json", "parquet")
READ_ONLY_TYPES = ("SELECT", "EXPLAIN")


def add_arguments(p):
    from pipeline.spec import DEFAULT_DATA

    p.add_argument("query", help="the SQL text (one or more read-only statements; the last one's rows are printed)")
    p.add_argument("--data", default=DEFAULT_DATA, help=f"data folder (default {DEFAULT_DATA})")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format (default table)")
    p.add_argument("--out", metavar="FILE",
                   help="write to this file instead of standard output (required for parquet); its folder must exist")
    p.add_argument("--max-rows", type=int, default=1000,
                   help="table format: print at most this many rows (default 1000; csv/json/parquet print all)")


def check_read_only(con, text: str) -> list:
    """The statements of ``text``; raises UserError if one of them is not a read-only statement.

    SELECT-like statements (WITH, DESCRIBE, SHOW, SUMMARIZE, VALUES) and EXPLAIN of
    them are read-only; CREATE, INSERT, COPY … TO, ATTACH, SET, PRAGMA and the like are not.
    """
    import duckdb

    from pipeline.errors import UserError

    try:
        statements = con.extract_statements(text)
    except duckdb.Error as exc:
        raise UserError(f"the query does not parse: {_one_line(str(exc))}") from None
    if not statements:
        raise UserError("the query is empty; give a SELECT statement, e.g. \"SELECT count(*) FROM results\"")
    for number, st in enumerate(statements, start=1):
        kind = st.type.name
        if kind == "EXPLAIN":
            # EXPLAIN ANALYZE runs its statement: check what it explains too.
            inner = st.query.strip()
            words = inner.split(None, 2)
            rest = words[2] if len(words) > 2 and words[1].upper() == "ANALYZE" else inner.split(None, 1)[-1]
            check_read_only(con, rest)
            continue
        if kind not in READ_ONLY_TYPES:
            raise UserError(
                f"statement {number} ({kind}) would write, and the catalog is opened read-only: only "
                f"SELECT (WITH, DESCRIBE, SHOW, SUMMARIZE) and EXPLAIN run here. To save rows, use "
                f"--format csv|json|parquet --out FILE; to change the data, run 'acesup run'"
            )
    return statements


def confine(con, data) -> None:
    """Let the connection read only files under the folder ``data`` (and lock that setting)."""
    folder = str(data).rstrip("/") + "/"
    con.execute("SET allowed_directories = [$folder]", {"folder": folder})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def check_out(out: str | None) -> None:
    """UserError unless ``out`` is a file path in an existing folder (or None: standard output)."""
    import os

    from pipeline.errors import UserError

    if not out:
        return
    if os.path.isdir(out):
        raise UserError(f"--out {out!r} is a folder; give a file path, e.g. --out {os.path.join(out, 'result.csv')}")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise UserError(f"--out {out!r}: the folder {folder!r} does not exist; create it first "
                        f"(mkdir -p {folder}) or give a path in an existing folder")


def _one_line(message: str) -> str:
    """DuckDB's message on one line, without its 'LINE n:' source excerpt and caret."""
    keep = []
    for ln in message.strip().splitlines():
        t = ln.strip()
        if not t or t.startswith("LINE ") or set(t) <= {"^", " "}:
            continue
        keep.append(t)
    return " ".join(keep)


def _cell(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return format(value, ".6g")
    return str(value)


def format_table(table, max_rows: int) -> str:
    """An aligned text table of a pyarrow Table (numbers right-aligned), with a row count."""
    import pyarrow as pa

    names = table.column_names
    shown = table.slice(0, max(0, max_rows))
    rows = [[_cell(v) for v in row.values()] for row in shown.to_pylist()]
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
               for f in table.schema]
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(names)]

    def line(cells):
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)).rstrip()

    out = [line(names), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    n = table.num_rows
    footer = f"({n} row{'s' if n != 1 else ''}"
    if n > len(rows):
        footer += f", first {len(rows)} shown; --max-rows N or --format csv for more"
    out.append(footer + ")")
    return "\n".join(out) + "\n"


def _json_value(value):
    import datetime
    import decimal

    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def write_result(table, fmt: str, out: str | None, max_rows: int) -> None:
    """Write a pyarrow Table in ``fmt`` to ``out`` (or standard output)."""
    import io
    import json
    import sys

    from pipeline.errors import UserError

    if fmt == "parquet":
        if not out:
            raise UserError("--format parquet needs --out FILE (Parquet is binary)")
        import pyarrow.parquet as pq

        try:
            pq.write_table(table, out)
        except OSError as exc:
            raise UserError(f"cannot write --out {out!r}: {exc}; give a writable file path") from None
        return
    if fmt == "table":
        text = format_table(table, max_rows)
    elif fmt == "csv":
        import csv

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(table.column_names)
        for row in table.to_pylist():
            w.writerow(["" if v is None else v for v in row.values()])
        text = buf.getvalue()
    else:
        rows = [{k: _json_value(v) for k, v in row.items()} for row in table.to_pylist()]
        text = json.dumps(rows, indent=1, ensure_ascii=False) + "\n"
    if out:
        try:
            with open(out, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise UserError(f"cannot write --out {out!r}: {exc.strerror or exc}; give a writable file path") from None
    else:
        sys.stdout.write(text)


def run(args) -> int:
    import duckdb

    from pipeline.errors import UserError
    from queries.catalog import connect_readonly, local_data_folder

    check_out(args.out)
    if args.format == "parquet" and not args.out:
        raise UserError("--format parquet needs --out FILE (Parquet is binary)")
    data = local_data_folder(args.data)
    con = connect_readonly(data)
    try:
        confine(con, data)
        statements = check_read_only(con, args.query)
        result = None
        try:
            for st in statements:
                result = con.sql(st.query)
            table = result.to_arrow_table() if result is not None else None
        except duckdb.PermissionException as exc:
            raise UserError(f"{_one_line(str(exc))}: acesup sql reads only files under the data folder {str(data)!r} "
                            f"(the catalog's views and tables); copy the file there, or query it with your own "
                            f"DuckDB") from None
        except duckdb.Error as exc:
            # DuckDB's own message names the column, table or syntax at fault.
            raise UserError(_one_line(str(exc))) from None
    finally:
        con.close()
    if table is None:
        raise UserError("the last statement returns no rows; end the query with a SELECT")
    write_result(table, args.format, args.out, args.max_rows)
    return 0
