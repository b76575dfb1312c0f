"""`shardplan solve`: the best legal recipes for a model, a cluster and a job (click layer over solver/).

Pins and bounds narrow axes (`--tp 8`, `--pp 2..8`); every shown recipe was re-verified by check_case.
"""
from __future__ import annotations

import json
import sys

import click
from pydantic import ValidationError

from constraints.spec import JobSpec, Placement, Precision
from solver.fewest_gpus import target_explanation
from solver.proposer.cli_options import config_from_options, format_hint_report, proposer_options
from solver.solve_text import format_solve
from solver.space import build_space, parse_range

RANGE_AXES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs")


class SolveError(click.ClickException):
    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {self.message}", err=True)


def collect_pins(ranges: dict, schedule, recompute, no_recompute, sp, dp_sharding, tp_comm_overlap=None, moe_dispatcher=None,
                 ep_comm_overlap=None, uneven_stages=None) -> tuple[dict, dict]:
    """(pins axis -> allowed values, ranges axis -> (lo, hi)) from the command-line options."""
    pins, bounds = {}, {}
    for axis, text in ranges.items():
        if text is None:
            continue
        try:
            lo, hi = parse_range(text)
        except ValueError:
            raise SolveError(f"--{axis} {text!r}: give N or LO..HI, e.g. --{axis} 2..8") from None
        if lo is not None and lo == hi:
            pins[axis] = [lo]
        else:
            bounds[axis] = (lo, hi)
    if schedule:
        pins["schedule"] = [schedule]
    if no_recompute:
        pins["recompute"] = ["none"]
    elif recompute:
        pins["recompute_kind"] = recompute
    if sp is not None:
        pins["sp"] = [sp]
    if dp_sharding:
        pins["dp_sharding"] = [dp_sharding]
    for axis, value in (("tp_comm_overlap", tp_comm_overlap), ("moe_dispatcher", moe_dispatcher),
                        ("ep_comm_overlap", ep_comm_overlap), ("uneven_stages", uneven_stages)):
        if value is not None:
            pins[axis] = [value]
    return pins, bounds


def resolve_recompute_kind(model, pins: dict) -> dict:
    """--recompute full|selective (pins['recompute_kind']) as a pin on every recompute choice of that granularity,
    so the solve and the explanation see one ordinary pin."""
    kind = pins.pop("recompute_kind", None)
    if kind:
        from solver.space import recompute_choices, recompute_name

        pins["recompute"] = [n for n in map(recompute_name, recompute_choices(model)) if n.split(":")[0] == kind]
    return pins


def solve_case(model, job, placement, profile, pins, bounds, k, margin, method, time_limit_s):
    """Build space and tables, run the chosen method; returns (SolveResult, Tables)."""
    result, tables, _ = solve_case_with_hints(model, job, placement, profile, pins, bounds, k, margin, method, time_limit_s, None)
    return result, tables


def solve_case_with_hints(model, job, placement, profile, pins, bounds, k, margin, method, time_limit_s, proposer_config,
                          objective: str = "throughput"):
    """solve_case, steered by the proposer (solver/proposer) when `proposer_config` asks for one (throughput
    objective only); returns (SolveResult, Tables, HintReport or None). The answer is always the full
    solve, re-verified."""
    from solver.cpsat_solve import solve_cpsat
    from solver.exhaustive import solve_exhaustive
    from solver.tables import build_tables

    space = build_space(model, job, placement, pins=resolve_recompute_kind(model, pins), ranges=bounds)
    # the throughput solve expands only the structural rows that can hold a top-K answer (solver/prune.py);
    # --method exhaustive and the other objectives enumerate every row
    prune_k = k if method == "cpsat" and objective == "throughput" else None
    tables = build_tables(space, profile, margin, prune_k=prune_k)
    if method == "exhaustive":
        return solve_exhaustive(tables, k, margin_fraction=margin, objective=objective), tables, None
    if proposer_config is not None and proposer_config.kind != "none" and objective == "throughput":
        from solver.proposer import solve_with_proposer

        result, report = solve_with_proposer(tables, k, margin_fraction=margin, max_time_s=time_limit_s, config=proposer_config)
        return result, tables, report
    return solve_cpsat(tables, k, margin_fraction=margin, max_time_s=time_limit_s, objective=objective), tables, None


