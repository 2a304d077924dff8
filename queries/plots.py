"""Small SVG charts for the report, drawn by hand: no JavaScript, no network, no plotting library.

Each function returns one ``<svg>`` element as text (valid XML, so the report's
tests can parse it) with a ``<title>`` for screen readers and a ``viewBox``, so
the page's CSS can shrink it to a phone's width. Coordinates are printed with
one decimal, so the same numbers always give the same bytes. The functions
take plain rows (dicts of numbers and labels) and know nothing of the report.
"""

from __future__ import annotations

import math
from html import escape

CLAIRVOYANT = "#7b3294"
HONEST = "#1b7837"
BRACKET = "#a6dba0"
CLAIM = "#d95f02"
GRID = "#d9d9d9"
TEXT = "#222222"
MUTED = "#666666"
FONT = 'font-family="system-ui, sans-serif"'

# One colour per player in the charts that compare players (distinct hues, dark enough on white).
PALETTE = ("#1b7837", "#2166ac", "#b2182b", "#e08214", "#8c510a", "#01665e", "#c51b7d", "#4d4d4d",
           "#7b3294", "#35978f", "#9970ab", "#5aae61")

LOG_TICKS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def kind_color(kind: str) -> str:
    """Purple for clairvoyant (solver) figures, green for honest ones."""
    return CLAIRVOYANT if kind == "clairvoyant" else HONEST


def _f(x: float) -> str:
    return f"{x:.1f}"


def _text(x, y, s, *, anchor="start", size=11, color=TEXT, weight="normal", limit=60, halo=False) -> str:
    """A label; ``halo`` gives it a white outline so it stays legible across lines drawn under it."""
    s = str(s)
    if len(s) > limit:  # keep long labels inside their column
        s = s[: limit - 1] + "…"
    outline = ' stroke="#ffffff" stroke-width="3" paint-order="stroke"' if halo else ""
    return (f'<text x="{_f(x)}" y="{_f(y)}" font-size="{size}" text-anchor="{anchor}" fill="{color}" '
            f'font-weight="{weight}"{outline} {FONT}>{escape(s)}</text>')


def _svg_open(width: float, height: float, title: str) -> list[str]:
    return [f'<svg width="{_f(width)}" height="{_f(height)}" '
            f'viewBox="0 0 {_f(width)} {_f(height)}" role="img">', f"<title>{escape(title)}</title>"]


def _text_width(s: str, size: float) -> float:
    """A generous estimate of a label's width in a sans-serif font (for placing labels apart)."""
    return 0.6 * size * len(str(s))


def pct_label(v: float) -> str:
    """A rate as a short axis label: ``0.5%``, ``2%``, ``12.5%``."""
    if v == 0:
        return "0%"
    if v < 0.01:
        return f"{v * 100:.2g}%"
    return f"{v * 100:.0f}%" if abs(v * 100 - round(v * 100)) < 1e-9 else f"{v * 100:.1f}%"


_pct_label = pct_label


def count_label(n: float) -> str:
    """A deal count as a short axis label: ``0``, ``500``, ``20k``, ``1.5M``."""
    if n >= 1_000_000:
        v, unit = n / 1_000_000, "M"
    elif n >= 1_000:
        v, unit = n / 1_000, "k"
    else:
        return f"{n:.0f}"
    return (f"{v:.0f}" if abs(v - round(v)) < 1e-9 else f"{v:.1f}") + unit


def _round_up(v: float) -> float:
    """The smallest of 1, 2, 2.5, 5 or 10 times a power of ten that is at least ``v`` (> 0)."""
    exp = math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        top = m * 10**exp
        if top >= v:
            return top
    return 10 ** (exp + 1)


def _nice_max(v: float) -> float:
    """A round upper end for a linear rate axis (0.05, 0.1, 0.2, 0.25, 0.5, 1 ...)."""
    return _round_up(v) if v > 0 else 0.01


