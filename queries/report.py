"""The odds report: every table of ``queries/*.sql`` over the catalog, as JSON, Markdown and HTML.

``build_report(data)`` writes, in ``DATA/report/``:

``report.json``
    every number of the report, machine-readable: the rows of each named query
    (``tables``), the headline rows, the derived score summary, and the data's
    provenance (runs and specs, seeds and index ranges, row counts, file and
    query checksums). Byte-identical when rebuilt from the same data with the
    same code: nothing in it depends on the time, the machine or the order files
    were written in.
``report.md``
    the same report as Markdown, also byte-identical on a rebuild.
``index.html``
    one self-contained page (inline CSS, charts as inline SVG drawn by
    queries/plots.py, no script, no network), which also shows the build facts.
``build.json``
    what varies between builds and is therefore kept out of the two files above:
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
from html import escape
from pathlib import Path

from engine_rs_free.players import RESTRICTION_TEXT

from . import plots
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

REPORT_FORMAT = 2  # 2: numbers from the aggregates; provenance.runs give files and batches_done
REPORT_DIR = "report"
ROOT = Path(__file__).resolve().parent.parent

SECTIONS = (
    ("headline", "Headline odds"),
    ("bracket", "Honest play, bracketed"),
    ("claims", "How the published claims hold up"),
    ("scores", "Score distributions"),
    ("gaps", "Policy gaps"),
    ("voi", "Value of information"),
    ("variants", "The variants"),
    ("method", "Method"),
    ("provenance", "Provenance"),
)

GAVE_UP_NOTE = (
    "Solver deals whose search hit its node limit (status gave_up) count as lost for each "
    "estimate and lower bound and as won for the upper bound (Solvitaire's convention), so an "
    "unfinished search widens an interval and never narrows it."
)

VARIANT_TEXT = {
    "standard": "any top card may move into an empty pile (a pile's only card too)",
    "strict": "as standard, but only an Ace may move into an empty pile",
    "easy": "any single card of another pile, at any depth, may move into an empty pile",
    "reverse": "as standard, with the Ace ranking lowest; won with the four Kings left",
}



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
            for name in ("catalog.py", "report.py", "plots.py")
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
    # The key (seed, deal, variant, policy) is unique by the pipeline's contract; a row counted
    # twice (a key in two files) would show here as rows beyond the distinct keys included.
    duplicate_keys = total_rows - keys
    files = _file_facts(manifests)
    runs = [_manifest_summary(data, m) for m in sorted(manifests.values(), key=lambda m: m.run_id)]
    dataset_sha = hashlib.sha256("".join(f"{f['path']} {f['sha256']}\n" for f in files).encode()).hexdigest()
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
        "honest_bracket": tables["honest_bracket"],
        "claims_against_bracket": claims_against_bracket(tables["claims"], tables["honest_bracket"]),
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
    _write(paths["index_html"], render_html(doc, info))
    _write(paths["build_json"], _dumps(info))
    return {
        **{k: str(v) for k, v in paths.items()},
        "catalog": str(data / "acesup.duckdb"),
        "headline": doc["headline"],
        "result_rows": doc["provenance"]["result_rows"],
    }


# --- formatting ----------------------------------------------------------------------------


def pct(x, digits: int = 2) -> str:
    """A rate as a percentage (``0.1234`` -> ``12.34%``); a dash for None."""
    if x is None:
        return "—"
    return f"{x * 100:.{digits}f}%"


def pct_range(lo, hi, digits: int = 2) -> str:
    if lo is None or hi is None:
        return "—"
    return f"{lo * 100:.{digits}f}–{hi * 100:.{digits}f}%"


def one_in_text(x) -> str:
    """``1 in N``: one decimal below 100, whole numbers above; ``never`` for None."""
    if x is None:
        return "no win"
    return f"1 in {x:,.1f}" if x < 100 else f"1 in {x:,.0f}"


def one_in_range(lo, hi) -> str:
    """The "1 in N" range of an interval (``one_in_low`` .. ``one_in_high``)."""
    def n(x):
        if x is None:
            return "∞"
        return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"

    return f"1 in {n(lo)}–{n(hi)}"


def num(n) -> str:
    return "—" if n is None else f"{n:,}"


def signed(x, digits: int = 2) -> str:
    return "—" if x is None else f"{x:+.{digits}f}"


def signed_pct(x, digits: int = 2) -> str:
    return "—" if x is None else f"{x * 100:+.{digits}f} pts"


# --- shared prose --------------------------------------------------------------------------


def policy_description(policy: str) -> str:
    """One line on what a stored player does (the registry's description, engine_rs_free.players)."""
    from engine_rs_free.players import describe_player

    return describe_player(policy)


def method_paragraphs(doc: dict) -> list[tuple[str, str]]:
    """(heading, text) pairs of the method section (shared by Markdown and HTML)."""
    wo = doc["tables"]["win_odds"]
    players = sorted({r["policy"] for r in wo})
    out = [
        ("Rules",
         "The game is Aces Up as shared/RULES.md fixes it: four piles, deal four cards at a time, a top card "
         "is discarded (forced, automatically) while a higher card of its suit shows on another pile, a card "
         "may move into an empty pile, and the score is the number of cards discarded (48 = won: only the "
         "four Aces left). Variants: " + "; ".join(f"{k}: {v}" for k, v in VARIANT_TEXT.items())
         + ". Option discards=optional makes each discard the player's choice."),
        ("Deal generation",
         "Deal number i of seed s is a pure function of (s, i) (engine_rs_free/deals.py, algorithm version 1): "
         "Philox4x32-10 keyed by the seed, with counter (block, stream, i), drives a Fisher-Yates shuffle of the "
         "ordered deck, each index drawn exactly uniformly by Lemire's multiply-shift method with rejection. "
         "So a deck does not depend on batch size, worker, machine or library version; the catalog's macro "
         "deal_deck(seed, deal) computes any deck in SQL with the same generator, and "
         "'acesup deal --seed S --index I' prints it."),
        ("Solver",
         "The exact clairvoyant solver gives the best score a player who knows the order of the stock can "
         "reach, and a line of play that reaches it. It searches every reachable position (a visited set with exact keys, pile order kept, and an "
         "upper bound that cuts hopeless branches) and returns the best score and whether the deal can be won, "
         "status solved, or gave_up when a node limit stopped it. " + GAVE_UP_NOTE),
        ("Clairvoyant and honest",
         "Clairvoyant play knows the order of the stock (the solver): its rate is the share of deals that can "
         "be won at all. Honest play does not (every policy, and the sampling player pimc): its rate is what a "
         "player can expect. The two answer different questions, and a published figure that does not say "
         "which it is about can be read either way; the claims section tries both. Moving a lone card, or "
         "choosing which empty pile to fill, only changes where later cards land: worth a lot to a player who "
         "knows the stock, nothing to one who does not, which is one reason the two figures are far apart."),
        ("Players",
         " ".join(f"{p}: {policy_description(p)}." for p in players) if players else "No players."),
        ("Statistics",
         f"Each rate is wins / deals over all deals of a variant and player (seeds pooled), with a 95% Wilson "
         f"score interval (z = {WILSON_Z}); \"1 in N\" is deals / wins and its range is 1/high to 1/low. "
         "Policy gaps and the value of information compare two players on the same deals: the interval of a "
         "paired difference is the normal interval of the per-deal differences (mean ± 1.96 sd / √n). "
         "The best honest player of a variant is the one with the highest measured rate, which favours a "
         "lucky one slightly (not corrected for). All numbers are computed from exact integer counts and sums, "
         "so they do not depend on the order rows were written in."),
        ("Sample sizes",
         f"{num(doc['provenance']['result_rows'])} result rows over {num(doc['provenance']['distinct_deals'])} "
         f"distinct deals of seed(s) {', '.join(str(s) for s in doc['provenance']['seeds']) or '—'}; "
         "the deals of each variant and player are in the win-odds table, the index ranges in the provenance."),
    ]
    return out


BRACKET_NOTE = (
    "lower: the honest player with the highest estimated win rate (for adp the mean of 1{won} - z, z the "
    "bound's penalty along its own line, with a normal 95% interval; for other players the plain rate with "
    "its Wilson interval); upper: a proven upper bound on every honest player's win rate (information "
    "relaxation with a penalty, Brown, Smith & Sun 2010), with a normal 95% interval on its per-deal values "
    "(docs/bracket.md)."
)


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


def _bracket_table(doc):
    return (["variant", "lower (player)", "lower 95%", "upper", "upper 95%", "deals", "upper - lower (paired)"],
            [[r["variant"], f"{pct(r['lower_rate'])} ({r['lower_player']})" if r["lower_player"] else "—",
              pct_range(r["lower_low"], r["lower_high"]) if r["lower_player"] else "—",
              f"{pct(r['upper_estimate'])} ({r['upper_method']})", pct_range(r["upper_low"], r["upper_high"]),
              num(r["deals"]),
              f"{pct(r['gap'])} [{pct_range(r['gap_low'], r['gap_high'])}]" if r["gap"] is not None else "—"]
             for r in doc.get("honest_bracket", [])])


def _bracket_claims_table(doc):
    return (["claim", "variant", "stated", "against the honest bracket"],
            [[c["claim"], c["variant"], pct(c["stated_rate"]), c["against_bracket"]]
             for c in doc.get("claims_against_bracket", [])])


def claim_verdict(c: dict) -> str:
    """One sentence: which readings a claim fits, or the nearest if none."""
    if c["fits"]:
        shown = ", ".join(f"{f['variant']} / {f['policy']} ({f['kind']})" for f in c["fits"][:4])
        more = f" and {len(c['fits']) - 4} more" if len(c["fits"]) > 4 else ""
        return f"inside the 95% interval of {len(c['fits'])} of {c['readings']} readings: {shown}{more}"
    n = c["nearest"]
    if n is None:
        return "no measured figure of this variant yet"
    side = "below" if c["stated_rate"] < n["low"] else "above"
    return (f"outside every interval; nearest: {n['variant']} / {n['policy']} ({n['kind']}), "
            f"{pct(n['rate'])} [{pct_range(n['low'], n['high'])}], the claim {n['off_by']:.2f}× {side} it")


# --- Markdown ------------------------------------------------------------------------------


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def cell(s):
        return str(s).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _headline_table(doc):
    return (["variant", "kind", "player", "deals", "wins", "win rate", "95% interval", "odds", "odds range"],
            [[r["variant"], r["kind"], r["player"], num(r["deals"]), num(r["wins"]), pct(r["rate"]),
              pct_range(r["low"], r["high"]), one_in_text(r["one_in"]), one_in_range(r["one_in_low"], r["one_in_high"])]
             for r in doc["tables"]["headline"]])


def _win_odds_table(doc):
    return (["variant", "player", "kind", "deals", "wins", "gave up", "win rate", "95% interval", "odds", "mean score"],
            [[r["variant"], r["policy"], r["kind"], num(r["deals"]), num(r["wins"]), num(r["gave_up"]),
              pct(r["rate"]), pct_range(r["low"], r["high"]), one_in_text(r["one_in"]), f"{r['mean_score']:.2f}"]
             for r in doc["tables"]["win_odds"]])


def _claims_table(doc):
    return (["claim", "source", "stated", "fits"],
            [[c["claim"], c["source"], f"{pct(c['stated_rate'])} ({one_in_text(c['stated_one_in'])})", claim_verdict(c)]
             for c in doc["tables"]["claim_readings"]])


def _claim_detail_table(doc):
    return (["claim", "reading (variant / player)", "kind", "measured", "95% interval", "inside"],
            [[r["claim_id"], f"{r['variant']} / {r['policy']}", r["kind"], pct(r["rate"]), pct_range(r["low"], r["high"]),
              "yes" if r["inside"] else "no"]
             for r in doc["tables"]["claims"]])


def _score_table(doc):
    return (["variant", "player", "kind", "deals", "median score", "≥ 40", "≥ 44", "48 (won)"],
            [[r["variant"], r["policy"], r["kind"], num(r["deals"]), str(r["median_score"]),
              pct(r["reach_40"] / r["deals"], 1), pct(r["reach_44"] / r["deals"], 1), pct(r["reach_48"] / r["deals"], 1)]
             for r in doc["tables"]["score_summary"]])


def _gap_table(doc):
    return (["variant", "player", "kind", "paired deals", "solver wins, player loses", "95% interval",
             "win-rate gap", "95% interval", "mean score gap", "95% interval", "player wins, solver not",
             "solver gave up, player lost"],
            [[r["variant"], r["policy"], r["kind"], num(r["deals"]), f"{num(r['reference_only'])} ({pct(r['share'])})",
              pct_range(r["share_low"], r["share_high"]), signed_pct(r["win_gap"]),
              f"{signed_pct(r['win_gap_low'])} to {signed_pct(r['win_gap_high'])}",
              signed(r["mean_score_gap"]), f"{signed(r['score_gap_low'])} to {signed(r['score_gap_high'])}",
              num(r["policy_only"]), num(r["undecided"])]
             for r in doc["tables"]["policy_gap"]])


def _honest_gap_table(doc):
    return (["variant", "best honest", "other player", "paired deals", "best wins, other loses",
             "other wins, best loses", "win-rate gap", "95% interval", "mean score gap", "95% interval"],
            [[r["variant"], r["reference"], r["policy"], num(r["deals"]), num(r["reference_only"]),
              num(r["policy_only"]), signed_pct(r["win_gap"]),
              f"{signed_pct(r['win_gap_low'])} to {signed_pct(r['win_gap_high'])}",
              signed(r["mean_score_gap"]), f"{signed(r['score_gap_low'])} to {signed(r['score_gap_high'])}"]
             for r in doc["tables"]["honest_gap"]])


def _voi_table(doc):
    return (["variant", "clairvoyant", "best honest", "paired deals", "value of seeing the stock", "95% interval",
             "clairvoyant / honest", "honest share of winnable deals"],
            [[r["variant"], f"{pct(r['reference_rate'])} [{pct_range(r['reference_low'], r['reference_high'])}]",
              f"{r['honest_policy']}: {pct(r['honest_rate'])} [{pct_range(r['honest_low'], r['honest_high'])}]",
              num(r["paired_deals"]), signed_pct(r["value"]),
              f"{signed_pct(r['value_low'])} to {signed_pct(r['value_high'])}",
              "—" if r["ratio"] is None else f"{r['ratio']:.2f}×", pct(r["honest_share"], 1)]
             for r in doc["tables"]["value_of_information"]])


def _ladder_table(doc):
    return (["preset", "discards", "restriction", "deals", "wins", "gave up", "win rate", "95% interval",
             "wins kept vs unrestricted (paired)"],
            [[r["preset"], r["discards"], r["restriction"], num(r["deals"]), num(r["wins"]), num(r["gave_up"]),
              pct(r["rate"]),
              pct_range(r["low"], r["high"]),
              "—" if r["share_of_base"] is None else f"{pct(r['share_of_base'], 1)} of {num(r['base_wins'])}"]
             for r in doc["tables"]["solver_ladder"]])


def _coverage_table(doc):
    return (["seed", "variant", "player", "run", "deals", "deal indices", "contiguous"],
            [[str(r["seed"]), r["variant"], r["policy"], r["run_id"], num(r["deals"]),
              f"{r['first_deal']}..{r['last_deal']}", "yes" if r["contiguous"] else "no"]
             for r in doc["tables"]["coverage"]])


def _runs_table(doc):
    rows = []
    for r in doc["provenance"]["runs"]:
        spec = r.get("spec") or {}
        rows.append([r["run_id"], str(r.get("seed")), str(r.get("start")), num(spec.get("deals")),
                     ", ".join(spec.get("variants") or []), ", ".join(spec.get("policies") or []),
                     str(r.get("state")), num(r["batches_done"]), num(r["files"]), num(r["rows_done"]),
                     str(r.get("engine_version"))])
    return (["run", "seed", "start", "deals", "variants", "players", "state", "batches done", "files", "rows",
             "engine"], rows)


def _query_table(doc):
    code = doc["provenance"]["code"]
    rows = [[f"queries/{k}.sql", v] for k, v in code["queries"].items()]
    rows.append(["catalog macros", code["catalog_macros"]])
    rows += [[f"queries/{k}", v] for k, v in code["report_code"].items()]
    return (["file", "sha256"], rows)


def render_markdown(doc: dict) -> str:
    """The report as Markdown (deterministic: depends only on ``doc``)."""
    p = doc["provenance"]
    md = [f"# {doc['title']}", "",
          f"acesup {doc['package_version']} · {num(p['result_rows'])} result rows · "
          f"{num(p['distinct_deals'])} distinct deals · seed(s) {', '.join(str(s) for s in p['seeds']) or '—'}", "",
          "Win rates with 95% Wilson intervals. *Clairvoyant*: the exact solver, which knows the order of the "
          "stock. *Honest*: the best player that does not. " + GAVE_UP_NOTE, ""]
    md += ["## Headline odds", "", _md_table(*_headline_table(doc)), ""]
    md += ["## Honest play, bracketed", "", BRACKET_NOTE, "", _md_table(*_bracket_table(doc)), "",
           "The published claims against the bracket:", "", _md_table(*_bracket_claims_table(doc)), ""]
    md += ["All variants and players:", "", _md_table(*_win_odds_table(doc)), ""]
    md += ["## How the published claims hold up", "",
           "None of the sources gives a method or a sample size, so each claim is set against every measured "
           "figure of its variant (clairvoyant with and without restrictions, honest players, forced and optional "
           "discards).", "", _md_table(*_claims_table(doc)), "",
           "<details><summary>Every reading</summary>", "", _md_table(*_claim_detail_table(doc)), "", "</details>", ""]
    md += ["## Score distributions", "",
           "Final score (cards discarded, 48 = won) per deal; the full counts per score are in report.json "
           "(tables.score_distribution) and as charts in index.html. Solver scores are its best score.", "",
           _md_table(*_score_table(doc)), ""]
    md += ["## Policy gaps", "",
           "Each player against the unrestricted solver on the same deals (paired).", "",
           _md_table(*_gap_table(doc)), "",
           "The best honest player of each variant (as in the headline) against the other honest players on the "
           "deals both played (paired; a positive gap favours the best player).", "",
           _md_table(*_honest_gap_table(doc)), ""]
    md += ["## Value of information", "",
           "What seeing the stock is worth: the clairvoyant solver against the best honest player, on the same "
           "deals.", "", _md_table(*_voi_table(doc)), ""]
    md += ["## The variants", "",
           *[f"- **{k}**: {v}." for k, v in VARIANT_TEXT.items()],
           "- **+optional**: discards are the player's choice (discards=optional).", "",
           "The solver ladder: the clairvoyant win rate under each restriction of RULES.md ("
           + "; ".join(f"{k}: {v}" for k, v in RESTRICTION_TEXT.items())
           + ") and with optional discards. The last column is the share of the unrestricted solver's wins "
           "(forced discards, same deals) that the rung still wins.", "", _md_table(*_ladder_table(doc)), ""]
    md += ["## Method", ""]
    for head, text in method_paragraphs(doc):
        md += [f"**{head}.** {text}", ""]
    md += ["## Provenance", "",
           f"- package: acesup {doc['package_version']}; catalog version {p['code']['catalog_version']}",
           f"- result files: {num(p['result_files'])}, rows: {num(p['result_rows'])}, "
           f"dataset sha256 (over every file's path and sha256): `{p['dataset_sha256']}`",
           f"- seeds: {', '.join(str(s) for s in p['seeds']) or '—'}",
           f"- rows repeating a key (seed, deal, variant, policy) of another row: {num(p['duplicate_keys'])}",
           "- build time, git commit and library versions: report/build.json (kept out of this file so that "
           "a rebuild from the same data is byte-identical)",
           "- every file's path, rows and sha256: report.json (provenance.files)", "",
           "Runs:", "", _md_table(*_runs_table(doc)), "",
           "Deals covered:", "", _md_table(*_coverage_table(doc)), "",
           "Queries and code:", "", _md_table(*_query_table(doc)), ""]
    return "\n".join(md)


# --- HTML ----------------------------------------------------------------------------------

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; margin: 0; background: #fafafa; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5rem 2rem 4rem; background: #fff; }
h1 { font-size: 1.7rem; margin-bottom: .2rem; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; margin-top: 2.2rem; }
nav a { margin-right: .9rem; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .86rem; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #666; font-size: .9rem; }
.charts { display: flex; flex-wrap: wrap; gap: .6rem; }
.legend span { display: inline-block; width: .8rem; height: .8rem; margin: 0 .3rem 0 .8rem; vertical-align: middle; }
code { font-size: .85em; }
details { margin: .5rem 0; }
"""


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    def is_num(s: str) -> bool:
        t = s.replace(",", "").replace("%", "").replace("+", "").replace("−", "-").replace(" pts", "")
        try:
            float(t)
            return True
        except ValueError:
            return False

    out = ["<table>", "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(
            f'<td class="n">{escape(str(c))}</td>' if is_num(str(c)) else f"<td>{escape(str(c))}</td>" for c in r)
            + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _legend(claims: bool = False) -> str:
    claim = f'<span style="background:{plots.CLAIM}"></span>published claim' if claims else ""
    return (f'<p class="legend muted"><span style="background:{plots.CLAIRVOYANT}"></span>clairvoyant'
            f'<span style="background:{plots.HONEST}"></span>honest{claim}</p>')


def _score_charts(doc) -> str:
    """Score histograms per variant, one per player (rows shaped with Polars)."""
    import polars as pl

    rows = doc["tables"]["score_distribution"]
    if not rows:
        return "<p>No results yet.</p>"
    df = pl.DataFrame(rows)
    series = (df.sort("variant", "kind", "policy", "score")
              .group_by("variant", "kind", "policy", maintain_order=True)
              .agg(pl.col("deals").alias("counts")))
    out = []
    for variant in series["variant"].unique(maintain_order=True).to_list():
        out.append(f"<h3>{escape(variant)}</h3>")
        out.append('<div class="charts">')
        for r in series.filter(pl.col("variant") == variant).iter_rows(named=True):
            out.append(plots.histogram(r["counts"], title=f"{r['policy']} ({r['kind']})", kind=r["kind"]))
        out.append("</div>")
    return "\n".join(out)


def _claims_charts(doc) -> str:
    out = []
    readings = doc["tables"]["claims"]
    claims = doc["tables"]["claim_readings"]
    for preset in sorted({c["claim_preset"] for c in claims}):
        cs = [{"label": f"{one_in_text(c['stated_one_in'])} ({pct(c['stated_rate'])})", "rate": c["stated_rate"]}
              for c in claims if c["claim_preset"] == preset]
        seen = set()
        rs = []
        for r in sorted((r for r in readings if r["claim_preset"] == preset), key=lambda r: (r["rate"], r["variant"], r["policy"])):
            key = (r["variant"], r["policy"])
            if key in seen:
                continue
            seen.add(key)
            rs.append({"label": f"{r['variant']} / {r['policy']}", "rate": r["rate"], "low": r["low"],
                       "high": r["high"], "kind": r["kind"]})
        if rs:
            out.append(f"<h3>{escape(preset)}</h3>")
            out.append(plots.claims_chart(rs, cs, title=f"Published claims about {preset} against measured win rates"))
    return "\n".join(out)


def render_html(doc: dict, info: dict) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG, no script, no external resource)."""
    p = doc["provenance"]
    head_rows = [{"label": f"{r['variant']}: {r['player']}", "rate": r["rate"], "low": r["low"], "high": r["high"],
                  "kind": r["kind"], "note": f"{pct(r['rate'])} · {one_in_text(r['one_in'])}"}
                 for r in doc["tables"]["headline"]]
    ladder_rows = [{"label": f"{r['preset']} {r['discards']}: {r['restriction']}", "rate": r["rate"], "low": r["low"],
                    "high": r["high"], "kind": "clairvoyant"} for r in doc["tables"]["solver_ladder"]]
    h = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
         '<meta name="viewport" content="width=device-width, initial-scale=1">',
         f"<title>{escape(doc['title'])}</title>", f"<style>{CSS}</style>", "</head>", "<body>", "<main>",
         f"<h1>{escape(doc['title'])}</h1>",
         f'<p class="muted">acesup {escape(doc["package_version"])} · {num(p["result_rows"])} result rows · '
         f'{num(p["distinct_deals"])} distinct deals · built {escape(str(info.get("built_at")))} from commit '
         f'<code>{escape(str(info.get("git_commit") or "unknown"))}</code>'
         f'{" (modified)" if info.get("git_dirty") else ""}</p>',
         "<nav>" + "".join(f'<a href="#{k}">{escape(t)}</a>' for k, t in SECTIONS) + "</nav>",
         "<p>Win rates with 95% Wilson intervals. <b>Clairvoyant</b>: the exact solver, which knows the order of "
         "the stock. <b>Honest</b>: the best player that does not. " + escape(GAVE_UP_NOTE) + "</p>"]
    h += ['<section id="headline">', "<h2>Headline odds</h2>", _legend()]
    if head_rows:
        h.append(plots.interval_chart(head_rows, title="Win rate per variant, clairvoyant and honest"))
    h += [_html_table(*_headline_table(doc)), "</section>"]
    h += ['<section id="bracket">', "<h2>Honest play, bracketed</h2>", f"<p>{escape(BRACKET_NOTE)}</p>",
          _html_table(*_bracket_table(doc)), "<h3>The published claims against the bracket</h3>",
          _html_table(*_bracket_claims_table(doc)), "</section>"]
    h += ['<section id="players">', "<h3>All variants and players</h3>", _html_table(*_win_odds_table(doc)),
          "</section>"]
    h += ['<section id="claims">', "<h2>How the published claims hold up</h2>",
          "<p>None of the sources gives a method or a sample size, so each claim is set against every measured "
          "figure of its variant (clairvoyant with and without restrictions, honest players, forced and optional "
          "discards). Log scale; rates under 0.1% are drawn at 0.1%.</p>", _legend(claims=True), _claims_charts(doc),
          _html_table(*_claims_table(doc)),
          "<details><summary>Every reading</summary>", _html_table(*_claim_detail_table(doc)), "</details>",
          "</section>"]
    h += ['<section id="scores">', "<h2>Score distributions</h2>",
          "<p>Deals per final score (cards discarded, 0..48; the outlined bar at 48 is the wins). "
          "Solver scores are its best score.</p>", _score_charts(doc), _html_table(*_score_table(doc)), "</section>"]
    h += ['<section id="gaps">', "<h2>Policy gaps</h2>",
          "<p>Each player against the unrestricted solver on the same deals (paired).</p>",
          _html_table(*_gap_table(doc)),
          "<p>The best honest player of each variant (as in the headline) against the other honest players on the "
          "deals both played (paired; a positive gap favours the best player).</p>",
          _html_table(*_honest_gap_table(doc)), "</section>"]
    h += ['<section id="voi">', "<h2>Value of information</h2>",
          "<p>What seeing the stock is worth: the clairvoyant solver against the best honest player, on the same "
          "deals.</p>", _html_table(*_voi_table(doc)), "</section>"]
    h += ['<section id="variants">', "<h2>The variants</h2>", "<ul>",
          *[f"<li><b>{escape(k)}</b>: {escape(v)}.</li>" for k, v in VARIANT_TEXT.items()],
          "<li><b>+optional</b>: discards are the player's choice (discards=optional).</li>", "</ul>",
          "<p>The solver ladder: the clairvoyant win rate under each restriction ("
          + escape("; ".join(f"{k}: {v}" for k, v in RESTRICTION_TEXT.items()))
          + ") and with optional discards; the last column is the share of the unrestricted solver's wins on the "
          "same deals that the rung still wins.</p>"]
    if ladder_rows:
        h.append(plots.interval_chart(ladder_rows, title="Clairvoyant win rate by solver restriction"))
    h += [_html_table(*_ladder_table(doc)), "</section>"]
    h += ['<section id="method">', "<h2>Method</h2>"]
    for head, text in method_paragraphs(doc):
        h.append(f"<p><b>{escape(head)}.</b> {escape(text)}</p>")
    h.append("</section>")
    h += ['<section id="provenance">', "<h2>Provenance</h2>", "<ul>",
          f"<li>package: acesup {escape(doc['package_version'])}; catalog version {p['code']['catalog_version']}</li>",
          f"<li>build: {escape(str(info.get('built_at')))}, git commit "
          f"<code>{escape(str(info.get('git_commit') or 'unknown'))}</code>"
          f"{' with local changes' if info.get('git_dirty') else ''}, Python {escape(str(info.get('python')))}, "
          f"DuckDB {escape(str(info.get('duckdb')))}, Polars {escape(str(info.get('polars')))}, "
          f"pyarrow {escape(str(info.get('pyarrow')))} (report/build.json)</li>",
          f"<li>result files: {num(p['result_files'])}, rows: {num(p['result_rows'])}, dataset sha256 "
          f"<code>{escape(p['dataset_sha256'])}</code> (over every file's path and sha256; each file is listed in "
          f"report.json)</li>",
          f"<li>seeds: {escape(', '.join(str(s) for s in p['seeds']) or '—')}</li>",
          f"<li>rows repeating a key (seed, deal, variant, policy) of another row: {num(p['duplicate_keys'])}</li>", "</ul>",
          "<h3>Runs</h3>", _html_table(*_runs_table(doc)), "<h3>Deals covered</h3>", _html_table(*_coverage_table(doc)),
          "<h3>Queries and code</h3>", _html_table(*_query_table(doc)),
          "<details><summary>Result files</summary>",
          _html_table(["file", "rows", "bytes", "sha256"],
                      [[f["path"], num(f["rows"]), num(f["bytes"]), f["sha256"]] for f in p["files"]]),
          "</details>", "</section>", "</main>", "</body>", "</html>"]
    return "\n".join(h) + "\n"
