"""`shardplan report check FILE -o out.html` and `shardplan report solve ... -o out.html`: the HTML report and,
with `--trace`, the simulated pipeline timeline as Chrome-trace JSON (Perfetto, chrome://tracing).

Exit status as check / solve: 0 legal and fits (solve: an answer), 1 illegal or does not fit (solve: nothing
fits), 2 unusable input; the files are written in every case but 2.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from boundary.write import atomic_write_text, check_output_file, refuse_same_output
from constraints.spec import Precision
from shardplan.api_arguments.bounds import MAX_MEMORY_FRACTION, MIN_MEMORY_FRACTION
from shardplan.cli.software_option import software_option
from shardplan.report.collect import check_report, solve_report
from shardplan.report.model import Report
from shardplan.report.page import render_page
from shardplan.report.timeline import chrome_trace


def output_paths(outputs: dict[str, str | None], inputs: list[str | None]) -> list[Path | None]:
    """The output paths, each checked before any work (boundary.write.check_output_file: a regular file or a new name
    in a writable folder, a name the file system takes, never one of `inputs` - the files the command reads - and
    never two options on one file), or one error line naming the option."""
    refuse_same_output(outputs)
    for option, path in outputs.items():
        if path is not None:
            check_output_file(path, option, inputs=inputs)
    return [None if path is None else Path(path) for path in outputs.values()]


def write_outputs(report: Report, html_path: Path, trace_path: Path | None, sweep_html: str = "") -> None:
    """Write the page (and the trace) atomically, then say what was written."""
    page = render_page(report, sweep_html)
    atomic_write_text(html_path, page, "--output")
    click.echo(f"wrote {html_path} ({len(page.encode()) / 1024:,.0f} KiB, {len(report.recipes)} recipe"
               f"{'' if len(report.recipes) == 1 else 's'})")
    if trace_path is not None:
        timelines = [(v.title, v.timeline) for v in report.recipes if v.timeline is not None]
        if not timelines:
            click.echo(f"no trace written to {trace_path}: no recipe is legal and fits, so none has a simulated step", err=True)
            return
        atomic_write_text(trace_path, json.dumps(chrome_trace(timelines)), "--trace")
        click.echo(f"wrote {trace_path} (Chrome trace, {len(timelines)} timeline{'' if len(timelines) == 1 else 's'}; "
                   "open in https://ui.perfetto.dev or chrome://tracing)")


_CALIBRATION = click.option("--calibration", type=click.Path(dir_okay=False), default=None,
                            help="a file `shardplan calibrate` wrote for this hardware: project with this cluster's factors")
_OUT = click.option("-o", "--output", "output", required=True, type=click.Path(), help="HTML file to write")
_TRACE = click.option("--trace", "trace", type=click.Path(), default=None,
                      help="also write the simulated pipeline timeline as Chrome-trace JSON (Perfetto)")


@click.group("report")
def report_command() -> None:
    """Write a self-contained HTML report (memory per pipeline rank, time breakdown, pipeline timeline).

    \b
    Example:
      shardplan report check constraints/examples/llama3-70b-h100.yaml -o llama70b.html --trace llama70b.json
      shardplan report solve --model Llama-3.1-8B --hardware h100-sxm-80gb --nodes 1 --seq-length 8192 \\
                             --global-batch-size 64 --top 3 -o solve.html
    """


@report_command.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--hardware", help="hardware profile name or YAML path (overrides the file)")
@click.option("--nodes", type=click.IntRange(min=1), help="number of nodes (overrides the file)")
@click.option("--gpus-per-node", type=click.IntRange(min=1), help="GPUs per node (overrides the file)")
@click.option("--model", help="model name or path, when the arguments lack the model flags")
@click.option("--max-memory-fraction", type=click.FloatRange(MIN_MEMORY_FRACTION, MAX_MEMORY_FRACTION), default=None,
                     help="share of HBM the peak may use (default: learnt from published runs, 0.97; see docs/memory.md)")
@_CALIBRATION
@software_option
@_OUT
@_TRACE
def report_check(file, hardware, nodes, gpus_per_node, model, max_memory_fraction, calibration, software, output, trace) -> None:
    """Report on one recipe: a YAML recipe, a Megatron launch script or an argument file (what `check` reads).

    \b
    Example:
      shardplan report check constraints/examples/llama3-70b-h100.yaml -o llama70b.html --trace llama70b.json
    """
    html_path, trace_path = output_paths({"--output": output, "--trace": trace}, [file, hardware, model, calibration])
    report = check_report(file, hardware=hardware, nodes=nodes, gpus_per_node=gpus_per_node, model=model,
                          max_memory_fraction=max_memory_fraction, calibration=calibration, software=software)
    write_outputs(report, html_path, trace_path)
    v = report.recipes[0]
    sys.exit(0 if v.legal and v.fits else 1)


def job_options(fn):
    """The model / job options `report solve` shares with `solve` (same names, types and defaults)."""
    for opt in reversed([
        click.option("--model", "model_name", required=True, help="bundled model name or path to a config"),
        click.option("--hardware", required=True, help="hardware profile name or YAML path"),
        click.option("--seq-length", type=click.IntRange(min=1), required=True),
        click.option("--global-batch-size", type=click.IntRange(min=1), required=True),
        click.option("--precision", type=click.Choice([p.value for p in Precision]), default="bf16", show_default=True),
        click.option("--max-memory-fraction", type=click.FloatRange(MIN_MEMORY_FRACTION, MAX_MEMORY_FRACTION), default=None,
                     help="share of HBM the peak may use (default: learnt from published runs, 0.97; see docs/memory.md)"),
    ]):
        fn = opt(fn)
    return fn


@report_command.command("solve")
@job_options
@click.option("--nodes", type=click.IntRange(min=1), required=True)
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=None,
              help="GPUs per node [default: the hardware profile's GPUs per server]")
@click.option("--top", "k", type=click.IntRange(min=1, max=20), default=3, show_default=True, help="recipes side by side")
@click.option("--tp", default=None, metavar="N|LO..HI", help="pin or bound TP (as solve)")
@click.option("--pp", default=None, metavar="N|LO..HI", help="pin or bound PP (as solve)")
@click.option("--schedule", type=click.Choice(["1f1b", "interleaved", "zb-h1", "zbv"]), default=None)
@_CALIBRATION
@software_option
@_OUT
@_TRACE
def report_solve(model_name, hardware, seq_length, global_batch_size, precision, max_memory_fraction, nodes, gpus_per_node,
                 k, tp, pp, schedule, calibration, software, output, trace) -> None:
    """Report on a throughput solve: its top K recipes side by side, then each one's memory and timeline.

    \b
    Example:
      shardplan report solve --model Llama-3.1-8B --hardware h100-sxm-80gb --nodes 1 --seq-length 8192 \\
                             --global-batch-size 64 --top 3 -o solve.html --trace solve.json
    """
    html_path, trace_path = output_paths({"--output": output, "--trace": trace}, [model_name, hardware, calibration])
    report = solve_report(model_name, hardware, nodes, top=k, gpus_per_node=gpus_per_node, seq_length=seq_length,
                          global_batch_size=global_batch_size, precision=precision, tp=tp, pp=pp, schedule=schedule,
                          max_memory_fraction=max_memory_fraction, calibration=calibration, software=software)
    write_outputs(report, html_path, trace_path)
    sys.exit(0 if report.recipes else 1)
