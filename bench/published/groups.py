"""Per-group stages of bench/published/recipes.py: verdicts, pricing the candidate space, the solver's top pick.

Why apart: these call rules, memory, projection and solver (slow, run in a child process per group so a
slow solve can be cut); the module published_recipes.py keeps the grouping, ranking arithmetic, tables
and the command line.
"""
from __future__ import annotations

import time
from typing import Any, Optional

from bench.published.space import GIB, outside_space, rank_among, recipe_label


def _verdict(case, profile) -> dict:
    """check_case on one published recipe, plus its closed-form projection when it is legal."""
    from constraints.case import Case
    from constraints.check import check_case
    from measure.projection.project import project

    rep = check_case(Case(model=case.model, job=case.job, recipe=case.recipe, placement=case.placement), profile)
    errors = [v for v in rep.violations if v.rule != "memory_fits"]
    out: dict[str, Any] = {"legal": rep.legal, "fits": rep.fits, "violations": sorted({v.rule for v in errors}),
                           "violation_messages": [f"{v.rule}: {v.message}" for v in errors],
                           "peak_gib": None, "usable_gib": None, "dominant": None, "terms_gib": None, "proj_tps": None}
    if rep.memory is not None:
        terms = rep.memory.terms
        out.update(peak_gib=rep.memory.peak_bytes / GIB, usable_gib=rep.memory.usable_bytes / GIB,
                   dominant=max(terms, key=lambda k: terms[k]), terms_gib={k: round(v / GIB, 2) for k, v in terms.items()})
    if rep.legal and not rep.fits:
        out["fits_with"] = _fitting_recompute(case, profile)
    if rep.legal:
        try:
            out["proj_tps"] = project(case.model, case.job, case.recipe, case.placement, profile,
                                      simulate_pipeline=False).tokens_per_s_per_gpu
        except (RuntimeError, ValueError) as exc:
            out["note"] = f"projection failed: {str(exc).splitlines()[0]}"
    return out


def _fitting_recompute(case, profile) -> Optional[str]:
    """The first recompute choice of our search space (lightest first) under which the recipe fits: tells an
    unstated recompute setting (bench/runs.py assumes none) from a memory-model gap."""
    from constraints.case import Case
    from constraints.check import check_case
    from solver.space import recompute_choices, recompute_name

    for rc in recompute_choices(case.model)[1:]:
        r = case.recipe.model_copy(update={"recompute": rc})
        rep = check_case(Case(model=case.model, job=case.job, recipe=r, placement=case.placement), profile)
        if rep.ok:
            return recompute_name(rc)
    return None


def candidate_tps(tables, cand_index):
    """Closed-form tokens/s/GPU of table candidates: the ranking time the tables hold (µs, rounded up; each
    candidate under its fastest legal MoE variant), as the solver ranks them."""
    import numpy as np

    space = tables.space
    tokens = space.job.global_batch_size * space.job.seq_length
    return tokens / (np.asarray(tables.cand_time_us)[cand_index] / 1e6) / space.world_size


def rank_group(model, job, placement, profile, verdicts: list[dict], recipes: list) -> dict:
    """Price every legal, fitting candidate of our default space; fill rank / outside-space per published recipe."""
    import numpy as np

    from solver.space import build_space
    from solver.tables.build import build_tables

    t0 = time.perf_counter()
    space = build_space(model, job, placement)
    tables = build_tables(space, profile)
    fit = np.flatnonzero(tables.cand_peak <= tables.usable_bytes)
    tps = candidate_tps(tables, fit)
    best = float(tps.max()) if len(fit) else None
    for v, r in zip(verdicts, recipes):
        v["outside"] = outside_space(r, space.domains, model, profile)
        if v.get("proj_tps") is not None and v["fits"]:
            v["rank_faster"], v["candidates"] = rank_among(v["proj_tps"], tps)
            v["rank"] = v["rank_faster"] + 1
    return {"space_candidates": int(len(fit)), "closed_form_best_tps": best, "rank_s": time.perf_counter() - t0}


def solve_group(model, job, placement, profile, method: str, time_limit_s: float) -> dict:
    """Our top pick (solve_case, k=1) priced in the same closed form as the published recipes."""
    from measure.projection.project import project
    from solver.workflow import solve_case

    t0 = time.perf_counter()
    result, _ = solve_case(model, job, placement, profile, pins={}, bounds={}, k=1, margin=0.0, method=method,
                           time_limit_s=time_limit_s)
    if not result.ranked:
        return {"top": None, "top_note": "solver found no legal, fitting recipe", "solve_s": time.perf_counter() - t0}
    top = result.ranked[0].recipe
    tps = project(model, job, top, placement, profile, simulate_pipeline=False).tokens_per_s_per_gpu
    return {"top": recipe_label(top) + (" SP" if top.sp_active else "") + f" {top.schedule.value}", "top_tps": tps,
            "top_simulated_tps": result.ranked[0].projection.tokens_per_s_per_gpu, "proven_optimal": result.proven_optimal,
            "solve_s": time.perf_counter() - t0}


def group_worker(conn, key, recipe_groups, do_rank: bool, method: str, time_limit_s: float) -> None:
    """Child process: verdicts first (sent at once), then rank, then solve; each stage sent as it finishes."""
    from hardware.profile import load_profile

    first = recipe_groups[0][0]
    profile = load_profile(first.hardware)
    verdicts = [_verdict(g[0], profile) for g in recipe_groups]
    conn.send(("verdicts", verdicts))
    if not do_rank:
        return
    try:
        info = rank_group(first.model, first.job, first.placement, profile, verdicts, [g[0].recipe for g in recipe_groups])
        conn.send(("rank", (verdicts, info)))
        conn.send(("solve", solve_group(first.model, first.job, first.placement, profile, method, time_limit_s)))
    except Exception as exc:  # noqa: BLE001  (reported per group, never hides the other groups)
        conn.send(("error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))