def _nice_step(span: float, target: int = 4) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) giving about ``target`` intervals over ``span``."""
    return _round_up(span / target if span > 0 else 1e-3)


def _lanes(items: list[tuple[float, float]]) -> list[int]:
    """Greedy rows for labels given as (left, right) extents: each label in the first row where it fits."""
    ends: list[float] = []
    rows = [0] * len(items)
    for i in sorted(range(len(items)), key=lambda i: items[i][0]):
        left, right = items[i]
        for row, end in enumerate(ends):
            if left >= end + 4:
                ends[row] = right
                rows[i] = row
                break
        else:
            ends.append(right)
            rows[i] = len(ends) - 1
    return rows


# --- charts ---------------------------------------------------------------------------------


COMPACT = 520
"""Charts narrower than this put each row's label above its marks instead of in a column to the left."""


def _log_x(lo: float, hi: float, floor: float):
    """A map from rates to x on a log scale from ``floor`` to 100% between x = lo and x = hi."""
    lo_exp = math.log10(floor)

    def x(v):
        v = min(max(v or 0.0, floor), 1.0)
        return lo + (hi - lo) * (math.log10(v) - lo_exp) / -lo_exp

    return x


def _log_axis(x, top: float, bottom: float, floor: float, *, size: int = 10) -> list[str]:
    out = []
    for t in LOG_TICKS:
        if t < floor:
            continue
        out.append(f'<line x1="{_f(x(t))}" y1="{_f(top)}" x2="{_f(x(t))}" y2="{_f(bottom)}" stroke="{GRID}"/>')
        out.append(_text(x(t), bottom + 12, pct_label(t), anchor="middle", size=size, color=MUTED))
    return out


def _claim_marks(claims: list[dict], x, top: float, bottom: float) -> tuple[list[str], float]:
    """Claims as dashed vertical lines, their labels in as many rows as keep them apart; returns
    the elements and the height the label rows take above ``top``."""
    ext = [(x(c["rate"]) - _text_width(c["label"], 10) / 2, x(c["rate"]) + _text_width(c["label"], 10) / 2)
           for c in claims]
    lanes = _lanes(ext)
    rows = max(lanes, default=-1) + 1
    lines, labels = [], []  # every line first, then the labels over them (a line may cross a lower label)
    for c, lane in zip(claims, lanes):
        cx = x(c["rate"])
        ly = top + 10 + 13 * lane
        labels.append(_text(cx, ly, c["label"], anchor="middle", size=10, color=CLAIM, halo=True))
        lines.append(f'<line x1="{_f(cx)}" y1="{_f(ly + 2)}" x2="{_f(cx)}" y2="{_f(bottom)}" stroke="{CLAIM}" '
                     f'stroke-dasharray="3 3"/>')
    return lines + labels, 13 * rows + (4 if claims else 0)


def interval_chart(rows: list[dict], *, title: str, width: int = 720, label_w: int = 300) -> str:
    """Horizontal bars (rate) with 95% interval whiskers, one row per item.

    rows: dicts with ``label``, ``rate``, ``low``, ``high``, ``kind`` and optional ``note``.
    Below ``COMPACT`` wide, each label sits above its bar.
    """
    compact = width < COMPACT
    right_pad, top = (96, 8) if compact else (110, 28)
    row_h = 34 if compact else 22
    left = 8 if compact else label_w
    plot_w = width - left - right_pad
    xmax = _nice_max(max([r["high"] or 0 for r in rows] + [r["rate"] or 0 for r in rows] + [0.01]))
    height = top + row_h * len(rows) + 26

    def x(v):
        return left + plot_w * (v / xmax)

    out = _svg_open(width, height, title)
    for t in [xmax * i / 5 for i in range(6)]:
        out.append(f'<line x1="{_f(x(t))}" y1="{top - 6 if not compact else top}" x2="{_f(x(t))}" '
                   f'y2="{_f(height - 20)}" stroke="{GRID}"/>')
        out.append(_text(x(t), height - 6, pct_label(t), anchor="middle", size=10, color=MUTED))
    for i, r in enumerate(rows):
        y = top + i * row_h + (14 if compact else 0)
        color = kind_color(r.get("kind", "honest"))
        if compact:
            out.append(_text(left, y - 3, r["label"], size=11, limit=int((width - 16) / 6.3)))
        else:
            out.append(_text(label_w - 8, y + 14, r["label"], anchor="end", limit=int(label_w / 6.2)))
        rate = r["rate"] or 0.0
        out.append(f'<rect x="{_f(x(0))}" y="{_f(y + 4)}" width="{_f(x(rate) - x(0))}" height="12" '
                   f'fill="{color}" fill-opacity="0.55"/>')
        if r["low"] is not None and r["high"] is not None:
            lo, hi = x(r["low"]), x(r["high"])
            out.append(f'<line x1="{_f(lo)}" y1="{_f(y + 10)}" x2="{_f(hi)}" y2="{_f(y + 10)}" stroke="{TEXT}"/>')
            for xx in (lo, hi):
                out.append(f'<line x1="{_f(xx)}" y1="{_f(y + 5)}" x2="{_f(xx)}" y2="{_f(y + 15)}" stroke="{TEXT}"/>')
        note = r.get("note") or pct_label(rate)
        out.append(_text(x(max(rate, r["high"] or 0)) + 6, y + 14, note, size=10, halo=True))
    out.append("</svg>")
    return "\n".join(out)


