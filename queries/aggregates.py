"""Incremental aggregates: every number of the report, as small tables that each step adds to.

The report (queries/*.sql) reads only these tables, never the per-deal rows,
so building it costs the same for a thousand rows or ten billion. The rows stay
the truth: ``rebuild_aggregates`` recomputes every table from them, and the
tests hold both the incremental tables and the rebuild to an independent
Polars recomputation (tests/queries_data.py). The design and its argument for
exactness are in docs/aggregates.md.

A *step* (``update_aggregates``, run by every night after its batches and by
``acesup report``) adds the rows of the data folder that no earlier step
included: for each (seed, variant, policy), the deal ranges that live files
cover minus the ranges the ledger already holds. It writes generation ``g``::

    DATA/aggregates/<g>/<table>.parquet     the tables below, whole
    DATA/aggregates/<g>.json                the commit record, written last: generation,
                                            time, rows, each table's path, rows and SHA-256

A reader takes the highest generation with a commit record; the two newest
generations are kept (a catalog built on the previous one keeps working while
the next is built), older ones are deleted. Every write is a whole object, so
the same code works on an object store.

Tables (one row per key; ``preset`` is the variant without ``+optional``):

``ledger``    (generation, seed, variant, policy, first, last): the deal ranges each
              generation included; their union is what the tables count.
``nights``    (generation, at, rows, total_rows): one row per step, with its UTC time.
``tallies``   (generation, variant, policy, deals, wins, gave_up, score_sum, moves_sum,
              valued, value_sum, value_sq_sum): what each generation added: sum over
              generations for the totals, take a running sum for the figures night by
              night. ``valued``: rows with a ``value`` (the honest bracket's players);
              ``value_sum``/``value_sq_sum``: the sum of v and of v² over the rows, v the
              per-deal value in integer units of 1e-9 (``round(value * 1e9)``), or 1e9·1{won}
              for a row without one (HUGEINT: exact, so the sums do not depend on row order).
``scores``    (variant, policy, score, deals): how many deals ended at each score.
``pairs``     (variant_a, policy_a, variant_b, policy_b, deals, a_wins, b_wins, a_only,
              b_only, a_undecided, b_undecided, gap_sum, gap_sq_sum, value_gap_sum,
              value_gap_sq_sum): every two players
              of one preset on the deals both played (same seed and deal), side a
              before side b by (variant, policy); a_only: a won and b did not;
              a_undecided: a gave up and b did not win; gap: a's score minus b's;
              value_gap: a's v minus b's (v as in tallies; HUGEINT sums).
``coverage``  (seed, variant, policy, run_id, deals, first_deal, last_deal).

A pair is counted once, in the step where its later side arrives: the new
rows of a step are joined with the rows of every other side of their preset
at the same deals, new or already included, and a pair of two new rows is
counted from its lower side only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.fingerprint import check_unmixed
from pipeline.manifest import Manifest, merge_ranges, now_iso, read_all_manifests, subtract_ranges
from pipeline.rows import intersect_ranges, ranges_size, read_ranges
from pipeline.storage import DataStore, sha256_bytes

AGG_DIR = "aggregates"
FORMAT = 2  # 2: the value sums (issue 19); a folder with format-1 aggregates is rebuilt from its rows once
VALUE_UNIT = 1_000_000_000  # v = round(value * 1e9): the per-deal value as an exact integer
CHUNK_ROWS = 4_000_000  # new rows read at once (per seed): bounds the step's memory
KEEP_GENERATIONS = 2

_S = pa.string()
_I64 = pa.int64()
_HUGE = pa.decimal128(38, 0)  # DuckDB's HUGEINT as Arrow and Parquet hold it
SCHEMAS = {
    "ledger": pa.schema([("generation", pa.int32()), ("seed", pa.uint64()), ("variant", _S), ("policy", _S),
                         ("first", _I64), ("last", _I64)]),
    "nights": pa.schema([("generation", pa.int32()), ("at", _S), ("rows", _I64), ("total_rows", _I64)]),
    "tallies": pa.schema([("generation", pa.int32()), ("variant", _S), ("policy", _S), ("deals", _I64),
                          ("wins", _I64), ("gave_up", _I64), ("score_sum", _I64), ("moves_sum", _I64),
                          ("valued", _I64), ("value_sum", _HUGE), ("value_sq_sum", _HUGE)]),
    "scores": pa.schema([("variant", _S), ("policy", _S), ("score", pa.int32()), ("deals", _I64)]),
    "pairs": pa.schema([("variant_a", _S), ("policy_a", _S), ("variant_b", _S), ("policy_b", _S),
                        ("deals", _I64), ("a_wins", _I64), ("b_wins", _I64), ("a_only", _I64), ("b_only", _I64),
                        ("a_undecided", _I64), ("b_undecided", _I64), ("gap_sum", _I64),
                        ("gap_sq_sum", _I64), ("value_gap_sum", _HUGE), ("value_gap_sq_sum", _HUGE)]),
    "coverage": pa.schema([("seed", pa.uint64()), ("variant", _S), ("policy", _S), ("run_id", _S),
                           ("deals", _I64), ("first_deal", _I64), ("last_deal", _I64)]),
}
TABLES = tuple(SCHEMAS)
TABLE_KEYS = {
    "ledger": ("generation", "seed", "variant", "policy", "first"),
    "nights": ("generation",),
    "tallies": ("generation", "variant", "policy"),
    "scores": ("variant", "policy", "score"),
    "pairs": ("variant_a", "policy_a", "variant_b", "policy_b"),
    "coverage": ("seed", "variant", "policy", "run_id"),
}

Side = tuple[int, str, str]  # (seed, variant, policy)


def preset(variant: str) -> str:
    """``strict`` of ``strict+optional``: players of one preset are paired (the solver ladder)."""
    return variant.split("+", 1)[0]


@dataclass(frozen=True)
class LiveFile:
    """A data file the manifests record as live (a done batch or a compacted file)."""

    seed: int
    variant: str
    policy: str
    run_id: str
    first: int
    last: int
    path: str


@dataclass
class AggregateState:
    """One generation of the aggregate tables (generation 0: empty, nothing included)."""

    generation: int
    tables: dict[str, pa.Table]
    record: dict = field(default_factory=dict)

    @classmethod
    def empty(cls) -> "AggregateState":
        return cls(0, {name: schema.empty_table() for name, schema in SCHEMAS.items()})

    def included(self) -> dict[Side, list[list[int]]]:
        """(seed, variant, policy) -> merged deal ranges the tables count."""
        return _ranges_of(self.tables["ledger"])

    @property
    def total_rows(self) -> int:
        n = self.tables["nights"]
        return int(n.column("total_rows")[-1].as_py()) if n.num_rows else 0


@dataclass
class StepResult:
    """What ``update_aggregates`` did."""

    generation: int
    rows_added: int
    total_rows: int
    seconds: float
    rebuilt: bool = False
    reason: str = ""


def _ranges_of(ledger: pa.Table) -> dict[Side, list[list[int]]]:
    out: dict[Side, list[tuple[int, int]]] = {}
    for r in ledger.to_pylist():
        out.setdefault((int(r["seed"]), r["variant"], r["policy"]), []).append((r["first"], r["last"]))
    return {k: merge_ranges(v) for k, v in out.items()}


# --- reading and writing generations ---------------------------------------------------------


def _record_path(g: int) -> str:
    return f"{AGG_DIR}/{g:08d}.json"


def _generations(store: DataStore) -> list[int]:
    gens = []
    for rel in store.list_files(AGG_DIR):
        name = rel[len(AGG_DIR) + 1:]
        if "/" not in name and name.endswith(".json") and name[:-5].isdigit():
            gens.append(int(name[:-5]))
    return sorted(gens)


def read_state(data: str | DataStore) -> AggregateState:
    """The newest committed generation of the data folder (generation 0 if there is none).

    Raises ValueError if a table does not match its commit record (size or SHA-256).
    """
    store = data if isinstance(data, DataStore) else DataStore(data)
    gens = _generations(store)
    if not gens:
        return AggregateState.empty()
    g = gens[-1]
    record = json.loads(store.read_bytes(_record_path(g)))
    if record.get("format") != FORMAT:
        raise ValueError(f"aggregates {store.uri(_record_path(g))!r} have format {record.get('format')!r}, "
                         f"not {FORMAT}; rebuild them with 'acesup report --rebuild'")
    tables = {}
    for name in TABLES:
        meta = record["tables"][name]
        raw = store.read_bytes(meta["path"])
        if sha256_bytes(raw) != meta["sha256"]:
            raise ValueError(f"aggregate table {store.uri(meta['path'])!r} differs from its commit record; "
                             f"rebuild the aggregates with 'acesup report --rebuild'")
        # ParquetFile, not pq.read_table: the dataset scanner behind read_table leaves a thread that,
        # at interpreter exit, aborts the process now and then (pipeline.storage.read_table says more)
        tables[name] = pq.ParquetFile(pa.BufferReader(raw)).read(use_threads=False).cast(SCHEMAS[name])
    return AggregateState(g, tables, record)


def _table_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


def _sorted(name: str, table: pa.Table) -> pa.Table:
    return table.cast(SCHEMAS[name]).sort_by([(k, "ascending") for k in TABLE_KEYS[name]])


def write_state(store: DataStore, state: AggregateState, extra: dict) -> None:
    """Write generation ``state.generation``: every table, then its commit record; drop old ones."""
    g = state.generation
    meta = {}
    for name in TABLES:
        raw = _table_bytes(state.tables[name])
        rel = f"{AGG_DIR}/{g:08d}/{name}.parquet"
        store.write_atomic(rel, raw)
        meta[name] = {"path": rel, "rows": state.tables[name].num_rows, "sha256": sha256_bytes(raw),
                      "bytes": len(raw)}
    record = {"format": FORMAT, "generation": g, "tables": meta, **extra}
    store.write_atomic(_record_path(g), (json.dumps(record, indent=1) + "\n").encode())
    state.record = record
    for old in _generations(store):
        if old <= g - KEEP_GENERATIONS:
            for rel in store.list_files(f"{AGG_DIR}/{old:08d}"):
                store.delete(rel)
            store.delete(_record_path(old))


# --- the live files ------------------------------------------------------------------------


def live_files(manifests: dict[str, Manifest]) -> list[LiveFile]:
    """Every done file of every run, as the manifests record them."""
    out = []
    for m in manifests.values():
        for b in m.done():
            out.append(LiveFile(m.seed, b.variant, b.policy, m.run_id, b.first, b.last, b.path))
    return out


def covered_by_side(files: Iterable[LiveFile]) -> dict[Side, list[list[int]]]:
    by: dict[Side, list[tuple[int, int]]] = {}
    for f in files:
        by.setdefault((f.seed, f.variant, f.policy), []).append((f.first, f.last))
    return {k: merge_ranges(v) for k, v in by.items()}


def _minus(a: dict[Side, list[list[int]]], b: dict[Side, list[list[int]]]) -> dict[Side, list[tuple[int, int]]]:
    """Per side: the ranges of ``a`` outside those of ``b``."""
    out = {}
    for side, ranges in a.items():
        rest = [g for x, y in ranges for g in subtract_ranges(x, y, b.get(side, []))]
        if rest:
            out[side] = rest
    return out


# --- one step ------------------------------------------------------------------------------

def value_units(value: str, won: str) -> str:
    """SQL of v (see ``tallies``): the value in integer units of 1e-9, or 1e9·1{won} without one.

    queries/honest_bracket.sql's raw-row twin (tests/honest_bracket_rows.sql) computes the same.
    """
    return (f"(CASE WHEN {value} IS NOT NULL THEN round({value} * 1e9)::HUGEINT "
            f"WHEN {won} THEN {VALUE_UNIT}::HUGEINT ELSE 0::HUGEINT END)")


_DELTA_SQL = {
    "tallies": f"""
        SELECT s.variant, s.policy, count(*) AS deals, count(*) FILTER (WHERE n.won) AS wins,
               count(*) FILTER (WHERE n.gave_up) AS gave_up, sum(n.score::BIGINT)::BIGINT AS score_sum,
               sum(n.moves::BIGINT)::BIGINT AS moves_sum, count(n.value) AS valued,
               sum({value_units("n.value", "n.won")})::HUGEINT AS value_sum,
               sum({value_units("n.value", "n.won")} * {value_units("n.value", "n.won")})::HUGEINT AS value_sq_sum
        FROM n JOIN sides s USING (side) GROUP BY s.variant, s.policy""",
    "scores": """
        SELECT s.variant, s.policy, n.score::INTEGER AS score, count(*) AS deals
        FROM n JOIN sides s USING (side) GROUP BY s.variant, s.policy, n.score""",
    "coverage": """
        SELECT $seed::UBIGINT AS seed, s.variant, s.policy, r.run_id, count(*) AS deals,
               min(n.deal) AS first_deal, max(n.deal) AS last_deal
        FROM n JOIN sides s USING (side) JOIN runs r USING (run)
        GROUP BY s.variant, s.policy, r.run_id""",
    # Each pair with a new side once: a new row with every other side's row of the same preset
    # and deal that was already included, and with every new row of a higher side.
    "pairs": f"""
        WITH nn AS (SELECT n.side, n.deal, n.score, n.won, n.gave_up, {value_units("n.value", "n.won")} AS v,
                           s.preset FROM n JOIN sides s USING (side)),
        uu AS (
            SELECT side, deal, score, won, gave_up, v, preset, true AS is_new FROM nn
            UNION ALL
            SELECT o.side, o.deal, o.score, o.won, o.gave_up, {value_units("o.value", "o.won")}, s.preset, false
            FROM o JOIN sides s USING (side)
        ),
        j AS (
            SELECT least(a.side, b.side) AS lo, greatest(a.side, b.side) AS hi,
                   CASE WHEN a.side < b.side THEN a.won ELSE b.won END AS lo_won,
                   CASE WHEN a.side < b.side THEN b.won ELSE a.won END AS hi_won,
                   CASE WHEN a.side < b.side THEN a.gave_up ELSE b.gave_up END AS lo_gave_up,
                   CASE WHEN a.side < b.side THEN b.gave_up ELSE a.gave_up END AS hi_gave_up,
                   CASE WHEN a.side < b.side THEN a.score::BIGINT - b.score::BIGINT
                        ELSE b.score::BIGINT - a.score::BIGINT END AS gap,
                   CASE WHEN a.side < b.side THEN a.v - b.v ELSE b.v - a.v END AS value_gap
            FROM nn a JOIN uu b ON b.deal = a.deal AND b.preset = a.preset AND b.side <> a.side
            WHERE NOT b.is_new OR a.side < b.side
        )
        SELECT sa.variant AS variant_a, sa.policy AS policy_a, sb.variant AS variant_b, sb.policy AS policy_b,
               count(*) AS deals,
               count(*) FILTER (WHERE lo_won) AS a_wins,
               count(*) FILTER (WHERE hi_won) AS b_wins,
               count(*) FILTER (WHERE lo_won AND NOT hi_won) AS a_only,
               count(*) FILTER (WHERE hi_won AND NOT lo_won) AS b_only,
               count(*) FILTER (WHERE lo_gave_up AND NOT hi_won) AS a_undecided,
               count(*) FILTER (WHERE hi_gave_up AND NOT lo_won) AS b_undecided,
               sum(gap)::BIGINT AS gap_sum,
               sum(gap * gap)::BIGINT AS gap_sq_sum,
               sum(value_gap)::HUGEINT AS value_gap_sum,
               sum(value_gap * value_gap)::HUGEINT AS value_gap_sq_sum
        FROM j JOIN sides sa ON sa.side = j.lo JOIN sides sb ON sb.side = j.hi
        GROUP BY sa.variant, sa.policy, sb.variant, sb.policy""",
}

def sum_sql(name: str, first: int) -> str:
    """``sum(c)::T AS c`` for the columns of table ``name`` from index ``first`` (T: BIGINT, or HUGEINT)."""
    schema = SCHEMAS[name]
    return ", ".join(f"sum({f.name})::{'HUGEINT' if f.type == _HUGE else 'BIGINT'} AS {f.name}"
                     for f in list(schema)[first:])


_MERGE_SQL = {
    "scores": "SELECT variant, policy, score, sum(deals)::BIGINT AS deals FROM t GROUP BY ALL",
    "pairs": "SELECT variant_a, policy_a, variant_b, policy_b, " + sum_sql("pairs", 4) + " FROM t GROUP BY ALL",
    "coverage": ("SELECT seed, variant, policy, run_id, sum(deals)::BIGINT AS deals, min(first_deal) AS first_deal, "
                 "max(last_deal) AS last_deal FROM t GROUP BY ALL"),
    "tallies": "SELECT generation, variant, policy, " + sum_sql("tallies", 3) + " FROM t GROUP BY ALL",
}


def _connect():
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # a step runs in flows and benchmarks, not at a terminal
    return con


def _read_side(store: DataStore, files: list[LiveFile], ranges, side_id: int, run_ids: dict[str, int],
               new: bool) -> list[pa.Table]:
    """Rows of one side in ``ranges``, from whichever of its files hold them, in the step's columns."""
    import numpy as np
    import pyarrow.compute as pc

    out = []
    for f in files:
        part = intersect_ranges([(f.first, f.last)], ranges)
        if not part:
            continue
        # status is null but for the solver's rows, value but for the bracket's (a column of nulls
        # costs nothing to read; a file of schema version 1 reads as nulls)
        cols = ["deal", "score", "won", "status", "value"] + (["moves"] if new else [])
        t = read_ranges(store, f.path, part, cols)
        n = t.num_rows
        gave_up = pc.fill_null(pc.equal(t.column("status"), "gave_up"), False)
        arrays = {"side": pa.array(np.full(n, side_id, dtype=np.int32)), "deal": t.column("deal"),
                  "score": t.column("score"), "won": t.column("won"), "gave_up": gave_up,
                  "value": t.column("value")}
        if new:
            arrays["moves"] = t.column("moves")
            arrays["run"] = pa.array(np.full(n, run_ids[f.run_id], dtype=np.int32))
        out.append(pa.table(arrays))
    return out


