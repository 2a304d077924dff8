"""The odds report: every table of ``queries/*.sql`` over the catalog, as JSON, Markdown and HTML.

``build_report(data)`` writes, in ``DATA/report/``:

``report.json``
    every number of the report, machine-readable: the rows of each named query
    (``tables``), the headline rows, the derived score summary, and the data's
    provenance (runs and specs, seeds and index ranges, row counts, file and
    query checksums), the players (display names, descriptions) and the
    behaviour fingerprint of each variant × player (pipeline.fingerprint). Byte-identical when rebuilt from the same data with the
    same code: nothing in it depends on the time, the machine or the order files
    were written in.
``report.md``
    the same report as Markdown, also byte-identical on a rebuild.
``index.html``
    one self-contained page (inline CSS, charts as inline SVG drawn by
    queries/plots.py, no script, no network), also byte-identical on a rebuild.
    Both pages are rendered from report.json's document alone by
    queries/render.py through the Jinja2 templates of queries/templates/.
``build.json``
    what varies between builds and is therefore kept out of the three files above:
    the build time, the git commit and state of the code, library versions.

Numbers are computed by DuckDB from exact integer counts and sums (no
floating-point aggregation whose result depends on row order), so two data
folders made from the same spec with different batch sizes or worker counts
give the same numbers to the last bit.

Solver rows with status ``gave_up`` (the search hit its node limit) count as
lost for each estimate and lower bound and as won for the upper bound
(Solvitaire's convention), so an unfinished search only widens an interval.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from .catalog import (
    _MACROS,
    CATALOG_VERSION,
    REPORT_QUERIES,
    WILSON_Z,
    _deal_macros,
    build_catalog,
    load_query,
    local_data_folder,
    run_query,
)
from .render import (  # noqa: F401  (the formatting helpers are part of this module's interface)
    GAVE_UP_NOTE,
    VARIANT_TEXT,
    num,
    one_in_range,
    one_in_text,
    pct,
    pct_range,
    player_rows,
    render_html,
    render_markdown,
)

REPORT_FORMAT = 2  # 2: numbers from the aggregates; provenance.runs give files and batches_done
REPORT_DIR = "report"
ROOT = Path(__file__).resolve().parent.parent

# --- the numbers ---------------------------------------------------------------------------


def _rows(table) -> list[dict]:
    return table.to_pylist()


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def score_summary(score_distribution) -> list[dict]:
    """Per (variant, policy): deals, median score, and how many deals reach 40, 44 and 48.

    Shaped with Polars from the score_distribution query's Arrow table (DuckDB hands
    it over as Arrow; a dataframe pivot reads better than SQL here). ``median`` is
    the smallest score s with at least half of the deals at or below s.
    """
    import polars as pl

    if score_distribution.num_rows == 0:
        return []
    df = pl.from_arrow(score_distribution)
    totals = df.group_by("variant", "policy", "kind").agg(pl.col("deals").sum().alias("total"))
    cum = (
        df.sort("variant", "policy", "score")
        .with_columns(pl.col("deals").cum_sum().over("variant", "policy").alias("at_most"))
        .join(totals, on=["variant", "policy", "kind"])
    )
    median = (
        cum.filter(pl.col("at_most") * 2 >= pl.col("total"))
        .group_by("variant", "policy")
        .agg(pl.col("score").min().alias("median_score"))
    )
    reach = (
        df.filter(pl.col("score").is_in([40, 44, 48]))
        .select("variant", "policy", pl.format("reach_{}", pl.col("score")).alias("k"), "at_least")
        .pivot(on="k", index=["variant", "policy"], values="at_least")
    )
    out = (
        totals.join(median, on=["variant", "policy"])
        .join(reach, on=["variant", "policy"])
        .sort("variant", "kind", "policy")
        .select("variant", "policy", "kind", pl.col("total").alias("deals"), "median_score",
                "reach_40", "reach_44", "reach_48")
    )
    return out.to_dicts()


def claim_readings(claims: list[dict]) -> list[dict]:
    """One verdict per claim: the readings whose interval holds it, or the nearest one.

    ``fits`` lists the (variant, policy) readings whose 95% interval holds the
    stated rate (best first); ``nearest`` is the reading with fit_rank 1 (with
    ``off_by``, the factor by which the claim misses its interval, 1 inside).
    """
    out: dict[str, dict] = {}
    for r in claims:  # ordered by stated_rate, claim_id, fit_rank
        c = out.setdefault(r["claim_id"], {
            "claim_id": r["claim_id"], "claim": r["claim"], "source": r["source"],
            "claim_preset": r["claim_preset"], "stated_rate": r["stated_rate"],
            "stated_one_in": r["stated_one_in"], "readings": 0, "fits": [], "nearest": None,
        })
        c["readings"] += 1
        if r["fit_rank"] == 1:
            c["nearest"] = {"variant": r["variant"], "policy": r["policy"], "kind": r["kind"],
                            "rate": r["rate"], "low": r["low"], "high": r["high"], "inside": r["inside"],
                            "off_by": r["off_by"]}
        if r["inside"]:
            c["fits"].append({"variant": r["variant"], "policy": r["policy"], "kind": r["kind"]})
    return list(out.values())


def claims_against_bracket(claims: list[dict], bracket: list[dict]) -> list[dict]:
    """Each claim of a variant with a bracket: below, inside or above the honest bracket.

    'above' means no honest player can win that often (the claim exceeds the bound's upper end
    with 95% confidence); 'below' means the lower player wins more often than the claim says.
    """
    ends = {r["variant"]: r for r in bracket}
    seen, out = set(), []
    for c in sorted(claims, key=lambda c: c["claim_id"]):
        b = ends.get(c["claim_preset"])
        if b is None or c["claim_id"] in seen:
            continue
        seen.add(c["claim_id"])
        rate = c["stated_rate"]
        if b["upper_high"] is not None and rate > b["upper_high"]:
            where = "above"
        elif b["lower_low"] is not None and rate < b["lower_low"]:
            where = "below"
        else:
            where = "inside"
        out.append({"claim_id": c["claim_id"], "claim": c["claim"], "variant": c["claim_preset"],
                    "stated_rate": rate, "lower_low": b["lower_low"], "upper_high": b["upper_high"],
                    "against_bracket": where})
    return out


def headline_rows(headline: list[dict]) -> list[dict]:
    """The headline in the simple shape the flows publish: one dict per (variant, kind)."""
    keys = ("variant", "player", "kind", "deals", "wins", "gave_up", "rate", "low", "high", "one_in")
    return [{k: r[k] for k in keys} for r in headline]


def _manifest_summary(data: Path, m) -> dict:
    """The parts of a run manifest the report cites (its header and counts; the files are listed apart)."""
    done = m.done()
    header = data / "runs" / m.run_id / "manifest.json"
    spec_toml = header.parent / "spec.toml"
    return {
        "run_id": m.run_id,
        "seed": m.seed,
        "start": m.start,
        "engine_version": m.engine_version,
        "schema_version": m.schema_version,
        "state": m.state,
        "created": m.created,
        "updated": m.updated,
        "spec": m.spec,
        "requested": m.requested,
        "covered": m.covered(),
        "files": len(done),
        "batches_done": sum(b.batches for b in done),
        "rows_done": sum(b.rows for b in done),
        "manifest_sha256": _sha256_file(header),
        "spec_toml_sha256": _sha256_file(spec_toml) if spec_toml.exists() else None,
    }


def _file_facts(manifests) -> list[dict]:
    """Every live data file with the rows, size and SHA-256 its run recorded when the file was
    written (pipeline.verify checks them against the file; nothing is re-read here)."""
    facts = []
    for m in manifests.values():
        for b in m.done():
            facts.append({
                "path": b.path,
                "rows": b.rows,
                "bytes": b.bytes,
                "sha256": b.sha256,
                "engine_version": m.engine_version,
                "schema_version": str(m.schema_version),
            })
    return sorted(facts, key=lambda f: f["path"].split("/"))


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("acesup")
    except PackageNotFoundError:
        return "0+unknown"


def _code_checksums() -> dict:
    """SHA-256 of every query file, of the catalog's macros and of the report code."""
    queries = {name: load_query(name).sha256 for name in REPORT_QUERIES}
    return {
        "queries": queries,
        "catalog_macros": hashlib.sha256((_MACROS + _deal_macros()).encode()).hexdigest(),
        "catalog_version": CATALOG_VERSION,
        "report_code": {
            name: hashlib.sha256((Path(__file__).parent / name).read_bytes()).hexdigest()
            for name in ("catalog.py", "report.py", "render.py", "plots.py")
        } | {
            f"queries/templates/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((Path(__file__).parent / "templates").iterdir()) if p.is_file()
        },
    }


