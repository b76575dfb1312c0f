"""Solve: top-K recipes by projected step time, via CP-SAT (optimum, then threshold enumeration).

Why two steps: the exact projection (measure.project, a pipeline simulation) is too rich to encode, so
CP-SAT minimises a table lower bound `lb_us` over the legal, fitting space, then enumerates every
candidate whose bound is <= a threshold T; each is re-verified by check_case and projected exactly.
Starting at T = the optimum bound and raising T to the K-th best exact time, the loop stops when the
K-th best exact time <= T: every candidate left out has bound > T, so exact time > T. The result is the
exact top-K under the projection, ties broken by (time, table order). Deterministic: one worker, fixed
seed, deterministic time limit.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ortools.sat.python import cp_model

from solver.cpsat_model import build_model
from solver.tables import US, Tables

SEED = 20240611


@dataclass
class Ranked:
    time_us: int
    act: int
    shard: int
    recipe: object
    check: object              # CheckReport with .projection filled
    projection: object         # measure.project.Projection

    @property
    def key(self) -> tuple:
        return (self.time_us, self.act, self.shard)


@dataclass
class SolveResult:
    ranked: list[Ranked]
    proven_optimal: bool
    bound_us: Optional[int]    # lower bound on the best projected time (µs); = best when proven
    method: str
    evaluated: int = 0
    rejected: list = field(default_factory=list)   # (recipe, violations) dropped by check_case
    stats: dict = field(default_factory=dict)


class ExactRanker:
    """check_case + project for candidates, cached; keeps the K best by (time_us, act, shard)."""

    def __init__(self, tables: Tables, margin_fraction: float) -> None:
        self.tables, self.margin = tables, margin_fraction
        self.done: dict[tuple[int, int], Optional[Ranked]] = {}
        self.rejected: list = []

    def evaluate(self, a: int, s: int) -> Optional[Ranked]:
        if (a, s) in self.done:
            return self.done[(a, s)]
        from constraints.case import Case
        from constraints.check import check_case
        from measure.project import project

        t, sp = self.tables, self.tables.space
        recipe = t.recipe(a, s)
        case = Case(model=sp.model, job=sp.job, recipe=recipe, placement=sp.placement)
        report = check_case(case, t.profile, margin_fraction=self.margin)
        out = None
        proj = None
        if report.ok:
            try:
                proj = project(sp.model, sp.job, recipe, sp.placement, t.profile)
            except RuntimeError as exc:  # a projection failure drops the candidate, reported, never shown
                self.rejected.append((recipe, [f"projection: {exc}"]))
        if proj is not None:
            out = Ranked(time_us=int(round(proj.iteration_time_s * US)), act=a, shard=s, recipe=recipe,
                         check=report.model_copy(update={"projection": proj.model_dump(mode="json")}), projection=proj)
        elif not report.ok:
            self.rejected.append((recipe, [v.rule for v in report.violations]))
        self.done[(a, s)] = out
        return out

    def best(self, k: int) -> list[Ranked]:
        return sorted((r for r in self.done.values() if r is not None), key=lambda r: r.key)[:k]

    def kth_time(self, k: int) -> Optional[int]:
        b = self.best(k)
        return b[-1].time_us if len(b) >= k else None

    def evaluate_in_bound_order(self, a, s, lb_us, k: int) -> None:
        """Evaluate candidates sorted by lower bound until the k-th best exact time is no larger than the
        next bound (nothing after it can enter the top-k)."""
        for i in range(len(a)):
            kth = self.kth_time(k)
            if kth is not None and lb_us[i] > kth:
                break
            self.evaluate(int(a[i]), int(s[i]))


def _solver(max_time_s: float) -> cp_model.CpSolver:
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.random_seed = SEED
    s.parameters.max_deterministic_time = max_time_s
    return s


class _Collect(cp_model.CpSolverSolutionCallback):
    def __init__(self, act, shard, lb) -> None:
        super().__init__()
        self.act, self.shard, self.lb = act, shard, lb
        self.found: list[tuple[int, int, int]] = []

    def on_solution_callback(self) -> None:
        self.found.append((self.value(self.lb), self.value(self.act), self.value(self.shard)))


def _enumerate(tables: Tables, pins, threshold: int, max_time_s: float) -> tuple[list[tuple[int, int, int]], bool]:
    rm = build_model(tables, pins, extra_lb_limit=threshold)
    for lit in rm.pin_literals.values():
        rm.model.add(lit == 1)
    rm.model.add(rm.memory_literal == 1)
    solver = _solver(max_time_s)
    solver.parameters.enumerate_all_solutions = True
    cb = _Collect(rm.act, rm.shard, rm.lb_us)
    status = solver.solve(rm.model, cb)
    return sorted(cb.found), status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE) and status != cp_model.UNKNOWN


def solve_cpsat(tables: Tables, k: int = 10, pins=None, margin_fraction: float = 0.0, max_time_s: float = 60.0,
                hint: Optional[tuple[int, int]] = None, cpsat_enumeration: bool = False) -> SolveResult:
    """Exact top-K under the projection; `hint` (act, shard) seeds CP-SAT (proposer hook).

    CP-SAT proves the optimum bound over the legal, fitting space. The threshold enumeration runs in CP-SAT
    when `cpsat_enumeration` (tests hold it equal), else over the same tables in numpy (fast: CP-SAT lists
    solutions at ~1e3/s), checked to agree with CP-SAT's optimum bound."""
    t0 = time.perf_counter()
    ranker = ExactRanker(tables, margin_fraction)
    if not tables.act_rows:
        return SolveResult([], True, None, "cpsat")
    rm = build_model(tables, pins, hint=hint)
    for lit in rm.pin_literals.values():
        rm.model.add(lit == 1)
    rm.model.add(rm.memory_literal == 1)
    rm.model.minimize(rm.lb_us)
    solver = _solver(max_time_s)
    status = solver.solve(rm.model)
    if status == cp_model.INFEASIBLE:
        return SolveResult([], True, None, "cpsat", stats={"solve_s": time.perf_counter() - t0})
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return SolveResult([], False, None, "cpsat", stats={"status": solver.status_name(status)})
    proven = status == cp_model.OPTIMAL
    bound = int(solver.best_objective_bound)
    threshold = int(solver.objective_value)
    complete = True
    if not cpsat_enumeration:
        from solver.exhaustive import fitting_candidates

        a, sh = fitting_candidates(tables, pins)
        assert len(a) and int(tables.lb_us[a[0]]) == threshold, "CP-SAT optimum bound disagrees with the tables"
        ranker.evaluate_in_bound_order(a, sh, tables.lb_us[a], k)
    while cpsat_enumeration:
        found, complete_i = _enumerate(tables, pins, threshold, max_time_s)
        complete = complete and complete_i
        for _, a, s in found:
            ranker.evaluate(a, s)
        kth = ranker.kth_time(k)
        if kth is not None and kth <= threshold:
            break
        if kth is not None:
            threshold = kth
            continue
        if threshold >= int(tables.lb_us.max()):
            break  # every fitting candidate was enumerated: fewer than K exist
        # fewer than K legal answers so far: widen the threshold (10 %, at least 1 µs)
        threshold = max(threshold + 1, threshold * 11 // 10)
    best = ranker.best(k)
    return SolveResult(best, proven and complete, best[0].time_us if (best and proven) else bound, "cpsat",
                       evaluated=len(ranker.done), rejected=ranker.rejected,
                       stats={"solve_s": time.perf_counter() - t0, "threshold_us": threshold})


def pinned(pins: Optional[dict], extra: dict) -> dict:
    out = dict(pins or {})
    out.update(extra)
    return out


def iter_values(values: Iterable) -> list:
    return list(values)
