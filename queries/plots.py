"""Small SVG charts for the report, drawn by hand: no JavaScript, no network, no plotting library.

Each function returns one ``<svg>`` element as text (valid XML, so the report's
tests can parse it) with a ``<title>`` for screen readers. Coordinates are
printed with one decimal, so the same numbers always give the same bytes.
"""

from __future__ import annotations

import math
from html import escape

CLAIRVOYANT = "#7b3294"
HONEST = "#1b7837"
CLAIM = "#d95f02"
GRID = "#d9d9d9"
TEXT = "#222222"
FONT = 'font-family="system-ui, sans-serif"'


def kind_color(kind: str) -> str:
    """Purple for clairvoyant (solver) figures, green for honest ones."""
    return CLAIRVOYANT if kind == "clairvoyant" else HONEST


def _f(x: float) -> str:
    return f"{x:.1f}"


def _text(x, y, s, *, anchor="start", size=11, color=TEXT, weight="normal", limit=48) -> str:
    s = str(s)
    if len(s) > limit:  # keep long player names inside the label column
        s = s[: limit - 1] + "…"
    return (f'<text x="{_f(x)}" y="{_f(y)}" font-size="{size}" text-anchor="{anchor}" fill="{color}" '
            f'font-weight="{weight}" {FONT}>{escape(str(s))}</text>')


def _pct_label(v: float) -> str:
    if v == 0:
        return "0%"
    if v < 0.01:
        return f"{v * 100:.2g}%"
    return f"{v * 100:.0f}%" if abs(v * 100 - round(v * 100)) < 1e-9 else f"{v * 100:.1f}%"


def _nice_max(v: float) -> float:
    """A round upper end for a linear rate axis (0.05, 0.1, 0.2, 0.25, 0.5, 1 ...)."""
    if v <= 0:
        return 0.01
    exp = math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        top = m * 10**exp
        if top >= v:
            return top
    return 10 ** (exp + 1)


def interval_chart(rows: list[dict], *, title: str, width: int = 720) -> str:
    """Horizontal bars (rate) with 95% interval whiskers, one row per item.

    rows: dicts with ``label``, ``rate``, ``low``, ``high``, ``kind`` and optional ``note``.
    """
    label_w, right_pad, row_h, top = 300, 110, 22, 28
    plot_w = width - label_w - right_pad
    xmax = _nice_max(max([r["high"] or 0 for r in rows] + [r["rate"] or 0 for r in rows] + [0.01]))
    height = top + row_h * len(rows) + 26

    def x(v):
        return label_w + plot_w * (v / xmax)

    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
           f"<title>{escape(title)}</title>"]
    ticks = [xmax * i / 5 for i in range(6)]
    for t in ticks:
        out.append(f'<line x1="{_f(x(t))}" y1="{top - 6}" x2="{_f(x(t))}" y2="{_f(height - 20)}" stroke="{GRID}"/>')
        out.append(_text(x(t), height - 6, _pct_label(t), anchor="middle", size=10))
    for i, r in enumerate(rows):
        y = top + i * row_h
        color = kind_color(r.get("kind", "honest"))
        out.append(_text(label_w - 8, y + 14, r["label"], anchor="end"))
        rate = r["rate"] or 0.0
        out.append(f'<rect x="{_f(x(0))}" y="{_f(y + 4)}" width="{_f(x(rate) - x(0))}" height="12" '
                   f'fill="{color}" fill-opacity="0.55"/>')
        if r["low"] is not None and r["high"] is not None:
            lo, hi = x(r["low"]), x(r["high"])
            out.append(f'<line x1="{_f(lo)}" y1="{_f(y + 10)}" x2="{_f(hi)}" y2="{_f(y + 10)}" stroke="{TEXT}"/>')
            for xx in (lo, hi):
                out.append(f'<line x1="{_f(xx)}" y1="{_f(y + 5)}" x2="{_f(xx)}" y2="{_f(y + 15)}" stroke="{TEXT}"/>')
        note = r.get("note") or _pct_label(rate)
        out.append(_text(x(max(rate, r["high"] or 0)) + 6, y + 14, note, size=10))
    out.append("</svg>")
    return "\n".join(out)


