"""The sweep as text (table / CSV rows) and as an HTML page: throughput per GPU and scaling efficiency
against GPUs, then the table with the best recipe and the training budget at each size."""
from __future__ import annotations

from shardplan.report.page import CSS, html_table
from shardplan.report.svg import GIB, esc
from shardplan.report.sweep_chart import line_chart

DAY_S = 86400.0


def sweep_rows(result) -> list[dict]:
    """One row per (hardware, size): what the text table, the CSV and the page show."""
    rows = []
    budget = result.train_tokens is not None
    for p in result.points:
        ok = p.status == "solved"
        row = {"hardware": p.hardware, "nodes": p.nodes, "GPUs": p.gpus,
               "best recipe": p.recipe_label if ok else p.status.replace("_", " "),
               "step s": f"{p.step_time_s:.3f}" if ok else "", "tokens/s/GPU": f"{p.tokens_per_s_per_gpu:,.0f}" if ok else "",
               "MFU %": f"{100 * p.mfu:.1f}" if ok else "", "efficiency %": f"{100 * p.scaling_efficiency:.1f}" if ok else "",
               "peak GiB": f"{p.peak_bytes / GIB:.1f}" if ok else ""}
        if budget:
            row["train days"] = f"{p.train_time_s / DAY_S:,.1f}" if ok else ""
            row["GPU-hours"] = f"{p.gpu_hours:,.0f}" if ok else ""
            if result.usd_per_gpu_hour is not None:
                row["cost USD"] = f"{p.cost_usd:,.0f}" if ok else ""
        rows.append(row)
    return rows


def sweep_text(result) -> str:
    """Aligned text table (numbers right-aligned) with the job on the first line."""
    rows = sweep_rows(result)
    head = (f"{result.model}, seq {result.seq_length:,}, global batch {result.global_batch_size:,}, {result.precision}, "
            f"{result.gpus_per_node} GPUs per node")
    if result.train_tokens:
        head += f"; training {result.train_tokens:,.0f} tokens" + (f" at {result.usd_per_gpu_hour} USD per GPU-hour"
                                                                    if result.usd_per_gpu_hour is not None else "")
    if not rows:
        return head
    cols = list(rows[0])
    width = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    left = {"hardware", "best recipe"}
    fmt_row = lambda r: "  ".join(str(r[c]).ljust(width[c]) if c in left else str(r[c]).rjust(width[c]) for c in cols).rstrip()  # noqa: E731
    return "\n".join([head, fmt_row({c: c for c in cols})] + [fmt_row(r) for r in rows])


def sweep_section(result) -> str:
    """Charts and table for the page."""
    tps, eff = {}, {}
    for p in result.points:
        if p.status == "solved":
            tps.setdefault(p.hardware, []).append((p.gpus, p.tokens_per_s_per_gpu))
            eff.setdefault(p.hardware, []).append((p.gpus, 100 * p.scaling_efficiency))
    charts = ""
    if tps:
        charts = ("<div class='grid'><div class='card'>"
                  + line_chart(tps, "tokens/s per GPU", "sweep-throughput", y_format=lambda v: f"{v:,.0f}")
                  + "</div><div class='card'>"
                  + line_chart(eff, "scaling efficiency (%)", "sweep-efficiency", reference=100.0, y_format=lambda v: f"{v:.0f}")
                  + "</div></div>")
    return ("<h2>Best recipe at each cluster size</h2>" + charts
            + "<p class='note'>efficiency: tokens/s/GPU against the smallest size that fits on the same hardware; sizes where "
              "nothing fits are not drawn</p>"
            + html_table(sweep_rows(result), "sweep-table", ("hardware", "best recipe")))


def sweep_page(result) -> str:
    title = f"shardplan sweep: {result.model}"
    job = (f"seq {result.seq_length:,}, global batch {result.global_batch_size:,}, {result.precision}, "
           f"{result.gpus_per_node} GPUs per node")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{esc(title)}</h1><div class='job'>{esc(job)}</div>"
            f"{sweep_section(result)}</body></html>")
