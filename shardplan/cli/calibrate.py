"""`shardplan calibrate`: a click layer over shardplan.calibrate (fit this cluster from its Megatron-LM logs).

Exit status: 0 written; 2 unusable input (a file that is no training log, a log without an argument dump or steady
iterations, another part's log, an output that would replace a log): one line `error: ...`.
"""
from __future__ import annotations

import click

from boundary.show import shown
from shardplan.calibrate import calibrate
from shardplan.cli.completion import complete_hardware, complete_model
from shardplan.cli.errors import unusable_input


@click.command("calibrate")
@click.argument("logs", nargs=-1, required=True, metavar="LOG...", type=click.Path(dir_okay=False))
@click.option("--hardware", required=True, shell_complete=complete_hardware, help="the hardware profile the runs ran on")
@click.option("--nodes", type=click.IntRange(min=1), default=None, help="nodes of every run (default: the log's world size)")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=None, help="GPUs per node (default: the profile's)")
@click.option("--model", default=None, shell_complete=complete_model, help="the model, when a log's arguments do not describe it")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="the calibration file to write (atomically)")
def calibrate_command(logs, hardware, nodes, gpus_per_node, model, output) -> None:
    """Fit this cluster's compute / communication / host factors and allocator gap from training logs.

    Each LOG is a Megatron-LM training log (argument dump, iteration lines; memory report and timers when logged).
    One log moves the compute factor; more logs, of other recipes or models on the same cluster, move more.
    Then pass --calibration FILE to check, solve, sweep and report (and the API's check / solve / sweep).

    \b
    Example:
      shardplan calibrate logs/run-*.log --hardware h100-sxm-80gb -o h100-cluster.json
      shardplan solve --model Llama-3.1-70B --hardware h100-sxm-80gb --nodes 8 --calibration h100-cluster.json ...
    """
    with unusable_input():
        result = calibrate(list(logs), hardware, nodes=nodes, gpus_per_node=gpus_per_node, model=model, output=output)
    f = result.factors
    click.echo(f"calibration for {shown(result.hardware)} from {len(result.evidence)} run(s), free factors: {', '.join(result.free_factors)}")
    click.echo(f"  compute x{f.compute:.3f}  communication x{f.communication:.3f}  host x{f.host:.3f}"
               + (f"  allocator gap {f.allocator_gap_bytes / 2**30:.2f} GiB" if f.allocator_gap_bytes is not None else ""))
    for ev in result.evidence:
        click.echo(f"  {shown(ev.label)}: measured {ev.measured_iteration_time_s:.3f} s/iter, shipped constants "
                   f"{ev.projected_before_s:.3f} s, calibrated {ev.projected_after_s:.3f} s ({100 * ev.residual:+.1f} %)")
    click.echo(f"wrote {shown(output)}")
