"""The DuckDB catalog of a data folder, and the named report queries.

``build_catalog(data)`` writes ``DATA/acesup.duckdb``, a small DuckDB file
that any DuckDB client (the ``duckdb`` shell, Python, DBeaver) can open
read-only from any working directory. It holds:

``results`` (view)
    every row of ``DATA/results/**/*.parquet`` (pipeline.schema.RESULT_SCHEMA),
    read with hive partitioning *off*: the ``variant`` and ``policy`` columns in
    the files are the truth, the folder names are only for people.
``runs`` (view)
    one row per run manifest ``DATA/runs/<run_id>/manifest.json`` (pipeline.manifest):
    run_id, seed, start, engine_version, schema_version, state, created, updated,
    error, spec/requested/covered (JSON), batches (count), manifest_path.
``run_batches`` (view)
    one row per batch of every manifest: run_id, variant, policy, first, last,
    state, path, rows, sha256, bytes, seconds, engine_seconds, node, error, finished.
``deals`` (table, materialized)
    ``seed``, ``deal``, ``deck``: the deck text (52 card codes in deal order, the
    deck format of RULES.md) of every (seed, deal) present in ``results``. DuckDB
    cannot run the Philox generator of engine_rs_free.deals, so the decks are
    computed with engine_rs_free.deals at catalog build time and stored (a
    rebuild copies the decks the previous catalog already had and deals only
    the new indices); the
    macro ``deal_deck(seed, deal)`` looks one up. A deal that is not in the
    results is not in the table (``acesup deal --seed S --index I`` prints any deck).
``catalog_info`` (table)
    key/value facts about the build: data folder, schema version, row count.
macros
    ``wilson_low(k, n)``, ``wilson_high(k, n)``: the 95% Wilson score interval of
    ``k`` successes in ``n`` trials (z = 1.96), NULL when ``n`` is 0;
    ``one_in(k, n)``: ``n / k`` (NULL when ``k`` is 0);
    ``player_kind(policy)``: ``'clairvoyant'`` for the solver (it knows the
    stock order), ``'honest'`` for every other player;
    ``solver_restriction(policy)``: ``'none'`` for ``solver``, the options
    (``'sensible+leftmost+must_fill'``) for a restricted solver, NULL otherwise;
    ``variant_preset(variant)``, ``variant_discards(variant)``: ``'strict'`` and
    ``'optional'`` of ``'strict+optional'``.

Paths in the views are absolute (DuckDB resolves a relative path in a view
against the *reader's* working directory, not the catalog file), so the
catalog works from anywhere; if the data folder moves, ``catalog_is_current``
says so and ``build_catalog`` rebuilds it. The file is built beside its final
place and renamed over it, so a reader never sees half a catalog.

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
CATALOG_VERSION = 4  # bump when the views, tables or macros change: older catalogs are rebuilt
QUERY_DIR = Path(__file__).resolve().parent
WILSON_Z = 1.96

REPORT_QUERIES = (
    "headline",
    "win_odds",
    "score_distribution",
    "policy_gap",
    "value_of_information",
    "claims",
    "solver_ladder",
    "coverage",
    "nights",
)
"""The named queries of the report, in report order (files ``queries/NAME.sql``)."""

def _clairvoyant_test() -> str:
    """SQL that is true for a player name of a clairvoyant kind of the registry (engine_rs_free.players)."""
    from engine_rs_free.players import REGISTRY

    kinds = [k for k, e in REGISTRY.items() if e.clairvoyant]
    return " OR ".join(f"p = '{k}' OR starts_with(p, '{k}:')" for k in kinds) or "false"


_CLAIRVOYANT_TEST = _clairvoyant_test()

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
CREATE MACRO one_in(k, n) AS CASE WHEN k > 0 THEN n::DOUBLE / k END;
CREATE MACRO player_kind(p) AS
    CASE WHEN {_CLAIRVOYANT_TEST} THEN 'clairvoyant' ELSE 'honest' END;
CREATE MACRO solver_restriction(p) AS
    CASE WHEN p = 'solver' THEN 'none' WHEN starts_with(p, 'solver:') THEN substr(p, 8) END;
CREATE MACRO variant_preset(v) AS split_part(v, '+', 1);
CREATE MACRO variant_discards(v) AS
    CASE WHEN list_contains(string_split(v, '+'), 'optional') THEN 'optional' ELSE 'forced' END;
"""

