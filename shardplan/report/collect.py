"""Build a Report from a check input or a solve: the verdicts and memory come from solver.report /
the solver exactly as `check --json` and `solve --json` give them; the timeline is re-simulated per recipe.
"""
from __future__ import annotations

from shardplan.report.model import JobView, RecipeView, Report
from shardplan.report.timeline import simulate_timeline


def recipe_label(recipe, dp: int) -> str:
    """'TP8 PP4 VPP5 DP2 MBS1 SP sel' : the axes a reader compares first."""
    r = recipe
    parts = [f"TP{r.tp}", f"PP{r.pp}"] + ([f"VPP{r.vpp}"] if r.vpp > 1 else []) + ([f"CP{r.cp}"] if r.cp > 1 else [])
    parts += ([f"EP{r.ep}"] if r.ep > 1 else []) + [f"DP{dp}", f"MBS{r.mbs}"]
    parts += (["SP"] if r.sp_active else []) + ({"selective": ["sel-rc"], "full": ["full-rc"]}.get(r.recompute.granularity.value, []))
    return " ".join(parts)


def parallel_table(recipe, report) -> dict:
    """The recipe table's columns (what a Megatron user sets, plus the derived DP and micro-batch count)."""
    r = recipe
    rc = r.recompute.granularity.value + (f"({','.join(m.value for m in r.recompute.modules)})" if r.recompute.modules else "") \
        + (f"({r.recompute.method.value}, {r.recompute.num_layers})" if r.recompute.method is not None else "")
    return {"TP": r.tp, "PP": r.pp, "VPP": r.vpp, "CP": r.cp, "EP": r.ep, "ETP": r.etp_effective, "DP": report.dp,
            "expert DP": report.expert_dp, "MBS": r.mbs,
            "micro-batches": report.memory.num_microbatches if report.memory is not None else None,
            "SP": r.sp_active, "TP overlap": r.tp_comm_overlap, "recompute": rc, "DP sharding": r.dp_sharding.value,
            "schedule": r.schedule.value, "dispatcher": r.moe_dispatcher.value if r.ep > 1 else "-"}


def recipe_view(case, report, profile, title: str) -> RecipeView:
    """One recipe's view from its CheckReport (projection filled when legal and fitting)."""
    data = report.model_dump(mode="json")
    timeline = simulate_timeline(case, profile) if report.ok and report.projection else None
    return RecipeView(title=title, parallel=parallel_table(case.recipe, report), recipe=case.recipe.model_dump(mode="json"),
                      legal=report.legal, fits=report.fits, violations=data["violations"], warnings=data["warnings"],
                      memory=data["memory"], projection=report.projection, timeline=timeline)


def job_view(model, job, placement, profile) -> JobView:
    return JobView(model=model.name, hardware=profile.name, nodes=placement.num_nodes, gpus_per_node=placement.gpus_per_node,
                   world_size=placement.world_size, seq_length=job.seq_length, global_batch_size=job.global_batch_size,
                   precision=job.precision.value, projection_calibrated=profile.calibrated)


def check_report(loaded, margin_fraction: float = 0.0) -> Report:
    """The report of `check FILE`: one recipe, legal or not (an illegal or non-fitting one shows its violations and
    whatever memory the model could price, and no timeline)."""
    from solver.report import check_and_project

    result = check_and_project(loaded, margin_fraction=margin_fraction)
    report, profile = result["report"], result["profile"]
    view = recipe_view(loaded.case, report, profile, recipe_label(loaded.case.recipe, report.dp))
    notes = [f"not understood by shardplan (not modelled): {' '.join(loaded.unknown_flags)}"] if loaded.unknown_flags else []
    c = loaded.case
    return Report(kind="check", job=job_view(c.model, c.job, c.placement, profile), recipes=[view], notes=notes)


def solve_report(model, job, placement, profile, pins: dict, bounds: dict, k: int, margin_fraction: float,
                 time_limit_s: float = 60.0) -> Report:
    """The report of a throughput solve: its top K recipes, each re-verified by check (the solver's own answer)."""
    from constraints.case import Case
    from solver.workflow import solve_case

    result, tables = solve_case(model, job, placement, profile, dict(pins), bounds, k, margin_fraction, "cpsat", time_limit_s)
    views = []
    for i, ranked in enumerate(result.ranked, start=1):
        case = Case(model=model, job=job, recipe=ranked.recipe, placement=placement)
        views.append(recipe_view(case, ranked.check, profile, f"#{i} {recipe_label(ranked.recipe, ranked.check.dp)}"))
    counts = tables.counts
    fitting = counts.get("fitting", counts.get("fitting_expanded"))
    notes = [f"top {len(views)} of {fitting:,} fitting candidates" + ("" if "fitting" in counts else " in the expanded rows")
             if isinstance(fitting, int) else f"top {len(views)}",
             "proven optimal under the closed-form ranking" if result.proven_optimal else "not proven optimal"]
    return Report(kind="solve", job=job_view(model, job, placement, profile), recipes=views, notes=notes)
