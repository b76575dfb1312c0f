"""`shardplan sweep`: click layer over shardplan.sweep (options, progress on stderr, table / CSV / JSON, HTML)."""
from __future__ import annotations

import sys

import click

from boundary.write import atomic_write_text
from constraints.spec import Precision
from shardplan.api_arguments.bounds import MAX_MEMORY_FRACTION, MIN_MEMORY_FRACTION
from shardplan.cli.completion import complete_hardware, complete_model
from shardplan.cli.report import output_paths
from shardplan.cli.software_option import software_option
from shardplan.formats import emit, format_option, resolve_format
from shardplan.report.sweep_page import sweep_columns, sweep_page, sweep_rows, sweep_title
from shardplan.sweep import sweep


@click.command("sweep")
@click.option("--model", "model_name", required=True, help="bundled model name or path to a config", shell_complete=complete_model)
@click.option("--hardware", "hardware", required=True, multiple=True, shell_complete=complete_hardware,
              help="hardware profile name or YAML path; repeat or comma-separate for several")
@click.option("--nodes", "nodes_text", required=True, metavar="LIST|LO..HI|LO..HI+STEP",
              help="node counts: 1,2,4,8 or 1..64 (doubling, 64 included) or 8..64+8")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=None,
              help="GPUs per node [default: each hardware profile's GPUs per server, e.g. 8 on H100, 4 on GB200 NVL72]")
@click.option("--seq-length", type=click.IntRange(min=1), required=True)
@click.option("--global-batch-size", type=click.IntRange(min=1), required=True)
@click.option("--precision", type=click.Choice([p.value for p in Precision]), default="bf16", show_default=True)
@click.option("--max-memory-fraction", type=click.FloatRange(MIN_MEMORY_FRACTION, MAX_MEMORY_FRACTION), default=None,
                     help="share of HBM the peak may use (default: learnt from published runs, 0.97; see docs/memory.md)")
@click.option("--train-tokens", type=click.FloatRange(min=0, min_open=True), default=None,
              help="tokens to train (e.g. 1e12): adds training time and GPU-hours per size")
@click.option("--usd-per-gpu-hour", type=click.FloatRange(min=0), default=None, help="adds the cost (needs --train-tokens)")
@format_option
@click.option("--report", "report_path", type=click.Path(), default=None, help="also write the HTML page with the charts")
@click.option("--calibration", type=click.Path(dir_okay=False), default=None,
              help="a file `shardplan calibrate` wrote for one of the profiles: project it with that cluster's factors")
@software_option
def sweep_command(model_name, hardware, nodes_text, gpus_per_node, seq_length, global_batch_size, precision,
                  max_memory_fraction, train_tokens, usd_per_gpu_hour, fmt, report_path, calibration, software, as_json) -> None:
    """The best legal recipe at each cluster size: tokens/s/GPU, step time, scaling efficiency, training time and cost.

    \b
    Example:
      shardplan sweep --model Llama-3.1-70B --hardware h100-sxm-80gb --nodes 1..32 --seq-length 8192 \\
                      --global-batch-size 128 --train-tokens 1e12 --usd-per-gpu-hour 2.5 --report sweep.html
    """
    [html_path] = output_paths({"--report": report_path}, [model_name, *",".join(hardware).split(","), calibration])
    result = sweep(model_name, list(hardware), nodes_text, seq_length=seq_length, global_batch_size=global_batch_size,
                   gpus_per_node=gpus_per_node, precision=precision, max_memory_fraction=max_memory_fraction,
                   train_tokens=train_tokens, usd_per_gpu_hour=usd_per_gpu_hour, calibration=calibration, software=software)

    emit(sweep_rows(result), resolve_format(fmt, as_json), sweep_columns(result), json_data=result.model_dump(mode="json"),
         title=sweep_title(result))
    fmt = resolve_format(fmt, as_json)
    for line in result.efficiency_lines() if fmt != "json" else []:  # the baseline the efficiency column divides by
        click.echo(line, err=fmt != "table")
    for line in result.refusal_lines():
        click.echo(line, err=True)
    if html_path is not None:
        atomic_write_text(html_path, sweep_page(result), "--report")
        click.echo(f"wrote {html_path}", err=True)
    sys.exit(0 if any(p.status == "solved" for p in result.points) else 1)