def claims_chart(readings: list[dict], claims: list[dict], *, title: str, width: int = 720,
                 floor: float = 0.001) -> str:
    """A log-scale forest plot: measured rates with intervals, and the claims as vertical lines.

    readings: dicts with ``label``, ``rate``, ``low``, ``high``, ``kind``;
    claims: dicts with ``label`` and ``rate``. Rates below ``floor`` are drawn at the floor.
    """
    label_w, right_pad, row_h = 300, 30, 20
    top = 22 + 14 * len(claims)
    plot_w = width - label_w - right_pad
    lo_exp, hi_exp = math.log10(floor), 0.0
    height = top + row_h * len(readings) + 28

    def x(v):
        v = max(v or 0.0, floor)
        return label_w + plot_w * (math.log10(v) - lo_exp) / (hi_exp - lo_exp)

    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
           f"<title>{escape(title)}</title>"]
    for t in (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0):
        if t < floor:
            continue
        out.append(f'<line x1="{_f(x(t))}" y1="{top - 4}" x2="{_f(x(t))}" y2="{_f(height - 22)}" stroke="{GRID}"/>')
        out.append(_text(x(t), height - 8, _pct_label(t), anchor="middle", size=10))
    for j, c in enumerate(claims):
        cx = x(c["rate"])
        out.append(f'<line x1="{_f(cx)}" y1="{_f(16 + 14 * j)}" x2="{_f(cx)}" y2="{_f(height - 22)}" '
                   f'stroke="{CLAIM}" stroke-dasharray="4 3"/>')
        out.append(_text(cx + 4, 14 + 14 * j, c["label"], size=10, color=CLAIM))
    for i, r in enumerate(readings):
        y = top + i * row_h
        color = kind_color(r.get("kind", "honest"))
        out.append(_text(label_w - 8, y + 13, r["label"], anchor="end"))
        if r["low"] is not None and r["high"] is not None:
            out.append(f'<line x1="{_f(x(r["low"]))}" y1="{_f(y + 9)}" x2="{_f(x(r["high"]))}" y2="{_f(y + 9)}" '
                       f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<circle cx="{_f(x(r["rate"]))}" cy="{_f(y + 9)}" r="3.5" fill="{color}"/>')
    out.append("</svg>")
    return "\n".join(out)


def histogram(counts: list[int], *, title: str, kind: str, width: int = 340, height: int = 130) -> str:
    """Bars of deal counts at each score 0..48 (``counts[s]``), the won bar (48) outlined."""
    left, bottom, top = 34, 20, 18
    plot_w, plot_h = width - left - 6, height - bottom - top
    peak = max(counts) if counts and max(counts) > 0 else 1
    bar_w = plot_w / len(counts)
    color = kind_color(kind)
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
           f"<title>{escape(title)}</title>",
           _text(left, 12, title, size=11, weight="bold"),
           f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="{TEXT}"/>']
    for s, n in enumerate(counts):
        h = plot_h * n / peak
        extra = f' stroke="{TEXT}"' if s == len(counts) - 1 else ""
        out.append(f'<rect x="{_f(left + s * bar_w)}" y="{_f(top + plot_h - h)}" width="{_f(max(bar_w - 0.8, 0.5))}" '
                   f'height="{_f(h)}" fill="{color}"{extra}/>')
    for s in (0, 12, 24, 36, 48):
        out.append(_text(left + (s + 0.5) * bar_w, height - 6, str(s), anchor="middle", size=9))
    out.append(_text(left - 4, top + 8, f"{peak:,}", anchor="end", size=9))
    out.append(_text(left - 4, top + plot_h, "0", anchor="end", size=9))
    out.append("</svg>")
    return "\n".join(out)
