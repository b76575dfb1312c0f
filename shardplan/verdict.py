"""Check + projection as one verdict (its text view is shardplan/check_text.py).

Why in shardplan/: constraints/ may not import measure/ (dependencies flow hardware -> constraints ->
measure -> solver), but `check` shows the projection; this module joins them for the API and the CLI. For a training
log it also sets what the run measured beside what was projected, term by term where the log's timers allow.
"""
from __future__ import annotations

from typing import Any, Optional

from constraints.check import check_case
from constraints.megatron.run_flags import (
    OP_FUSER_FLAG,
    cuda_graph_request,
    fused_grouped_mlp_requested,
    natural_routing_requested,
)
from constraints.megatron.unmodelled import memory_lowering_flags, memory_raising_flags
from constraints.rules.determinism import DETERMINISM_FLAG
from constraints.rules.registry import Violation
from hardware.profile import load_profile, uncalibrated_reason
from measure.deepspeed.engine import DeepSpeedEngine
from measure.deepspeed.engine import refusal as deepspeed_refusal
from measure.deepspeed.step import project_megatron_deepspeed
from measure.kernels.cuda_graphs import graph_scope
from measure.kernels.measured_tables import bundled_table, table_path
from measure.projection.project import project as run_projection
from templates.placeholders import placeholder_warnings


def captured_scope(flags: dict) -> frozenset[str]:
    """The kernels the input's run captures in CUDA graphs (constraints/megatron/run_flags.py reads the flags,
    measure/kernels/cuda_graphs.py says what they mean); empty for a recipe YAML, whose recipe has no such field."""
    return graph_scope(*cuda_graph_request(flags or {}))


def run_options(loaded) -> dict:
    """measure.projection.project.project's keywords for how the input's run executes beyond its recipe."""
    case = loaded.case
    return {"cuda_graph_scope": captured_scope(loaded.flags),
            "fused_grouped_mlp": fused_grouped_mlp_requested(loaded.flags or {}, case.model.is_moe, case.recipe.moe_grouped_gemm),
            "natural_routing": natural_routing(loaded)}


def natural_routing(loaded) -> bool:
    """The input is a training log of a MoE run that routed naturally: its flags (a Megatron-LM dump, or Bridge's
    model.moe_router_force_load_balancing) lack --moe-router-force-load-balancing (measure/projection/moe_routing.py).
    Only a log: it says how the run it measured routed, and a calibration must price its step as it ran. A script,
    stack config or recipe YAML is a plan, projected with forced balance as `solve` projects every plan (so a rendered
    config checks like its recipe); docs/closed-loop.md says what that leaves."""
    return getattr(loaded, "measured", None) is not None and bool(loaded.flags) \
        and natural_routing_requested(loaded.flags, loaded.case.model.is_moe)


# Megatron-LM's per-step timers (megatron/training/training.py training_log, --timing-log-level >= 1) and the projection
# terms each one covers: forward-backward holds the layers' compute, recompute, TP / CP / EP and pipeline time
TIMER_TERMS = {"forward-backward": ("compute", "recompute", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "pp_bubble"),
               "optimizer": ("optimizer",)}
DP_TIMERS = ("all-grads-sync", "params-all-gather", "grads-reduce-scatter", "grads-all-reduce")


def measured_against_projected(measured, projection: dict) -> dict:
    """Measured / projected for the whole step, tokens/s/GPU, and each timer the log printed."""
    out = {"iteration_time_s": {"measured": measured.iteration_time_s, "projected": projection["iteration_time_s"],
                                "ratio": measured.iteration_time_s / projection["iteration_time_s"]},
           "tokens_per_s_per_gpu": {"measured": measured.tokens_per_s_per_gpu, "projected": projection["tokens_per_s_per_gpu"],
                                    "ratio": measured.tokens_per_s_per_gpu / projection["tokens_per_s_per_gpu"]}}
    breakdown, terms = projection["breakdown"], []
    for timer, covered in TIMER_TERMS.items():
        if timer in measured.phases_s:
            projected = sum(breakdown[k] for k in covered)
            terms.append({"timer": timer, "covers": list(covered), "measured_s": measured.phases_s[timer], "projected_s": projected})
    dp = [measured.phases_s[t] for t in DP_TIMERS if t in measured.phases_s]
    if dp:
        terms.append({"timer": " + ".join(t for t in DP_TIMERS if t in measured.phases_s), "covers": ["dp_comm"],
                      "measured_s": sum(dp), "projected_s": breakdown["dp_comm"]})
    out["terms"] = terms
    return out


