"""The report's pages: report.md and index.html rendered from the report document with Jinja2.

``render_markdown(doc)`` and ``render_html(doc)`` take the document that
report.json holds and nothing else, so a rebuild from the same data gives the
same bytes (no times, no machine facts: those go to build.json). The words
are in ``queries/templates/``: ``prose.j2`` holds every sentence both pages
share (the answer per variant, the verdict on each published claim, what
changed since last night), ``report.md.j2`` and ``report.html.j2`` lay them
out, ``report.css`` styles the page. The HTML environment autoescapes; the
two environments differ only in how they emphasise (``strong``), name a player
(``player``: in italics), quote code (``code``) and escape a table cell.

This module shapes the document into what the templates read (``page``):
one answer per variant, tables as lists of text cells, and the charts as SVG
from queries/plots.py. Every number shown is a number of the document,
formatted; nothing is computed here that report.json does not hold, except
ratios and differences of two of its numbers, said as such on the page.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

from . import plots

TEMPLATES = Path(__file__).resolve().parent / "templates"

PRESET_ORDER = ("standard", "strict", "easy", "reverse")

VARIANT_TEXT = {
    "standard": "any top card may move into an empty pile (a pile's only card too)",
    "strict": "as standard, but only an Ace may move into an empty pile",
    "easy": "any single card of another pile, at any depth, may move into an empty pile",
    "reverse": "as standard, with the Ace ranking lowest; won with the four Kings left",
}

GAVE_UP_NOTE = (
    "Solver deals whose search hit its node limit (status gave_up) count as lost for each "
    "estimate and lower bound and as won for the upper bound (Solvitaire's convention), so an "
    "unfinished search widens an interval and never narrows it."
)

SECTIONS = (
    ("answer", "The answer"),
    ("nights", "Night by night"),
    ("players", "Every player"),
    ("bracket", "Honest play, bracketed"),
    ("claims", "How the published claims hold up"),
    ("scores", "Score distributions"),
    ("gaps", "Policy gaps"),
    ("voi", "Value of information"),
    ("ladder", "The solver ladder"),
    ("method", "Method"),
    ("provenance", "Provenance"),
)
"""(id, heading) of each section, in page order (the page's navigation); ``bracket`` only where
the document has an honest bracket."""

BRACKET_NOTE = (
    "The lower end is the honest player with the highest estimated win rate (for a player that records "
    "a per-deal value, adp and pimc, the mean of that value with a normal 95% interval; for any "
    "other player its plain win rate with its Wilson interval); its lead is how much more it wins than "
    "the next honest player, on the deals both played (paired). The upper end is a proven upper bound on "
    "the win rate of every honest player (an information relaxation with a penalty, Brown, Smith & Sun "
    "2010: a clairvoyant search charged for using what it could not have known), with a normal 95% "
    "interval on its per-deal values. The gap is the upper end minus the lower end on the deals both "
    "played (paired); docs/bracket.md has the method."
)


# --- formatting (the page's only number formats) -------------------------------------------


def pct(x, digits: int = 2) -> str:
    """A rate as a percentage (``0.1234`` -> ``12.34%``); a dash for None."""
    if x is None:
        return "—"
    return f"{x * 100:.{digits}f}%"


def pct_range(lo, hi, digits: int = 2) -> str:
    if lo is None or hi is None:
        return "—"
    return f"{lo * 100:.{digits}f}–{hi * 100:.{digits}f}%"


def rate_text(x) -> str:
    """A rate for a sentence: one decimal from 10%, two below (``29.5%``, ``2.93%``, ``0.37%``)."""
    if x is None:
        return "—"
    return pct(x, 1 if x >= 0.1 else 2)


def one_in_text(x) -> str:
    """``1 in N``: one decimal below 100, whole numbers above; ``no win`` for None."""
    if x is None:
        return "no win"
    return f"1 in {x:,.1f}" if x < 100 else f"1 in {x:,.0f}"


def about_one_in(x) -> str:
    """``1 in N`` for a sentence: whole numbers from 10 (``1 in 34``), one decimal below (``1 in 3.4``)."""
    if x is None:
        return "no win yet"
    return f"1 in {x:,.1f}" if x < 10 else f"1 in {x:,.0f}"


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


def gap_text(x, lo, hi, *, points: bool) -> str:
    """A paired difference and its interval: ``+5.30 pts (+4.32 to +6.28)``; ``points``: rates in points."""
    if points:
        lo_t = "—" if lo is None else f"{lo * 100:+.2f}"
        hi_t = "—" if hi is None else f"{hi * 100:+.2f}"
        return f"{signed_pct(x)} ({lo_t} to {hi_t})"
    return f"{signed(x)} ({signed(lo)} to {signed(hi)})"


def by_variant(rows: list[dict], key: str = "variant") -> list[dict]:
    """Rows in the variant order of RULES.md (standard, strict, easy, reverse), otherwise as they come."""
    return sorted(rows, key=lambda r: _variant_key(r[key]))


def points(x) -> str:
    """A difference of two rates in percentage points (``0.0123`` -> ``1.23 points``)."""
    return "—" if x is None else f"{x * 100:.2f} points"


def times(x) -> str:
    """A ratio in words: ``about 6 times``, ``about 1.5 times``."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"about {x:,.0f} times" if x >= 3 else f"about {x:,.1f} times"


def variant_title(variant: str) -> str:
    """``standard`` -> ``Standard``; ``strict+optional`` -> ``Strict, optional discards``."""
    preset, _, rest = variant.partition("+")
    opts = [o for o in rest.split("+") if o]
    words = {"optional": "optional discards"}
    return preset.capitalize() + "".join(f", {words.get(o, o)}" for o in opts)


def _variant_key(variant: str) -> tuple:
    preset, _, rest = variant.partition("+")
    order = PRESET_ORDER.index(preset) if preset in PRESET_ORDER else len(PRESET_ORDER)
    return (order, preset, rest != "", rest)


def _is_number(s: str) -> bool:
    t = s.replace(",", "").replace("%", "").replace("+", "").replace("−", "-").replace(" pts", "")
    t = t.replace("×", "")
    try:
        float(t)
        return True
    except ValueError:
        return False


# --- players -------------------------------------------------------------------------------


def player_rows(win_odds: list[dict], fingerprints: dict[str, dict[str, str]] | None = None) -> list[dict]:
    """The players table of the report: one row per stored player name.

    ``name`` (the canonical name, the key in the data and in SQL), ``display`` (a short name
    people can read), ``kind`` (as the SQL's player_kind says), ``description`` (one line, from
    the player registry engine_rs_free.players) and, where ``fingerprints`` (player -> variant
    -> digest, pipeline.fingerprint) gives any, the player's behaviour ``fingerprint`` per
    variant (a fingerprint is computed per variant: the rules are part of the behaviour). A
    name the registry no longer knows is shown as it is.
    """
    from engine_rs_free.players import UnknownPlayerError, describe_player, display_name

    kinds: dict[str, str] = {}
    for r in win_odds:
        kinds.setdefault(r["policy"], r["kind"])
    rows = []
    for name in sorted(kinds, key=lambda n: (kinds[n] != "honest", n)):
        try:
            display, description = display_name(name), describe_player(name)
        except UnknownPlayerError:
            display, description = name, "a player this version of acesup does not know"
        row = {"name": name, "display": display, "kind": kinds[name], "description": description}
        if fingerprints and name in fingerprints:
            row["fingerprint"] = dict(sorted(fingerprints[name].items(), key=lambda kv: _variant_key(kv[0])))
        rows.append(row)
    return rows


class Names:
    """Display names and descriptions of the document's players (its ``players`` table)."""

    def __init__(self, doc: dict):
        rows = doc.get("players") or player_rows(doc["tables"].get("win_odds", []))
        self.rows = rows
        self._by_name = {r["name"]: r for r in rows}

    def __call__(self, name: str | None) -> str:
        if name is None:
            return "—"
        r = self._by_name.get(name)
        if r is not None:
            return r["display"]
        try:
            from engine_rs_free.players import display_name

            return display_name(name)
        except ValueError:
            return name

    def description(self, name: str) -> str:
        r = self._by_name.get(name)
        return r["description"] if r else ""


# --- the answer ----------------------------------------------------------------------------


def bracket_rows(doc: dict) -> list[dict]:
    """The honest bracket rows (issue "Honest play, bracketed"), or [] where the document has none."""
    return list(doc.get("honest_bracket") or doc["tables"].get("honest_bracket") or [])


def claim_verdict(c: dict, honest: dict | None, clairvoyant: dict | None, bracket: dict | None,
                  names: Names) -> dict:
    """Where a claim stands against the variant's figures, as a code the prose turns into words.

    ``where``: ``below`` (under the best honest player's interval: too pessimistic),
    ``honest`` (inside it); with an honest bracket: ``bracket`` (above good honest play,
    inside the bracket on optimal honest play), ``above_bound`` (above the bracket's upper
    end: no honest player wins that often) or ``above_all`` (above the clairvoyant interval
    too); without one: ``between`` (above honest play and below clairvoyant play),
    ``clairvoyant`` (inside the clairvoyant interval) or ``above_all``. ``None`` when
    nothing is measured. ``fit`` names the measured figure whose interval holds the claim
    best (claim_readings' first fit), if any; ``ratio`` is the best honest rate over the
    stated rate (for ``below``); ``clairvoyant_fit`` says whether the claim lies inside the
    clairvoyant interval (for ``above_bound``).
    """
    rate = c["stated_rate"]
    where = None
    upper = None if bracket is None else bracket.get("upper_high")
    in_clair = (clairvoyant is not None and clairvoyant["low"] is not None and clairvoyant["high"] is not None
                and clairvoyant["low"] <= rate <= clairvoyant["high"])
    if honest is not None and honest["low"] is not None and rate < honest["low"]:
        where = "below"
    elif honest is not None and honest["high"] is not None and rate <= honest["high"]:
        where = "honest"
    elif upper is not None:
        where = "bracket" if rate <= upper else "above_bound"
        if where == "above_bound" and clairvoyant is not None and clairvoyant["high"] is not None \
                and rate > clairvoyant["high"]:
            where = "above_all"
    elif clairvoyant is not None and clairvoyant["low"] is not None and rate < clairvoyant["low"]:
        where = "between"
    elif in_clair:
        where = "clairvoyant"
    elif clairvoyant is not None:
        where = "above_all"
    fit = c["fits"][0] if c["fits"] else None
    near = c.get("nearest")
    return {
        "claim": c["claim"],
        "source": c["source"],
        "stated_rate": rate,
        "stated_one_in": c["stated_one_in"],
        "where": where,
        "clairvoyant_fit": in_clair,
        "fit": None if fit is None else {"display": names(fit["policy"]), "kind": fit["kind"],
                                         "variant": fit["variant"]},
        "nearest": None if near is None else {"display": names(near["policy"]), "variant": near["variant"],
                                              "rate": near["rate"], "low": near["low"], "high": near["high"]},
        "fits": len(c["fits"]),
        "readings": c["readings"],
        "ratio": (honest["rate"] / rate) if (where == "below" and honest and rate > 0) else None,
    }


def bracket_view(row: dict, names: Names) -> dict:
    """A row of the honest bracket (queries/honest_bracket.sql) as the answer says it.

    Adds ``lower_display`` (the lower end's player by display name, or None), ``runner_display``
    (the runner-up's, or None), ``low``/``high``
    (the two estimates, ``lower_rate`` and ``upper_estimate``), ``low95``/``high95`` (the
    outer 95% ends: the lower end's low and the bound's high, kept within 0..1: a mean of
    per-deal values with a normal interval can step outside it on few deals) and their
    "1 in N" (``low_one_in``, ``high_one_in``).
    """
    def clip(v):
        return None if v is None else min(1.0, max(0.0, v))

    lower = row.get("lower_rate") if row.get("lower_player") is not None else None
    low95 = clip(row.get("lower_low")) if lower is not None else None
    view = dict(row, lower_display=None if lower is None else names(row["lower_player"]),
                runner_display=None if row.get("runner_up") is None else names(row["runner_up"]),
                low=clip(lower), high=clip(row.get("upper_estimate")), low95=low95, high95=clip(row.get("upper_high")))
    view["low_one_in"] = 1 / view["low"] if view["low"] else None
    view["high_one_in"] = 1 / view["high"] if view["high"] else None
    return view


def answers(doc: dict, names: Names) -> list[dict]:
    """One answer per variant preset with measured figures, in the order of RULES.md.

    Each: ``variant``, ``title``, ``rule`` (what the variant is), ``honest`` and
    ``clairvoyant`` (rows of the headline table with ``display``), ``bracket`` (the honest
    bracket row or None), ``optional`` (the clairvoyant figure with optional discards, or
    None) and ``claims`` (claim verdicts, lowest stated rate first).
    """
    head = doc["tables"].get("headline", [])
    by = {(r["variant"], r["kind"]): dict(r, display=names(r["player"])) for r in head}
    brackets = {r["variant"]: r for r in bracket_rows(doc)}
    claims = doc["tables"].get("claim_readings", [])
    out = []
    for variant in sorted({r["variant"] for r in head if "+" not in r["variant"]}, key=_variant_key):
        honest, clair = by.get((variant, "honest")), by.get((variant, "clairvoyant"))
        bracket = brackets.get(variant)
        if bracket is not None:
            bracket = bracket_view(bracket, names)
        optional = by.get((f"{variant}+optional", "clairvoyant"))
        out.append({
            "variant": variant,
            "id": "answer-" + variant,
            "title": variant_title(variant),
            "rule": VARIANT_TEXT.get(variant, ""),
            "honest": honest,
            "clairvoyant": clair,
            "bracket": bracket,
            "optional": optional,
            "claims": [claim_verdict(c, honest, clair, bracket, names)
                       for c in claims if c["claim_preset"] == variant],
        })
    return out


WIDE, NARROW = 720, 380
"""The two widths every chart is drawn at: the page shows the narrow one on a phone (report.css)."""


def both(draw) -> dict | None:
    """A chart drawn at both widths, ``{"wide": svg, "narrow": svg}`` (``draw(width)``), or None."""
    wide = draw(WIDE)
    return None if wide is None else {"wide": wide, "narrow": draw(NARROW)}


def odds_picture(answer_rows: list[dict], width: int = WIDE) -> str | None:
    """The answer as one chart: per variant an axis with honest play, the bracket, clairvoyant
    play and the published claims (plots.odds_chart); None without figures."""
    panels = []
    for a in answer_rows:
        lanes = []
        h, c, b = a["honest"], a["clairvoyant"], a["bracket"]
        if h is not None:
            lanes.append({"label": "good honest play", "kind": "honest", "rate": h["rate"], "low": h["low"],
                          "high": h["high"], "note": f"{rate_text(h['rate'])} · {about_one_in(h['one_in'])}"})
        if b is not None and b["high"] is not None:
            # the bracket: a band from the lower end to the upper end (the two estimates), whiskers
            # out to their outer 95% ends; without a lower end, from the floor of the axis
            lanes.append({"label": "optimal honest play", "kind": "bracket",
                          "low": b["low95"], "high": b["high95"], "band": (b["low"], b["high"]),
                          "marks": [v for v in (b["low"], b["high"]) if v is not None],
                          "note": (f"{rate_text(b['low'])} to {rate_text(b['high'])}" if b["low"] is not None
                                   else f"at most {rate_text(b['high'])}")})
        if c is not None:
            lanes.append({"label": "sees the stock order", "kind": "clairvoyant", "rate": c["rate"], "low": c["low"],
                          "high": c["high"], "note": f"{rate_text(c['rate'])} · {about_one_in(c['one_in'])}"})
        if not lanes:
            continue
        claims = [{"label": claim_label(v["stated_rate"]), "rate": v["stated_rate"]} for v in a["claims"]]
        panels.append({"title": a["title"], "lanes": lanes, "claims": claims})
    if not panels:
        return None
    has_bracket = any(a["bracket"] is not None for a in answer_rows)
    return plots.odds_chart(panels, width=width, title=(
        "How often each variant is won: good honest play, " + ("the bracket on optimal honest play, " if has_bracket else "")
        + "a player who sees the stock, and the published claims"))


def claim_label(rate: float) -> str:
    """A claim as its source states it: ``1 in 200`` for a whole "1 in N", else ``11.57%``."""
    n = 1 / rate
    if abs(n - round(n)) < 1e-6:
        return f"1 in {round(n):,}"
    return f"{rate * 100:.2f}".rstrip("0").rstrip(".") + "%"


# --- night by night ------------------------------------------------------------------------


def night_series(doc: dict, names: Names) -> list[dict]:
    """Per headline row: the running figures after each night (the ``nights`` table)."""
    rows = doc["tables"].get("nights", [])
    head = sorted(doc["tables"].get("headline", []), key=lambda r: (_variant_key(r["variant"]), r["kind"] != "honest"))
    out = []
    for h in head:
        points = [r for r in rows if r["variant"] == h["variant"] and r["policy"] == h["player"]]
        if not points:
            continue
        out.append({"variant": h["variant"], "kind": h["kind"], "player": h["player"],
                    "display": names(h["player"]), "points": points})
    return out


def night_charts(series: list[dict]) -> list[dict]:
    return [both(lambda w, s=s: plots.night_chart(s["points"], kind=s["kind"], width=500 if w == WIDE else 360,
                                                   height=200, title=f"{variant_title(s['variant'])}: {s['display']}"))
            for s in series]


def since_last_night(series: list[dict]) -> dict:
    """What the last night changed: per headline row, its figures before and after it.

    ``night`` is the last night's number, ``nights`` how many there are; ``rows`` holds, for
    each series with a figure before the last night, ``before`` and ``after`` (rows of the
    nights table) and the interval's width before and after; ``new`` lists the series that
    the last night started.
    """
    nights = max((p["nights"] for s in series for p in s["points"]), default=0)
    rows, new = [], []
    for s in series:
        last = s["points"][-1]
        prev = [p for p in s["points"] if p["night"] < last["night"]]
        if last["night"] != nights:
            continue  # this series had nothing in the last night's numbering (cannot happen: grid)
        if not prev:
            new.append(s)
            continue
        before = prev[-1]
        rows.append({**s, "before": before, "after": last,
                     "width_before": _width(before), "width_after": _width(last)})
    return {"night": nights, "nights": nights, "rows": rows, "new": new}


def _width(r: dict):
    return None if r["low"] is None or r["high"] is None else r["high"] - r["low"]


# --- tables --------------------------------------------------------------------------------


def table(header: list[str], rows: list[list], *, caption: str | None = None) -> dict:
    """A table for the templates: text cells, and which columns are numbers (right-aligned).

    A cell given as a list is several lines of one cell (one line each in HTML, joined by "; "
    in Markdown)."""
    text = [[[str(x) for x in c] if isinstance(c, (list, tuple)) else str(c) for c in r] for r in rows]

    def number(c):
        return isinstance(c, str) and _is_number(c)

    numeric = [bool(text) and all(number(r[i]) or r[i] == "—" for r in text) and any(number(r[i]) for r in text)
               for i in range(len(header))]
    return {"header": header, "rows": text, "numeric": numeric, "caption": caption}


def _odds_pivot(doc, names: Names):
    """Win rate of every player (rows) on every variant (columns): the table people read.

    The bracket's upper bound (kind ``bound``) is left out: it wins no games of its own (its rows'
    wins are those of the clairvoyant line its penalised search keeps, an estimate of nothing), and
    its figure, the mean of its values, is the bracket's upper end. Beside an honest player's win
    rate its plain win rate read as an "upper bound" below the player it bounds. The full table
    (``win_odds``) keeps its rows.
    """
    wo = [r for r in doc["tables"].get("win_odds", []) if r["kind"] != "bound"]
    variants = sorted({r["variant"] for r in wo}, key=_variant_key)
    players = []
    for r in sorted(wo, key=lambda r: (r["kind"] != "honest", r["policy"])):
        if r["policy"] not in players:
            players.append(r["policy"])
    cell = {(r["variant"], r["policy"]): r for r in wo}
    rows = []
    for p in players:
        row = [names(p), next(r["kind"] for r in wo if r["policy"] == p)]
        for v in variants:
            r = cell.get((v, p))
            row.append("—" if r is None else f"{pct(r['rate'])} ({pct_range(r['low'], r['high'])})")
        rows.append(row)
    return table(["player", "kind", *(variant_title(v) for v in variants)], rows)


def floor_rows(doc, names: Names) -> list[dict]:
    """The win_odds rows whose rate is a floor: a tenth or more of their deals are unfinished
    searches (gave_up, counted as lost), so the interval reaches far above the estimate."""
    return [dict(r, title=variant_title(r["variant"]), display=names(r["policy"]))
            for r in by_variant(doc["tables"].get("win_odds", [])) if r["gave_up"] and r["gave_up"] * 10 >= r["deals"]]


def _win_odds_table(doc, names: Names):
    return table(["variant", "player", "kind", "deals", "wins", "gave up", "win rate", "95% interval", "odds",
                  "mean score"],
                 [[r["variant"], names(r["policy"]), r["kind"], num(r["deals"]), num(r["wins"]), num(r["gave_up"]),
                   pct(r["rate"]), pct_range(r["low"], r["high"]), one_in_text(r["one_in"]), f"{r['mean_score']:.2f}"]
                  for r in by_variant(doc["tables"].get("win_odds", []))])


def _headline_table(doc, names: Names):
    return table(["variant", "kind", "player", "deals", "wins", "win rate", "95% interval", "odds", "odds range"],
                 [[r["variant"], r["kind"], names(r["player"]), num(r["deals"]), num(r["wins"]), pct(r["rate"]),
                   pct_range(r["low"], r["high"]), one_in_text(r["one_in"]),
                   one_in_range(r["one_in_low"], r["one_in_high"])]
                  for r in by_variant(doc["tables"].get("headline", []))])


def _players_table(doc, names: Names):
    rows = names.rows
    fingerprint = any("fingerprint" in r for r in rows)
    header = ["player", "kind", "what it does", "name in the data"] + (["fingerprint"] if fingerprint else [])

    def prints(r):
        fp = r.get("fingerprint") or {}
        return [f"{v} {d}" for v, d in fp.items()] or "—"

    return table(header, [[r["display"], r["kind"], r["description"], r["name"]]
                          + ([prints(r)] if fingerprint else []) for r in rows])


def _bracket_table(doc, names: Names):
    rows = bracket_rows(doc)

    def lower(r):
        if r.get("lower_player") is None:
            return "—"
        return f"{pct(r.get('lower_rate'))} ({names(r['lower_player'])})"

    def lead(r):
        if r.get("lead") is None:
            return "—"
        return (f"{gap_text(r['lead'], r.get('lead_low'), r.get('lead_high'), points=True)} over "
                f"{names(r['runner_up'])}, {num(r.get('lead_deals'))} deals")

    return table(["variant", "lower end (player)", "95%", "lead, paired (95%)", "upper end (bound)", "95%",
                  "deals", "gap, paired (95%)"],
                 [[variant_title(r["variant"]), lower(r),
                   pct_range(r.get("lower_low"), r.get("lower_high")) if r.get("lower_player") else "—",
                   lead(r),
                   f"{pct(r.get('upper_estimate'))} ({names(r.get('upper_method'))})",
                   pct_range(r.get("upper_low"), r.get("upper_high")), num(r.get("deals")),
                   "—" if r.get("gap") is None else
                   f"{pct(r['gap'])} ({pct_range(r.get('gap_low'), r.get('gap_high'))})"]
                  for r in by_variant(rows)])


def _bracket_claims_table(doc):
    words = {"below": "below the lower end: an honest player measured wins more often",
             "inside": "inside the bracket", "above": "above the upper end: no honest player wins that often"}
    return table(["claim", "variant", "stated", "against the honest bracket"],
                 [[c["claim"], variant_title(c["variant"]), claim_label(c["stated_rate"]),
                   words.get(c["against_bracket"], c["against_bracket"])]
                  for c in doc.get("claims_against_bracket") or []])


def claim_fits(c: dict, names: Names) -> str:
    """Which readings a claim fits (their 95% interval holds it), or the nearest if none."""
    def reading(r):
        opt = " (optional discards)" if "+optional" in r["variant"] else ""
        return f"{names(r['policy'])}{opt}, {r['kind']}"

    if c["fits"]:
        shown = "; ".join(reading(f) for f in c["fits"][:4])
        more = f" and {len(c['fits']) - 4} more" if len(c["fits"]) > 4 else ""
        return f"inside the interval of {len(c['fits'])} of {c['readings']} readings: {shown}{more}"
    n = c["nearest"]
    if n is None:
        return "no measured figure of this variant yet"
    side = "below" if c["stated_rate"] < n["low"] else "above"
    return (f"outside every interval; nearest: {reading(n)}, {pct(n['rate'])} ({pct_range(n['low'], n['high'])}), "
            f"the claim {n['off_by']:.2f}× {side} it")


def _claims_table(doc, names: Names):
    return table(["claim", "source", "stated", "readings it fits"],
                 [[c["claim"], c["source"], f"{pct(c['stated_rate'])} ({one_in_text(c['stated_one_in'])})",
                   claim_fits(c, names)]
                  for c in doc["tables"].get("claim_readings", [])])


def _claim_detail_table(doc, names: Names):
    return table(["claim", "reading (variant / player)", "kind", "measured", "95% interval", "inside"],
                 [[r["claim_id"], f"{r['variant']} / {names(r['policy'])}", r["kind"], pct(r["rate"]),
                   pct_range(r["low"], r["high"]), "yes" if r["inside"] else "no"]
                  for r in by_variant(doc["tables"].get("claims", []))])


def _score_table(doc, names: Names):
    return table(["variant", "player", "deals", "median score", "≥ 40", "≥ 44", "48 (won)"],
                 [[r["variant"], names(r["policy"]), num(r["deals"]), str(r["median_score"]),
                   pct(r["reach_40"] / r["deals"], 1), pct(r["reach_44"] / r["deals"], 1),
                   pct(r["reach_48"] / r["deals"], 1)]
                  for r in by_variant(doc["tables"].get("score_summary", []))])


def _gap_summary_table(doc, names: Names):
    return table(["variant", "player", "paired deals", "solver wins, player loses", "win-rate gap (95%)",
                  "mean score gap (95%)"],
                 [[r["variant"], names(r["policy"]), num(r["deals"]), f"{num(r['reference_only'])} ({pct(r['share'])})",
                   gap_text(r["win_gap"], r["win_gap_low"], r["win_gap_high"], points=True),
                   gap_text(r["mean_score_gap"], r["score_gap_low"], r["score_gap_high"], points=False)]
                  for r in by_variant(doc["tables"].get("policy_gap", []))])


def _gap_table(doc, names: Names):
    return table(["variant", "player", "kind", "paired deals", "solver wins, player loses", "95% interval",
                  "win-rate gap", "95% interval", "mean score gap", "95% interval", "player wins, solver not",
                  "solver gave up, player lost"],
                 [[r["variant"], names(r["policy"]), r["kind"], num(r["deals"]),
                   f"{num(r['reference_only'])} ({pct(r['share'])})", pct_range(r["share_low"], r["share_high"]),
                   signed_pct(r["win_gap"]), f"{signed_pct(r['win_gap_low'])} to {signed_pct(r['win_gap_high'])}",
                   signed(r["mean_score_gap"]), f"{signed(r['score_gap_low'])} to {signed(r['score_gap_high'])}",
                   num(r["policy_only"]), num(r["undecided"])]
                  for r in by_variant(doc["tables"].get("policy_gap", []))])


def _honest_gap_table(doc, names: Names):
    return table(["variant", "best honest", "other player", "paired deals", "best wins, other loses",
                  "other wins, best loses", "win-rate gap (95%)", "mean score gap (95%)"],
                 [[r["variant"], names(r["reference"]), names(r["policy"]), num(r["deals"]), num(r["reference_only"]),
                   num(r["policy_only"]),
                   gap_text(r["win_gap"], r["win_gap_low"], r["win_gap_high"], points=True),
                   gap_text(r["mean_score_gap"], r["score_gap_low"], r["score_gap_high"], points=False)]
                  for r in by_variant(doc["tables"].get("honest_gap", []))])


def _voi_table(doc, names: Names):
    return table(["variant", "clairvoyant", "best honest", "paired deals", "value of seeing the stock (95%)",
                  "clairvoyant / honest", "honest share of winnable deals"],
                 [[r["variant"], f"{pct(r['reference_rate'])} ({pct_range(r['reference_low'], r['reference_high'])})",
                   f"{names(r['honest_policy'])}: {pct(r['honest_rate'])} ({pct_range(r['honest_low'], r['honest_high'])})",
                   num(r["paired_deals"]),
                   gap_text(r["value"], r["value_low"], r["value_high"], points=True),
                   "—" if r["ratio"] is None else f"{r['ratio']:.2f}×", pct(r["honest_share"], 1)]
                  for r in by_variant(doc["tables"].get("value_of_information", []))])


def _optional_table(doc, names: Names):
    return table(["variant", "player", "paired deals", "forced discards", "optional discards",
                  "won only with optional", "won only with forced", "value of the choice (95%)", "mean score gain"],
                 [[variant_title(r["variant"]), names(r["policy"]), num(r["deals"]), pct(r["forced_rate"]),
                   pct(r["optional_rate"]), num(r["optional_only"]), num(r["forced_only"]),
                   gap_text(r["value"], r["value_low"], r["value_high"], points=True), signed(r["mean_score_gain"])]
                  for r in by_variant(doc["tables"].get("value_of_optional", []))])


def _restriction_words(restriction: str) -> str:
    from engine_rs_free.players import display_name

    if restriction == "none":
        return "no restriction"
    try:
        return display_name("solver:" + restriction).removeprefix("solver, ")
    except ValueError:
        return restriction


def ladder_notes(doc) -> list[dict]:
    """A word on each figure of the solver ladder a reader would stop at, as codes the prose says.

    ``floor``: a tenth or more of the rung's searches are unfinished (counted as lost), so its
    rate is a floor; ``free``: a restriction that keeps every win of the unrestricted solver on
    the same deals; ``more``: a restricted rung, or optional discards, above the unrestricted
    forced solver of the variant, and ``less``: optional discards below it (both only possible
    through unfinished searches or different deals: a restriction only takes choices away,
    optional discards only add them).
    """
    rows = by_variant(doc["tables"].get("solver_ladder", []))
    base = {r["preset"]: r for r in rows if r["restriction"] == "none" and r["discards"] == "forced"}
    out = []
    for r in rows:
        words = _restriction_words(r["restriction"])
        note = {"variant": variant_title(r["variant"]), "words": words, "row": r}
        b = base.get(r["preset"])
        if r["gave_up"] and r["gave_up"] * 10 >= r["deals"]:
            out.append(dict(note, code="floor"))
        if r["restriction"] != "none" and r["share_of_base"] == 1 and r["base_wins"]:
            out.append(dict(note, code="free"))
        if b is not None and r is not b and r["rate"] is not None and b["rate"] is not None:
            if r["rate"] > b["high"] or (r["restriction"] != "none" and r["rate"] > b["rate"]):
                out.append(dict(note, code="more", base=b))
            elif r["discards"] == "optional" and r["restriction"] == "none" and r["rate"] < b["rate"]:
                out.append(dict(note, code="less", base=b))
    return out


def _ladder_table(doc):
    return table(["variant", "restriction", "deals", "wins", "gave up", "win rate", "95% interval",
                  "wins kept vs unrestricted (paired)"],
                 [[r["variant"], _restriction_words(r["restriction"]), num(r["deals"]), num(r["wins"]),
                   num(r["gave_up"]), pct(r["rate"]), pct_range(r["low"], r["high"]),
                   "—" if r["share_of_base"] is None else f"{pct(r['share_of_base'], 1)} of {num(r['base_wins'])}"]
                  for r in by_variant(doc["tables"].get("solver_ladder", []))])


NIGHTS_SHOWN = 30
"""The nights table of the page holds the last this many nights (report.json holds every one)."""


def _nights_table(series: list[dict]):
    last = max((p["night"] for s in series for p in s["points"]), default=0)
    return table(["variant", "player", "night", "deals added", "deals so far", "win rate", "95% interval"],
                 [[variant_title(s["variant"]), s["display"], str(p["night"]), num(p["added"]), num(p["deals"]),
                   pct(p["rate"]), pct_range(p["low"], p["high"])]
                  for s in series for p in s["points"] if p["night"] > last - NIGHTS_SHOWN])


def _coverage_table(doc, names: Names):
    return table(["seed", "variant", "player", "run", "deals", "deal indices", "contiguous"],
                 [[str(r["seed"]), r["variant"], names(r["policy"]), r["run_id"], num(r["deals"]),
                   f"{r['first_deal']}..{r['last_deal']}", "yes" if r["contiguous"] else "no"]
                  for r in doc["tables"].get("coverage", [])])


def _runs_table(doc):
    rows = []
    for r in doc["provenance"]["runs"]:
        spec = r.get("spec") or {}
        rows.append([r["run_id"], str(r.get("seed")), str(r.get("start")), num(spec.get("deals")),
                     ", ".join(spec.get("variants") or []), str(len(spec.get("policies") or [])),
                     str(r.get("state")), num(r.get("batches_done")), num(r.get("files")),
                     num(r["rows_done"]), str(r.get("engine_version"))])
    return table(["run", "seed", "start", "deals", "variants", "players", "state", "batches done", "files", "rows",
                  "engine"], rows)


def _query_table(doc):
    code = doc["provenance"]["code"]
    rows = [[f"queries/{k}.sql", v] for k, v in code["queries"].items()]
    rows.append(["catalog macros", code["catalog_macros"]])
    rows += [[k if "/" in k else f"queries/{k}", v] for k, v in code["report_code"].items()]
    return table(["file", "sha256"], rows)


def _files_table(doc):
    return table(["file", "rows", "bytes", "sha256"],
                 [[f["path"], num(f["rows"]), num(f["bytes"]), f["sha256"]] for f in doc["provenance"]["files"]])


# --- charts --------------------------------------------------------------------------------


def _player_colours(doc) -> dict[str, str]:
    names = sorted({r["policy"] for r in doc["tables"].get("score_summary", [])},
                   key=lambda n: (not n.startswith("solver"), n))
    honest = [n for n in names if not n.startswith("solver")]
    clair = [n for n in names if n.startswith("solver")]
    colours = {n: plots.PALETTE[i % len(plots.PALETTE)] for i, n in enumerate(honest)}
    clair_palette = ("#7b3294", "#40004b", "#b15fc9", "#5e3c99", "#c51b8a", "#8856a7")
    colours.update({n: clair_palette[i % len(clair_palette)] for i, n in enumerate(clair)})
    return colours


def score_charts(doc, names: Names) -> list[dict]:
    """Per variant one chart of every player's score distribution (share of deals reaching each score)."""
    rows = doc["tables"].get("score_distribution", [])
    totals = {(r["variant"], r["policy"]): r["deals"] for r in doc["tables"].get("score_summary", [])}
    colours = _player_colours(doc)
    series: dict[tuple[str, str], dict] = {}
    for r in rows:
        key = (r["variant"], r["policy"])
        s = series.setdefault(key, {"variant": r["variant"], "policy": r["policy"], "kind": r["kind"],
                                    "reach": [0.0] * 49})
        total = totals.get(key) or 0
        if total:
            s["reach"][r["score"]] = r["at_least"] / total
    out = []
    for variant in sorted({k[0] for k in series}, key=_variant_key):
        ss = sorted((s for (v, _), s in series.items() if v == variant),
                    key=lambda s: (s["kind"] != "honest", -s["reach"][48], s["policy"]))
        plot_series = [{"label": names(s["policy"]), "color": colours.get(s["policy"], plots.TEXT),
                        "dashed": s["kind"] == "clairvoyant", "reach": s["reach"]} for s in ss]
        out.append({"variant": variant, "title": variant_title(variant),
                    "svg": both(lambda w, ps=plot_series, v=variant: plots.survival_chart(
                        ps, width=w, height=270 if w == WIDE else 240,
                        title=f"{variant_title(v)}: share of deals reaching each score, per player")),
                    "legend": [{"label": p["label"], "color": p["color"], "dashed": p["dashed"],
                                "won": pct(p["reach"][48], 1)} for p in plot_series]})
    return out


def claims_charts(doc, names: Names) -> list[dict]:
    out = []
    readings = doc["tables"].get("claims", [])
    claims = doc["tables"].get("claim_readings", [])
    for preset in sorted({c["claim_preset"] for c in claims}, key=_variant_key):
        cs = [{"label": claim_label(c["stated_rate"]), "rate": c["stated_rate"]}
              for c in claims if c["claim_preset"] == preset]
        seen, rs = set(), []
        for r in sorted((r for r in readings if r["claim_preset"] == preset),
                        key=lambda r: (r["rate"], r["variant"], r["policy"])):
            key = (r["variant"], r["policy"])
            if key in seen:
                continue
            seen.add(key)
            label = names(r["policy"]) + (" (optional discards)" if "+optional" in r["variant"] else "")
            rs.append({"label": label, "rate": r["rate"], "low": r["low"], "high": r["high"], "kind": r["kind"]})
        if rs:
            out.append({"title": variant_title(preset),
                        "svg": both(lambda w, rs=rs, cs=cs, p=preset: plots.claims_chart(
                            rs, cs, width=w, title=f"Published claims about {p} against every measured win rate"))})
    return out


def ladder_chart(doc, width: int = WIDE) -> str | None:
    rows = [{"label": f"{variant_title(r['variant'])}: {_restriction_words(r['restriction'])}", "rate": r["rate"],
             "low": r["low"], "high": r["high"], "kind": "clairvoyant",
             "note": f"{pct(r['rate'], 1)} · {one_in_text(r['wins'] and r['deals'] / r['wins'] or None)}"}
            for r in by_variant(doc["tables"].get("solver_ladder", []))]
    if not rows:
        return None
    return plots.interval_chart(rows, title="Clairvoyant win rate by solver restriction", width=width, label_w=330)



# --- method --------------------------------------------------------------------------------


def method_paragraphs(doc: dict, names: Names | None = None) -> list[tuple[str, str]]:
    """(heading, text) pairs of the method section (shared by Markdown and HTML)."""
    from .catalog import WILSON_Z

    names = names or Names(doc)
    return [
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
         "reach, and a line of play that reaches it. It searches every reachable position (a visited set with "
         "exact keys, pile order kept, and an upper bound that cuts hopeless branches) and returns the best "
         "score and whether the deal can be won, status solved, or gave_up when a node limit stopped it. "
         + GAVE_UP_NOTE),
        ("Clairvoyant and honest",
         "Clairvoyant play knows the order of the stock (the solver): its rate is the share of deals that can "
         "be won at all. Honest play does not (every policy, and the sampling player pimc): its rate is what a "
         "player can expect. The two answer different questions, and a published figure that does not say "
         "which it is about can be read either way; the claims section tries both. Moving a lone card, or "
         "choosing which empty pile to fill, only changes where later cards land: worth a lot to a player who "
         "knows the stock, nothing to one who does not, which is one reason the two figures are far apart."),
        ("Statistics",
         f"Each rate is wins / deals over all deals of a variant and player (seeds pooled), with a 95% Wilson "
         f"score interval (z = {WILSON_Z}); \"1 in N\" is deals / wins and its range is 1/high to 1/low. "
         "Policy gaps and the value of information compare two players on the same deals: the interval of a "
         "paired difference is the normal interval of the per-deal differences (mean ± 1.96 sd / √n). "
         "The best honest player of a variant is the one with the highest measured rate, which favours a "
         "lucky one slightly (not corrected for). All numbers are computed from exact integer counts and sums, "
         "so they do not depend on the order rows were written in."),
        ("Nights",
         "A night is one step of the aggregates (queries/aggregates.py): each night adds the rows it wrote "
         "as one generation, and a report that finds rows no step included adds a step for them. The figures "
         "night by night (queries/nights.sql) are the running totals after each night; the page draws them "
         "for the players of the headline, and report.json holds them for every player."),
        ("Sample sizes",
         f"{num(doc['provenance']['result_rows'])} result rows over {num(doc['provenance']['distinct_deals'])} "
         f"distinct deals of seed(s) {', '.join(str(s) for s in doc['provenance']['seeds']) or '—'}; "
         "the deals of each variant and player are in the table of every player, the index ranges in the "
         "provenance."),
    ]