def honest_gap_rows(con, headline: list[dict]) -> list[dict]:
    """The best honest player of each variant (the headline's) against the other honest players, paired.

    The rows of the ``policy_gap`` query run with that player as its reference,
    kept to its variant and to honest players; ``reference_only`` counts the
    deals the best player wins and the other loses, ``policy_only`` the reverse.
    """
    variants_of: dict[str, set[str]] = {}
    for h in headline:
        if h["kind"] == "honest":
            variants_of.setdefault(h["player"], set()).add(h["variant"])
    out = []
    for player, variants in variants_of.items():  # one query per player, however many variants it leads
        rows = _rows(run_query(con, "policy_gap", reference=player))
        out += [r for r in rows if r["variant"] in variants and r["kind"] == "honest"]
    return sorted(out, key=lambda r: (r["variant"], r["policy"]))


def refresh_aggregates(data: Path, *, rebuild: bool = False):
    """Bring the aggregates up to date with the data folder (queries.aggregates), under its lock.

    If another process holds the folder's lock (a night is running), the aggregates are
    left as they are and the report is built from them, with a warning on standard error.
    """
    import sys

    from pipeline.errors import UserError
    from pipeline.plan import DataLock
    from pipeline.storage import DataStore

    from .aggregates import update_aggregates

    from pipeline.fingerprint import FingerprintMismatch

    store = DataStore(str(data))
    try:
        with DataLock(store):
            return update_aggregates(store, rebuild=rebuild)
    except (UserError, OSError) as exc:
        if rebuild or isinstance(exc, FingerprintMismatch):  # two behaviours of a player: never pooled
            raise
        print(f"acesup: warning: the aggregates were not brought up to date ({exc}); the report shows "
              f"the rows they include", file=sys.stderr)
        return None


