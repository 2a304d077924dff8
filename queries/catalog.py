"""The DuckDB catalog of a data folder, and the named report queries.

``build_catalog(data)`` writes ``DATA/acesup.duckdb``, a small DuckDB file
that any DuckDB client (the ``duckdb`` shell, Python, DBeaver) can open
read-only from any working directory, and ``DATA/acesup.sql``, the same
views and macros as SQL text for any client that cannot read the file
(``duckdb -init DATA/acesup.sql``, or ``.read DATA/acesup.sql``). The file is
written in DuckDB's storage format of version 1.0 (``STORAGE_VERSION``), which
every DuckDB client since 1.0 reads. It holds no data, only views over the
data folder's files, so its size does not depend on how many rows there are:

``results`` (view)
    every row of ``DATA/results/**/*.parquet`` (pipeline.schema.RESULT_SCHEMA),
    read with hive partitioning *off*: the ``variant`` and ``policy`` columns in
    the files are the truth, the folder names are only for people. Files of every
    schema version are read by column name (``union_by_name``): ``value`` is null
    in the rows of version-1 files. A folder in
    which the files of one variant × policy carry two behaviour fingerprints
    (pipeline.fingerprint) gets no catalog: the build stops with a UserError
    naming the pair, so no query or report pools rows of two versions of a player.
``tallies``, ``score_counts``, ``pairs``, ``deal_coverage``, ``nights``, ``ledger`` (views)
    the aggregate tables of queries.aggregates (newest generation): per variant ×
    policy deals, wins, gave_up, score_sum, moves_sum and the exact value sums
    (valued, value_sum, value_sq_sum, HUGEINT); deals per score; every two
    players of a preset on the deals both played; deals per seed, variant, policy and
    run; per step (``nights``: generation, at, variant, policy, what the step added
    and the running totals); the deal ranges each step included. The report reads
    only these.
``runs``, ``files`` (views)
    one row per run (its manifest header: run_id, seed, start, engine_version,
    schema_version, state, created, updated, error, spec and requested as JSON,
    files, batches) and one row per live data file (run_id, variant, policy, first,
    last, kind, batches, rows, bytes, sha256, verified, path), from ``DATA/catalog/``.
``catalog_info`` (view)
    key/value facts about the build: data folder, versions, rows, files, generation.
macros
    ``wilson_low(k, n)``, ``wilson_high(k, n)``: the 95% Wilson score interval of
    ``k`` successes in ``n`` trials (z = 1.96), NULL when ``n`` is 0;
    ``one_in(k, n)``: ``n / k`` (NULL when ``k`` is 0);
    ``player_kind(policy)``: the role of the player's kind in the registry
    (engine_rs_free.players): ``'clairvoyant'`` for the solver (it knows the
    stock order), ``'bound'`` for the honest bracket's upper end (``bound:…``: a
    penalised clairvoyant search, whose rows are no player's wins), ``'honest'``
    for every other player;
    ``solver_restriction(policy)``: ``'none'`` for ``solver``, the options
    (``'sensible+leftmost+must_fill'``) for a restricted solver, NULL otherwise;
    ``variant_preset(variant)``, ``variant_discards(variant)``: ``'strict'`` and
    ``'optional'`` of ``'strict+optional'``;
    ``deal_decks(seed, first, count)`` (a table: seed, deal, deck) and
    ``deal_deck(seed, deal)``: the deck text of any deal (52 card codes in deal
    order, the deck format of RULES.md), computed in SQL by the generator of
    engine_rs_free.deals (Philox4x32-10 and the Lemire-drawn Fisher-Yates shuffle,
    written out in SQL below), so no deck is stored. ``deal_deck`` with constant
    arguments works in every client; called once per row of a query (``SELECT
    deal_deck(seed, deal) FROM results``) it needs DuckDB 2.0, older clients join
    ``deal_decks`` instead.

Paths in the views are absolute (DuckDB resolves a relative path in a view
against the *reader's* working directory, not the catalog file), so the
catalog works from anywhere; if the data folder moves or gains files,
``catalog_is_current`` says so and ``build_catalog`` rebuilds it. The file is
built beside its final place and renamed over it, so a reader never sees half
a catalog.

The report queries live beside this module, one ``NAME.sql`` per report
table. Each starts with a header comment (grain, inputs, parameters,
columns); a ``-- param NAME = 'value'`` line declares a named parameter and
its default, bound at execution (``$NAME`` in the SQL), never formatted into
the text.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

CATALOG_NAME = "acesup.duckdb"
CATALOG_SQL = "acesup.sql"
CATALOG_DIR = "catalog"
CATALOG_VERSION = 7  # bump when the views, tables or macros change: older catalogs are rebuilt
STORAGE_VERSION = "v1.0.0"  # the oldest DuckDB storage format: every client since 1.0 reads the file
QUERY_DIR = Path(__file__).resolve().parent
WILSON_Z = 1.96

REPORT_QUERIES = (
    "headline",
    "honest_bracket",
    "win_odds",
    "score_distribution",
    "policy_gap",
    "value_of_information",
    "value_of_optional",
    "claims",
    "solver_ladder",
    "coverage",
    "nights",
)
"""The named queries of the report, in report order (files ``queries/NAME.sql``)."""

def _role_test(role: str) -> str:
    """SQL that is true for a player name ``p`` of a kind of the registry with ``role`` (engine_rs_free.players)."""
    from engine_rs_free.players import REGISTRY

    kinds = [k for k, e in REGISTRY.items() if e.role == role]
    return " OR ".join(f"p = '{k}' OR starts_with(p, '{k}:')" for k in kinds) or "false"


def _player_kind_sql() -> str:
    """The body of the ``player_kind(p)`` macro: each role of the registry but honest, then 'honest'."""
    from engine_rs_free.players import HONEST, ROLES

    whens = " ".join(f"WHEN {_role_test(r)} THEN '{r}'" for r in ROLES if r != HONEST)
    return f"CASE {whens} ELSE '{HONEST}' END"


# paired_half: the half width of the normal 95% interval of a mean of per-deal differences
# won_a - won_b (each -1, 0 or 1) over n paired deals, from the counts a_only (a won, b did not)
# and b_only: the sample variance is ((a_only + b_only) - (a_only - b_only)^2 / n) / (n - 1).
# Wilson score interval (Wilson 1927) with z = 1.96. k and n are cast to DOUBLE so integer
# inputs of any width work. The ends are exactly 0 for k = 0 and exactly 1 for k = n (the
# formula's value there, which floating point would miss by an ulp: 1 / low must stay NULL).
_MACROS = f"""
CREATE MACRO wilson_center(k, n) AS
    CASE WHEN n > 0 THEN (k::DOUBLE / n + {WILSON_Z}*{WILSON_Z} / (2.0 * n)) / (1 + {WILSON_Z}*{WILSON_Z} / n::DOUBLE) END;
