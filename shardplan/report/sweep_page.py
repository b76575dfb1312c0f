"""The sweep as text (table / CSV rows) and as an HTML page: throughput per GPU and scaling efficiency
against GPUs, then the table with the best recipe and the training budget at each size."""
from __future__ import annotations

from constraints.models.params import counts_phrase
from shardplan.formats import cell
from shardplan.report.page import CSS, html_table
from shardplan.report.svg import GIB, esc
from shardplan.report.sweep_chart import line_chart

DAY_S = 86400.0


def sweep_columns(result) -> list[tuple]:
    """(header, key, format) per column, for shardplan.formats (table, csv, markdown) and the page's table."""
    cols = [("hardware", "hardware", "{}"), ("nodes", "nodes", "{}"), ("GPUs", "gpus", "{}"), ("best recipe", "best", "{}"),
            ("step s", "step_time_s", "{:.3f}"), ("tokens/s/GPU", "tokens_per_s_per_gpu", "{:.0f}"),
            ("MFU %", "mfu", lambda v: f"{100 * v:.1f}"), ("efficiency %", "scaling_efficiency", lambda v: f"{100 * v:.1f}"),
            ("peak GiB", "peak_bytes", lambda v: f"{v / GIB:.1f}"),
            ("near limit", "near_memory_limit", lambda v: "yes" if v else "")]  # constraints/memory/allocator.py near_limit
    if result.train_tokens is not None:
        cols += [("train days", "train_time_s", lambda v: f"{v / DAY_S:.1f}"), ("GPU-hours", "gpu_hours", "{:.0f}")]
        if result.usd_per_gpu_hour is not None:
            cols.append(("cost USD", "cost_usd", "{:.0f}"))
    return cols


def sweep_rows(result) -> list[dict]:
    """One flat row per (hardware, size); `best` is the recipe, or why the size has none."""
    return [{**p.model_dump(mode="json"), "best": p.recipe_label if p.status == "solved" else p.status.replace("_", " ")}
            for p in result.points]


def sweep_title(result) -> str:
    params = result.model_params
    head = (f"{result.model}" + (f" ({counts_phrase(params['total'], params['active'])})" if params else "")
            + f", seq {result.seq_length:,}, global batch {result.global_batch_size:,}, {result.precision}, "
            + (f"{result.gpus_per_node} GPUs per node" if result.gpus_per_node else "each profile's GPUs per server"))
    if result.train_tokens:
        head += f"; training {result.train_tokens:,.0f} tokens" + (f" at {result.usd_per_gpu_hour} USD per GPU-hour"
                                                                    if result.usd_per_gpu_hour is not None else "")
    return head


def _page_rows(result) -> list[dict]:
    cols = sweep_columns(result)
    return [{h: (cell(r.get(k), spec) if r.get(k) is not None else "") for h, k, spec in cols} for r in sweep_rows(result)]


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
            + "".join(f"<p class='note'>{esc(line)}</p>" for line in result.efficiency_lines())  # the baseline, and rows above 100 %
            + "<p class='note'>sizes where nothing fits are not drawn</p>"
            + "".join(f"<p class='note'>refused on {esc(line)}</p>" for line in result.refusal_lines())
            + html_table(_page_rows(result), "sweep-table", ("hardware", "best recipe")))


def sweep_page(result) -> str:
    title = f"shardplan sweep: {result.model}"
    job = sweep_title(result).split(", ", 1)[1]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{esc(title)}</h1><div class='job'>{esc(job)}</div>"
            f"{sweep_section(result)}</body></html>")