def fingerprint_rows(data: Path, pairs: set[tuple[str, str]]) -> list[dict]:
    """The behaviour fingerprint recorded for each (variant, policy) the report shows
    (pipeline.fingerprint: ``DATA/fingerprints/``, also in every data file's footer).

    Only what the code and the deck set determine: the digest and the decks it was computed
    on, never the time or the run that recorded it, so the report stays byte-identical. A pair
    without a record (rows written before fingerprints) has ``fingerprint`` None.
    """
    from pipeline.fingerprint import read_all_records
    from pipeline.storage import DataStore

    records = read_all_records(DataStore(str(data)))
    out = []
    for variant, policy in sorted(pairs):
        rec = records.get((variant, policy))
        out.append({"variant": variant, "policy": policy, "fingerprint": None if rec is None else rec.digest,
                    "decks": None if rec is None else
                    {"seed": rec.decks.seed, "first": rec.decks.first, "count": rec.decks.count,
                     "node_limit": rec.decks.node_limit}})
    return out


def _distinct_deals(ledger: list[dict]) -> tuple[int, int, list[int]]:
    """(distinct (seed, deal) pairs, keys, seeds) of the deal ranges the aggregates include."""
    from pipeline.manifest import merge_ranges

    by_seed: dict[int, list] = {}
    by_side: dict[tuple, list] = {}
    for r in ledger:
        by_seed.setdefault(int(r["seed"]), []).append((r["first"], r["last"]))
        by_side.setdefault((int(r["seed"]), r["variant"], r["policy"]), []).append((r["first"], r["last"]))
    deals = sum(b - a + 1 for v in by_seed.values() for a, b in merge_ranges(v))
    keys = sum(b - a + 1 for v in by_side.values() for a, b in merge_ranges(v))
    return deals, keys, sorted(by_seed)