CREATE MACRO wilson_half(k, n) AS
    CASE WHEN n > 0 THEN
        {WILSON_Z} * sqrt((k::DOUBLE / n) * (1 - k::DOUBLE / n) / n + {WILSON_Z}*{WILSON_Z} / (4.0 * n * n))
        / (1 + {WILSON_Z}*{WILSON_Z} / n::DOUBLE) END;
CREATE MACRO wilson_low(k, n) AS
    CASE WHEN n > 0 AND k <= 0 THEN 0.0
         WHEN n > 0 THEN greatest(0.0, wilson_center(k, n) - wilson_half(k, n)) END;
CREATE MACRO wilson_high(k, n) AS
    CASE WHEN n > 0 AND k >= n THEN 1.0
         WHEN n > 0 THEN least(1.0, wilson_center(k, n) + wilson_half(k, n)) END;
CREATE MACRO paired_half(a_only, b_only, n) AS
    CASE WHEN n > 1 THEN {WILSON_Z} * sqrt(greatest(0.0, ((a_only + b_only)::DOUBLE
        - (a_only - b_only)::DOUBLE * (a_only - b_only) / n) / (n - 1)) / n) END;
CREATE MACRO one_in(k, n) AS CASE WHEN k > 0 THEN n::DOUBLE / k END;
CREATE MACRO player_kind(p) AS {_player_kind_sql()};
CREATE MACRO solver_restriction(p) AS
    CASE WHEN p = 'solver' THEN 'none' WHEN starts_with(p, 'solver:') THEN substr(p, 8) END;