# --- the page ------------------------------------------------------------------------------


def page(doc: dict, *, charts: bool) -> dict:
    """Everything the templates read, shaped from the document (``charts``: draw the SVG charts)."""
    from engine_rs_free.players import RESTRICTION_TEXT

    names = Names(doc)
    answer_rows = answers(doc, names)
    series = night_series(doc, names)
    p = doc["provenance"]
    nights = max((r["nights"] for r in doc["tables"].get("nights", [])), default=0)
    ctx = {
        "doc": doc,
        "title": doc["title"],
        "package_version": doc["package_version"],
        "provenance": p,
        "seeds": ", ".join(str(s) for s in p["seeds"]) or "—",
        "nights": nights,
        "nights_shown": min(nights, NIGHTS_SHOWN),
        "runs": len(p["runs"]),
        "sections": [sec for sec in SECTIONS if sec[0] != "bracket" or bracket_rows(doc)],
        "bracket_note": BRACKET_NOTE,
        "answers": answer_rows,
        "has_bracket": bool(bracket_rows(doc)),
        "bound_left_out": any(r["kind"] == "bound" for r in doc["tables"].get("win_odds", [])),
        "series": series,
        "since": since_last_night(series),
        "variants": [{"name": k, "text": v} for k, v in VARIANT_TEXT.items()],
        "ladder_notes": ladder_notes(doc),
        "floors": floor_rows(doc, names),
        "restrictions": [{"name": k, "words": _restriction_words(k), "text": v} for k, v in RESTRICTION_TEXT.items()],
        "gave_up_note": GAVE_UP_NOTE,
        "method": method_paragraphs(doc, names),
        "tables": {
            "pivot": _odds_pivot(doc, names),
            "win_odds": _win_odds_table(doc, names),
            "headline": _headline_table(doc, names),
            "players": _players_table(doc, names),
            "bracket": _bracket_table(doc, names),
            "bracket_claims": _bracket_claims_table(doc),
            "claims": _claims_table(doc, names),
            "claim_detail": _claim_detail_table(doc, names),
            "scores": _score_table(doc, names),
            "gap_summary": _gap_summary_table(doc, names),
            "gaps": _gap_table(doc, names),
            "honest_gaps": _honest_gap_table(doc, names),
            "voi": _voi_table(doc, names),
            "optional": _optional_table(doc, names),
            "ladder": _ladder_table(doc),
            "nights": _nights_table(series),
            "runs": _runs_table(doc),
            "coverage": _coverage_table(doc, names),
            "code": _query_table(doc),
            "files": _files_table(doc),
        },
    }
    if charts:
        ctx["charts"] = {
            "odds": both(lambda w: odds_picture(answer_rows, w)),
            "nights": night_charts(series),
            "scores": score_charts(doc, names),
            "claims": claims_charts(doc, names),
            "ladder": both(lambda w: ladder_chart(doc, w)),
        }
    return ctx


