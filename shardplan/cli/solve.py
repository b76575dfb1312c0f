"""`shardplan solve`: the best legal recipes for a model, a cluster and a job (click layer over shardplan.api.solve).

Pins and bounds narrow axes (`--tp 8`, `--pp 2..8`); every shown recipe was re-verified by check_case.
"""
from __future__ import annotations

import sys

import click

from boundary.errors import ShardplanError
from constraints.spec import Precision
from shardplan import api
from shardplan.api_arguments.bounds import (
    MAX_MEMORY_FRACTION,
    MAX_TOP,
    MAX_TRIALS,
    MIN_MEMORY_FRACTION,
    MIN_TIME_LIMIT_S,
    SOLVE_DP_SHARDINGS,
)
from shardplan.cli.completion import complete_hardware, complete_model
from shardplan.cli.proposer_options import config_from_options, format_hint_report, proposer_options
from shardplan.cli.software_option import software_option
from shardplan.formats import emit, format_option, resolve_format
from shardplan.solve_text import SOLVE_COLUMNS, format_solve, solve_rows, thin_headroom_line
from solver.explain_why import format_explanation
from solver.objective import OBJECTIVE_NAMES, Objective
from solver.proposer.summary import format_hint_notes
from solver.workflow import RANGE_AXES


def _range_options(fn):
    for axis in reversed(RANGE_AXES):
        fn = click.option(f"--{axis}", f"{axis}_range", default=None, metavar="N|LO..HI", help=f"pin or bound {axis.upper()}")(fn)
    return fn


@click.command("solve")
@click.option("--model", "model_name", required=True, help="bundled model name or path to a config", shell_complete=complete_model)
@click.option("--hardware", required=True, help="hardware profile name or YAML path", shell_complete=complete_hardware)
@click.option("--nodes", type=click.IntRange(min=1), required=True)
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=None,
              help="GPUs per node [default: the hardware profile's GPUs per server, e.g. 8 on H100, 4 on GB200 NVL72]")
@click.option("--seq-length", type=click.IntRange(min=1), required=True)
@click.option("--global-batch-size", type=click.IntRange(min=1), required=True)
@click.option("--precision", type=click.Choice([p.value for p in Precision]), default="bf16", show_default=True)
@click.option("--top", "k", type=click.IntRange(min=1, max=MAX_TOP), default=10, show_default=True)
@_range_options
@click.option("--schedule", type=click.Choice(["1f1b", "interleaved", "zb-h1", "zbv"]), default=None)
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]), default=None, help="pin the granularity")
@click.option("--no-recompute", is_flag=True, help="same as --recompute none")
@click.option("--sequence-parallel/--no-sequence-parallel", "sp", default=None)
@click.option("--tp-comm-overlap/--no-tp-comm-overlap", "tp_comm_overlap", default=None, help="pin TP communication overlap")
@click.option("--dp-sharding", type=click.Choice(SOLVE_DP_SHARDINGS), default=None)
@click.option("--moe-dispatcher", type=click.Choice(["alltoall", "flex", "allgather"]), default=None,
              help="pin the MoE token dispatcher (default: the faster legal one of alltoall / flex per recipe)")
@click.option("--ep-comm-overlap/--no-ep-comm-overlap", "ep_comm_overlap", default=None,
              help="pin --overlap-moe-expert-parallel-comm (default: tried where legal)")
@click.option("--uneven-stages/--no-uneven-stages", "uneven_stages", default=None,
              help="pin explicit --decoder-first/last-pipeline-num-layers splits on (only those) or off")
@click.option("--max-memory-fraction", type=click.FloatRange(MIN_MEMORY_FRACTION, MAX_MEMORY_FRACTION), default=None,
                     help="share of HBM the peak may use (default: learnt from published runs, 0.97; see docs/memory.md)")
@click.option("--objective", type=click.Choice(list(OBJECTIVE_NAMES)), default=Objective.throughput.value, show_default=True,
              help="throughput: shortest projected step; memory: most headroom (smallest exact peak); "
                   "fewest-gpus: fewest nodes (up to --nodes) reaching --target-tokens-per-s")
@click.option("--target-tokens-per-s", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="total tokens/s to reach, for --objective fewest-gpus")
@click.option("--method", type=click.Choice(["cpsat", "exhaustive"]), default="cpsat", show_default=True)
@click.option("--time-limit", "time_limit_s", type=click.FloatRange(min=MIN_TIME_LIMIT_S), default=60.0, show_default=True,
              help="CP-SAT deterministic time limit (seconds of its deterministic clock)")
@click.option("--max-time", "max_time_s", type=float, default=300.0, show_default=True,
              help="wall-clock seconds for the whole solve; past it the solve stops and says so")
@click.option("--render", "render_dir", type=click.Path(file_okay=False), default=None, help="write one launch script per answer here")
@click.option("--trials", type=click.IntRange(1, MAX_TRIALS), default=None,
              help="write K short measuring runs of the most informative answers into -o DIR, to feed back through calibrate")
