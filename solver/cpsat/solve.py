"""Solve: top-K recipes, CP-SAT over the exact tables, the event simulator refining the top of the list.

The ranking objective is the closed-form projection in whole µs (solver/tables/time.py), ties broken by
table order (act, shard): the answer is the exact top-K under it. Steps:
1. numpy lists the fitting candidates that satisfy the pins in (time, act, shard) order (a pre-filter);
   the first K that check_case verifies are the answer, T = the last one's time.
2. CP-SAT, over the activation rows that hold any candidate with objective <= T (every other row is worse
   than T whatever its memory, so cannot enter the list), lists every solution with objective <= T under
   the exact memory constraint and the pins. A complete listing (status OPTIMAL) proves the optimum (its
   minimum) and the answer set; both must equal numpy's (checked, a mismatch is an error). When the region
   holds more than MAX_CPSAT_ENUMERATION candidates, CP-SAT minimises instead and its optimum is checked.
3. Each answer carries the simulated projection (measure.pipeline.simulator), as `check` reports it.
When nothing fits, CP-SAT over all rows must report INFEASIBLE (asserted), and solver/explain.py says why.
Over tables pruned by solver/prune.py the answer is proven only below `Tables.pruned_lb_us` (every candidate left
out is at least that slow); a list reaching it is returned unproven with that bound.
Deterministic: one worker, fixed seed, deterministic time limit.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from boundary.numbers import bounded_float, bounded_int
from constraints.case import Case
from constraints.check import check_case
from measure.projection.project import project
from solver.cpsat.backend import cp_model
from solver.cpsat.model import build_model
from solver.deadline import remaining_s
from solver.objective import Objective, objective_name
from solver.tables.build import VARIANT_AXES, Tables
from solver.tables.time import US

SEED = 20240611
MAX_CPSAT_ENUMERATION = 2000  # above this many candidates in the region, CP-SAT minimises instead of listing (~1e3/s)


@dataclass
class Ranked:
    time_us: int               # simulated projection (what check reports), µs
    act: int
    shard: int
    recipe: object
    check: object              # CheckReport with .projection filled
    projection: object         # measure.projection.project.Projection
    rank_time_us: int = 0      # ranking projection (closed form)

    @property
    def key(self) -> tuple:
        return (self.rank_time_us, self.act, self.shard)


@dataclass
class SolveResult:
    ranked: list[Ranked]
    proven_optimal: bool
    bound: Optional[int]       # in the objective's unit (ranking µs or peak bytes): a proven lower bound over the space
    method: str
    evaluated: int = 0
    rejected: list = field(default_factory=list)   # (recipe, violations) dropped by check_case
    stats: dict = field(default_factory=dict)


class ExactRanker:
    """check_case + simulated projection for candidates, cached; keeps the best by Ranked.key.

    Verdicts are also kept on the tables (per margin), so the proposer's sub-searches and the final solve, which
    meet the same candidates, judge and simulate each once."""

    def __init__(self, tables: Tables, margin_fraction: float) -> None:
        self.tables, self.margin = tables, margin_fraction
        self.done: dict[tuple[int, int], Optional[Ranked]] = {}
        self.rejected: list = []
        self._shared = tables._memo.setdefault(("exact_ranker", margin_fraction), {})

    def evaluate(self, a: int, s: int, rank_time_us: int = 0) -> Optional[Ranked]:
        if (a, s) in self.done:
            return self.done[(a, s)]
        if (a, s) in self._shared:
            out, rejected = self._shared[(a, s)]
            self.rejected += rejected
            self.done[(a, s)] = out
            return out
        n_rejected = len(self.rejected)

        t, sp = self.tables, self.tables.space
        recipe = t.recipe(a, s)
        case = Case(model=sp.model, job=sp.job, recipe=recipe, placement=sp.placement)
        report = check_case(case, t.profile, margin_fraction=self.margin)
        out = proj = None
        if report.ok:
            try:
                proj = project(sp.model, sp.job, recipe, sp.placement, t.profile)
            except RuntimeError as exc:  # a projection failure drops the candidate, reported, never shown
                self.rejected.append((recipe, [f"projection: {exc}"]))
        if proj is not None:
            out = Ranked(time_us=int(round(proj.iteration_time_s * US)), act=a, shard=s, recipe=recipe,
                         check=report.model_copy(update={"projection": proj.model_dump(mode="json")}), projection=proj,
                         rank_time_us=rank_time_us)
        elif not report.ok:
            self.rejected.append((recipe, [v.rule for v in report.violations]))
        self.done[(a, s)] = out
        self._shared[(a, s)] = (out, self.rejected[n_rejected:])
        return out

    def best(self, k: int) -> list[Ranked]:
        return sorted((r for r in self.done.values() if r is not None), key=lambda r: r.key)[:k]


# above this many candidates, "nothing fits" and the explanation's cores are computed on the tables (numpy masks)
# instead of CP-SAT: both answer "does some candidate meet these constraints"; tests hold them equal on small spaces
CPSAT_EXPLAIN_MAX_CANDIDATES = 50_000

OBJECTIVES = (Objective.throughput, Objective.memory)  # minimise the ranking time / the peak bytes (most headroom)


def primary_key(tables: Tables, objective: Objective) -> np.ndarray:
    """Per candidate, the integer the objective minimises: ranking time (µs) or exact peak (bytes)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective {objective_name(objective)!r}: choose one of {', '.join(OBJECTIVES)}")
    return tables.cand_time_us if objective == Objective.throughput else tables.cand_peak