CREATE MACRO variant_preset(v) AS split_part(v, '+', 1);
CREATE MACRO variant_discards(v) AS
    CASE WHEN list_contains(string_split(v, '+'), 'optional') THEN 'optional' ELSE 'forced' END;
"""


def _deal_macros() -> str:
    """The deal generator of engine_rs_free.deals in SQL (constants taken from it, not retyped).

    ``philox4x32`` is Philox4x32-10: ten rounds carried by list_reduce over a list of the
    start state (its elements are the state, so every DuckDB version types it alike).
    ``deal_decks`` is a recursive CTE that makes one draw per step for every deck at once:
    the word ``draws`` of the deck's stream (block ``draws // 4`` of Philox, word
    ``draws % 4``), Lemire's multiply-shift with rejection (``accept``), then the swap of
    Fisher-Yates position ``i`` with ``j``. A rejected word only advances ``draws``, so the
    deck is exact however many words it takes.
    """
    from engine_rs_free.cards import RANK_CHARS, SUIT_CHARS
    from engine_rs_free.deals import STREAM_DEAL, _M0, _M1, _W0, _W1

    mask = "4294967295::UBIGINT"
    return f"""
CREATE MACRO philox_round(s) AS {{
    'c0': xor(xor(({int(_M1)}::UBIGINT * s.c2) >> 32, s.c1), s.k0),
    'c1': ({int(_M1)}::UBIGINT * s.c2) & {mask},
    'c2': xor(xor(({int(_M0)}::UBIGINT * s.c0) >> 32, s.c3), s.k1),
    'c3': ({int(_M0)}::UBIGINT * s.c0) & {mask},
    'k0': (s.k0 + {int(_W0)}::UBIGINT) & {mask},
    'k1': (s.k1 + {int(_W1)}::UBIGINT) & {mask}}};
CREATE MACRO philox4x32(c0, c1, c2, c3, k0, k1) AS
    list_reduce(
        list_transform(range(11), lambda r: {{'c0': c0::UBIGINT, 'c1': c1::UBIGINT, 'c2': c2::UBIGINT,
                                             'c3': c3::UBIGINT, 'k0': k0::UBIGINT, 'k1': k1::UBIGINT}}),
        lambda s, r: philox_round(s));
