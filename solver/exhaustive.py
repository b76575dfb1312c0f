"""`--method exhaustive`: the same top-K as CP-SAT by numpy alone over the same tables.

Why it exists: a cross-check that shares nothing with CP-SAT but the tables. Every legal (activation row,
sharding) candidate already carries its exact peak bytes and ranking time (solver/tables/build.py); this keeps
those that fit and satisfy the pins, sorts them, and verifies the head exactly as solver/cpsat/solve.py does.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np

from solver.cpsat.solve import SolveResult, fitting_index, primary_key, reaches_pruned, refuse_pruned, top_verified
from solver.objective import Objective
from solver.tables.build import Tables


def fitting_candidates(tables: Tables, pins: Optional[dict] = None) -> tuple[np.ndarray, np.ndarray]:
    """(act, shard) arrays of every legal, fitting candidate that satisfies the pins, in (time, act, shard) order."""
    idx = fitting_index(tables, pins)
    return tables.cand_act[idx], tables.cand_shard[idx]


def solve_exhaustive(tables: Tables, k: int = 10, pins=None, margin_fraction: float = 0.0,
                     objective: Objective = Objective.throughput) -> SolveResult:
    t0 = time.perf_counter()
    refuse_pruned(tables, objective)
    idx = fitting_index(tables, pins, objective)
    best, ranker, pool = top_verified(tables, idx, k, margin_fraction)
    bound = int(primary_key(tables, objective)[idx[0]]) if len(idx) else None
    proven, lb = True, tables.pruned_lb_us
    if reaches_pruned(tables, k, len(best), int(tables.cand_time_us[pool[-1]]) if len(pool) else None):
        proven, bound = False, lb if bound is None else min(bound, lb)
    return SolveResult(best, proven, bound, "exhaustive",
                       evaluated=len(ranker.done), rejected=ranker.rejected,
                       stats={"solve_s": time.perf_counter() - t0, "fitting": int(len(idx))})