# The manifest fields of pipeline.manifest, with fixed types (a seed can exceed BIGINT;
# nested parts stay JSON so manifests with different pairs read as one view).
_MANIFEST_TYPES = {
    "format": "INTEGER", "run_id": "VARCHAR", "seed": "UBIGINT", "start": "BIGINT",
    "engine_version": "VARCHAR", "schema_version": "INTEGER", "state": "VARCHAR",
    "created": "TIMESTAMPTZ", "updated": "TIMESTAMPTZ", "error": "VARCHAR",
    "spec": "JSON", "requested": "JSON", "covered": "JSON", "batches": "JSON",
}
_MANIFEST_COLUMNS = "{" + ", ".join(f"{k}: '{v}'" for k, v in _MANIFEST_TYPES.items()) + "}"
_BATCH_TYPES = {
    "variant": "VARCHAR", "policy": "VARCHAR", "first": "BIGINT", "last": "BIGINT", "state": "VARCHAR",
    "path": "VARCHAR", "rows": "BIGINT", "sha256": "VARCHAR", "bytes": "BIGINT", "seconds": "DOUBLE",
    "engine_seconds": "DOUBLE", "node": "VARCHAR", "error": "VARCHAR", "finished": "VARCHAR",
}
_BATCH_JSON = "[{" + ", ".join(f'"{k}": "{v}"' for k, v in _BATCH_TYPES.items()) + "}]"
_RUNS_VIEW_TYPES = {**{k: v for k, v in _MANIFEST_TYPES.items() if k not in ("format", "batches")},
                    "batches": "UBIGINT", "manifest_path": "VARCHAR"}
_EMPTY_RUNS = ", ".join(f"NULL::{v} AS {k}" for k, v in _RUNS_VIEW_TYPES.items())
_EMPTY_BATCHES = ", ".join(f"NULL::{v} AS {k}" for k, v in {"run_id": "VARCHAR", **_BATCH_TYPES}.items())

# Created after the ``deals`` table it reads.
_DEAL_MACRO = "CREATE MACRO deal_deck(s, i) AS (SELECT d.deck FROM deals d WHERE d.seed = s AND d.deal = i);"


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


def manifest_files(data: str | os.PathLike) -> list[Path]:
    """Every run manifest ``DATA/runs/<run_id>/manifest.json``, sorted by path."""
    root = Path(data).resolve() / "runs"
    return sorted(p for p in root.glob("*/manifest.json") if p.is_file())


def _empty_results_sql() -> str:
    from pipeline.schema import RESULT_SCHEMA

    duck = {"string": "VARCHAR", "uint64": "UBIGINT", "int64": "BIGINT", "int8": "TINYINT",
            "int16": "SMALLINT", "bool": "BOOLEAN"}
    cols = ", ".join(f"NULL::{duck[str(f.type)]} AS {f.name}" for f in RESULT_SCHEMA)
    return f"SELECT {cols} WHERE false"


def _deck_texts(seed: int, deals) -> list[str]:
    """Deck text of each deal index of one seed (contiguous runs are dealt in one batch)."""
    import numpy as np

    from engine_rs_free.cards import CARD_NAMES
    from engine_rs_free.deals import deal_batch

    names = np.asarray(CARD_NAMES, dtype=object)
    deals = np.asarray(deals, dtype=np.int64)
    out: list[str] = []
    if len(deals) == 0:
        return out
    # Split the sorted indices into contiguous runs: one deal_batch call per run.
    breaks = np.flatnonzero(np.diff(deals) != 1) + 1
    for run in np.split(deals, breaks):
        decks = deal_batch(seed, int(run[0]), len(run))
        out.extend(" ".join(row) for row in names[decks])
    return out


def _reuse_deals(con, previous: Path) -> int:
    """Copy the decks of a previous catalog for the deals still in the results; return how many.

    Nothing is reused if that catalog cannot be read, was made with another deal
    algorithm, or fails a spot check of a few of its decks against engine_rs_free.deals.
    """
    import duckdb

    from engine_rs_free.cards import format_deck
    from engine_rs_free.deals import ALGORITHM_VERSION, deal

    try:
        con.execute(f"ATTACH {_sql_string(previous)} AS previous (READ_ONLY)")
    except duckdb.Error:
        return 0
    try:
        info = dict(con.execute("SELECT key, value FROM previous.catalog_info").fetchall())
        if info.get("deal_algorithm") != str(ALGORITHM_VERSION):
            return 0
        sample = con.execute("SELECT seed, deal, deck FROM previous.deals USING SAMPLE 16 ROWS").fetchall()
        if any(format_deck(deal(int(s), int(i))) != deck for s, i, deck in sample):
            return 0
        con.execute(
            "INSERT INTO deals SELECT p.seed, p.deal, p.deck FROM previous.deals p "
            "SEMI JOIN (SELECT DISTINCT seed, deal FROM results) r ON p.seed = r.seed AND p.deal = r.deal"
        )
        return con.execute("SELECT count(*) FROM deals").fetchall()[0][0]
    except duckdb.Error:
        con.execute("DELETE FROM deals")
        return 0
    finally:
        con.execute("DETACH previous")