_N_SCHEMA = pa.schema([("side", pa.int32()), ("deal", _I64), ("score", pa.int8()), ("won", pa.bool_()),
                       ("gave_up", pa.bool_()), ("value", pa.float64()), ("moves", pa.int16()),
                       ("run", pa.int32())])
_O_SCHEMA = pa.schema([("side", pa.int32()), ("deal", _I64), ("score", pa.int8()), ("won", pa.bool_()),
                       ("gave_up", pa.bool_()), ("value", pa.float64())])


def _concat(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    if not parts:
        return schema.empty_table()
    return pa.concat_tables([p.select(schema.names).cast(schema) for p in parts])


def _chunks(new: dict[Side, list[tuple[int, int]]]) -> list[tuple[int, int, int]]:
    """(seed, first, last) deal spans that each hold about CHUNK_ROWS new rows or fewer."""
    out = []
    seeds = sorted({s for s, _, _ in new})
    for seed in seeds:
        sides = {k: v for k, v in new.items() if k[0] == seed}
        union = merge_ranges([r for v in sides.values() for r in v])
        span = max(1, CHUNK_ROWS // max(1, len(sides)))
        for a, b in union:
            at = a
            while at <= b:
                end = min(b, at + span - 1)
                out.append((seed, at, end))
                at = end + 1
    return out


def compute_delta(store: DataStore, files: list[LiveFile], included: dict[Side, list[list[int]]],
                  new: dict[Side, list[tuple[int, int]]]) -> dict[str, pa.Table]:
    """What the rows of ``new`` add to tallies, scores, pairs and coverage, given what is included."""
    import duckdb

    by_side: dict[Side, list[LiveFile]] = {}
    for f in files:
        by_side.setdefault((f.seed, f.variant, f.policy), []).append(f)
    for v in by_side.values():
        v.sort(key=lambda f: f.first)
    parts: dict[str, list[pa.Table]] = {name: [] for name in _DELTA_SQL}
    con = _connect()
    try:
        for seed, lo, hi in _chunks(new):
            # Side ids in (variant, policy) order, so that a pair's side a is its lower id.
            seed_sides = sorted({(v, p) for s, v, p in by_side if s == seed})
            ids = {vp: i for i, vp in enumerate(seed_sides)}
            run_ids = {r: i for i, r in enumerate(sorted({f.run_id for s in by_side for f in by_side[s]
                                                          if s[0] == seed}))}
            n_parts, new_in_chunk = [], {}
            for (s, v, p), ranges in new.items():
                if s != seed:
                    continue
                part = intersect_ranges(ranges, [(lo, hi)])
                if part:
                    new_in_chunk[(v, p)] = part
                    n_parts += _read_side(store, by_side[(s, v, p)], part, ids[(v, p)], run_ids, True)
            if not new_in_chunk:
                continue
            # Deals of the chunk where each preset has new rows: the other sides' included rows there.
            by_preset: dict[str, list[tuple[int, int]]] = {}
            for (v, _p), part in new_in_chunk.items():
                by_preset.setdefault(preset(v), []).extend(part)
            o_parts = []
            for v, p in seed_sides:
                want = merge_ranges(by_preset.get(preset(v), []))
                got = intersect_ranges(included.get((seed, v, p), []), want) if want else []
                if got:
                    o_parts += _read_side(store, by_side[(seed, v, p)], got, ids[(v, p)], run_ids, False)
            con.register("n", _concat(n_parts, _N_SCHEMA))
            con.register("o", _concat(o_parts, _O_SCHEMA))
            con.register("sides", pa.table({"side": pa.array(range(len(seed_sides)), pa.int32()),
                                             "variant": [v for v, _ in seed_sides],
                                             "policy": [p for _, p in seed_sides],
                                             "preset": [preset(v) for v, _ in seed_sides]}))
            con.register("runs", pa.table({"run": pa.array(list(run_ids.values()), pa.int32()),
                                           "run_id": list(run_ids)}))
            for name, sql in _DELTA_SQL.items():
                params = {"seed": seed} if "$seed" in sql else None
                parts[name].append(con.sql(sql, params=params).to_arrow_table())
            for name in ("n", "o", "sides", "runs"):
                con.unregister(name)
        out = {}
        for name in _DELTA_SQL:
            if name == "tallies":
                schema = SCHEMAS["tallies"].remove(0)
            else:
                schema = SCHEMAS[name]
            t = _concat(parts[name], schema)
            if name != "tallies":
                con.register("t", t)
                t = con.sql(_MERGE_SQL[name]).to_arrow_table()
                con.unregister("t")
            out[name] = t
        return out
    finally:
        con.close()


def _add(state: AggregateState, delta: dict[str, pa.Table], g: int, new: dict[Side, list[tuple[int, int]]],
         at: str) -> AggregateState:
    """Generation ``g``: ``state`` plus ``delta`` (the rows of ``new``)."""
    import duckdb

    rows = sum(ranges_size(r) for r in new.values())
    ledger = pa.table({
        "generation": pa.array([g] * sum(len(v) for v in new.values()), pa.int32()),
        "seed": pa.array([s for (s, _, _), v in sorted(new.items()) for _ in v], pa.uint64()),
        "variant": [vv for (_, vv, _), v in sorted(new.items()) for _ in v],
        "policy": [p for (_, _, p), v in sorted(new.items()) for _ in v],
        "first": pa.array([a for _, v in sorted(new.items()) for a, _ in v], _I64),
        "last": pa.array([b for _, v in sorted(new.items()) for _, b in v], _I64),
    })
    tallies = delta["tallies"]
    tallies = pa.table({"generation": pa.array([g] * tallies.num_rows, pa.int32()),
                        **{c: tallies.column(c) for c in tallies.column_names}})
    tables = {
        "ledger": pa.concat_tables([state.tables["ledger"], ledger.cast(SCHEMAS["ledger"])]),
        "nights": pa.concat_tables([state.tables["nights"], pa.table({
            "generation": pa.array([g], pa.int32()), "at": [at], "rows": pa.array([rows], _I64),
            "total_rows": pa.array([state.total_rows + rows], _I64)}).cast(SCHEMAS["nights"])]),
    }
    con = _connect()
    try:
        for name in ("tallies", "scores", "pairs", "coverage"):
            both = pa.concat_tables([state.tables[name], (tallies if name == "tallies" else delta[name])
                                     .cast(SCHEMAS[name])])
            con.register("t", both)
            tables[name] = con.sql(_MERGE_SQL[name]).to_arrow_table()
            con.unregister("t")
    finally:
        con.close()
    return AggregateState(g, {name: _sorted(name, t) for name, t in tables.items()})


def _step(store: DataStore, files: list[LiveFile], state: AggregateState,
          new: dict[Side, list[tuple[int, int]]], g: int, at: str) -> AggregateState:
    delta = compute_delta(store, files, state.included(), new)
    return _add(state, delta, g, new, at)


def update_aggregates(data: str | DataStore, *, manifests: dict[str, Manifest] | None = None,
                      rebuild: bool = False) -> StepResult:
    """Add the rows no generation includes yet as a new generation (see the module docstring).

    With ``rebuild``, or when the ledger counts rows that no live file holds any more
    (a run folder removed by hand), every table is recomputed from the rows instead:
    generation by generation along the ledger, so the figures night by night stay.
    Call it with the data folder's DataLock held (pipeline.plan.DataLock).
    """
    t0 = time.monotonic()
    store = data if isinstance(data, DataStore) else DataStore(data)
    if manifests is None:
        manifests = read_all_manifests(store)
    files = live_files(manifests)
    covered = covered_by_side(files)
    reason = "asked for" if rebuild else ""
    try:
        state = read_state(store)
    except (ValueError, OSError, KeyError) as exc:
        state, reason = AggregateState.empty(), f"the aggregates are unreadable ({exc})"
    gone = _minus(state.included(), covered)
    if gone:
        side = next(iter(gone))
        reason = (f"the aggregates count deals no live file holds (e.g. {side[1]}/{side[2]} of seed {side[0]}, "
                  f"deals {gone[side][0][0]}..{gone[side][0][1]})")
    if reason:
        check_unmixed(store, [f.path for f in files])
        return _rebuild(store, files, covered, state, reason, t0)
    new = _minus(covered, state.included())
    if not new:
        return StepResult(state.generation, 0, state.total_rows, time.monotonic() - t0)
    # Never two behaviours of one player in a table: the live files of every pair with new rows
    # carry one fingerprint (pipeline.fingerprint), or the step stops with a FingerprintMismatch.
    adding = {(v, p) for (_s, v, p) in new}
    check_unmixed(store, [f.path for f in files if (f.variant, f.policy) in adding])
    g = state.generation + 1
    nxt = _step(store, files, state, new, g, now_iso())
    write_state(store, nxt, {"at": nxt.tables["nights"].column("at")[-1].as_py(), "rows": nxt.total_rows,
                             "added": ranges_size([r for v in new.values() for r in v])})
    return StepResult(g, nxt.total_rows - state.total_rows, nxt.total_rows, time.monotonic() - t0)


def _rebuild(store: DataStore, files: list[LiveFile], covered: dict[Side, list[list[int]]],
             old: AggregateState, reason: str, t0: float) -> StepResult:
    """Every table from the rows: the old ledger's generations replayed (where live files still hold
    them), then what no generation included yet; written as one new generation."""
    by_gen: dict[int, dict[Side, list[tuple[int, int]]]] = {}
    at = {r["generation"]: r["at"] for r in old.tables["nights"].to_pylist()}
    for r in old.tables["ledger"].to_pylist():
        side = (int(r["seed"]), r["variant"], r["policy"])
        keep = intersect_ranges([(r["first"], r["last"])], covered.get(side, []))
        if keep:
            by_gen.setdefault(r["generation"], {}).setdefault(side, []).extend(keep)
    state = AggregateState.empty()
    replayed: dict[Side, list[list[int]]] = {}
    for g in sorted(by_gen):
        new = {k: [tuple(x) for x in merge_ranges(v)] for k, v in by_gen[g].items()}
        state = _step(store, files, state, new, g, at.get(g, now_iso()))
        for k, v in new.items():
            replayed[k] = merge_ranges(replayed.get(k, []) + [list(x) for x in v])
    rest = _minus(covered, replayed)
    last = max([old.generation, *by_gen], default=0)
    if rest:
        state = _step(store, files, state, rest, last + 1, now_iso())
    # Past every generation on disk, unreadable ones included (they are dropped by write_state).
    state.generation = max([old.generation, last, *_generations(store)]) + 1
    write_state(store, state, {"at": now_iso(), "rows": state.total_rows, "rebuilt": reason})
    return StepResult(state.generation, state.total_rows - old.total_rows, state.total_rows,
                      time.monotonic() - t0, rebuilt=True, reason=reason)


def rebuild_aggregates(data: str | DataStore, **kw) -> StepResult:
    """Recompute every aggregate table from the per-deal rows (``acesup report --rebuild``)."""
    return update_aggregates(data, rebuild=True, **kw)


__all__ = ["AGG_DIR", "AggregateState", "LiveFile", "SCHEMAS", "StepResult", "TABLES", "live_files",
           "read_state", "rebuild_aggregates", "update_aggregates"]