CREATE MACRO deal_decks(deck_seed, first_deal, deal_count) AS TABLE
    WITH RECURSIVE shuffle(deal, i, deck, draws, words) AS (
        SELECT first_deal::BIGINT + n, 51, range(52), 0::UBIGINT, []::UBIGINT[]
        FROM range(deal_count::BIGINT) AS t(n)
        UNION ALL
        SELECT deal,
               CASE WHEN accept THEN i - 1 ELSE i END,
               CASE WHEN accept THEN list_transform(range(52), lambda k:
                   CASE WHEN k = i THEN deck[j + 1] WHEN k = j THEN deck[i + 1] ELSE deck[k + 1] END)
                    ELSE deck END,
               draws + 1,
               words
        FROM (
            SELECT deal, i, deck, draws, words,
                   (w * (i + 1)::UBIGINT) & {mask} >= ((4294967296 - (i + 1)) % (i + 1))::UBIGINT AS accept,
                   ((w * (i + 1)::UBIGINT) >> 32)::BIGINT AS j
            FROM (
                SELECT deal, i, deck, draws, block AS words, block[(draws % 4)::BIGINT + 1] AS w
                FROM (
                    SELECT deal, i, deck, draws,
                           CASE WHEN draws % 4 = 0 THEN
                               list_transform([philox4x32(
                                   draws // 4, {int(STREAM_DEAL)}, deal::UBIGINT & {mask}, deal::UBIGINT >> 32,
                                   deck_seed::UBIGINT & {mask}, deck_seed::UBIGINT >> 32)],
                                   lambda p: [p.c0, p.c1, p.c2, p.c3])[1]
                           ELSE words END AS block
                    FROM shuffle WHERE i > 0
                )
            )
        )
    )
    SELECT deck_seed::UBIGINT AS seed, deal,
           array_to_string(list_transform(deck, lambda c:
               substr('{RANK_CHARS}', (c % 13)::INTEGER + 1, 1) || substr('{SUIT_CHARS}', (c // 13)::INTEGER + 1, 1)),
               ' ') AS deck
    FROM shuffle WHERE i = 0;
CREATE MACRO deal_deck(deck_seed, deck_index) AS (SELECT d.deck FROM deal_decks(deck_seed, deck_index, 1) d);
"""


def _sql_string(text: str) -> str:
    """A SQL string literal (DDL cannot take bound parameters, so paths are quoted here)."""
    return "'" + str(text).replace("'", "''") + "'"


def local_data_folder(data: str | os.PathLike) -> Path:
    """The absolute path of a local data folder; UserError for a URI or a missing folder.

    The catalog and the report read the Parquet files with DuckDB on the local disk;
    for a data location on an object store, sync it to a local folder first.
    """
    from pipeline.errors import UserError

    text = str(data)
    if text.startswith("file://"):
        text = text[len("file://"):]
    elif "://" in text:
        raise UserError(f"data location {text!r} is not a local folder; the catalog and the report need one "
                        f"(copy the data folder locally, then pass --data PATH)")
    path = Path(text).expanduser().resolve()
    if not path.is_dir():
        raise UserError(f"data folder {str(path)!r} does not exist; run 'acesup run' first or pass --data PATH")
    return path


def catalog_path(data: str | os.PathLike) -> Path:
    """Where the catalog of a data folder lives: ``DATA/acesup.duckdb``."""
    return Path(data).resolve() / CATALOG_NAME


def result_files(data: str | os.PathLike) -> list[Path]:
    """Every result Parquet file under ``DATA/results``, sorted by path."""
    root = Path(data).resolve() / "results"
    return sorted(p for p in root.glob("**/*.parquet") if p.is_file())


def _watched_files(data: Path) -> list[Path]:
    """The files whose change makes a catalog stale: results, run headers and logs, aggregate commits."""
    return [*result_files(data), *sorted(data.glob("runs/*/manifest.json")), *sorted(data.glob("runs/*/log/*.jsonl")),
            *sorted(data.glob("aggregates/*.json"))]


def _empty_results_sql() -> str:
    from pipeline.schema import RESULT_SCHEMA

    duck = {"string": "VARCHAR", "uint64": "UBIGINT", "int64": "BIGINT", "int8": "TINYINT",
            "int16": "SMALLINT", "bool": "BOOLEAN", "double": "DOUBLE"}
    cols = ", ".join(f"NULL::{duck[str(f.type)]} AS {f.name}" for f in RESULT_SCHEMA)
    return f"SELECT {cols} WHERE false"


def _arrow_duck_type(t) -> str:
    import pyarrow as pa

    return {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.int32(): "INTEGER", pa.uint64(): "UBIGINT",
            pa.bool_(): "BOOLEAN", pa.float64(): "DOUBLE", pa.decimal128(38, 0): "HUGEINT"}[t]


def _parquet_view(name: str, path: Path | None, schema, select: str = "*", group_by: str = "") -> str:
    """``CREATE VIEW name`` over one Parquet file, or an empty view of ``schema`` without one."""
    if path is None:
        cols = ", ".join(f"NULL::{_arrow_duck_type(f.type)} AS {f.name}" for f in schema)
        return f"CREATE VIEW {name} AS SELECT {cols} WHERE false;"
    group = f" GROUP BY {group_by}" if group_by else ""
    return f"CREATE VIEW {name} AS SELECT {select} FROM read_parquet({_sql_string(path)}){group};"


_RUNS_SCHEMA_FIELDS = (("run_id", "string"), ("seed", "uint64"), ("start", "int64"), ("engine_version", "string"),
                       ("schema_version", "int64"), ("state", "string"), ("created", "string"),
                       ("updated", "string"), ("error", "string"), ("spec", "string"), ("requested", "string"),
                       ("files", "int64"), ("batches", "int64"), ("rows", "int64"))
_FILES_SCHEMA_FIELDS = (("run_id", "string"), ("variant", "string"), ("policy", "string"), ("first", "int64"),
                        ("last", "int64"), ("kind", "string"), ("batches", "int64"), ("rows", "int64"),
                        ("bytes", "int64"), ("sha256", "string"), ("verified", "bool"), ("finished", "string"),
                        ("path", "string"))


def _index_tables(manifests) -> tuple:
    """The ``runs`` and ``files`` tables of the catalog, from the run manifests."""
    import json

    import pyarrow as pa

    def schema(fields):
        return pa.schema([(n, {"string": pa.string(), "uint64": pa.uint64(), "int64": pa.int64(),
                               "bool": pa.bool_()}[t]) for n, t in fields])

    runs, files = [], []
    for m in sorted(manifests.values(), key=lambda m: m.run_id):
        done = m.done()
        runs.append({"run_id": m.run_id, "seed": m.seed, "start": m.start, "engine_version": m.engine_version,
                     "schema_version": m.schema_version, "state": m.state, "created": m.created,
                     "updated": m.updated, "error": m.error, "spec": json.dumps(m.spec, sort_keys=True),
                     "requested": json.dumps(m.requested, sort_keys=True), "files": len(done),
                     "batches": sum(b.batches for b in done), "rows": sum(b.rows for b in done)})
        for b in sorted(done, key=lambda b: b.path):
            files.append({"run_id": m.run_id, "variant": b.variant, "policy": b.policy, "first": b.first,
                          "last": b.last, "kind": b.kind, "batches": b.batches, "rows": b.rows, "bytes": b.bytes,
                          "sha256": b.sha256, "verified": b.verified, "finished": b.finished, "path": b.path})
    return (pa.Table.from_pylist(runs, schema=schema(_RUNS_SCHEMA_FIELDS)),
            pa.Table.from_pylist(files, schema=schema(_FILES_SCHEMA_FIELDS)))


def catalog_sql(data: Path, state, info: dict[str, str]) -> str:
    """Every view and macro of the catalog as SQL text (what acesup.sql holds and the catalog runs)."""
    import pyarrow as pa

    from queries.aggregates import SCHEMAS, sum_sql

    parts = [_MACROS, _deal_macros()]
    if result_files(data):
        glob = str(data / "results" / "**" / "*.parquet")
        # union_by_name: files of every schema version (pipeline.schema) in one view, a column an
        # older version lacks (value, version 1) as nulls
        parts.append(f"CREATE VIEW results AS SELECT * FROM read_parquet({_sql_string(glob)}, "
                     "hive_partitioning = false, union_by_name = true);")
    else:
        parts.append(f"CREATE VIEW results AS {_empty_results_sql()};")
    meta = (state.record or {}).get("tables", {}) if state.generation else {}

    def path(name):
        return data / meta[name]["path"] if name in meta else None

    parts += [
        _parquet_view("ledger", path("ledger"), SCHEMAS["ledger"]),
        _parquet_view("tallies", path("tallies"), SCHEMAS["tallies"].remove(0),
                      select="variant, policy, " + sum_sql("tallies", 3), group_by="variant, policy"),
        _parquet_view("score_counts", path("scores"), SCHEMAS["scores"]),
        # the HUGEINT sums are stored as DECIMAL(38, 0); the view gives them back as HUGEINT
        _parquet_view("pairs", path("pairs"), SCHEMAS["pairs"], select=", ".join(
            f"{f.name}::HUGEINT AS {f.name}" if f.type == pa.decimal128(38, 0) else f.name for f in SCHEMAS["pairs"])),
        _parquet_view("deal_coverage", path("coverage"), SCHEMAS["coverage"]),
    ]
    if path("tallies"):
        cum = ", ".join(f"sum({c}) OVER (PARTITION BY t.variant, t.policy ORDER BY t.generation)::BIGINT AS total_{c}"
                        for c in ("deals", "wins", "gave_up", "score_sum"))
        parts.append(
            f"CREATE VIEW nights AS SELECT t.generation, n.at, t.variant, t.policy, t.deals, t.wins, t.gave_up, "
            f"t.score_sum, t.moves_sum, {cum} "
            f"FROM read_parquet({_sql_string(path('tallies'))}) t "
            f"JOIN read_parquet({_sql_string(path('nights'))}) n USING (generation);")
    else:
        parts.append("CREATE VIEW nights AS SELECT NULL::INTEGER AS generation, NULL::VARCHAR AS at, "
                     "NULL::VARCHAR AS variant, NULL::VARCHAR AS policy, NULL::BIGINT AS deals, NULL::BIGINT AS wins, "
                     "NULL::BIGINT AS gave_up, NULL::BIGINT AS score_sum, NULL::BIGINT AS moves_sum, "
                     "NULL::BIGINT AS total_deals, NULL::BIGINT AS total_wins, NULL::BIGINT AS total_gave_up, "
                     "NULL::BIGINT AS total_score_sum WHERE false;")
    for name in ("runs", "files"):
        parts.append(f"CREATE VIEW {name} AS SELECT * FROM read_parquet("
                     f"{_sql_string(data / CATALOG_DIR / (name + '.parquet'))});")
    values = ", ".join(f"({_sql_string(k)}, {_sql_string(v)})" for k, v in info.items())
    parts.append(f"CREATE VIEW catalog_info AS SELECT * FROM (VALUES {values}) AS t(key, value);")
    return "\n".join(p.strip() for p in parts) + "\n"


def check_fingerprints(con, data: Path) -> None:
    """UserError if the files of some variant × policy carry two behaviour fingerprints.

    Reads every footer's ``acesup.fingerprint`` with DuckDB (pipeline.fingerprint.footer_conflicts
    says which pairs conflict); files without one, written before fingerprints, are left to
    the run-time recheck.
    """
    from pipeline.errors import UserError
    from pipeline.fingerprint import footer_conflicts
    from pipeline.storage import META_FINGERPRINT

    if not result_files(data):
        return
    glob = str(data / "results" / "**" / "*.parquet")
    rows = con.execute("SELECT file_name, decode(value) FROM parquet_kv_metadata(?) WHERE decode(key) = ?",
                       [glob, META_FINGERPRINT]).fetchall()
    prefix = str(data) + os.sep
    footers = {f.removeprefix(prefix).replace(os.sep, "/"): v for f, v in rows}
    conflicts = footer_conflicts(footers, data=str(data))
    if conflicts:
        raise UserError(f"data folder {str(data)!r}: " + "\n".join(conflicts))


def _remove_abandoned_builds(data: Path) -> None:
    """Delete half-built catalogs left by a build whose process is gone (killed mid-build)."""
    for p in data.glob(CATALOG_NAME + ".building-*"):
        pid = p.name.rsplit("-", 1)[-1].split(".")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            try:
                p.unlink()
            except OSError:
                pass  # another builder removed it first


def _write_parquet(table, path: Path) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def build_catalog(data: str | os.PathLike) -> Path:
    """Build (or rebuild) ``DATA/acesup.duckdb`` and ``DATA/acesup.sql`` as the module docstring says.

    Safe to call at any time: it reads the manifests and the aggregates' commit record (not
    the rows), and replaces the catalog file atomically. Returns the catalog's path.
    """
    import duckdb

    from engine_rs_free.deals import ALGORITHM_VERSION
    from pipeline.manifest import read_all_manifests
    from pipeline.schema import SCHEMA_VERSION
    from pipeline.storage import DataStore
    from queries.aggregates import read_state

    data = local_data_folder(data)
    final = data / CATALOG_NAME
    _remove_abandoned_builds(data)
    manifests = read_all_manifests(DataStore(str(data)))
    state = read_state(str(data))
    runs, files = _index_tables(manifests)
    (data / CATALOG_DIR).mkdir(exist_ok=True)
    _write_parquet(runs, data / CATALOG_DIR / "runs.parquet")
    _write_parquet(files, data / CATALOG_DIR / "files.parquet")
    live_rows = sum(files.column("rows").to_pylist())
    info = {
        "data": str(data),
        "catalog_version": str(CATALOG_VERSION),
        "schema_version": str(SCHEMA_VERSION),
        "deal_algorithm": str(ALGORITHM_VERSION),
        "wilson_z": str(WILSON_Z),
        "result_rows": str(live_rows),
        "result_files": str(files.num_rows),
        "aggregates_generation": str(state.generation),
        "aggregated_rows": str(state.total_rows),
    }
    text = catalog_sql(data, state, info)
    sql_tmp = data / f".{CATALOG_SQL}.{os.getpid()}.tmp"
    sql_tmp.write_text("-- acesup catalog of this data folder (queries/catalog.py); run it in any DuckDB client:\n"
                       f"--   duckdb -init {data / CATALOG_SQL}\n" + text, encoding="utf-8")
    tmp = data / (CATALOG_NAME + f".building-{os.getpid()}")
    for p in (tmp, Path(str(tmp) + ".wal")):
        if p.exists():
            p.unlink()
    with duckdb.connect() as check:
        check_fingerprints(check, data)
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH {_sql_string(tmp)} AS catalog (STORAGE_VERSION {_sql_string(STORAGE_VERSION)})")
        con.execute("USE catalog")
        con.execute(text)
        con.execute("CHECKPOINT catalog")
        con.execute("USE memory")
        con.execute("DETACH catalog")
    finally:
        con.close()
    os.replace(tmp, final)
    os.replace(sql_tmp, data / CATALOG_SQL)
    wal = Path(str(tmp) + ".wal")
    if wal.exists():
        wal.unlink()
    return final


def catalog_is_current(data: str | os.PathLike) -> bool:
    """True if the catalog exists, is of this code's version, points at this data folder, and is
    newer than every result file, run header and log segment, and aggregate commit.
    """
    import duckdb

    data = Path(data).resolve()
    path = data / CATALOG_NAME
    if not path.exists():
        return False
    built = path.stat().st_mtime
    for p in _watched_files(data):
        if p.stat().st_mtime > built:
            return False
    try:
        with duckdb.connect(str(path), read_only=True) as con:
            info = dict(con.execute("SELECT key, value FROM catalog_info").fetchall())
    except duckdb.Error:
        return False
    return info.get("data") == str(data) and info.get("catalog_version") == str(CATALOG_VERSION)


def ensure_catalog(data: str | os.PathLike) -> Path:
    """The catalog of ``data``, (re)built first if it is missing or stale."""
    if not catalog_is_current(data):
        return build_catalog(data)
    return catalog_path(data)


# --- named queries -------------------------------------------------------------------------

_PARAM_RE = re.compile(r"^--\s*param\s+([a-z_][a-z0-9_]*)\s*=\s*'([^']*)'", re.MULTILINE)


@dataclass(frozen=True)
class NamedQuery:
    """One ``queries/NAME.sql``: its text, header comment, declared parameters and checksum."""

    name: str
    text: str
    params: dict[str, str]

    @property
    def header(self) -> str:
        """The leading comment block (grain, inputs, parameters, columns), without ``-- ``."""
        lines = []
        for line in self.text.splitlines():
            if not line.startswith("--"):
                break
            lines.append(line[2:].removeprefix(" "))
        return "\n".join(lines)

    @property
    def sha256(self) -> str:
        """SHA-256 of the file's bytes (UTF-8), for the report's provenance."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def load_query(name: str) -> NamedQuery:
    """Load ``queries/NAME.sql`` by name; raises ValueError naming the known queries."""
    path = QUERY_DIR / f"{name}.sql"
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name) or not path.is_file():
        known = ", ".join(sorted(p.stem for p in QUERY_DIR.glob("*.sql")))
        raise ValueError(f"unknown query {name!r}; known queries: {known}")
    text = path.read_text(encoding="utf-8")
    return NamedQuery(name=name, text=text, params=dict(_PARAM_RE.findall(text)))


