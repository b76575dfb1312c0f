"""Build a Report from a check input or a solve: verdicts, memory and projections are the API's results
(shardplan.check / shardplan.solve, what `--format json` prints); the timeline is re-simulated per recipe.
"""
from __future__ import annotations

from constraints.case import Case
from constraints.models.params import parameters_phrase
from shardplan.api import check, profile_with_calibration, solve
from shardplan.report.model import JobView, RecipeView, Report
from shardplan.report.timeline import (
    MIN_OPS_PER_TIMELINE,
    MIN_SPANS_PER_TIMELINE,
    PAGE_MAX_OPS,
    PAGE_MAX_SPANS,
    simulate_timeline,
)
from shardplan.results import recipe_label
from shardplan.software_input import SoftwareUsed


def parallel_table(recipe, dp: int, expert_dp: int, memory) -> dict:
    """The recipe table's columns (what a Megatron user sets, plus the derived DP and micro-batch count)."""
    r = recipe
    rc = r.recompute.granularity.value + (f"({','.join(m.value for m in r.recompute.modules)})" if r.recompute.modules else "") \
        + (f"({r.recompute.method.value}, {r.recompute.num_layers})" if r.recompute.method is not None else "")
    return {"TP": r.tp, "PP": r.pp, "VPP": r.vpp, "CP": r.cp, "EP": r.ep, "ETP": r.etp_effective, "DP": dp,
            "expert DP": expert_dp, "MBS": r.mbs, "micro-batches": memory.num_microbatches if memory is not None else None,
            "SP": r.sp_active, "TP overlap": r.tp_comm_overlap, "recompute": rc, "DP sharding": r.dp_sharding.value,
            "schedule": r.schedule.value, "dispatcher": r.moe_dispatcher.value if r.ep > 1 else "-"}


def recipe_view(case, legal: bool, fits: bool, violations: list, warnings: list, memory, projection, dp: int, expert_dp: int,
                profile, title: str, cuda_graph_scope=frozenset(), fused_grouped_mlp: bool = False,
                share: int = 1) -> RecipeView:
    """One recipe's view from an API result's fields (memory: MemorySummary, projection: Projection or None); the
    timeline is simulated only for a legal, fitting, projected recipe, with the run options check priced (CUDA graphs,
    the experts' fused grouped MLP). `share`: the timelines on the page, which split its drawing budget."""
    timeline = (simulate_timeline(case, profile, frozenset(cuda_graph_scope), fused_grouped_mlp,
                                  max_ops=max(MIN_OPS_PER_TIMELINE, PAGE_MAX_OPS // share),
                                  max_spans=max(MIN_SPANS_PER_TIMELINE, PAGE_MAX_SPANS // share))
                if legal and fits and projection is not None else None)
    return RecipeView(title=title, parallel=parallel_table(case.recipe, dp, expert_dp, memory),
                      recipe=case.recipe.model_dump(mode="json"), legal=legal, fits=fits,
                      violations=[v.model_dump(mode="json") for v in violations],
                      warnings=[v.model_dump(mode="json") for v in warnings],
                      memory=memory.model_dump(mode="json") if memory is not None else None,
                      projection=projection.model_dump(mode="json") if projection is not None else None, timeline=timeline)


def job_view(model, job, placement, profile) -> JobView:
    return JobView(model=model.name, model_parameters=parameters_phrase(model), hardware=profile.name,
                   nodes=placement.num_nodes, gpus_per_node=placement.gpus_per_node,
                   world_size=placement.world_size, seq_length=job.seq_length, global_batch_size=job.global_batch_size,
                   precision=job.precision.value, projection_calibrated=profile.calibrated)


def check_report(source, *, hardware=None, nodes=None, gpus_per_node=None, model=None, max_memory_fraction=None,
                 calibration=None, software=None) -> Report:
    """The report of `check`: one recipe, legal or not (an illegal or non-fitting one shows its violations and whatever
    memory the model could price, and no timeline). Arguments as shardplan.check."""
    res = check(source, hardware=hardware, nodes=nodes, gpus_per_node=gpus_per_node, model=model,
                max_memory_fraction=max_memory_fraction, calibration=calibration, software=software)
    case = res.case
    profile, _, _ = profile_with_calibration(case.placement.hardware, calibration, case.model)
    view = recipe_view(case, res.legal, res.fits, res.violations, res.warnings, res.memory, res.projection, res.dp,
                       res.expert_dp, profile, recipe_label(case.recipe, res.dp), res.cuda_graph_scope,
                       res.fused_grouped_mlp)
    notes = [f"not understood by shardplan (not modelled): {' '.join(res.unknown_flags)}"] if res.unknown_flags else []
    notes.append(SoftwareUsed(**res.software).line())
    return Report(kind="check", job=job_view(case.model, case.job, case.placement, profile), recipes=[view], notes=notes)


def solve_report(model: str, hardware: str, nodes: int, *, top: int = 3, **solve_options) -> Report:
    """The report of a throughput solve: its top K recipes, each re-verified by check. Arguments as shardplan.solve."""
    res = solve(model, hardware, nodes, top=top, **solve_options)
    spec, placement, job = res.context
    profile, _, _ = profile_with_calibration(hardware, solve_options.get("calibration"), spec)
    views = []
    for i, r in enumerate(res.recipes, start=1):
        case = Case(model=spec, job=job, recipe=r.recipe, placement=placement)
        views.append(recipe_view(case, True, True, [], [], r.memory, r.projection, r.parallel.dp, r.parallel.expert_dp,
                                 profile, f"#{i} {recipe_label(r.recipe, r.parallel.dp)}", share=len(res.recipes)))
    counts = res.space
    fitting = counts.get("fitting", counts.get("fitting_expanded"))
    notes = [f"top {len(views)} of {fitting:,} fitting candidates" + ("" if "fitting" in counts else " in the expanded rows")
             if isinstance(fitting, int) else f"top {len(views)}",
             "proven optimal under the closed-form ranking" if res.proven_optimal else "not proven optimal"]
    # what the model's config reader did not follow, as `solve` prints it under its table (`! model config:`)
    notes += [f"model config: {note}" for note in res.model_notes]
    notes.append(SoftwareUsed(**res.software).line())
    if not res.recipes and res.explanation:
        exp = res.explanation
        notes.append("nothing fits; conflicting: " + ", ".join(map(str, exp.get("conflict") or [])) + "; remedies: "
                     + "; ".join(map(str, exp.get("remedies") or [])))
    return Report(kind="solve", job=job_view(spec, job, placement, profile), recipes=views, notes=notes)