def recipe_json(ranked, case) -> dict:
    r = case.recipe
    rep = ranked.check
    parallel = {"tp": r.tp, "pp": r.pp, "vpp": r.vpp, "cp": r.cp, "ep": r.ep, "etp": r.etp_effective, "dp": rep.dp,
                "expert_dp": rep.expert_dp, "mbs": r.mbs, "num_microbatches": rep.memory.num_microbatches,
                "sequence_parallel": r.sp_active, "tp_comm_overlap": r.tp_comm_overlap, "recompute": r.recompute.model_dump(mode="json"),
                "distributed_optimizer": r.dp_sharding.value == "distributed_optimizer", "dp_sharding": r.dp_sharding.value,
                "schedule": r.schedule.value,
                "account_for_embedding_and_loss_in_pipeline_split": r.account_for_embedding_in_pipeline_split,
                "first_stage_layers": r.first_stage_layers, "last_stage_layers": r.last_stage_layers,
                "moe_dispatcher": r.moe_dispatcher.value, "ep_comm_overlap": r.overlap_moe_expert_parallel_comm}
    out = {"parallel": parallel, "recipe": r.model_dump(mode="json"), "step_time_us": ranked.time_us, "ranking_time_us": ranked.rank_time_us,
           "memory": rep.memory.model_dump(mode="json"), "projection": rep.projection}
    try:
        from templates.megatron_args import recipe_to_megatron_args
    except ModuleNotFoundError:
        recipe_to_megatron_args = None
    if recipe_to_megatron_args is not None:
        from templates.render import launch_env

        args = recipe_to_megatron_args(case.model, case.job, r)
        out["megatron_args"] = _flatten_args(args)
        out["env"] = launch_env(case)  # what the launch scripts export (Megatron's validation reads it)
    return out


def _flatten_args(args) -> list:
    if isinstance(args, dict):
        return [a for group in args.values() for a in _flatten_args(group)]
    if isinstance(args, (list, tuple)):
        return [str(a) for a in args]
    return _flatten_args(getattr(args, "groups", None) or getattr(args, "__dict__", {}))


def _range_options(fn):
    for axis in reversed(RANGE_AXES):
        fn = click.option(f"--{axis}", f"{axis}_range", default=None, metavar="N|LO..HI", help=f"pin or bound {axis.upper()}")(fn)
    return fn


@click.command("solve")
@click.option("--model", "model_name", required=True, help="bundled model name or path to a config")
@click.option("--hardware", required=True, help="hardware profile name or YAML path")
@click.option("--nodes", type=click.IntRange(min=1), required=True)
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--seq-length", type=click.IntRange(min=1), required=True)
@click.option("--global-batch-size", type=click.IntRange(min=1), required=True)
@click.option("--precision", type=click.Choice([p.value for p in Precision]), default="bf16", show_default=True)
@click.option("--top", "k", type=click.IntRange(min=1, max=1000), default=10, show_default=True)
@_range_options
@click.option("--schedule", type=click.Choice(["1f1b", "interleaved", "zb-h1", "zbv"]), default=None)
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]), default=None, help="pin the granularity")
@click.option("--no-recompute", is_flag=True, help="same as --recompute none")
@click.option("--sequence-parallel/--no-sequence-parallel", "sp", default=None)
@click.option("--tp-comm-overlap/--no-tp-comm-overlap", "tp_comm_overlap", default=None, help="pin TP communication overlap")
@click.option("--dp-sharding", type=click.Choice(["distributed_optimizer", "none", "megatron_fsdp"]), default=None)
@click.option("--moe-dispatcher", type=click.Choice(["alltoall", "flex", "allgather"]), default=None,
              help="pin the MoE token dispatcher (default: the faster legal one of alltoall / flex per recipe)")
@click.option("--ep-comm-overlap/--no-ep-comm-overlap", "ep_comm_overlap", default=None,
              help="pin --overlap-moe-expert-parallel-comm (default: tried where legal)")
@click.option("--uneven-stages/--no-uneven-stages", "uneven_stages", default=None,
              help="pin explicit --decoder-first/last-pipeline-num-layers splits on (only those) or off")
@click.option("--max-memory-fraction", type=click.FloatRange(0.1, 1.0), default=1.0, show_default=True)
@click.option("--objective", type=click.Choice(["throughput", "memory", "fewest-gpus"]), default="throughput", show_default=True,
              help="throughput: shortest projected step; memory: most headroom (smallest exact peak); "
                   "fewest-gpus: fewest nodes (up to --nodes) reaching --target-tokens-per-s")
