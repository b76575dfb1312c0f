"""One self-contained HTML page from a Report: inline CSS and SVG, no script, nothing fetched when it opens.

Layout: the job, then (solve) the top-K side by side - a comparison table, the time breakdowns on one scale,
the per-rank memory of each recipe in a grid - then each recipe's verdict, settings, memory and simulated
timeline; a sweep adds its throughput and efficiency charts and table.
"""
from __future__ import annotations

from shardplan.report.memory_chart import memory_chart
from shardplan.report.model import RecipeView, Report
from shardplan.report.svg import GIB, esc, fmt_s
from shardplan.report.time_chart import LABELS, breakdown_chart
from shardplan.report.timeline_chart import timeline_chart, warmup_window_s

CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px} .job{color:#555;margin-bottom:8px} .note{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:13px;margin:6px 0} th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f5f5f5} td.l,th.l{text-align:left}
.verdict{display:inline-block;padding:2px 8px;border-radius:3px;font-weight:600;font-size:13px;color:#fff}
.ok{background:#1a7f37} .bad{background:#c62828}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(380px,1fr));gap:12px}
.card{border:1px solid #e2e2e2;border-radius:4px;padding:8px}
svg.chart{display:block;max-width:100%;height:auto}
ul.viol li{margin:2px 0} code{background:#f3f3f3;padding:0 3px}
"""


def html_table(rows: list[dict], cls: str, left: tuple = ()) -> str:
    if not rows:
        return ""
    cols = list(rows[0])
    head = "".join(f"<th class='{'l' if c in left else ''}'>{esc(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td class='{'l' if c in left else ''}'>{esc(_cell(r[c]))}</td>" for c in cols) + "</tr>"
                   for r in rows)
    return f"<table class='{cls}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(v) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if v is None:
        return "-"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _verdict(v: RecipeView) -> str:
    ok = v.legal and v.fits
    word = ("LEGAL" if v.legal else "ILLEGAL") + ", " + ("FITS" if v.fits else "DOES NOT FIT")
    return f"<span class='verdict {'ok' if ok else 'bad'}'>{word}</span>"


def summary_row(v: RecipeView) -> dict:
    """One line of the side-by-side table."""
    p, m = v.projection or {}, v.memory or {}
    near = " (near the limit)" if m.get("near_limit") else ""  # constraints/memory/allocator.py near_limit
    return {"recipe": v.title, "verdict": ("legal" if v.legal else "illegal") + (", fits" + near if v.fits else ", OOM"),
            "iteration": fmt_s(p["iteration_time_s"]) if p else "-",
            "tokens/s/GPU": f"{p['tokens_per_s_per_gpu']:,.0f}" if p else "-", "MFU": f"{100 * p['mfu']:.1f} %" if p else "-",
            "bubble": f"{100 * p['bubble_fraction']:.1f} %" if p else "-",
            "peak GiB": f"{m['peak_bytes'] / GIB:.2f} (rank {m['stage']})" if m else "-",
            "usable GiB": f"{m['usable_bytes'] / GIB:.2f}" if m else "-"}


def recipe_section(v: RecipeView, index: int) -> str:
    out = [f"<section class='recipe' id='recipe-{index}'><h3>{esc(v.title)} {_verdict(v)}</h3>"]
    if v.violations:
        out.append("<ul class='viol'>" + "".join(f"<li><b>{esc(x['rule'])}</b>: {esc(x['message'])}<br>fix: {esc(x['fix'])}</li>"
                                                 for x in v.violations) + "</ul>")
    if v.warnings:
        out.append("<ul class='viol note'>" + "".join(f"<li>{esc(x['rule'])}: {esc(x['message'])}</li>" for x in v.warnings) + "</ul>")
    out.append(html_table([v.parallel], "recipe-table"))
    if v.memory:
        m = v.memory
        out.append(f"<p class='note'>memory: peak {m['peak_bytes'] / GIB:.2f} GiB on pipeline rank {m['stage']} "
                   f"({m['peak_bytes']:,} B) of {m['usable_bytes'] / GIB:.2f} GiB usable; {m['num_microbatches']} micro-batches"
                   + ("; near the limit: within a few percent of HBM of it, where published runs both ran and ran out of "
                      "memory" if m.get("near_limit") else "") + "</p>")
        out.append(memory_chart(m))
    if v.projection:
        p = v.projection
        span = p.get("tokens_per_s_per_gpu_range")  # numbers only: nothing of the user's reaches the page here
        within = f" (range {span[0]:,.0f}-{span[1]:,.0f}: 80 % of held-out runs measured inside it)" if span else ""
        out.append(f"<p class='note'>projection: {fmt_s(p['iteration_time_s'])} per iteration, {p['tokens_per_s_per_gpu']:,.0f} "
                   f"tokens/s/GPU{within}, MFU {100 * p['mfu']:.1f} %, bubble {100 * p['bubble_fraction']:.1f} %</p>")
        out.append(breakdown_chart([(v.title.split(" ")[0] if v.title.startswith("#") else "step", p)]))
    if v.timeline:
        out.append("<p class='note'>simulated pipeline step (measure.pipeline.simulator), then exposed DP traffic and the optimizer"
                   + (f"; drawn: {esc(v.timeline.shown())} (a page draws at most a few thousand ops, so it stays a few "
                      "MiB whatever the job)" if v.timeline.sampled else "") + "</p>")
        out.append(timeline_chart(v.timeline))
        window = warmup_window_s(v.timeline)
        if window:
            out.append(f"<p class='note'>close-up: the first {fmt_s(window)} (pipeline fill and the first backwards)</p>")
            out.append(timeline_chart(v.timeline, window_s=window))
    out.append("</section>")
    return "".join(out)


def breakdown_table(rows: list[tuple[str, dict]]) -> str:
    """The breakdown's numbers: seconds per part and recipe, parts that are zero everywhere left out."""
    keys = [k for k in LABELS if any(p["breakdown"].get(k, 0) > 0 for _, p in rows)]
    table = [{"recipe": label, **{LABELS[k]: f"{p['breakdown'].get(k, 0):.3f}" for k in keys},
              "iteration s": f"{p['iteration_time_s']:.3f}"} for label, p in rows]
    return html_table(table, "breakdown-table", ("recipe",))


def side_by_side(report: Report) -> str:
    views = report.recipes
    out = ["<h2>Top recipes side by side</h2>", html_table([summary_row(v) for v in views], "summary-table", ("recipe", "verdict"))]
    priced = [(v.title.split(" ")[0], v.projection) for v in views if v.projection]
    if priced:
        out += ["<h3>Time breakdown (critical pipeline rank)</h3>", breakdown_chart(priced), breakdown_table(priced)]
    out.append("<h3>Memory per pipeline rank</h3><div class='grid'>")
    out += [f"<div class='card'><div class='note'>{esc(v.title)}</div>{memory_chart(v.memory, width=380, height=220)}</div>"
            for v in views if v.memory]
    out.append("</div>")
    return "".join(out)


def render_page(report: Report, sweep_html: str = "") -> str:
    """The whole HTML document."""
    j = report.job
    title = (f"shardplan {report.kind}: {j.model}" + (f" ({j.model_parameters})" if j.model_parameters else "")
             + f" on {j.world_size} x {j.hardware}")
    job = (f"{j.nodes} node{'' if j.nodes == 1 else 's'} x {j.gpus_per_node} GPUs, seq {j.seq_length:,}, global batch {j.global_batch_size:,}, {j.precision}"
           + ("" if j.projection_calibrated else " - projection not calibrated for this hardware"))
    body = [f"<h1>{esc(title)}</h1><div class='job'>{esc(job)}</div>"]
    body += [f"<div class='note'>{esc(n)}</div>" for n in report.notes]
    if sweep_html:
        body.append(sweep_html)
    if report.kind == "solve" and report.recipes:
        body.append(side_by_side(report))
    if report.kind == "solve" and not report.recipes:
        body.append("<p><b>No legal recipe fits</b> (the notes above say why).</p>")
    if report.recipes:
        body.append("<h2>" + ("Recipe" if len(report.recipes) == 1 else "Each recipe") + "</h2>")
        body += [recipe_section(v, i) for i, v in enumerate(report.recipes)]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}"
            "<footer class='note'><p>made by shardplan; exact integer memory per pipeline rank, projected step times</p></footer>"
            "</body></html>")