def refuse_pruned(tables: Tables, objective: Objective) -> None:
    """Tables pruned by ranking time (solver/prune.py) answer only the throughput objective."""
    if tables.pruned_lb_us is not None and objective != Objective.throughput:
        raise ValueError(f"objective {objective_name(objective)!r}: the tables were pruned by ranking time; build them without prune_k")


def reaches_pruned(tables: Tables, k: int, found: int, last_time_us: Optional[int]) -> bool:
    """An answer list over tables pruned by solver/prune.py that a candidate left out may change: the list reaches
    `pruned_lb_us`, or is shorter than K (pins) and a left-out candidate could extend it. Then only `pruned_lb_us`
    bounds those candidates and the list is unproven. False over complete tables."""
    lb = tables.pruned_lb_us
    return lb is not None and (found < k or last_time_us is None or last_time_us >= lb)


def fitting_index(tables: Tables, pins: Optional[dict] = None, objective: Objective = Objective.throughput) -> np.ndarray:
    """Candidate indices that fit and satisfy the pins, in (objective, ranking time, act, shard) order."""
    order = _fitting_order(tables, objective)
    keep = np.ones(len(order), dtype=bool)
    for name, allowed in (pins or {}).items():
        if name in VARIANT_AXES:  # chosen per candidate inside the space (solver/variants.py): pin them there
            raise ValueError(f"--{name.replace('_', '-')}: a per-candidate choice; pin it in the space (build_space pins)")
        ok = tables.allowed(name, allowed)
        keep &= ok[tables.cand_shard[order]] if name == "dp_sharding" else ok[tables.cand_act[order]]
    return order[keep]


def _fitting_order(tables: Tables, objective: Objective) -> np.ndarray:
    """Every fitting candidate in (objective, ranking time, act, shard) order, sorted once per tables: the
    proposer's sub-searches and the final solve filter this order by their pins instead of re-sorting."""
    key = ("fitting_order", objective, tables.usable_bytes)
    hit = tables._memo.get(key)
    if hit is None:
        idx = np.flatnonzero(tables.cand_peak <= tables.usable_bytes)
        prim = primary_key(tables, objective)
        hit = idx[np.lexsort((tables.cand_shard[idx], tables.cand_act[idx], tables.cand_time_us[idx], prim[idx]))]
        tables._memo[key] = hit
    return hit


def top_verified(tables: Tables, idx: np.ndarray, k: int, margin_fraction: float) -> tuple[list[Ranked], ExactRanker, np.ndarray]:
    """The first K candidates of `idx` that check_case verifies (a rejection is a bug, reported, skipped);
    returns them, the ranker, and the part of `idx` examined."""
    ranker = ExactRanker(tables, margin_fraction)
    best, n = [], 0
    for n, i in enumerate(idx, 1):  # noqa: B007 - n, the candidates evaluated, is read after the loop
        r = ranker.evaluate(int(tables.cand_act[i]), int(tables.cand_shard[i]), int(tables.cand_time_us[i]))
        if r is not None:
            best.append(r)
        if len(best) == k:
            break
    return best, ranker, idx[:n]


MAX_TIME_LIMIT_S = 86_400.0  # a day of CP-SAT's deterministic clock: past it, pin axes instead
MAX_TOP_K = 100_000         # answers carry a projection each; a ranked list past this is read by no one


