"""The text the flows publish: headline odds as table rows, and what changed since last night.

Plain functions over the headline rows of ``queries.report.build_report``
(dicts with ``variant``, ``player``, ``kind``, ``deals``, ``wins``, ``rate``,
``low``, ``high``, ``one_in``; rate and interval as fractions), so they are
tested without Prefect.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def _pct(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{100.0 * x:.{digits}f}%"


def _one_in(x: float | None) -> str:
    if x is None:
        return "never"
    return f"1 in {x:,.1f}" if x < 100 else f"1 in {x:,.0f}"


def _key(row: Mapping) -> tuple[str, str]:
    return str(row["variant"]), str(row["player"])


def headline_table(rows: Iterable[Mapping]) -> list[dict[str, object]]:
    """Rows for a Prefect table artifact: one per variant × player, numbers as readable text.

    >>> headline_table([{"variant": "standard", "player": "solver", "kind": "clairvoyant",
    ...     "deals": 1000, "wins": 120, "rate": 0.12, "low": 0.101, "high": 0.142, "one_in": 8.33}])
    [{'variant': 'standard', 'player': 'solver', 'kind': 'clairvoyant', 'deals': 1000, 'wins': 120, 'win rate': '12.000%', '95% interval': '10.100% .. 14.200%', 'odds': '1 in 8.3'}]
    """
    out = []
    for r in rows:
        out.append({
            "variant": r["variant"],
            "player": r["player"],
            "kind": r.get("kind", ""),
            "deals": int(r["deals"]),
            "wins": int(r["wins"]),
            "win rate": _pct(r.get("rate")),
            "95% interval": f"{_pct(r.get('low'))} .. {_pct(r.get('high'))}",
            "odds": _one_in(r.get("one_in")),
        })
    return out


def headline_lines(rows: Iterable[Mapping]) -> list[str]:
    """One aligned line of text per headline row, for a terminal."""
    table = headline_table(rows)
    if not table:
        return []
    width = {k: max(len(str(r[k])) for r in table) for k in ("variant", "kind", "player", "95% interval", "odds")}
    return [
        f"{r['variant']:<{width['variant']}}  {r['kind']:<{width['kind']}}  {r['player']:<{width['player']}}  "
        f"{r['win rate']:>8}  [{r['95% interval']:<{width['95% interval']}}]  {r['odds']:<{width['odds']}}  "
        f"({r['wins']:,} of {r['deals']:,} deals)"
        for r in table
    ]


def changes_markdown(
    title: str,
    before: Sequence[Mapping],
    after: Sequence[Mapping],
    facts: Sequence[tuple[str, object]],
) -> str:
    """Markdown: ``facts`` as a list, then each variant × player before and after.

    ``before`` is the previous report's headline (empty on the first night);
    the interval width shows how much tonight's deals tightened it.
    """
    lines = [f"# {title}", ""]
    lines += [f"- **{name}**: {value}" for name, value in facts]
    lines += ["", "| variant | player | deals before | deals after | win rate before | win rate after "
              "| 95% interval after | width before | width after |",
              "|---|---|---:|---:|---:|---:|---|---:|---:|"]
    prev = {_key(r): r for r in before}
    for r in after:
        p = prev.get(_key(r))
        width_after = r["high"] - r["low"] if r.get("high") is not None and r.get("low") is not None else None
        if p is not None and p.get("high") is not None and p.get("low") is not None:
            width_before = p["high"] - p["low"]
        else:
            width_before = None
        lines.append(
            f"| {r['variant']} | {r['player']} | {int(p['deals']) if p else 0:,} | {int(r['deals']):,} "
            f"| {_pct(p.get('rate')) if p else '-'} | {_pct(r.get('rate'))} "
            f"| {_pct(r.get('low'))} .. {_pct(r.get('high'))} "
            f"| {_pct(width_before)} | {_pct(width_after)} |"
        )
    gone = [k for k in prev if k not in {_key(r) for r in after}]
    if gone:
        lines += ["", "No longer in the headline: " + ", ".join(f"{v} × {p}" for v, p in gone)]
    return "\n".join(lines) + "\n"


__all__ = ["headline_table", "headline_lines", "changes_markdown"]
