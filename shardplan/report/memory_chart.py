"""Per-pipeline-rank stacked memory chart: each rank's exact bytes by term against usable HBM.

The terms and their order are the memory model's (constraints/memory/per_rank.py, `check --json` memory.stages);
bars are drawn in GiB, tooltips carry the exact integer bytes.
"""
from __future__ import annotations

from shardplan.report.svg import GIB, TERM_COLOURS, colour, esc, fmt, legend, line, nice_ticks, rect, svg, text


def memory_chart(memory: dict, width: float = 640, height: float = 300) -> str:
    """SVG of `memory` (MemorySummary JSON: stages[{rank, total_bytes, terms}], usable_bytes, capacity_bytes)."""
    stages = memory["stages"]
    order = [t for t in memory["terms"] if any(s["terms"].get(t, 0) for s in stages)]
    for s in stages:  # a term only some ranks carry still gets its place
        order += [t for t in s["terms"] if s["terms"][t] and t not in order]
    usable, capacity = memory["usable_bytes"], memory["capacity_bytes"]
    top_gib = max([capacity, usable] + [s["total_bytes"] for s in stages]) / GIB
    ticks = nice_ticks(top_gib * 1.04)
    left, right, top, plot_h = 52, 12, 12, height - 60
    plot_w = width - left - right
    y_of = lambda gib: top + plot_h * (1 - gib / ticks[-1])  # noqa: E731
    body = []
    for t in ticks:
        body.append(line(left, y_of(t), left + plot_w, y_of(t), "#e4e4e4"))
        body.append(text(left - 6, y_of(t) + 4, fmt(t), "end"))
    body.append(text(14, top + plot_h / 2, "GiB per GPU", "middle", f" transform='rotate(-90 14 {top + plot_h / 2:.1f})'"))
    n = len(stages)
    slot = plot_w / n
    bar_w = min(slot * 0.7, 60)
    for i, s in enumerate(stages):
        x = left + slot * i + (slot - bar_w) / 2
        acc, segs = 0, []
        for j, term in enumerate(order):
            b = s["terms"].get(term, 0)
            if not b:
                continue
            y0, y1 = y_of((acc + b) / GIB), y_of(acc / GIB)
            segs.append(rect(x, y0, bar_w, y1 - y0, colour(term, TERM_COLOURS, j),
                             f"PP rank {s['rank']}: {term} {b / GIB:.2f} GiB ({b:,} B)", "seg"))
            acc += b
        tip = f"PP rank {s['rank']}: {s['total_bytes'] / GIB:.2f} GiB ({s['total_bytes']:,} B)"
        body.append(f"<g class='mem-bar' data-rank='{s['rank']}'><title>{esc(tip)}</title>{''.join(segs)}</g>")
        if n <= 32 or i % max(n // 16, 1) == 0:
            body.append(text(x + bar_w / 2, top + plot_h + 14, s["rank"], "middle"))
    body.append(text(left + plot_w / 2, top + plot_h + 28, "pipeline rank", "middle"))
    body.append(line(left, y_of(usable / GIB), left + plot_w, y_of(usable / GIB), "#c00",
                     " stroke-width='2' stroke-dasharray='6 3' class='usable-line'"))
    body.append(text(left + plot_w - 2, y_of(usable / GIB) - 4, f"usable {usable / GIB:.1f} GiB", "end", " fill='#c00'"))
    if capacity != usable:
        body.append(line(left, y_of(capacity / GIB), left + plot_w, y_of(capacity / GIB), "#555", " stroke-dasharray='2 2'"))
        body.append(text(left + 2, y_of(capacity / GIB) - 4, f"HBM {capacity / GIB:.1f} GiB", "start", " fill='#555'"))
    items, used = legend([(t, colour(t, TERM_COLOURS, j)) for j, t in enumerate(order)], left, top + plot_h + 36, plot_w)
    total_h = top + plot_h + 36 + used
    return svg(width, total_h, body + items, "memory-chart", "per-pipeline-rank memory by term against usable HBM")