def collect(data: str | os.PathLike, *, rebuild: bool = False) -> dict:
    """Bring the aggregates up to date, build the catalog and compute the whole report document
    (what report.json holds) from the aggregates."""
    import duckdb

    from pipeline.manifest import read_all_manifests
    from pipeline.storage import DataStore

    data = local_data_folder(data)
    refresh_aggregates(data, rebuild=rebuild)
    catalog = build_catalog(data)
    manifests = read_all_manifests(DataStore(str(data)))
    con = duckdb.connect(str(catalog), read_only=True)
    try:
        arrow = {name: run_query(con, name) for name in REPORT_QUERIES}
        tables = {name: _rows(t) for name, t in arrow.items()}
        tables["honest_gap"] = honest_gap_rows(con, tables["headline"])
        total_rows = con.execute("SELECT coalesce(sum(deals), 0)::BIGINT FROM tallies").fetchall()[0][0]
        ledger = con.sql("SELECT seed, variant, policy, first, last FROM ledger").to_arrow_table().to_pylist()
    finally:
        con.close()
    distinct_deals, keys, seeds = _distinct_deals(ledger)
    fingerprint_list = fingerprint_rows(data, {(r["variant"], r["policy"]) for r in tables["win_odds"]})
    fingerprints: dict[str, dict[str, str]] = {}
    for f in fingerprint_list:
        if f["fingerprint"] is not None:
            fingerprints.setdefault(f["policy"], {})[f["variant"]] = f["fingerprint"]
    # The key (seed, deal, variant, policy) is unique by the pipeline's contract; a row counted
    # twice (a key in two files) would show here as rows beyond the distinct keys included.
    duplicate_keys = total_rows - keys
    files = _file_facts(manifests)
    runs = [_manifest_summary(data, m) for m in sorted(manifests.values(), key=lambda m: m.run_id)]
    dataset_sha = hashlib.sha256("".join(f"{f['path']} {f['sha256']}\n" for f in files).encode()).hexdigest()
    bracket = {}
    if "honest_bracket" in tables:  # the honest bracket (issue "Honest play, bracketed"), where it is measured
        bracket = {"honest_bracket": tables["honest_bracket"],
                   "claims_against_bracket": claims_against_bracket(tables["claims"], tables["honest_bracket"])}
    return {
        "format": REPORT_FORMAT,
        "title": "Aces Up: the odds, measured",
        "package_version": _package_version(),
        "conventions": {
            "interval": "95% Wilson score interval",
            "z": WILSON_Z,
            "gave_up": GAVE_UP_NOTE,
            "clairvoyant": "the exact solver: knows the order of the stock and plays the best line for it",
            "honest": "a player that sees only what a person sees (piles, discards, cards left), "
                      "never the order of the stock",
            "paired": "policy gaps and value of information compare two players on the same deals "
                      "(normal interval on the per-deal differences)",
        },
        "headline": headline_rows(tables["headline"]),
        **bracket,
        "players": player_rows(tables["win_odds"], fingerprints),
        "fingerprints": fingerprint_list,
        "tables": {
            **tables,
            "claim_readings": claim_readings(tables["claims"]),
            "score_summary": score_summary(arrow["score_distribution"]),
        },
        "provenance": {
            "result_rows": total_rows,
            "distinct_deals": distinct_deals,
            "duplicate_keys": duplicate_keys,
            "seeds": seeds,
            "result_files": len(files),
            "dataset_sha256": dataset_sha,
            "runs": runs,
            "files": files,
            "code": _code_checksums(),
        },
    }


def build_info() -> dict:
    """Facts of this build that change between builds (kept out of report.json and report.md)."""
    import duckdb
    import polars
    import pyarrow

    def git(*args):
        try:
            out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    dirty = None
    if commit:
        status = git("status", "--porcelain", "--untracked-files=no")
        dirty = bool(status) if status is not None else None
    return {
        "built_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": commit,
        "git_dirty": dirty,
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "polars": polars.__version__,
        "pyarrow": pyarrow.__version__,
        "host": platform.node(),
    }


def _dumps(doc) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _write(path: Path, text: str) -> None:
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def build_report(data: str | os.PathLike, *, rebuild: bool = False) -> dict:
    """Build the report of a data folder (see the module docstring); ``rebuild`` recomputes the
    aggregates from every per-deal row first (queries.aggregates.rebuild_aggregates).

    Returns ``{"index_html", "report_md", "report_json", "build_json", "catalog"}``
    (paths as strings), ``"headline"`` (list of dicts: variant, player, kind,
    deals, wins, gave_up, rate, low, high, one_in) and ``"result_rows"``.
    """
    data = local_data_folder(data)
    doc = collect(data, rebuild=rebuild)
    info = build_info()
    out = data / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "report_json": out / "report.json",
        "report_md": out / "report.md",
        "index_html": out / "index.html",
        "build_json": out / "build.json",
    }
    _write(paths["report_json"], _dumps(doc))
    _write(paths["report_md"], render_markdown(doc))
    _write(paths["index_html"], render_html(doc))
    _write(paths["build_json"], _dumps(info))
    return {
        **{k: str(v) for k, v in paths.items()},
        "catalog": str(data / "acesup.duckdb"),
        "headline": doc["headline"],
        "result_rows": doc["provenance"]["result_rows"],
    }


# --- the pages (queries/render.py and queries/templates/) ---------------------------------


def policy_description(policy: str) -> str:
    """One line on what a stored player does (the registry's description, engine_rs_free.players)."""
    from engine_rs_free.players import describe_player

    return describe_player(policy)