@click.option("-o", "--output", "trials_dir", type=click.Path(file_okay=False), default=None, help="the folder --trials writes")
@click.option("--calibration", type=click.Path(dir_okay=False), default=None,
              help="a file `shardplan calibrate` wrote for this hardware: rank and project with this cluster's factors")
@software_option
@click.option("-v", "--verbose", is_flag=True, help="also print the proposer's ledger (rounds, hints used and dropped)")
@format_option
@proposer_options
def solve_command(model_name, hardware, nodes, gpus_per_node, seq_length, global_batch_size, precision, k, tp_range, pp_range,
                  vpp_range, cp_range, ep_range, etp_range, mbs_range, schedule, recompute, no_recompute, sp, tp_comm_overlap, dp_sharding,
                  moe_dispatcher, ep_comm_overlap, uneven_stages, max_memory_fraction, objective, target_tokens_per_s, method, time_limit_s,
                  max_time_s, render_dir, trials, trials_dir, calibration, software, verbose, fmt, as_json, **proposer_kw) -> None:
    """Find the best legal recipes (projected step time), each re-verified by check.

    \b
    Example:
      shardplan solve --model Llama-3.1-70B --hardware h100-sxm-80gb --nodes 8 --gpus-per-node 8 \\
                      --seq-length 8192 --global-batch-size 128 --top 5 --pp 2..8
    """
    proposer_config = config_from_options(**proposer_kw)  # a bad --proposer llm combination fails before any work
    if render_dir is not None and not render_dir.strip():
        raise ShardplanError("--render: empty folder name; give the folder to write the scripts to")
    if target_tokens_per_s is not None and objective != Objective.fewest_gpus:
        raise ShardplanError("--target-tokens-per-s: only --objective fewest-gpus reads a target; add that objective or drop the target")
    if no_recompute and recompute not in (None, "none"):
        raise ShardplanError(f"--no-recompute: contradicts --recompute {recompute}; give one of them")
    ranges = dict(zip(RANGE_AXES, (tp_range, pp_range, vpp_range, cp_range, ep_range, etp_range, mbs_range)))
    result = api.solve(model_name, hardware, nodes, seq_length=seq_length, global_batch_size=global_batch_size, gpus_per_node=gpus_per_node,
                       precision=precision, top=k, **ranges, schedule=schedule, recompute="none" if no_recompute else recompute,
                       sequence_parallel=sp, tp_comm_overlap=tp_comm_overlap, dp_sharding=dp_sharding, moe_dispatcher=moe_dispatcher,
                       ep_comm_overlap=ep_comm_overlap, uneven_stages=uneven_stages, max_memory_fraction=max_memory_fraction,
                       objective=objective, target_tokens_per_s=target_tokens_per_s, method=method, time_limit_s=time_limit_s,
                       proposer=proposer_config, render_dir=render_dir, max_time_s=max_time_s,
                       calibration=calibration, trials=trials, trials_dir=trials_dir, software=software)
    fmt = resolve_format(fmt, as_json)
    data = result.to_json()
    text = None
    if fmt == "table":
        model, placement, job = result.context
        text = format_solve(data, model, placement, job)
        proposer = None if result.proposer is None else (format_hint_report if verbose else format_hint_notes)(result.proposer)
        if proposer:  # the ledger behind -v; without it only what a user acts on (solver/proposer/summary.py)
            text += "\n" + proposer
    emit(solve_rows(data, result.context[0]), fmt, SOLVE_COLUMNS, json_data=data, text=text)
    if result.rendered is not None:  # on stderr in every format: a missing script must not hide in SUMMARY.md
        r = result.rendered
        click.echo(f"render: {len(r.scripts)} of {len(result.recipes)} recipe(s) written to {r.directory} (SUMMARY.md lists them)", err=True)
        for line in r.not_rendered:
            click.echo(f"render: not written: {line}", err=True)
        for line in r.placeholders:  # every script holds them: `shardplan render` one with your paths
            click.echo(f"render: {line}", err=True)
    if fmt in ("csv", "markdown"):  # the table prints them; csv / markdown rows have no place for them
        for note in result.model_notes:  # what the HF config reader did not follow: never silent in any format
            click.echo(f"! model config: {note}", err=True)
        for w in result.job_warnings:
            click.echo(f"warning: {w}", err=True)
        for p in result.ignored_pins:
            click.echo(f"note: {p}", err=True)
        thin = thin_headroom_line(data)
        if thin:
            click.echo(thin, err=True)
    if not result.ok and fmt in ("csv", "markdown"):  # a header alone would say nothing: why, on stderr as the table says it

        for line in format_explanation(data["explanation"]) if data.get("explanation") else ["nothing fits"]:
            click.echo(line, err=True)
    sys.exit(0 if result.ok else 1)