def _materialize_deals(con, previous: Path | None = None) -> tuple[int, int]:
    """Fill the ``deals`` table for every (seed, deal) of the results; return (deals, reused).

    Decks already in ``previous`` (the catalog being replaced) are copied from it, so a
    nightly rebuild deals only the new indices.
    """
    import numpy as np
    import pyarrow as pa

    con.execute("CREATE TABLE deals (seed UBIGINT NOT NULL, deal BIGINT NOT NULL, deck VARCHAR NOT NULL, "
                "PRIMARY KEY (seed, deal))")
    reused = _reuse_deals(con, previous) if previous is not None and previous.exists() else 0
    pairs = con.sql(
        "SELECT DISTINCT r.seed, r.deal FROM results r ANTI JOIN deals d ON d.seed = r.seed AND d.deal = r.deal "
        "ORDER BY 1, 2"
    ).to_arrow_table()
    seeds = pairs.column("seed").to_numpy()
    deals = pairs.column("deal").to_numpy()
    for seed in np.unique(seeds):
        idx = deals[seeds == seed]
        chunk = 200_000  # bound the Python strings held at once
        for lo in range(0, len(idx), chunk):
            part = idx[lo : lo + chunk]
            table = pa.table(
                {
                    "seed": pa.array(np.full(len(part), seed, dtype=np.uint64)),
                    "deal": pa.array(part),
                    "deck": pa.array(_deck_texts(int(seed), part), type=pa.string()),
                }
            )
            con.register("_deal_chunk", table)
            con.execute("INSERT INTO deals SELECT * FROM _deal_chunk")
            con.unregister("_deal_chunk")
    return reused + int(pairs.num_rows), reused


def _remove_abandoned_builds(data: Path) -> None:
    """Delete half-built catalogs left by a build whose process is gone (killed mid-build)."""
    for p in data.glob(CATALOG_NAME + ".building-*"):
        pid = p.name.rsplit("-", 1)[-1].split(".")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            try:
                p.unlink()
            except OSError:
                pass  # another builder removed it first


def build_catalog(data: str | os.PathLike) -> Path:
    """Build (or rebuild) ``DATA/acesup.duckdb`` as the module docstring says; return its path.

    Safe to call at any time: it only reads the data files, and replaces the
    catalog file atomically.
    """
    import duckdb

    from engine_rs_free.deals import ALGORITHM_VERSION
    from pipeline.schema import SCHEMA_VERSION

    data = local_data_folder(data)
    final = data / CATALOG_NAME
    _remove_abandoned_builds(data)
    tmp = data / (CATALOG_NAME + f".building-{os.getpid()}")
    for p in (tmp, Path(str(tmp) + ".wal")):
        if p.exists():
            p.unlink()
    con = duckdb.connect(str(tmp))
    try:
        con.execute(_MACROS)
        if result_files(data):
            glob = str(data / "results" / "**" / "*.parquet")
            con.execute(
                f"CREATE VIEW results AS SELECT * FROM read_parquet({_sql_string(glob)}, "
                "hive_partitioning = false, union_by_name = false)"
            )
        else:
            con.execute(f"CREATE VIEW results AS {_empty_results_sql()}")
        if manifest_files(data):
            glob = _sql_string(str(data / "runs" / "*" / "manifest.json"))
            con.execute(
                "CREATE VIEW runs AS SELECT run_id, seed, start, engine_version, schema_version, state, "
                "created, updated, error, spec, requested, covered, json_array_length(batches) AS batches, "
                "filename AS manifest_path "
                f"FROM read_json({glob}, format = 'auto', filename = true, maximum_object_size = 268435456, "
                f"columns = {_MANIFEST_COLUMNS})"
            )
            con.execute(
                "CREATE VIEW run_batches AS SELECT run_id, unnest(from_json(batches, "
                f"{_sql_string(_BATCH_JSON)}), max_depth := 2) "
                f"FROM read_json({glob}, format = 'auto', maximum_object_size = 268435456, "
                "columns = {run_id: 'VARCHAR', batches: 'JSON'})"
            )
        else:
            con.execute(f"CREATE VIEW runs AS SELECT {_EMPTY_RUNS} WHERE false")
            con.execute(f"CREATE VIEW run_batches AS SELECT {_EMPTY_BATCHES} WHERE false")
        n_deals, reused = _materialize_deals(con, final)
        con.execute(_DEAL_MACRO)
        n_rows = con.execute("SELECT count(*) FROM results").fetchall()[0][0]
        con.execute("CREATE TABLE catalog_info (key VARCHAR PRIMARY KEY, value VARCHAR)")
        con.executemany(
            "INSERT INTO catalog_info VALUES (?, ?)",
            [
                ["data", str(data)],
                ["catalog_version", str(CATALOG_VERSION)],
                ["schema_version", str(SCHEMA_VERSION)],
                ["result_rows", str(n_rows)],
                ["result_files", str(len(result_files(data)))],
                ["deals", str(n_deals)],
                ["deals_reused", str(reused)],
                ["deal_algorithm", str(ALGORITHM_VERSION)],
                ["wilson_z", str(WILSON_Z)],
            ],
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()
    os.replace(tmp, final)
    wal = Path(str(tmp) + ".wal")
    if wal.exists():
        wal.unlink()
    return final


def catalog_is_current(data: str | os.PathLike) -> bool:
    """True if the catalog exists, is of this code's version, points at this data folder, and is
    newer than every data file.

    New result files or manifests (a run since the last build) or a moved data
    folder make it stale: its ``deals`` table and ``runs`` view would miss them.
    """
    import duckdb

    data = Path(data).resolve()
    path = data / CATALOG_NAME
    if not path.exists():
        return False
    built = path.stat().st_mtime
    for p in [*result_files(data), *manifest_files(data)]:
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
