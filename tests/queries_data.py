"""Test data and independent expectations for tests/test_queries*.py and tests/test_report*.py.

``fixture_data(tmp_root, batch_size)`` makes a small data folder by a real
pipeline run (``pipeline.execute.execute_run`` on the session's local Ray):
two variants (standard, strict) x six players on 150 deals, the random policy
capped to 100, the solver also on 30 deals of standard+optional, and the
solver with one restriction at a time (the rungs of the ladder) on strict. The
solver's node limit (10,000) is set low on purpose, so that some standard
deals end ``gave_up`` and the queries' treatment of them is exercised. The
same spec with another batch size gives the second data folder of the
reproducibility test. Runs are cached per process.

``expected_tables(data)`` recomputes every report table from the raw Parquet
files with Polars (no DuckDB, no SQL, no catalog): the twin the queries and
the report are checked against.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

SPEC_FIELDS = dict(
    seed=11,
    start=0,
    deals=150,
    variants=["standard", "strict", "standard+optional"],
    policies=["nomove", "greedy", "random", "human", "solver", "solver:sensible+leftmost+must_fill",
              "solver:sensible", "solver:leftmost", "solver:must_fill"],
    node_limit=10_000,
    caps={
        "random": 100,
        "standard+optional/nomove": 0,
        "standard+optional/greedy": 0,
        "standard+optional/random": 0,
        "standard+optional/human": 0,
        "standard+optional/solver": 30,
        "standard+optional/solver:sensible+leftmost+must_fill": 0,
        # one restriction at a time: on strict only, where the solver is quick
        **{f"{v}/solver:{r}": 0 for v in ("standard", "standard+optional") for r in ("sensible", "leftmost", "must_fill")},
    },
)

_RUNS: dict[int, Path] = {}

Z = 1.96

# The published claims, as shared/RULES.md lists them (id, preset, stated rate).
CLAIMS = {
    "one_in_200": ("standard", 1 / 200),
    "one_in_35": ("standard", 1 / 35),
    "one_in_10": ("standard", 1 / 10),
    "one_in_8": ("standard", 1 / 8),
    "strict_one_in_270": ("strict", 1 / 270),
    "restricted_solver_11_57": ("standard", 0.1157),
}


def fixture_data(tmp_root: Path, batch_size: int) -> Path:
    """A data folder made by a real run of the fixture spec (needs Ray initialized)."""
    if batch_size in _RUNS:
        return _RUNS[batch_size]
    from pipeline.execute import execute_run
    from pipeline.spec import load_spec

    data = Path(tmp_root) / f"data-batch{batch_size}"
    spec = load_spec(None, data=str(data), batch_size=batch_size, **SPEC_FIELDS)
    execute_run(spec, progress=False)
    _RUNS[batch_size] = data
    return data


# --- independent recomputation ------------------------------------------------------------


def wilson(k: int, n: int, z: float = Z) -> tuple[float | None, float | None]:
    """Wilson score interval, written out from Wilson (1927); exactly 0 at k = 0 and 1 at k = n."""
    if n == 0:
        return None, None
    if k == 0:
        return 0.0, wilson_upper(0, n, z)
    if k == n:
        return wilson_lower(n, n, z), 1.0
    return wilson_lower(k, n, z), wilson_upper(k, n, z)


def wilson_lower(k: int, n: int, z: float = Z) -> float:
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half)


def wilson_upper(k: int, n: int, z: float = Z) -> float:
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return min(1.0, centre + half)


def raw_results(data: Path):
    """Every result row, read file by file with pyarrow (no hive partitioning), as Polars."""
    import polars as pl
    import pyarrow.parquet as pq

    files = sorted(str(p) for p in Path(data, "results").rglob("*.parquet"))
    if not files:
        from pipeline.schema import RESULT_SCHEMA

        return pl.from_arrow(RESULT_SCHEMA.empty_table())
    tables = [pq.read_table(f, partitioning=None) for f in files]
    import pyarrow as pa

    return pl.from_arrow(pa.concat_tables(tables))


def kind(policy: str) -> str:
    return "clairvoyant" if policy == "solver" or policy.startswith("solver:") else "honest"


def _tallies(df):
    import polars as pl

    return (
        df.group_by("variant", "policy")
        .agg(
            pl.len().alias("deals"),
            pl.col("won").sum().alias("wins"),
            (pl.col("status") == "gave_up").fill_null(False).sum().alias("gave_up"),
            pl.col("score").cast(pl.Int64).sum().alias("score_sum"),
            pl.col("moves").cast(pl.Int64).sum().alias("moves_sum"),
        )
        .sort("variant", "policy")
        .to_dicts()
    )


def _odds(t: dict) -> dict:
    n, w, g = t["deals"], t["wins"], t["gave_up"]
    low, _ = wilson(w, n)
    _, high = wilson(w + g, n)
    return {
        "rate": w / n,
        "low": low,
        "high": high,
        "one_in": n / w if w else None,
        "one_in_low": 1 / high if high else None,
        "one_in_high": 1 / low if low else None,
    }


def _paired(df, variant: str, policy: str, reference: str):
    import polars as pl

    p = df.filter((pl.col("variant") == variant) & (pl.col("policy") == policy)).select(
        "seed", "deal", pl.col("won").alias("pw"), pl.col("score").cast(pl.Int64).alias("ps"))
    r = df.filter((pl.col("variant") == variant) & (pl.col("policy") == reference)).select(
        "seed", "deal", pl.col("won").alias("rw"), pl.col("score").cast(pl.Int64).alias("rs"),
        (pl.col("status") == "gave_up").fill_null(False).alias("rg"))
    return p.join(r, on=["seed", "deal"], how="inner").to_dicts()


def _normal(diffs: list[int]) -> tuple[float, float | None]:
    """Mean and sample standard deviation of integer differences (plain Python)."""
    n = len(diffs)
    mean = sum(diffs) / n
    if n < 2:
        return mean, None
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
    return mean, math.sqrt(var)


def expected_tables(data: Path, reference: str = "solver") -> dict[str, list[dict]]:
    """Every table of the report, recomputed from the raw Parquet (see the module docstring)."""
    import polars as pl

    df = raw_results(data)
    tallies = _tallies(df)
    out: dict[str, list[dict]] = {}

    out["win_odds"] = [
        {"variant": t["variant"], "policy": t["policy"], "kind": kind(t["policy"]), "deals": t["deals"],
         "wins": t["wins"], "gave_up": t["gave_up"], **_odds(t), "score_sum": t["score_sum"],
         "mean_score": t["score_sum"] / t["deals"], "mean_moves": t["moves_sum"] / t["deals"]}
        for t in tallies
    ]

    dist = []
    for t in tallies:
        sub = df.filter((pl.col("variant") == t["variant"]) & (pl.col("policy") == t["policy"]))
        counts = [0] * 49
        for s in sub["score"].to_list():
            counts[int(s)] += 1
        for s in range(49):
            dist.append({"variant": t["variant"], "policy": t["policy"], "kind": kind(t["policy"]), "score": s,
                         "deals": counts[s], "share": counts[s] / t["deals"], "at_least": sum(counts[s:])})
    out["score_distribution"] = dist

    def gap_rows(reference, variant=None):
        gaps = []
        for t in tallies:
            if t["policy"] == reference or variant not in (None, t["variant"]):
                continue
            rows = _paired(df, t["variant"], t["policy"], reference)
            if not rows:
                continue
            n = len(rows)
            ref_only = sum(1 for r in rows if r["rw"] and not r["pw"])
            pol_only = sum(1 for r in rows if r["pw"] and not r["rw"])
            undecided = sum(1 for r in rows if r["rg"] and not r["pw"])
            d_win = [int(r["rw"]) - int(r["pw"]) for r in rows]
            d_score = [r["rs"] - r["ps"] for r in rows]
            wg, wsd = _normal(d_win)
            sg, ssd = _normal(d_score)
            gaps.append({
                "variant": t["variant"], "policy": t["policy"], "kind": kind(t["policy"]), "reference": reference,
                "deals": n, "reference_wins": sum(r["rw"] for r in rows), "policy_wins": sum(r["pw"] for r in rows),
                "reference_only": ref_only, "policy_only": pol_only, "undecided": undecided,
                "share": ref_only / n, "share_low": wilson(ref_only, n)[0], "share_high": wilson(ref_only + undecided, n)[1],
                "win_gap": wg,
                "win_gap_low": None if wsd is None else wg - Z * wsd / math.sqrt(n),
                "win_gap_high": None if wsd is None else wg + Z * wsd / math.sqrt(n) + undecided / n,
                "score_gap_sum": sum(d_score), "score_gap_sq_sum": sum(d * d for d in d_score),
                "mean_score_gap": sg, "score_gap_sd": ssd,
                "score_gap_low": None if ssd is None else sg - Z * ssd / math.sqrt(n),
                "score_gap_high": None if ssd is None else sg + Z * ssd / math.sqrt(n),
            })
        return gaps

    out["policy_gap"] = gap_rows(reference)

    def best_honest(variant):
        cands = [t for t in tallies if t["variant"] == variant and kind(t["policy"]) == "honest"]
        if not cands:
            return None, 0
        # the highest low end of the Wilson interval, then the highest rate, the highest mean score, the name
        best = sorted(cands, key=lambda t: (-wilson(t["wins"], t["deals"])[0], -t["wins"] / t["deals"],
                                            -t["score_sum"] / t["deals"], t["policy"]))[0]
        return best, len(cands)

    headline, voi = [], []
    for variant in sorted({t["variant"] for t in tallies}):
        ref = next((t for t in tallies if t["variant"] == variant and t["policy"] == reference), None)
        best, n_honest = best_honest(variant)
        for kd, t, chosen in (("clairvoyant", ref, 1), ("honest", best, n_honest)):
            if t is None:
                continue
            headline.append({"variant": variant, "kind": kd, "player": t["policy"], "chosen_from": chosen,
                             "deals": t["deals"], "wins": t["wins"], "gave_up": t["gave_up"], **_odds(t),
                             "mean_score": t["score_sum"] / t["deals"]})
        if ref is None or best is None:
            continue
        rows = _paired(df, variant, best["policy"], reference)
        n = len(rows)
        ref_w = sum(r["rw"] for r in rows)
        hon_w = sum(r["pw"] for r in rows)
        undecided = sum(1 for r in rows if r["rg"] and not r["pw"])
        value, sd = _normal([int(r["rw"]) - int(r["pw"]) for r in rows])
        ro = _odds(ref)
        hl, hh = wilson(best["wins"], best["deals"])
        voi.append({
            "variant": variant, "reference": reference, "reference_deals": ref["deals"],
            "reference_wins": ref["wins"], "reference_gave_up": ref["gave_up"], "reference_rate": ro["rate"],
            "reference_low": ro["low"], "reference_high": ro["high"],
            "honest_policy": best["policy"], "honest_deals": best["deals"], "honest_wins": best["wins"],
            "honest_rate": best["wins"] / best["deals"], "honest_low": hl, "honest_high": hh,
            "honest_players": n_honest, "paired_deals": n, "paired_reference_wins": ref_w,
            "paired_honest_wins": hon_w, "value": value,
            "value_low": None if sd is None else value - Z * sd / math.sqrt(n),
            "value_high": None if sd is None else value + Z * sd / math.sqrt(n) + undecided / n,
            "ratio": ref_w / hon_w if hon_w else None, "honest_share": hon_w / ref_w if ref_w else None,
        })
    out["headline"] = headline
    # the best honest player of each variant against the other honest players of it
    out["honest_gap"] = [g for h in headline if h["kind"] == "honest"
                         for g in gap_rows(h["player"], h["variant"]) if g["kind"] == "honest"]
    out["value_of_information"] = voi

    claims = []
    for cid, (preset, stated) in CLAIMS.items():
        readings = []
        for t in tallies:
            if t["variant"].split("+")[0] != preset:
                continue
            o = _odds(t)
            restriction = None
            if kind(t["policy"]) == "clairvoyant":
                restriction = t["policy"].partition(":")[2] or "none"
            readings.append({
                "claim_id": cid, "claim_preset": preset, "stated_rate": stated, "stated_one_in": 1 / stated,
                "variant": t["variant"], "policy": t["policy"], "kind": kind(t["policy"]),
                "restriction": restriction,
                "discards": "optional" if "optional" in t["variant"].split("+") else "forced",
                "deals": t["deals"], "wins": t["wins"], "gave_up": t["gave_up"], "rate": o["rate"],
                "low": o["low"], "high": o["high"], "one_in": o["one_in"],
                "inside": o["low"] <= stated <= o["high"],
                "ratio": stated / o["rate"] if o["rate"] > 0 else None,
                "off_by": o["low"] / stated if stated < o["low"] else stated / o["high"] if stated > o["high"] else 1.0,
            })
        # inside first; then how far (as a factor) the claim misses the interval; then how far
        # the point estimate is, on a log scale (a zero rate last); then the names.
        readings.sort(key=lambda r: (not r["inside"], r["off_by"],
                                     abs(math.log(r["stated_rate"] / r["rate"])) if r["rate"] > 0 else math.inf,
                                     r["variant"], r["policy"]))
        for i, r in enumerate(readings, start=1):
            r["fit_rank"] = i
        claims.extend(readings)
    out["claims"] = claims

    ladder = []
    solver_rows = [t for t in tallies if kind(t["policy"]) == "clairvoyant"]
    for t in solver_rows:
        preset = t["variant"].split("+")[0]
        discards = "optional" if "optional" in t["variant"].split("+") else "forced"
        restriction = t["policy"].partition(":")[2] or "none"
        rung = df.filter((pl.col("variant") == t["variant"]) & (pl.col("policy") == t["policy"]))
        base = df.filter((pl.col("variant") == preset) & (pl.col("policy") == "solver"))
        rung_rows = (rung.select("seed", "deal", pl.col("won").alias("pw"))
                     .join(base.select("seed", "deal", pl.col("won").alias("rw")), on=["seed", "deal"])
                     .to_dicts())
        base_wins = sum(r["rw"] for r in rung_rows)
        rung_wins = sum(r["pw"] for r in rung_rows)
        o = _odds(t)
        ladder.append({
            "preset": preset, "discards": discards, "restriction": restriction, "variant": t["variant"],
            "policy": t["policy"], "deals": t["deals"], "wins": t["wins"], "gave_up": t["gave_up"],
            "rate": o["rate"], "low": o["low"], "high": o["high"], "base_deals": len(rung_rows),
            "base_wins": base_wins, "rung_wins": rung_wins,
            "share_of_base": rung_wins / base_wins if base_wins else None,
        })
    out["solver_ladder"] = ladder

    # value_of_optional: the same player on the same deals under forced and optional discards
    optional = []
    for t in tallies:
        parts = t["variant"].split("+")
        if "optional" in parts:
            continue
        opt_variant = t["variant"] + "+optional"
        f = df.filter((pl.col("variant") == t["variant"]) & (pl.col("policy") == t["policy"])).select(
            "seed", "deal", pl.col("won").alias("fw"), pl.col("score").cast(pl.Int64).alias("fs"),
            (pl.col("status") == "gave_up").fill_null(False).alias("fg"))
        o = df.filter((pl.col("variant") == opt_variant) & (pl.col("policy") == t["policy"])).select(
            "seed", "deal", pl.col("won").alias("ow"), pl.col("score").cast(pl.Int64).alias("os"),
            (pl.col("status") == "gave_up").fill_null(False).alias("og"))
        rows = f.join(o, on=["seed", "deal"], how="inner").to_dicts()
        if not rows:
            continue
        n = len(rows)
        diffs = [int(r["ow"]) - int(r["fw"]) for r in rows]
        gains = [r["os"] - r["fs"] for r in rows]
        if kind(t["policy"]) == "honest" and not any(diffs) and not any(gains):
            continue
        value, sd = _normal(diffs)
        forced_undecided = sum(1 for r in rows if r["fg"] and not r["ow"])
        optional_undecided = sum(1 for r in rows if r["og"] and not r["fw"])
        optional.append({
            "variant": t["variant"], "optional_variant": opt_variant, "policy": t["policy"], "deals": n,
            "forced_wins": sum(r["fw"] for r in rows), "optional_wins": sum(r["ow"] for r in rows),
            "forced_rate": sum(r["fw"] for r in rows) / n, "optional_rate": sum(r["ow"] for r in rows) / n,
            "optional_only": sum(1 for d in diffs if d > 0), "forced_only": sum(1 for d in diffs if d < 0),
            "value": value,
            "value_low": None if sd is None else value - Z * sd / math.sqrt(n) - forced_undecided / n,
            "value_high": None if sd is None else value + Z * sd / math.sqrt(n) + optional_undecided / n,
            "mean_score_gain": sum(gains) / n,
        })
    out["value_of_optional"] = optional

    cov = (
        df.group_by("seed", "variant", "policy", "run_id")
        .agg(pl.len().alias("deals"), pl.col("deal").min().alias("first_deal"), pl.col("deal").max().alias("last_deal"))
        .with_columns((pl.col("deals") == pl.col("last_deal") - pl.col("first_deal") + 1).alias("contiguous"))
        .to_dicts()
    )
    out["coverage"] = cov

    summary = []
    for t in tallies:
        sub = df.filter((pl.col("variant") == t["variant"]) & (pl.col("policy") == t["policy"]))
        scores = sorted(int(s) for s in sub["score"].to_list())
        n = len(scores)
        median = scores[(n + 1) // 2 - 1]  # smallest s with at least half the deals at or below it
        summary.append({"variant": t["variant"], "policy": t["policy"], "kind": kind(t["policy"]), "deals": n,
                        "median_score": median, "reach_40": sum(s >= 40 for s in scores),
                        "reach_44": sum(s >= 44 for s in scores), "reach_48": sum(s >= 48 for s in scores)})
    out["score_summary"] = summary
    out["nights"] = expected_nights(data, df)
    return out


def expected_nights(data: Path, df=None) -> list[dict]:
    """The nights table recomputed from the raw rows and the aggregates' ledger (plain Python).

    The ledger (DATA/aggregates/<g>/ledger.parquet of the newest generation, read with pyarrow)
    says which deal ranges each generation included; each raw row is counted in the generation
    whose range holds it, and the running totals are summed here, generation by generation.
    """
    import json

    import pyarrow.parquet as pq

    df = raw_results(data) if df is None else df
    agg = Path(data, "aggregates")
    commits = sorted(agg.glob("*.json"), key=lambda p: int(p.stem)) if agg.is_dir() else []
    if not commits:
        return []
    record = json.loads(commits[-1].read_text())
    ledger = pq.read_table(Path(data, record["tables"]["ledger"]["path"])).to_pylist()
    gens = sorted({r["generation"] for r in ledger})
    night_of = {g: i + 1 for i, g in enumerate(gens)}
    ranges: dict[tuple, list] = {}
    for r in ledger:
        ranges.setdefault((int(r["seed"]), r["variant"], r["policy"]), []).append(
            (r["first"], r["last"], night_of[r["generation"]]))
    added: dict[tuple, list[int]] = {}
    for r in df.select("seed", "variant", "policy", "deal", "won", "status").iter_rows(named=True):
        n = next(n for first, last, n in ranges[(int(r["seed"]), r["variant"], r["policy"])]
                 if first <= r["deal"] <= last)
        a = added.setdefault((n, r["variant"], r["policy"]), [0, 0, 0])
        a[0] += 1
        a[1] += bool(r["won"])
        a[2] += r["status"] == "gave_up"
    nights = len(gens)
    out = []
    for v, p in sorted({(v, p) for _, v, p in added}):
        first_night = min(n for n, vv, pp in added if (vv, pp) == (v, p))
        deals = wins = gave_up = 0
        for n in range(first_night, nights + 1):
            a = added.get((n, v, p), [0, 0, 0])
            deals, wins, gave_up = deals + a[0], wins + a[1], gave_up + a[2]
            low, _ = wilson(wins, deals)
            _, high = wilson(wins + gave_up, deals)
            out.append({"night": n, "nights": nights, "variant": v, "policy": p, "kind": kind(p), "added": a[0],
                        "deals": deals, "wins": wins, "gave_up": gave_up, "rate": wins / deals, "low": low,
                        "high": high, "one_in": deals / wins if wins else None})
    return out


TABLE_KEYS = {
    "headline": ("variant", "kind"),
    "win_odds": ("variant", "policy"),
    "score_distribution": ("variant", "policy", "score"),
    "policy_gap": ("variant", "policy"),
    "honest_gap": ("variant", "policy"),
    "value_of_information": ("variant",),
    "claims": ("claim_id", "variant", "policy"),
    "solver_ladder": ("variant", "policy"),
    "value_of_optional": ("variant", "policy"),
    "coverage": ("seed", "variant", "policy", "run_id"),
    "score_summary": ("variant", "policy"),
    "honest_bracket": ("variant",),
    "nights": ("night", "variant", "policy"),
}


def same_value(a, b) -> bool:
    """Equal, floats to 1e-12 relative (the two sides round differently in the last bits)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b) and type(a) is type(b)
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-14)
    return a == b


def compare_rows(name: str, got: list[dict], want: list[dict]) -> list[str]:
    """Differences between two tables, matched on the table's key (empty list = equal)."""
    keys = TABLE_KEYS[name]
    problems = []
    g = {tuple(r[k] for k in keys): r for r in got}
    w = {tuple(r[k] for k in keys): r for r in want}
    if len(g) != len(got):
        problems.append(f"{name}: duplicate keys in the result")
    if set(g) != set(w):
        problems.append(f"{name}: keys differ: only in result {sorted(set(g) - set(w))[:5]}, "
                        f"only expected {sorted(set(w) - set(g))[:5]}")
    for key in sorted(set(g) & set(w), key=str):
        for col, want_v in w[key].items():
            if col not in g[key]:
                problems.append(f"{name} {key}: column {col!r} missing")
            elif not same_value(g[key][col], want_v):
                problems.append(f"{name} {key}: {col} = {g[key][col]!r}, expected {want_v!r}")
    return problems


def chdir_elsewhere(path: Path):
    """Context manager: run a block in another working directory."""
    import contextlib

    @contextlib.contextmanager
    def cm():
        old = os.getcwd()
        os.chdir(path)
        try:
            yield
        finally:
            os.chdir(old)

    return cm()