def _md_cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


@lru_cache(maxsize=None)
def environment(fmt: str):
    """The Jinja2 environment of one format (``html``: autoescaped; ``md``: plain text)."""
    import jinja2
    from markupsafe import Markup, escape

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=(fmt == "html"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(pct=pct, pct_range=pct_range, rate=rate_text, one_in=one_in_text, about=about_one_in,
                       one_in_range=one_in_range, num=num, signed=signed, signed_pct=signed_pct, times=times,
                       title=variant_title, pts=points)
    if fmt == "html":
        env.filters["strong"] = lambda s: Markup("<b>{}</b>").format(s)
        env.filters["code"] = lambda s: Markup("<code>{}</code>").format(s)
        env.filters["cell"] = escape
        env.filters["player"] = lambda s: Markup("<i>{}</i>").format(s)
    else:
        env.filters["strong"] = lambda s: f"**{s}**"
        env.filters["code"] = lambda s: f"`{s}`"
        env.filters["cell"] = _md_cell
        env.filters["player"] = lambda s: f"*{s}*"
    env.globals["fmt"] = fmt
    return env


def render_markdown(doc: dict) -> str:
    """The report as Markdown (deterministic: depends only on ``doc``)."""
    return environment("md").get_template("report.md.j2").render(page(doc, charts=False))


def render_html(doc: dict) -> str:
    """The report as one self-contained HTML page: inline CSS and SVG, no script, no external resource.

    Deterministic: depends only on ``doc`` (the build facts are in build.json, which the page names).
    """
    return environment("html").get_template("report.html.j2").render(page(doc, charts=True))
