"""`shardplan sweep`: click layer over shardplan.sweep (options, progress on stderr, table / CSV / JSON, HTML)."""
from __future__ import annotations

import csv
import io
import sys

import click

from shardplan.report.cli import load_job, output_path
from shardplan.sweep import parse_nodes, sweep
from solver.inputs import InputError


@click.command("sweep")
@click.option("--model", "model_name", required=True, help="bundled model name or path to a config")
@click.option("--hardware", "hardware", required=True, multiple=True,
              help="hardware profile name or YAML path; repeat or comma-separate for several")
@click.option("--nodes", "nodes_text", required=True, metavar="LIST|LO..HI|LO..HI+STEP",
              help="node counts: 1,2,4,8 or 1..64 (doubling, 64 included) or 8..64+8")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--seq-length", type=click.IntRange(min=1), required=True)
@click.option("--global-batch-size", type=click.IntRange(min=1), required=True)
@click.option("--precision", type=click.Choice(["bf16", "fp16", "fp8-delayed", "fp8-tensorwise", "fp8-blockwise", "mxfp8"]),
              default="bf16", show_default=True)
@click.option("--max-memory-fraction", type=click.FloatRange(0.1, 1.0), default=1.0, show_default=True)
@click.option("--train-tokens", type=click.FloatRange(min=0, min_open=True), default=None,
              help="tokens to train (e.g. 1e12): adds training time and GPU-hours per size")
@click.option("--usd-per-gpu-hour", type=click.FloatRange(min=0), default=None, help="adds the cost (needs --train-tokens)")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--report", "report_path", type=click.Path(), default=None, help="also write the HTML page with the charts")
@click.option("--quiet", is_flag=True, help="no progress lines on stderr")
def sweep_command(model_name, hardware, nodes_text, gpus_per_node, seq_length, global_batch_size, precision,
                  max_memory_fraction, train_tokens, usd_per_gpu_hour, fmt, report_path, quiet) -> None:
    """The best legal recipe at each cluster size: tokens/s/GPU, step time, scaling efficiency, training time and cost.

    \b
    Example:
      shardplan sweep --model Llama-3.1-70B --hardware h100-sxm-80gb --nodes 1..32 --seq-length 8192 \\
                      --global-batch-size 128 --train-tokens 1e12 --usd-per-gpu-hour 2.5 --report sweep.html
    """
    if usd_per_gpu_hour is not None and train_tokens is None:
        raise InputError(f"--usd-per-gpu-hour: a cost needs a token budget ({usd_per_gpu_hour}); add --train-tokens N, e.g. 1e12")
    nodes = parse_nodes(nodes_text)
    html_path = output_path("--report", report_path)
    profiles = [h.strip() for text in hardware for h in text.split(",") if h.strip()]
    model, job, _, _ = load_job(model_name, profiles[0], nodes[0], gpus_per_node, seq_length, global_batch_size, precision)
    for hw in profiles[1:]:
        load_job(model_name, hw, nodes[0], gpus_per_node, seq_length, global_batch_size, precision)  # fail before any solve
    result = sweep(model, job, profiles, nodes, gpus_per_node, 1.0 - max_memory_fraction, train_tokens, usd_per_gpu_hour,
                   progress=None if quiet else (lambda line: click.echo(line, err=True)))
    from shardplan.report.sweep_page import sweep_page, sweep_rows, sweep_text

    if fmt == "json":
        click.echo(result.model_dump_json(indent=2))
    elif fmt == "csv":
        buf = io.StringIO()
        rows = sweep_rows(result)
        if rows:
            w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows([{k: v.replace(",", "") if isinstance(v, str) and k != "best recipe" else v for k, v in r.items()}
                         for r in rows])
        click.echo(buf.getvalue(), nl=False)
    else:
        click.echo(sweep_text(result))
    if html_path is not None:
        from constraints.case import atomic_write_text

        atomic_write_text(html_path, sweep_page(result))
        click.echo(f"wrote {html_path}", err=True)
    sys.exit(0 if any(p.status == "solved" for p in result.points) else 1)