@click.option("--target-tokens-per-s", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="total tokens/s to reach, for --objective fewest-gpus")
@click.option("--method", type=click.Choice(["cpsat", "exhaustive"]), default="cpsat", show_default=True)
@click.option("--time-limit", "time_limit_s", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="CP-SAT deterministic time limit (seconds of its deterministic clock)")
@click.option("--render", "render_dir", type=click.Path(file_okay=False), default=None, help="write one launch script per answer here")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@proposer_options
def solve_command(model_name, hardware, nodes, gpus_per_node, seq_length, global_batch_size, precision, k, tp_range, pp_range,
                  vpp_range, cp_range, ep_range, etp_range, mbs_range, schedule, recompute, no_recompute, sp, tp_comm_overlap, dp_sharding,
                  moe_dispatcher, ep_comm_overlap, uneven_stages, max_memory_fraction, objective, target_tokens_per_s, method, time_limit_s, render_dir, as_json,
                  **proposer_kw) -> None:
    """Find the best legal recipes (projected step time), each re-verified by check.

    \b
    Example:
      shardplan solve --model Llama-3.1-70B --hardware h100-sxm-80gb --nodes 8 --gpus-per-node 8 \\
                      --seq-length 8192 --global-batch-size 128 --top 5 --pp 2..8
    """
    from constraints.case import Case
    from constraints.models import load_model
    from hardware.profile import load_profile

    proposer_config = config_from_options(**proposer_kw)  # a bad --proposer llm combination fails before any work
    if target_tokens_per_s is not None and objective != "fewest-gpus":
        raise SolveError("--target-tokens-per-s: only --objective fewest-gpus reads a target; add that objective or drop the target")
    try:
        model = load_model(model_name)
        profile = load_profile(hardware)
        job = JobSpec(seq_length=seq_length, global_batch_size=global_batch_size, precision=precision)
        placement = Placement(hardware=hardware, num_nodes=nodes, gpus_per_node=gpus_per_node)
    except ValidationError as exc:
        raise SolveError(_option_error(exc)) from None
    except ValueError as exc:
        raise SolveError(str(exc).splitlines()[0]) from None
    ranges = dict(zip(RANGE_AXES, (tp_range, pp_range, vpp_range, cp_range, ep_range, etp_range, mbs_range)))
    pins, bounds = collect_pins(ranges, schedule, recompute, no_recompute, sp, dp_sharding, tp_comm_overlap, moe_dispatcher,
                                ep_comm_overlap, uneven_stages)
    pins = resolve_recompute_kind(model, pins)
    margin = 1.0 - max_memory_fraction
    tried = None
    try:
        if objective == "fewest-gpus":
            from solver.fewest_gpus import CountScreen, fewest_gpus

            def solve_at(pl):
                res, tab, _ = solve_case_with_hints(model, job, pl, profile, dict(pins), bounds, k, margin, method, time_limit_s, None)
                return res, tab

            screen = CountScreen(model, job, profile, margin, pins, bounds)
            result, tables, placement, tried = fewest_gpus(placement, target_tokens_per_s, solve_at, screen)
            hint_report = None
        else:
            result, tables, hint_report = solve_case_with_hints(model, job, placement, profile, dict(pins), bounds, k, margin,
                                                                method, time_limit_s, proposer_config, objective)
    except ValueError as exc:
        raise SolveError(str(exc).splitlines()[0]) from None
    cases = [Case(model=model, job=job, recipe=r.recipe, placement=placement) for r in result.ranked]
    payload = {"recipes": [recipe_json(r, c) for r, c in zip(result.ranked, cases)], "proven_optimal": result.proven_optimal,
               **_bound_fields(result, objective, placement),
               "method": result.method, "space": tables.counts, "evaluated": result.evaluated,
               "proposer": hint_report.model_dump(mode="json") if hint_report else None, "objective": objective,
               "nodes": placement.num_nodes, "best_objective": result.stats.get("best_objective"),
               "projection_calibrated": profile.calibrated,
               "rejected_by_check": [{"recipe": r.model_dump(mode="json", exclude_defaults=True), "why": why}
                                     for r, why in result.rejected]}
    if tried is not None:
        payload["fewest_gpus"] = {"target_tokens_per_s": target_tokens_per_s, "tried": tried}
    if not result.ranked and tried and target_explanation(tried, placement.num_nodes):
        payload["explanation"] = target_explanation(tried, placement.num_nodes)
    elif not result.ranked:
        from solver.explain import explain_infeasible

        payload["explanation"] = explain_infeasible(model, job, placement, profile, pins, bounds, margin)
    if render_dir and cases:
        try:
            from templates.cli_render import render_solutions
        except ModuleNotFoundError:
            render_solutions = None
        if render_solutions is not None:
            render_solutions(cases, render_dir, notes=[f"{r.time_us / 1e6:.3f} s/iter" for r in result.ranked])
    if as_json:
        click.echo(json.dumps(payload, indent=2))
    else:
        click.echo(format_solve(payload, model, placement, job))
        if hint_report is not None:
            click.echo(format_hint_report(hint_report))
    sys.exit(0 if result.ranked else 1)


_OPTION_OF_FIELD = {"seq_length": "--seq-length", "global_batch_size": "--global-batch-size", "precision": "--precision",
                    "num_nodes": "--nodes", "gpus_per_node": "--gpus-per-node", "hardware": "--hardware"}


def _option_error(exc: ValidationError) -> str:
    """One line naming the command-line option (not the pydantic field) and the limit it broke."""
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err.get("loc") else ""
    option = _OPTION_OF_FIELD.get(field, field.replace("_", "-") or "input")
    return f"{option}: {err['msg'][:1].lower() + err['msg'][1:]} (got {err.get('input')!r})"


def _bound_fields(result, objective: str, placement) -> dict:
    """`bound` in the objective's own unit: the proven lower bound on the ranking time (s), on the peak (bytes), or the
    node count that fewest-gpus proved smallest; plus the best ranking time, whatever the objective."""
    best_s = result.ranked[0].rank_time_us / 1e6 if result.ranked else None
    if objective == "fewest-gpus":
        bound, unit = (placement.num_nodes if result.ranked else None), "nodes (smaller counts proven unable to reach the target)"
    elif objective == "memory":
        bound, unit = result.bound, "bytes (peak per-GPU memory)"
    else:
        bound, unit = (result.bound / 1e6 if result.bound is not None else None), "s (iteration time, closed-form ranking projection)"
    return {"bound": bound, "bound_unit": unit, "best_ranking_time_s": best_s}
