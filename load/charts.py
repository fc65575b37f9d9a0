"""Inline SVG line charts for report.html and capacity.html: no script, no CDN, no dependency.

Why our own: the report must be one self-contained file that opens anywhere (a CI artifact, an
air-gapped machine), so the charts are plain SVG text. A series is downsampled to at most
MAX_POINTS points before drawing, so a 10-minute run's page stays small.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_POINTS = 600
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf")


@dataclass(slots=True)
class Series:
    label: str
    points: list[tuple[float, float]]
    color: str = ""
    dots: bool = False


@dataclass(slots=True)
class Chart:
    title: str
    x_label: str
    y_label: str
    series: list[Series] = field(default_factory=list)
    log_y: bool = False
    hlines: list[tuple[str, float]] = field(default_factory=list)  # (label, y), e.g. an objective
    x_ticks: Sequence[tuple[float, str]] | None = None  # explicit (x, label) ticks


def _thin(points: list[tuple[float, float]], limit: int = MAX_POINTS) -> list[tuple[float, float]]:
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(low / step) * step
    ticks = []
    v = first
    while v <= high + step * 0.01:
        if v >= low - step * 0.01:
            ticks.append(round(v, 10))
        v += step
    return ticks


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.3g}"
    return f"{v:.2g}"


def svg(chart: Chart, width: int = 720, height: int = 260) -> str:
    """The chart as an <svg> element (a <path> per series with data, class "series")."""
    left, right, top, bottom = 64, 16, 28, 44
    pw, ph = width - left - right, height - top - bottom
    series = [Series(s.label, _thin([(x, y) for x, y in s.points if y is not None and math.isfinite(y)]),
                     s.color or PALETTE[i % len(PALETTE)], s.dots) for i, s in enumerate(chart.series)]
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points] + [y for _, y in chart.hlines]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(chart.title)}">',
           f'<text x="{left}" y="16" class="title">{html.escape(chart.title)}</text>']
    if not xs:
        out.append(f'<text x="{left + 10}" y="{top + ph / 2}" class="empty">no data</text></svg>')
        return "".join(out)
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    if chart.log_y:
        pos = [y for y in ys if y > 0] or [1.0]
        y0, y1 = math.log10(min(pos)), math.log10(max(pos))
        if y1 - y0 < 1:
            y1 = y0 + 1
        ticks = [float(t) for t in range(math.floor(y0), math.ceil(y1) + 1)]
        y0, y1 = ticks[0], ticks[-1]

        def fy(y: float) -> float:
            return top + ph - (math.log10(max(y, 10 ** y0)) - y0) / (y1 - y0) * ph
        labels = [(fy(10 ** t), _fmt(10 ** t)) for t in ticks]
    else:
        y0, y1 = 0.0, max(ys) * 1.05 if max(ys) > 0 else 1.0
        ticks = _nice_ticks(y0, y1)
        y1 = max(y1, ticks[-1])

        def fy(y: float) -> float:
            return top + ph - (y - y0) / (y1 - y0) * ph
        labels = [(fy(t), _fmt(t)) for t in ticks]

    def fx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/>')
    for y, label in labels:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" class="ytick">{label}</text>')
    xt = chart.x_ticks if chart.x_ticks is not None else [(t, _fmt(t)) for t in _nice_ticks(x0, x1)]
    for x, label in xt:
        if x0 <= x <= x1:
            out.append(f'<text x="{fx(x):.1f}" y="{top + ph + 16}" class="xtick">{html.escape(label)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 6}" class="axis">{html.escape(chart.x_label)}</text>'
               f'<text x="14" y="{top + ph / 2}" class="axis" transform="rotate(-90 14 {top + ph / 2})">'
               f'{html.escape(chart.y_label)}</text>')
    for label, y in chart.hlines:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{fy(y):.1f}" y2="{fy(y):.1f}" class="hline"/>'
                   f'<text x="{left + pw - 4}" y="{fy(y) - 4:.1f}" class="hlabel">{html.escape(label)}</text>')
    legend_x = left + 8
    for s in series:
        if not s.points:
            continue
        d = " ".join(f"{'M' if i == 0 else 'L'}{fx(x):.1f},{fy(y):.1f}" for i, (x, y) in enumerate(s.points))
        out.append(f'<path class="series" d="{d}" stroke="{s.color}"><title>{html.escape(s.label)}</title></path>')
        if s.dots:
            out.extend(f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="3" fill="{s.color}"/>' for x, y in s.points)
        out.append(f'<text x="{legend_x}" y="{top + 14}" fill="{s.color}" class="legend">{html.escape(s.label)}</text>')
        legend_x += 12 + 7 * len(s.label)
    out.append("</svg>")
    return "".join(out)


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
.ok{color:#1a7f37;font-weight:600}.bad{color:#c0392b;font-weight:600}
svg.chart{display:block;margin:8px 0;background:#fff}
svg .title{font-weight:600;font-size:13px}svg .frame{fill:none;stroke:#999}
svg .grid{stroke:#eee}svg .ytick{font-size:11px;text-anchor:end;fill:#555}
svg .xtick{font-size:11px;text-anchor:middle;fill:#555}svg .axis{font-size:12px;text-anchor:middle;fill:#333}
svg .series{fill:none;stroke-width:1.6}svg .legend{font-size:12px}
svg .hline{stroke:#c0392b;stroke-dasharray:5 4}svg .hlabel{font-size:11px;text-anchor:end;fill:#c0392b}
svg .empty{fill:#999}
"""
