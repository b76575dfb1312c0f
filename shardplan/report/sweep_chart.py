"""Sweep charts: a value per cluster size (GPUs on a log2 axis), one line per hardware profile.

Sizes where nothing fits are left out of the line (a gap, not a zero) and listed in the table beside it.
"""
from __future__ import annotations

import math

from shardplan.report.svg import PALETTE, esc, fmt, legend, line, nice_ticks, svg, text


def line_chart(series: dict[str, list[tuple[int, float]]], y_label: str, cls: str, width: float = 560, height: float = 280,
               y_format=fmt, reference: float | None = None) -> str:
    """SVG of {name: [(gpus, value)]}; `reference` draws a dashed horizontal line (e.g. 100 % efficiency)."""
    xs = sorted({x for pts in series.values() for x, _ in pts}) or [1]
    ys = [y for pts in series.values() for _, y in pts] + ([reference] if reference is not None else [])
    ticks = nice_ticks(max(ys, default=1.0) * 1.08)
    left, right, top, plot_h = 64, 16, 12, height - 70
    plot_w = width - left - right
    lo, hi = math.log2(xs[0]), math.log2(xs[-1])
    x_of = lambda g: left + (plot_w / 2 if hi == lo else plot_w * (math.log2(g) - lo) / (hi - lo))  # noqa: E731
    y_of = lambda v: top + plot_h * (1 - v / ticks[-1])  # noqa: E731
    body = []
    for t in ticks:
        body.append(line(left, y_of(t), left + plot_w, y_of(t), "#e4e4e4"))
        body.append(text(left - 6, y_of(t) + 4, y_format(t), "end"))
    for g in xs:
        body.append(line(x_of(g), top, x_of(g), top + plot_h, "#f0f0f0"))
        body.append(text(x_of(g), top + plot_h + 14, f"{g:,}", "middle"))
    body.append(text(left + plot_w / 2, top + plot_h + 30, "GPUs (log scale)", "middle"))
    body.append(text(14, top + plot_h / 2, y_label, "middle", f" transform='rotate(-90 14 {top + plot_h / 2:.1f})'"))
    if reference is not None:
        body.append(line(left, y_of(reference), left + plot_w, y_of(reference), "#888", " stroke-dasharray='5 3'"))
    items = []
    for i, (name, pts) in enumerate(series.items()):
        c = PALETTE[i % len(PALETTE)]
        items.append((name, c))
        coords = " ".join(f"{x_of(g):.2f},{y_of(v):.2f}" for g, v in pts)
        dots = "".join(f"<circle class='point' cx='{x_of(g):.2f}' cy='{y_of(v):.2f}' r='4' fill='{c}'>"
                       f"<title>{esc(name)}: {g:,} GPUs, {esc(y_format(v))}</title></circle>" for g, v in pts)
        body.append(f"<g class='series' data-name='{esc(name)}'>"
                    + (f"<polyline points='{coords}' fill='none' stroke='{c}' stroke-width='2'/>" if len(pts) > 1 else "")
                    + dots + "</g>")
    leg, used = legend(items, left, top + plot_h + 40, plot_w)
    return svg(width, top + plot_h + 40 + used, body + leg, f"sweep-chart {cls}", y_label)
