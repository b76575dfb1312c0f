"""The simulated pipeline step per rank: forward / backward / weight-gradient blocks, the idle time between them
(the bubble, hatched) and the DP + optimizer tail, on one time axis.

Chunks of an interleaved or V schedule share their kind's colour, lighter for later chunks; every block's
tooltip names kind, micro-batch, chunk and times. A sampled timeline (shardplan/report/timeline.py: too many ops to
draw one by one) draws each rank's busy spans under the sampled micro-batches' ops, and its label says which.
"""
from __future__ import annotations

from shardplan.report.svg import EVENT_COLOURS, esc, fmt, legend, line, nice_ticks, rect, svg, text
from shardplan.report.timeline import KIND_LABEL, Timeline, event_name

SPAN_COLOUR = "#8c8c8c"
HATCH = ("<defs><pattern id='bubble-hatch' width='6' height='6' patternUnits='userSpaceOnUse' "
         "patternTransform='rotate(45)'><rect width='6' height='6' fill='#f3f3f3'/>"
         "<line x1='0' y1='0' x2='0' y2='6' stroke='#d6d6d6' stroke-width='2'/></pattern></defs>")


def warmup_window_s(tl: Timeline) -> float | None:
    """End of a close-up on the pipeline's fill: 1.5x the start of rank 0's first backward (all warm-up forwards ran
    by then); None when the whole step is already readable (few ops per rank)."""
    first_b = min((e.start_s for e in tl.events if e.rank == 0 and e.kind == "B"), default=None)
    per_rank = tl.total_ops // max(1, tl.pp)
    if first_b is None or (per_rank <= 48 and not tl.sampled):  # a sampled step draws its ops only here
        return None
    return min(1.5 * first_b, tl.pipeline_s)


def timeline_chart(tl: Timeline, width: float = 960, window_s: float | None = None) -> str:
    """SVG of one recipe's Timeline: a row per pipeline rank; with `window_s`, only [0, window_s] (a close-up)."""
    end_s = window_s or tl.iteration_s
    unit, scale = ("ms", 1e3) if end_s < 10 else ("s", 1.0)
    ticks = nice_ticks(end_s * scale)
    left, right, top, row_h, gap = 64, 28, 8, 20, 4
    plot_w = width - left - right
    plot_h = tl.pp * (row_h + gap)
    x_of = lambda s: left + plot_w * s * scale / ticks[-1]  # noqa: E731
    body = [HATCH]
    for t in ticks:
        body.append(line(left + plot_w * t / ticks[-1], top, left + plot_w * t / ticks[-1], top + plot_h, "#e4e4e4"))
        body.append(text(left + plot_w * t / ticks[-1], top + plot_h + 13, fmt(t), "middle"))
    body.append(text(left + plot_w / 2, top + plot_h + 27, f"time in the iteration ({unit})", "middle"))
    rows: list[list[str]] = [[] for _ in range(tl.pp)]
    for span in tl.spans:  # under the ops: the whole step, aggregated
        if span.start_s >= end_s:
            continue
        x0, x1 = x_of(span.start_s), x_of(min(span.end_s, end_s))
        tip = (f"PP rank {span.rank}: busy {span.busy_s * scale:.3f} {unit} in {span.ops:,} ops (aggregated), "
               f"{span.start_s * scale:.3f}-{span.end_s * scale:.3f} {unit}")
        rows[span.rank].append(rect(x0, top + span.rank * (row_h + gap) + row_h / 4, max(x1 - x0, 0.5), row_h / 2,
                                    SPAN_COLOUR, tip, "span"))
    for ev in tl.events:
        if ev.start_s >= end_s or (tl.sampled and window_s is None and ev.microbatch is not None):
            continue  # a sampled step's ops are sub-pixel over the whole step: its spans show it, the close-up its ops
        y = top + ev.rank * (row_h + gap)
        shade = "" if not ev.chunk or tl.vpp <= 1 else f" fill-opacity='{1 - 0.45 * ev.chunk / (tl.vpp - 1):.2f}'"
        tip = (f"PP rank {ev.rank}: {KIND_LABEL[ev.kind]}" + (f", micro-batch {ev.microbatch}" if ev.microbatch is not None else "")
               + (f", chunk {ev.chunk}" if ev.chunk is not None and tl.vpp > 1 else "")
               + f", {ev.start_s * scale:.3f}-{ev.end_s * scale:.3f} {unit}")
        x0, x1 = x_of(ev.start_s), x_of(min(ev.end_s, end_s))
        rows[ev.rank].append(rect(x0, y, x1 - x0, row_h, EVENT_COLOURS[ev.kind], tip, f"ev ev-{ev.kind}", shade + " stroke='#fff' stroke-width='0.3'"))
        if ev.microbatch is not None and x1 - x0 >= 7 * len(event_name(ev, tl.vpp)):
            rows[ev.rank].append(text((x0 + x1) / 2, y + row_h / 2 + 4, event_name(ev, tl.vpp), "middle",
                                      " fill='#fff' pointer-events='none'"))
    for r in range(tl.pp):
        y = top + r * (row_h + gap)
        idle = tl.pipeline_s - tl.rank_busy_s[r]
        bg = rect(left, y, x_of(min(tl.pipeline_s, end_s)) - left, row_h, "url(#bubble-hatch)",
                  f"PP rank {r}: idle (bubble) {idle * scale:.3f} {unit} of the {tl.pipeline_s * scale:.3f} {unit} pipeline", "bubble")
        body.append(f"<g class='tl-row' data-rank='{r}'>{bg}{''.join(rows[r])}</g>")
        body.append(text(left - 6, y + row_h / 2 + 4, f"PP {r}", "end"))
    kinds = [k for k in ("F", "B", "W", "dp", "optimizer") if any(e.kind == k for e in tl.events)]
    items = [(KIND_LABEL[k], EVENT_COLOURS[k]) for k in kinds] + [("idle (bubble)", "url(#bubble-hatch)")]
    if tl.spans:
        items.append(("busy (all ops, aggregated)", SPAN_COLOUR))
    leg, used = legend(items, left, top + plot_h + 36, plot_w)
    label = f"simulated {esc(tl.schedule)} pipeline timeline, {tl.pp} ranks, {tl.num_microbatches} micro-batches"
    if tl.sampled:
        label += (f": micro-batches 0-{tl.sampled_microbatches - 1} op by op, all {tl.total_ops:,} ops as busy spans"
                  if window_s else f": all {tl.total_ops:,} ops as {len(tl.spans):,} busy spans (the close-up draws "
                  f"micro-batches 0-{tl.sampled_microbatches - 1} op by op)")
    cls = "timeline-zoom" if window_s else "timeline-chart"
    return svg(width, top + plot_h + 36 + used, body + leg, cls, label + (" (close-up on the fill)" if window_s else ""))