def claims_chart(readings: list[dict], claims: list[dict], *, title: str, width: int = 720,
                 floor: float = 0.001) -> str:
    """A log-scale forest plot: measured rates with intervals, and the claims as vertical lines.

    readings: dicts with ``label``, ``rate``, ``low``, ``high``, ``kind``;
    claims: dicts with ``label`` and ``rate``. Rates below ``floor`` are drawn at the floor.
    Below ``COMPACT`` wide, each label sits above its row.
    """
    compact = width < COMPACT
    label_w = 0 if compact else 300
    row_h = 32 if compact else 20
    x = _log_x(18 if compact else label_w, width - (16 if compact else 30), floor)
    marks, claim_h = _claim_marks(claims, x, 4, 0)  # measured first: the lines' length comes next
    top = 8 + claim_h
    bottom = top + row_h * len(readings) + 4
    marks, _ = _claim_marks(claims, x, 4, bottom)
    height = bottom + 20
    out = _svg_open(width, height, title)
    out += _log_axis(x, top, bottom, floor)
    out += marks
    for i, r in enumerate(readings):
        y = top + i * row_h
        cy = y + (22 if compact else 9)
        color = kind_color(r.get("kind", "honest"))
        if compact:
            out.append(_text(8, y + 11, r["label"], size=11, limit=int((width - 16) / 6.3)))
        else:
            out.append(_text(label_w - 8, y + 13, r["label"], anchor="end", limit=48))
        if r["low"] is not None and r["high"] is not None:
            out.append(f'<line x1="{_f(x(r["low"]))}" y1="{_f(cy)}" x2="{_f(x(r["high"]))}" y2="{_f(cy)}" '
                       f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<circle cx="{_f(x(r["rate"]))}" cy="{_f(cy)}" r="3.5" fill="{color}"/>')
    out.append("</svg>")
    return "\n".join(out)


def odds_chart(panels: list[dict], *, title: str, width: int = 720, floor: float = 0.001) -> str:
    """The answer as a picture: per variant one log-scale axis with honest play, the honest
    bracket, clairvoyant play and the published claims.

    panels: dicts with ``title`` and ``lanes`` (top to bottom), each a dict with ``label``,
    ``kind`` ('honest', 'bracket' or 'clairvoyant'), ``low``, ``high`` (the 95% ends), optional
    ``rate`` (the point estimate), ``band`` (a bracket's two ends, drawn as a filled band inside
    its 95% whiskers), ``marks`` (further estimates drawn as ticks, e.g. a bracket's two ends)
    and ``note`` (text beside it); and ``claims``: dicts with ``label``
    and ``rate``. Rates below ``floor`` are drawn at the floor. Below ``COMPACT`` wide, each
    lane's label sits above it.
    """
    compact = width < COMPACT
    label_w = 0 if compact else 150
    lane_h = 34 if compact else 22
    x = _log_x(18 if compact else label_w, width - 16, floor)

    blocks: list[tuple[float, list[str]]] = []
    for p in panels:
        claims = p.get("claims") or []
        _, claim_h = _claim_marks(claims, x, 16, 0)
        lane_top = 16 + claim_h
        y_axis = lane_top + lane_h * len(p["lanes"]) + 2
        out = [_text(0, 13, p["title"], size=13, weight="bold")]
        out += _log_axis(x, lane_top, y_axis, floor)
        out.append(f'<line x1="{_f(x(floor))}" y1="{_f(y_axis)}" x2="{_f(x(1.0))}" y2="{_f(y_axis)}" stroke="{MUTED}"/>')
        out += _claim_marks(claims, x, 16, y_axis)[0]
        for i, lane in enumerate(p["lanes"]):
            cy = lane_top + lane_h * i + (lane_h - 11 if compact else lane_h / 2)
            kind = lane.get("kind", "honest")
            color = CLAIRVOYANT if kind == "clairvoyant" else HONEST
            if compact:
                out.append(_text(18, cy - 10, lane["label"], size=11, color=MUTED, halo=True))
            else:
                out.append(_text(label_w - 8, cy + 4, lane["label"], anchor="end", size=11, limit=26))
            lo, hi = lane.get("low"), lane.get("high")
            if kind == "bracket":  # whiskers to the 95% ends, a band between the two estimates
                if lo is not None or hi is not None:
                    a, b = x(lo if lo is not None else floor), x(hi if hi is not None else 1.0)
                    out.append(f'<line x1="{_f(a)}" y1="{_f(cy)}" x2="{_f(b)}" y2="{_f(cy)}" stroke="{HONEST}" '
                               f'stroke-width="1.5"/>')
                band_lo, band_hi = lane.get("band") or (lo, hi)
                band_lo = floor if band_lo is None else band_lo
                if band_hi is not None:
                    out.append(f'<rect x="{_f(x(band_lo))}" y="{_f(cy - 6)}" '
                               f'width="{_f(max(x(band_hi) - x(band_lo), 2.0))}" height="12" fill="{BRACKET}" '
                               f'stroke="{HONEST}"/>')
            elif lo is not None and hi is not None:
                out.append(f'<line x1="{_f(x(lo))}" y1="{_f(cy)}" x2="{_f(x(hi))}" y2="{_f(cy)}" '
                           f'stroke="{color}" stroke-width="3"/>')
            for m in lane.get("marks") or []:
                out.append(f'<line x1="{_f(x(m))}" y1="{_f(cy - 7)}" x2="{_f(x(m))}" y2="{_f(cy + 7)}" '
                           f'stroke="{TEXT}" stroke-width="2"/>')
            if lane.get("rate") is not None:
                out.append(f'<circle cx="{_f(x(lane["rate"]))}" cy="{_f(cy)}" r="4.5" fill="{color}" '
                           f'stroke="#ffffff"/>')
            values = [v for v in (lo, lane.get("rate"), hi, *(lane.get("marks") or [])) if v is not None]
            note = lane.get("note")
            if note and values:
                right_end, left_end = x(max(values)), x(min(values))
                if right_end + 8 + _text_width(note, 10) <= width:
                    out.append(_text(right_end + 8, cy + 4, note, size=10, halo=True))
                else:  # no room on the right: write it left of the low end
                    out.append(_text(left_end - 8, cy + 4, note, size=10, anchor="end", halo=True))
        blocks.append((y_axis + 22, out))
    height = sum(h for h, _ in blocks) + 4
    out = _svg_open(width, height, title)
    y0 = 0.0
    for h, parts in blocks:
        out.append(f'<g transform="translate(0,{_f(y0)})">')
        out += parts
        out.append("</g>")
        y0 += h
    out.append("</svg>")
    return "\n".join(out)


def night_chart(points: list[dict], *, title: str, kind: str, width: int = 340, height: int = 180) -> str:
    """One player's running win rate after each night, its 95% interval as a band, against deals.

    points: dicts with ``deals`` (running total), ``rate``, ``low``, ``high``, in night order.
    """
    left, right, top, bottom = 46, 12, 22, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    color = kind_color(kind)
    xmax = max([p["deals"] for p in points] + [1])
    lows = [p["low"] for p in points if p["low"] is not None]
    highs = [p["high"] for p in points if p["high"] is not None]
    ymin, ymax = (min(lows), max(highs)) if lows and highs else (0.0, 0.01)
    step = _nice_step(ymax - ymin)
    ymin = max(0.0, math.floor(ymin / step) * step)
    ymax = min(1.0, math.ceil(ymax / step) * step)
    if ymax <= ymin:
        ymax = ymin + step

    def x(v):
        return left + plot_w * v / xmax

    def y(v):
        return top + plot_h * (1 - (v - ymin) / (ymax - ymin))

    out = _svg_open(width, height, title)
    out.append(_text(left, 14, title, size=11, weight="bold", limit=52))
    t = ymin
    decimals = next(d for d in range(6) if abs(round(step * 100, d) - step * 100) < 1e-9 or d == 5)
    while t <= ymax + step / 1000:
        out.append(f'<line x1="{left}" y1="{_f(y(t))}" x2="{_f(left + plot_w)}" y2="{_f(y(t))}" stroke="{GRID}"/>')
        out.append(_text(left - 4, y(t) + 3, f"{t * 100:.{decimals}f}%", anchor="end", size=9, color=MUTED))
        t += step
    for v in (0, xmax / 2, xmax):
        out.append(_text(x(v), height - 16, count_label(v), anchor="middle", size=9, color=MUTED))
    out.append(_text(left + plot_w / 2, height - 4, "deals played so far", anchor="middle", size=9, color=MUTED))
    band = [p for p in points if p["low"] is not None and p["high"] is not None]
    if len(band) > 1:
        pts = [f"{_f(x(p['deals']))},{_f(y(p['high']))}" for p in band]
        pts += [f"{_f(x(p['deals']))},{_f(y(p['low']))}" for p in reversed(band)]
        out.append(f'<polygon points="{" ".join(pts)}" fill="{color}" fill-opacity="0.18" stroke="none"/>')
    for p in band:  # each night's interval as a whisker, so one night alone still shows it
        out.append(f'<line x1="{_f(x(p["deals"]))}" y1="{_f(y(p["low"]))}" x2="{_f(x(p["deals"]))}" '
                   f'y2="{_f(y(p["high"]))}" stroke="{color}" stroke-opacity="0.6"/>')
    if len(points) > 1:
        line = " ".join(f"{_f(x(p['deals']))},{_f(y(p['rate']))}" for p in points)
        out.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="1.5"/>')
    for p in points:
        out.append(f'<circle cx="{_f(x(p["deals"]))}" cy="{_f(y(p["rate"]))}" r="2.5" fill="{color}"/>')
    out.append("</svg>")
    return "\n".join(out)


def survival_chart(series: list[dict], *, title: str, width: int = 720, height: int = 270,
                   lowest: int | None = None) -> str:
    """Score distributions of several players on one axis: the share of deals reaching each score.

    series: dicts with ``label``, ``color``, ``dashed`` and ``reach`` (49 shares: ``reach[s]``
    = share of deals scoring s or more, so ``reach[48]`` is the win rate). The x axis starts at
    ``lowest`` (default: the highest multiple of 4 below which every player reaches 99.5%).
    """
    left, right, top, bottom = 44, 14, 12, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    if lowest is None:
        lowest = 48
        for s in range(49):
            if any(r["reach"][s] < 0.995 for r in series):
                lowest = s
                break
        lowest = max(0, min(40, (lowest // 4) * 4))

    def x(s):
        return left + plot_w * (s - lowest) / (48 - lowest)

    def y(v):
        return top + plot_h * (1 - v)

    out = _svg_open(width, height, title)
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line x1="{left}" y1="{_f(y(t))}" x2="{_f(left + plot_w)}" y2="{_f(y(t))}" stroke="{GRID}"/>')
        out.append(_text(left - 4, y(t) + 3, pct_label(t), anchor="end", size=10, color=MUTED))
    for s in range(lowest, 49, 4 if width >= COMPACT else 8):
        out.append(f'<line x1="{_f(x(s))}" y1="{_f(y(0))}" x2="{_f(x(s))}" y2="{_f(y(0) + 4)}" stroke="{MUTED}"/>')
        out.append(_text(x(s), y(0) + 15, str(s), anchor="middle", size=10, color=MUTED))
    out.append(_text(left + plot_w / 2, height - 3, "score: cards discarded (48 = won)", anchor="middle",
                     size=10, color=MUTED))
    for r in series:
        pts = " ".join(f"{_f(x(s))},{_f(y(r['reach'][s]))}" for s in range(lowest, 49))
        dash = ' stroke-dasharray="6 3"' if r.get("dashed") else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{r["color"]}" stroke-width="2"{dash}/>')
    out.append("</svg>")
    return "\n".join(out)