def check_and_project(loaded, margin_fraction: float = 0.0, project: bool = True, profile=None,
                      deepspeed: Optional[DeepSpeedEngine] = None) -> dict[str, Any]:
    """{'ok', 'report', 'json'} for a LoadedCase (constraints.read) — the JSON is what `check --json` prints.
    `deepspeed`: the engine of a Megatron-DeepSpeed generation (measure/deepspeed/engine.py), whose step
    measure/deepspeed/step.py prices; where that model refuses the recipe, Megatron's projection prices it, said in a
    warning."""
    case = loaded.case
    profile = profile or load_profile(case.placement.hardware)
    report = check_case(case, profile, flags=loaded.flags, env=loaded.env, margin_fraction=margin_fraction,
                        validated_by=loaded.validated_by)
    # violations the input reader found before a Case existed (e.g. a --num-layers-per-virtual-pipeline-stage that
    # does not divide the layers per stage: Megatron's validate_args refuses it, so it is an illegal recipe, not bad input)
    early = list(getattr(loaded, "preflight_violations", None) or [])
    if early:
        report = report.model_copy(update={"violations": early + list(report.violations), "legal": False})
    projection = None
    scope = captured_scope(loaded.flags)
    fused_experts = fused_grouped_mlp_requested(loaded.flags or {}, case.model.is_moe, case.recipe.moe_grouped_gemm)
    unknown = [f for f in loaded.unknown_flags if not (fused_experts and f == OP_FUSER_FLAG)]  # read: the experts' fusion
    engine_refused = deepspeed_refusal(deepspeed, case.recipe.pp, case.recipe.vpp) if deepspeed is not None else None
    if project and report.legal and report.memory is not None and deepspeed is not None and engine_refused is None:
        projection = project_megatron_deepspeed(case.model, case.job, case.recipe, case.placement, profile,
                                                deepspeed).model_dump(mode="json")
    elif project and report.legal and report.memory is not None:
        projection = run_projection(case.model, case.job, case.recipe, case.placement, profile,
                                    cuda_graph_scope=scope, fused_grouped_mlp=fused_experts,
                                    natural_routing=natural_routing(loaded)).model_dump(mode="json")
    # a projection on a part without its own microbenchmarks is less certain, as `solve` notes under its table
    uncertain = [Violation(rule="uncalibrated_profile", severity="warning",
                           message=f"{profile.name} {uncalibrated_reason(profile)}",
                           fix="add a microbench: block (published matmul, attention, HBM and all-reduce figures) to the "
                               "profile")] if projection is not None and not profile.calibrated else []
    if projection is not None and engine_refused is not None:
        uncertain.append(Violation(rule="deepspeed_engine_not_priced", severity="warning",
                                   message=f"{engine_refused}; priced as Megatron-LM of the same month instead",
                                   fix="judge it as the Megatron-LM recipe it would be, or measure one step"))
    if projection is not None:
        _, device = bundled_table(profile.name)
        if device and not device.startswith("published:"):  # a device measured here (shardplan measure), not the shipped table
            uncertain.append(Violation(rule="measured_kernel_table", severity="warning",
                                       message=f"kernel times come from {table_path(profile.name)} (device {device}) for "
                                               "every op it holds, the roofline for the rest",
                                       fix="move that file away to price from the profile's published figures alone"))
    lowering = memory_lowering_flags(loaded.flags or {})
    if lowering and report.memory is not None:  # the peak is the run's without them: an upper bound, so an OOM may not be one
        uncertain.append(Violation(rule="memory_flags_not_modelled", severity="warning",
                                   message=f"the memory verdict does not count {' '.join(lowering)} (not modelled), which "
                                           "lower the peak: the peak shown is the run's without them, an upper bound",
                                   fix="judge the recipe without them, or measure the peak on one node"))
    raising = memory_raising_flags(loaded.flags or {})
    if raising and report.memory is not None:  # bytes the model does not count: the peak shown is a lower bound
        uncertain.append(Violation(rule="memory_not_modelled", severity="warning",
                                   message=f"memory of {', '.join(raising)} is not modelled: the peak may be low",
                                   fix="judge the recipe without them, or measure the peak on one node"))
    if projection is not None and (loaded.flags or {}).get(DETERMINISM_FLAG):
        # Megatron sets NCCL_ALGO=Ring, NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 and torch's deterministic algorithms
        # (megatron/training/determinism.py): deterministic attention backward and reductions, which no profile measures
        uncertain.append(Violation(rule="deterministic_mode_not_priced", severity="warning",
                                   message="deterministic mode runs deterministic kernels (a fixed NCCL algorithm, "
                                           "deterministic attention backward), which the projection does not price: its "
                                           "speed is the run's without it, an upper bound",
                                   fix="project the run without --deterministic-mode, or measure one step"))
    offloaded = case.recipe.cpu_offloading_num_layers
    if projection is not None and offloaded:
        # the memory model takes the offloaded layers off the GPU (constraints/memory/per_rank.py); their copies to and from host
        # memory share HBM bandwidth and the host link with the step, which no profile measures
        uncertain.append(Violation(rule="cpu_offloading_not_priced", severity="warning",
                                   message=f"--cpu-offloading-num-layers {offloaded}: the activations' copies to and from "
                                           "host memory are not priced (Transformer Engine overlaps them with the layers' "
                                           "compute): the speed is the run's without them, an upper bound",
                                   fix="measure one step, or judge the recipe without offloading"))
    uncertain += placeholder_warnings(loaded.flags)  # a `/path/to/...` left in a rendered script (templates/placeholders.py)
    report = report.model_copy(update={"projection": projection, "unknown_flags": unknown,
                                       "ignored_flags": list(loaded.ignored_flags),
                                       "warnings": list(report.warnings) + list(getattr(loaded, "warnings", None) or [])
                                       + uncertain})
    data = report.model_dump(mode="json")
    data["recipe"] = case.recipe.model_dump(mode="json")
    data["cuda_graph_scope"] = sorted(scope)
    data["fused_grouped_mlp"] = fused_experts
    data["model"] = case.model.name
    data["hardware"] = profile.name
    measured = getattr(loaded, "measured", None)
    if measured is not None:
        data["measured"] = measured.model_dump(mode="json")
        if projection is not None:
            data["measured_vs_projected"] = measured_against_projected(measured, projection)
        if report.memory is not None and measured.max_allocated_bytes is not None:
            data["measured"]["estimated_peak_bytes"] = report.memory.peak_bytes
    return {"ok": report.ok, "report": report, "json": data, "profile": profile}
