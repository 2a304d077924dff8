"""The honest bracket in the product: a real pipeline run with both ends, the SQL, report.json and the page.

Two nights on the session's local Ray: greedy and ``adp`` on strict (quick) and a few
standard deals, then more deals with ``bound`` and ``pimc`` added, so the bracket's two ends reach
the aggregates in different steps. adp, pimc and bound write the ``value`` column; ``queries/honest_bracket.sql``
(over the aggregates only) is checked bit for bit against its twin over the per-deal rows
(tests/honest_bracket_rows.sql) and against a recomputation with NumPy from the raw Parquet
files, and the report carries the bracket (report.json ``honest_bracket``, report.md, index.html).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ADP = "adp:samples=4,exact=4,psamples=8"
BOUND = "bound:samples=8"
PIMC = "pimc:samples=2"


@pytest.fixture(scope="module")
def bracket_data(ray_local, tmp_path_factory):
    from pipeline.execute import execute_run
    from pipeline.spec import load_spec

    from queries.aggregates import update_aggregates

    data = tmp_path_factory.mktemp("bracket") / "data"
    night1 = load_spec(None, seed=5, start=0, deals=80, variants="strict,standard", policies=["greedy", ADP],
                       caps={f"standard/{ADP}": 8}, batch_size=40, data=str(data))
    execute_run(night1, progress=False)
    assert update_aggregates(str(data)).total_rows == 3 * 80 + 8
    spec = load_spec(None, seed=5, start=0, deals=120, variants="strict,standard",
                     policies=["greedy", ADP, BOUND, PIMC],
                     caps={f"standard/{ADP}": 12, f"standard/{BOUND}": 12, f"standard/{PIMC}": 12}, batch_size=40,
                     data=str(data))
    execute_run(spec, progress=False)
    step = update_aggregates(str(data))
    assert step.total_rows == 5 * 120 + 3 * 12 and not step.rebuilt
    return data


def _raw(data: Path):
    files = sorted(str(p) for p in Path(data, "results").rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(f, partitioning=None) for f in files]).to_pydict()


def _normal(x):
    x = np.asarray(x, float)
    m = float(x.mean())
    half = 1.96 * float(x.std(ddof=1)) / math.sqrt(len(x))
    return m, m - half, m + half


def test_value_column_and_the_bracket_query(bracket_data):
    import duckdb

    from queries.catalog import build_catalog, run_query

    raw = _raw(bracket_data)
    rows = list(zip(raw["variant"], raw["policy"], raw["deal"], raw["won"], raw["value"]))
    assert all(v is None for _, p, _, _, v in rows if p == "greedy")
    assert all(v is not None for _, p, _, _, v in rows if p != "greedy")
    con = duckdb.connect(str(build_catalog(bracket_data)), read_only=True)
    try:
        table = run_query(con, "honest_bracket")
        twin = con.sql((Path(__file__).parent / "honest_bracket_rows.sql").read_text()).to_arrow_table()
        got = {r["variant"]: r for r in table.to_pylist()}
        kinds = dict(con.execute("SELECT DISTINCT policy, player_kind(policy) FROM results").fetchall())
    finally:
        con.close()
    assert kinds[next(p for p in kinds if p.startswith("bound"))] == "bound"
    assert kinds[next(p for p in kinds if p.startswith("adp"))] == "honest"
    assert set(got) == {"strict", "standard"}
    # the aggregates' query and its twin over the rows: the same table, bit for bit
    assert table.column_names == twin.column_names and table.to_pylist() == twin.to_pylist()
    from tests.queries_data import wilson

    for variant, r in got.items():
        # the lower end: the honest player with the highest estimate (mean value, or plain win rate)
        honest = {p for vv, p, *_ in rows if vv == variant and not p.startswith("bound")}
        per = {p: {d: (w, float(w) if v is None else v) for vv, pp, d, w, v in rows if vv == variant and pp == p}
               for p in honest}
        ranked = sorted(sorted(honest), key=lambda p: -np.mean([v for _, v in per[p].values()]))
        best, second = ranked[0], ranked[1]
        low = per[best]
        up = {d: v for vv, p, d, w, v in rows if vv == variant and p.startswith("bound")}
        assert r["lower_player"] == best and r["upper_method"].startswith("bound:")
        assert r["deals"] == len(up) and r["lower_deals"] == len(low)
        wins = sum(w for w, _ in low.values())
        assert r["lower_wins"] == wins
        m, lo, hi = _normal([v for _, v in low.values()])
        if not best.startswith("greedy"):
            assert r["lower_interval"] == "normal"
            assert [r["lower_rate"], r["lower_low"], r["lower_high"]] == pytest.approx([m, lo, hi], abs=1e-8)
        else:
            assert r["lower_interval"] == "wilson"
            assert [r["lower_low"], r["lower_high"]] == pytest.approx(list(wilson(wins, len(low))), abs=1e-12)
        for (m, lo, hi), keys in ((_normal(list(up.values())), ("upper_estimate", "upper_low", "upper_high")),
                                  (_normal([up[d] - low[d][1] for d in up]), ("gap", "gap_low", "gap_high"))):
            assert [r[k] for k in keys] == pytest.approx([m, lo, hi], abs=1e-8)
        assert r["gap_deals"] == len(up)
        assert r["upper_estimate"] >= r["lower_rate"] - 0.05
        # the runner-up and the lower end's paired lead over it, on the deals both played
        common = sorted(set(low) & set(per[second]))
        assert r["runner_up"] == second and r["lead_deals"] == len(common) > 1
        assert [r["lead"], r["lead_low"], r["lead_high"]] == pytest.approx(
            list(_normal([low[d][1] - per[second][d][1] for d in common])), abs=1e-8)


def test_report_shows_the_bracket(bracket_data):
    from queries.report import build_report

    build_report(bracket_data)
    doc = json.loads((bracket_data / "report" / "report.json").read_text())
    assert [r["variant"] for r in doc["honest_bracket"]] == ["standard", "strict"]
    assert {c["claim_id"] for c in doc["claims_against_bracket"]} >= {"one_in_200", "strict_one_in_270"}
    assert all(c["against_bracket"] in ("below", "inside", "above") for c in doc["claims_against_bracket"])
    md = (bracket_data / "report" / "report.md").read_text()
    html = (bracket_data / "report" / "index.html").read_text()
    assert "## Honest play, bracketed" in md and 'id="bracket"' in html
    # the bound is not an honest player: the headline's honest figure never comes from it
    assert all(not h["player"].startswith("bound") for h in doc["headline"])
    # nor is it a player in the table of every player's win rate: its plain wins (those of its
    # clairvoyant line) would read as an upper bound below the players it bounds. The full table
    # keeps its rows, and the page says where its figure is.
    bound_display = next(p["display"] for p in doc["players"] if p["name"].startswith("bound"))
    pivot = md.split("## Every player", 1)[1].split("The players:", 1)[0]
    assert f"| {bound_display} |" not in pivot
    adp_display = next(p["display"] for p in doc["players"] if p["name"].startswith("adp"))
    assert f"| {adp_display} |" in pivot
    words = " ".join(pivot.split())
    assert "The upper bound is left out of this table" in words and "is the upper end of the bracket below" in words
    full = md.split("Every variant and player, in full", 1)[1].split("## ", 1)[0]
    assert f"| {bound_display} |" in full
    page = html.split('<section id="players">', 1)[1].split("</section>", 1)[0]
    assert page.count("The upper bound is left out of this table") == 1
    page_pivot = page.split("<h3>The players</h3>", 1)[0]
    assert f">{adp_display}</td>" in page_pivot and f">{bound_display}</td>" not in page_pivot