def check_solve_limits(k: int, max_time_s: float) -> None:
    """Refuse a NaN / infinite / non-positive time limit (CP-SAT rejects the model on NaN) and an unbounded K."""
    bounded_float(max_time_s, "--time-limit", 0.0, MAX_TIME_LIMIT_S, "CP-SAT needs a finite positive time limit "
                  "(seconds of its deterministic clock)", lo_open=True)
    bounded_int(k, "--top", 1, MAX_TOP_K, f"each answer is re-checked and projected; {MAX_TOP_K:,} is the most listed")


def new_cp_solver(max_time_s: float) -> cp_model.CpSolver:
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.random_seed = SEED
    s.parameters.max_deterministic_time = max_time_s
    left = remaining_s()  # the solve's --max-time: CP-SAT's C++ search cannot be interrupted by the alarm
    if left != float("inf"):
        s.parameters.max_time_in_seconds = max(0.01, left)
    # presolve dominates on these table models (measured 4.3 s -> 1.9 s on Llama-70B/64 GPUs); one presolve
    # pass without probing keeps the answers (every verdict is asserted against the numpy tables)
    s.parameters.max_presolve_iterations = 1
    s.parameters.cp_model_probing_level = 0
    s.parameters.presolve_inclusion_work_limit = 0  # OR-Tools #5293: keep enforced one-hot x bytes sums enforced
    # CP-SAT's own Ctrl-C handler ends the search "as if a time limit was reached" (sat_parameters.proto
    # catch_sigint_signal): the interrupted solve then carried on, said "proven optimal" and exited 0. solve_model
    # takes Ctrl-C instead and stops the search itself
    s.parameters.catch_sigint_signal = False
    return s


def solve_model(rm, solver: cp_model.CpSolver, callback=None) -> int:
    """Solve; MODEL_INVALID is an error naming OR-Tools' reason (e.g. int64 overflow), never read as a verdict.

    Why a worker thread: CP-SAT's search runs in C++ (it releases the GIL), where Python's Ctrl-C and the --max-time
    alarm cannot land until it returns. The main thread waits in short joins, so KeyboardInterrupt or the alarm lands
    there at once: the search is stopped, the thread joined, and the interrupt goes on up (exit 130, or the one-line
    time-limit error), with no answer read from a cut search."""
    box: dict = {}

    def run() -> None:
        try:
            box["status"] = solver.solve(rm.model, callback)
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=run, name="cp-sat", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
    except BaseException:
        solver.stop_search()
        while worker.is_alive():
            try:
                worker.join(0.05)
            except BaseException:  # the alarm re-arms itself until it lands: keep stopping, keep the first interrupt
                solver.stop_search()
        raise
    if "error" in box:
        raise box["error"]
    status = box["status"]
    if status == cp_model.MODEL_INVALID:
        raise RuntimeError(f"CP-SAT rejected the model: {rm.model.validate()}")
    return status


class _Collect(cp_model.CpSolverSolutionCallback):
    def __init__(self, rm, target) -> None:
        super().__init__()
        self.rm, self.target = rm, target
        self.found: list[tuple[int, int]] = []
        self.values: list[int] = []

    def on_solution_callback(self) -> None:
        self.found.append((int(self.value(self.rm.act)), int(self.value(self.rm.shard))))
        self.values.append(int(self.value(self.target)))


def _enforced(tables, pins, hint, rows):
    rm = build_model(tables, pins, hint=hint, rows=rows)
    for lit in rm.assumptions():
        rm.model.add(lit == 1)
    return rm


