"""Why nothing fits: the smallest conflicting set of user pins / constraint groups, and what would fit.

Each user pin and the memory group get an enforcement literal (solver/cpsat/model.py); the model is solved
under those assumptions; CP-SAT's sufficient_assumptions_for_infeasibility is intersected with the
assumption set (OR-Tools issue #5141), shrunk by deletion (drop one, re-solve), and verified by re-solving
with the core alone. Above CPSAT_EXPLAIN_MAX_CANDIDATES candidates the same question (does some candidate meet
this subset of assumptions) is answered on the tables' exact peaks and legal rows with numpy masks, since a CP-SAT
infeasibility proof over a million one-hot candidates takes minutes (tests hold both cores equal on small spaces).
Remedies (the fewest more nodes, half the global batch or sequence, recompute, FP8, a larger-HBM part, dropping a
pin) are each checked on exact tables and a check_case-verified witness recipe; a trial whose memory lower bound
(solver/fewest_gpus.CountScreen: every parameter's static bytes stored once across the world) already exceeds
usable HBM, or whose space is provably empty, is skipped without building tables.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from constraints.case import Case
from constraints.check import check_case
from constraints.spec import JobSpec, Placement, Precision
from hardware.profile import load_profile
from solver.cpsat.backend import cp_model
from solver.cpsat.model import build_model
from solver.cpsat.solve import CPSAT_EXPLAIN_MAX_CANDIDATES, new_cp_solver, solve_model
from solver.explain_why import MAX_NODES_FACTOR, conflict_reasons, flag_of, format_explanation, recipe_free_blockers  # noqa: F401  (recipe_free_blockers, format_explanation: re-exported)
from solver.fewest_gpus import CountScreen
from solver.space import build_space
from solver.tables.build import VARIANT_AXES, build_tables

# the node-count remedy scans nodes+1 .. min(MAX_NODES_FACTOR x nodes, MAX_NODES), building tables for at most
# MAX_NODE_TABLE_BUILDS counts the screens cannot rule out (each build is ~1-4 s for a 671B MoE on 2 cores)
MAX_NODES, MAX_NODE_TABLE_BUILDS = 1024, 12
LARGER_HBM = {"h100-sxm-80gb": "h200-sxm-141gb", "h800-sxm-80gb": "h200-sxm-141gb", "a100-sxm-80gb": "h200-sxm-141gb",
              "mi300x": "mi325x", "mi325x": "mi355x", "b200": "b300", "gb200-nvl72": "gb300-nvl72"}


def _status(rm, solver) -> int:
    """Solve; a status that is neither a verdict (feasible / infeasible) is an error, never read as one."""
    status = solve_model(rm, solver)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE):
        raise RuntimeError(f"CP-SAT gave no verdict ({solver.status_name(status)}) within its time limit")
    return status


def _feasible(rm, assumptions) -> bool:
    rm.model.clear_assumptions()
    rm.model.add_assumptions(assumptions)
    return _status(rm, new_cp_solver(30.0)) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def minimal_core(rm) -> list[str]:
    """Names of a minimal infeasible subset of the assumptions (empty when the model is feasible)."""
    lits = rm.assumptions()
    solver = new_cp_solver(30.0)
    rm.model.clear_assumptions()
    rm.model.add_assumptions(lits)
    if _status(rm, solver) != cp_model.INFEASIBLE:
        return []
    ids = {lit.index: lit for lit in lits}
    core = [ids[i] for i in solver.sufficient_assumptions_for_infeasibility() if i in ids] or list(lits)
    for lit in list(core):
        trial = [x for x in core if x is not lit]
        if not _feasible(rm, trial):
            core = trial
    if _feasible(rm, core):
        raise RuntimeError("explanation core is feasible on its own; please report this model and job")
    names = {rm.memory_literal.index: "memory_fits"}
    names.update({lit.index: flag_of(axis) for axis, lit in rm.pin_literals.items()})
    return [names[lit.index] for lit in core]


# axis -> the `solve` option that pins it (the rest are spelled --<axis> on the command line)
def _variant_core(model, job, placement, profile, pins: dict, bounds: dict, margin: float) -> list[str]:
    """The pins are infeasible only with the MoE variant pins in (solver/variants.py chooses those per candidate,
    outside CP-SAT's literals): shrink the whole pin set by deletion, each step a re-solve, and name memory when
    the remaining pins leave legal recipes that do not fit."""
    core = list(pins)
    for axis in list(core):
        trial = {a: pins[a] for a in core if a != axis}
        if not any_fit(model, job, placement, profile, trial, bounds, margin):
            core = list(trial)
    kept = {a: pins[a] for a in core}
    try:
        legal = len(build_tables(build_space(model, job, placement, pins=kept, ranges=bounds), profile, margin).cand_act) > 0
    except ValueError:
        legal = False
    return ([] if not legal else ["memory_fits"]) + [flag_of(a) for a in core]


def any_fit(model, job, placement, profile, pins, bounds, margin) -> bool:
    """Some legal recipe fits: the tables' exact peaks (CP-SAT on small spaces, as minimal_core), and a witness
    (the fitting candidate with the smallest peak) that check_case passes, so no remedy rests on the tables alone.
    The memory lower bound and the empty-space screen answer 'no' first without building tables."""
    screen = CountScreen(model, job, profile, margin, pins, bounds)
    if screen.min_peak_bytes(placement.world_size) > screen.usable_bytes or screen.space_is_empty(placement):
        return False
    try:
        space = build_space(model, job, placement, pins=dict(pins), ranges=bounds)
        tables = build_tables(space, profile, margin)
    except ValueError:
        return False
    if not len(tables.act_rows):
        return False
    fit = np.flatnonzero(tables.cand_peak <= tables.usable_bytes)
    if not len(fit):
        return False
    if len(tables.cand_act) <= CPSAT_EXPLAIN_MAX_CANDIDATES:
        rm = build_model(tables)
        rm.model.add(rm.memory_literal == 1)
        rm.model.clear_assumptions()
        if _status(rm, new_cp_solver(30.0)) == cp_model.INFEASIBLE:  # a timeout (UNKNOWN) leaves the exact tables' verdict
            raise RuntimeError("CP-SAT finds no fitting recipe where the exact tables do; please report this model and job")
    return _verified_witness(tables, fit, margin) is not None


def _verified_witness(tables, fit: np.ndarray, margin: float, tries: int = 5):
    """The first of the smallest-peak fitting candidates that check_case passes (None when none of `tries` does)."""
    sp = tables.space
    for i in fit[np.argsort(tables.cand_peak[fit], kind="stable")][:tries]:
        recipe = tables.recipe(int(tables.cand_act[i]), int(tables.cand_shard[i]))
        case = Case(model=sp.model, job=sp.job, recipe=recipe, placement=sp.placement)
        if check_case(case, tables.profile, margin_fraction=margin).ok:
            return recipe
    return None


def fewest_fitting_nodes(model, job, placement, profile, pins, bounds, margin) -> Optional[int]:
    """The smallest node count above placement.num_nodes at which some legal recipe fits (verified by any_fit), or
    None up to the cap. Counts whose memory lower bound exceeds usable HBM or whose space is provably empty are
    skipped by arithmetic, so a 671B model on 8 nodes builds tables only from ~20 nodes up."""
    screen = CountScreen(model, job, profile, margin, pins, bounds)
    cap = min(placement.num_nodes * MAX_NODES_FACTOR, MAX_NODES)
    built = 0
    for nodes in range(placement.num_nodes + 1, cap + 1):
        pl = placement.model_copy(update={"num_nodes": nodes})
        if screen.min_peak_bytes(pl.world_size) > screen.usable_bytes or screen.space_is_empty(pl):
            continue
        if built >= MAX_NODE_TABLE_BUILDS:
            return None
        built += 1
        if any_fit(model, job, pl, profile, pins, bounds, margin):
            return nodes
    return None


def minimal_core_tables(tables, pins: dict) -> list[str]:
    """minimal_core on the tables themselves: the same assumptions (memory, one per pin), feasibility of a subset =
    some candidate meets all of them (exact integer peaks, legality by construction), shrunk by deletion. Why: a
    CP-SAT infeasibility proof over a million one-hot candidates takes minutes; these masks take milliseconds."""
    masks = {"memory_fits": tables.cand_peak <= tables.usable_bytes}
    for axis, allowed in pins.items():
        ok = tables.allowed(axis, allowed)
        masks[flag_of(axis)] = ok[tables.cand_shard] if axis == "dp_sharding" else ok[tables.cand_act]

    def feasible(names) -> bool:
        m = np.ones(len(tables.cand_act), dtype=bool)
        for n in names:
            m &= masks[n]
        return bool(m.any())

    core = list(masks)
    if feasible(core):
        return []
    for name in list(core):
        trial = [n for n in core if n != name]
        if not feasible(trial):
            core = trial
    return core


def explain_infeasible(model, job: JobSpec, placement: Placement, profile, pins: dict, bounds: dict, margin: float,
                       remedies: bool = True) -> dict:
    """{'conflict': [names], 'remedies': [descriptions of changes that make it feasible]}."""
    space = build_space(model, job, placement, ranges=bounds)
    cp_pins = {a: v for a, v in pins.items() if a not in VARIANT_AXES}  # variant axes stay open here
    for axis, values in cp_pins.items():  # keep pinned values in the domain so the pin is a constraint, not a gap
        space.domains[axis] = sorted(set(space.domains[axis]) | set(values), key=str)
    tables = build_tables(space, profile, margin)
    conflict: list[str] = []
    if not len(tables.act_rows):
        conflict = recipe_free_blockers(model, job, placement, profile) or [
            "rules: no legal recipe for this model, world size and job"]
    else:
        big = len(tables.cand_act) > CPSAT_EXPLAIN_MAX_CANDIDATES
        conflict = minimal_core_tables(tables, cp_pins) if big else minimal_core(build_model(tables, cp_pins))
        if not conflict and len(cp_pins) < len(pins):  # feasible with the variants open: their pins take part
            conflict = _variant_core(model, job, placement, profile, pins, bounds, margin)
    out: dict = {"conflict": conflict, "why": conflict_reasons(model, job, placement, profile, pins, conflict, tables, margin),
                 "remedies": []}
    if not remedies:
        return out
    nodes = fewest_fitting_nodes(model, job, placement, profile, pins, bounds, margin)
    out["fewest_nodes"] = nodes  # None: no count up to the cap fits
    if nodes is not None:
        out["remedies"].append(f"use {nodes} nodes")
    trials: list[tuple[str, object]] = [
        (f"global batch {max(job.global_batch_size // 2, 1)}",
         lambda: (job.model_copy(update={"global_batch_size": max(job.global_batch_size // 2, 1)}), placement, profile, pins)),
        (f"sequence length {max(job.seq_length // 2, 1)}",
         lambda: (job.model_copy(update={"seq_length": max(job.seq_length // 2, 1)}), placement, profile, pins)),
        ("allow recompute", lambda: (job, placement, profile, {a: v for a, v in pins.items() if a != "recompute"})),
    ]
    if not job.precision.is_fp8 and not job.precision.is_fp4 and getattr(profile, "supports_fp8", False):
        trials.append(("train in FP8 (fp8-tensorwise)", lambda: (job.model_copy(update={"precision": Precision.fp8_tensorwise}), placement, profile, pins)))
    if job.precision == Precision.mxfp8 and getattr(profile, "supports_fp8", False):
        trials.append(("--precision fp8-tensorwise", lambda: (job.model_copy(update={"precision": Precision.fp8_tensorwise}), placement, profile, pins)))
    if job.precision.is_fp8 or job.precision.is_fp4:  # a quantised recipe the part cannot run, or memory that still does not fit
        trials.append(("--precision bf16", lambda: (job.model_copy(update={"precision": Precision.bf16}), placement, profile, pins)))
    bigger = LARGER_HBM.get(profile.name) or LARGER_HBM.get(placement.hardware)
    if bigger:
        trials.append((f"use {bigger}", lambda: (job, placement.model_copy(update={"hardware": bigger}), load_profile(bigger), pins)))
    for label, make in trials:
        j, pl, prof, pn = make()
        if any_fit(model, j, pl, prof, pn, bounds, margin):
            out["remedies"].append(label)
    for axis in pins:
        if any_fit(model, job, placement, profile, {a: v for a, v in pins.items() if a != axis}, bounds, margin):
            out["remedies"].append(f"drop {flag_of(axis)}")
    return out


def explain(model, job, placement, profile, pins: Optional[dict] = None, margin: float = 0.0) -> dict:
    return explain_infeasible(model, job, placement, profile, pins or {}, {}, margin)
