"""The step's time breakdown as horizontal stacked bars, one per recipe on a shared scale.

The parts are measure.projection.project's Breakdown on the critical pipeline rank (compute, recompute, exposed TP / CP / EP
communication, DP communication, p2p, the pipeline bubble, optimizer), which sum to the iteration time.
"""
from __future__ import annotations

from shardplan.report.svg import TIME_COLOURS, colour, esc, fmt, fmt_s, legend, line, nice_ticks, rect, svg, text

LABELS = {"compute": "compute", "recompute": "recompute", "tp_comm": "TP comm (exposed)", "cp_comm": "CP comm (exposed)",
          "ep_comm": "EP comm (exposed)", "dp_comm": "DP comm (exposed)", "pp_comm": "PP p2p", "pp_bubble": "pipeline bubble",
          "optimizer": "optimizer + overhead"}


def breakdown_chart(rows: list[tuple[str, dict]], width: float = 640) -> str:
    """SVG of [(label, projection JSON)], each projection's `breakdown` one bar (seconds)."""
    keys = [k for k in LABELS if any(p["breakdown"].get(k, 0) > 0 for _, p in rows)]
    keys += [k for _, p in rows for k in p["breakdown"] if k not in LABELS and k not in keys and p["breakdown"][k] > 0]
    hi = max(sum(max(v, 0) for v in p["breakdown"].values()) for _, p in rows)
    ticks = nice_ticks(hi)
    left, right, top, bar_h, gap = 70, 16, 8, 22, 10
    plot_w = width - left - right
    plot_h = len(rows) * (bar_h + gap)
    x_of = lambda s: left + plot_w * s / ticks[-1]  # noqa: E731
    body = []
    for t in ticks:
        body.append(line(x_of(t), top, x_of(t), top + plot_h, "#e4e4e4"))
        body.append(text(x_of(t), top + plot_h + 13, fmt(t), "middle"))
    body.append(text(left + plot_w / 2, top + plot_h + 27, "seconds per iteration", "middle"))
    for i, (label, proj) in enumerate(rows):
        y = top + i * (bar_h + gap) + gap / 2
        acc, segs = 0.0, []
        for j, k in enumerate(keys):
            v = proj["breakdown"].get(k, 0)
            if v <= 0:
                continue
            share = 100 * v / proj["iteration_time_s"] if proj["iteration_time_s"] else 0
            segs.append(rect(x_of(acc), y, x_of(acc + v) - x_of(acc), bar_h, colour(k, TIME_COLOURS, j),
                             f"{label}: {LABELS.get(k, k)} {fmt_s(v)} ({share:.1f} %)", "seg"))
            acc += v
        body.append(f"<g class='time-bar' data-recipe='{i}'><title>{esc(label)}: {esc(fmt_s(proj['iteration_time_s']))}"
                    f"</title>{''.join(segs)}</g>")
        body.append(text(left - 6, y + bar_h / 2 + 4, label, "end"))
    items, used = legend([(LABELS.get(k, k), colour(k, TIME_COLOURS, j)) for j, k in enumerate(keys)], left,
                         top + plot_h + 36, plot_w)
    return svg(width, top + plot_h + 36 + used, body + items, "time-chart", "iteration time breakdown")