def solve_cpsat(tables: Tables, k: int = 10, pins=None, margin_fraction: float = 0.0, max_time_s: float = 60.0,
                hint: Optional[tuple[int, int]] = None, cpsat_enumeration: bool = True,
                objective: Objective = Objective.throughput) -> SolveResult:
    """Exact top-K under the objective (ranking time, or peak bytes), each with its simulated projection;
    `hint` (act, shard) seeds CP-SAT."""
    check_solve_limits(k, max_time_s)
    t0 = time.perf_counter()
    idx = fitting_index(tables, pins, objective)
    refuse_pruned(tables, objective)
    pruned_lb = tables.pruned_lb_us
    if not len(idx) and pruned_lb is not None:
        # the pins leave nothing in the expanded rows; the rows left out hold only candidates slower than pruned_lb
        return SolveResult([], False, pruned_lb, "pruned", stats={"verdict": "nothing in the expanded rows",
                                                                 "solve_s": time.perf_counter() - t0})
    if not len(idx):
        if len(tables.cand_act) > CPSAT_EXPLAIN_MAX_CANDIDATES:
            # the exact tables (integer peaks, legality by construction) already prove it; a CP-SAT infeasibility
            # proof over this many one-hot candidates takes about a minute
            return SolveResult([], True, None, "tables", stats={"verdict": "tables: no fitting candidate",
                                                              "candidates": int(len(tables.cand_act)),
                                                              "solve_s": time.perf_counter() - t0})
        if len(tables.act_rows):
            rm = _enforced(tables, pins, hint, None)
            status = solve_model(rm, new_cp_solver(max_time_s))
            if status in (cp_model.FEASIBLE, cp_model.OPTIMAL):
                raise RuntimeError("CP-SAT found a fitting recipe the exact tables deny; please report this model and job")
            proven = status == cp_model.INFEASIBLE
        else:
            proven = True
        return SolveResult([], proven, None, "cpsat", stats={"solve_s": time.perf_counter() - t0})
    best, ranker, pool = top_verified(tables, idx, k, margin_fraction)
    key = primary_key(tables, objective)
    limit = int(key[pool[-1]])
    rows = np.unique(tables.cand_act[key <= limit])
    best_value = int(key[idx[0]])
    region = idx[key[idx] <= limit]
    if cpsat_enumeration and len(region) <= MAX_CPSAT_ENUMERATION:
        # one CP-SAT pass lists every legal, fitting, pinned solution with objective <= limit; a complete
        # listing proves both the optimum (its minimum) and the answer set, both held equal to the tables
        found, values, proven = _enumerate(tables, pins, rows, limit, max_time_s, objective, hint)
        expect = {(int(tables.cand_act[i]), int(tables.cand_shard[i])) for i in region}
        if proven and (found != expect or min(values) != best_value):
            raise RuntimeError("CP-SAT enumeration disagrees with the exact tables; please report this model and job")
        bound = best_value if proven else None  # an unfinished listing bounds nothing from below
    else:
        rm = _enforced(tables, pins, hint, rows)
        rm.model.minimize(rm.time_us if objective == Objective.throughput else rm.peak_bytes)
        solver = new_cp_solver(max_time_s)
        status = solve_model(rm, solver)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            raise RuntimeError(f"CP-SAT: {solver.status_name(status)} where the exact tables fit; raise --time-limit")
        proven = status == cp_model.OPTIMAL
        # the objective is an integer (µs or bytes), but OR-Tools reports it as a double: 18198174 came back as
        # 18198173.999999996 (DeepSeek-V3 / 256 H100), which int() truncated into a false "disagrees"; read the
        # integer expression's value instead, and round the bound up only past float noise (it stays a lower bound)
        target = rm.time_us if objective == Objective.throughput else rm.peak_bytes
        if proven and int(solver.value(target)) != best_value:
            raise RuntimeError("CP-SAT optimum disagrees with the exact tables; please report this model and job")
        bound = best_value if proven else math.ceil(solver.best_objective_bound - 1e-6)
    if reaches_pruned(tables, k, len(best), limit):
        proven, bound = False, min(best_value, pruned_lb)
    return SolveResult(best, proven, bound, "cpsat", evaluated=len(ranker.done), rejected=ranker.rejected,
                       stats={"solve_s": time.perf_counter() - t0, "region_rows": int(len(rows)), "threshold": limit,
                              "objective": objective_name(objective), "best_objective": best_value})


def _enumerate(tables, pins, rows, limit: int, max_time_s: float, objective: Objective = Objective.throughput,
               hint=None) -> tuple[set[tuple[int, int]], list[int], bool]:
    """(solutions, their objective values, complete?) of the region model with objective <= limit."""
    rm = _enforced(tables, pins, hint, rows)
    target = rm.time_us if objective == Objective.throughput else rm.peak_bytes
    rm.model.add(target <= limit)
    solver = new_cp_solver(max_time_s)
    solver.parameters.enumerate_all_solutions = True
    cb = _Collect(rm, target)
    status = solve_model(rm, solver, cb)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE):
        raise RuntimeError(f"CP-SAT: {solver.status_name(status)}; raise --time-limit")
    return set(cb.found), cb.values, status == cp_model.OPTIMAL