def run_query(con, name: str, **params):
    """Run the named query on a DuckDB connection to the catalog; return a pyarrow Table.

    Parameters not given take the defaults declared in the file; every value is
    bound (``$name``), never formatted into the SQL.
    """
    q = load_query(name)
    unknown = set(params) - set(q.params)
    if unknown:
        raise ValueError(
            f"query {name!r} has no parameter {sorted(unknown)[0]!r}; its parameters: {', '.join(q.params) or 'none'}"
        )
    bound = {**q.params, **params}
    return con.sql(q.text, params=bound or None).to_arrow_table()


def connect_readonly(data: str | os.PathLike):
    """A read-only DuckDB connection to the catalog of ``data``, refreshed first if it is stale.

    If the data folder is not writable, an existing catalog is used as it is (with a
    warning on standard error); without one, UserError says what to do.
    """
    import sys

    import duckdb

    from pipeline.errors import UserError

    try:
        path = ensure_catalog(data)
    except OSError as exc:
        path = catalog_path(data)
        if not path.exists():
            raise UserError(f"cannot build the catalog {str(path)!r}: {exc}; run 'acesup report' as a user "
                            f"who may write the data folder, or copy the folder") from None
        print(f"acesup: warning: the catalog {str(path)!r} may be stale (cannot rebuild it: {exc})", file=sys.stderr)
    return duckdb.connect(str(path), read_only=True)
