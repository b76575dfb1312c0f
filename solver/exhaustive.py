"""`--method exhaustive`: the same top-K as CP-SAT by numpy alone over the same tables.

Why it exists: a cross-check that shares nothing with CP-SAT but the tables. Every legal (activation row,
sharding) candidate already carries its exact peak bytes and ranking time (solver/tables.py); this keeps
those that fit and satisfy the pins, sorts them, and verifies the head exactly as solver/cpsat_solve.py does.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np

from solver.cpsat_solve import SolveResult, fitting_index, primary_key, top_verified
from solver.tables import Tables


def fitting_candidates(tables: Tables, pins: Optional[dict] = None) -> tuple[np.ndarray, np.ndarray]:
    """(act, shard) arrays of every legal, fitting candidate that satisfies the pins, in (time, act, shard) order."""
    idx = fitting_index(tables, pins)
    return tables.cand_act[idx], tables.cand_shard[idx]


def solve_exhaustive(tables: Tables, k: int = 10, pins=None, margin_fraction: float = 0.0,
                     objective: str = "throughput") -> SolveResult:
    t0 = time.perf_counter()
    if tables.pruned_lb_us is not None and objective != "throughput":
        raise ValueError(f"objective {objective!r}: the tables were pruned by ranking time; build them without prune_k")
    idx = fitting_index(tables, pins, objective)
    best, ranker, pool = top_verified(tables, idx, k, margin_fraction)
    bound = int(primary_key(tables, objective)[idx[0]]) if len(idx) else None
    proven, lb = True, tables.pruned_lb_us
    if lb is not None and (not len(idx) or len(best) < k or int(tables.cand_time_us[pool[-1]]) >= lb):
        # pruned tables (solver/prune.py): candidates left out may belong in this list; lb bounds them
        proven, bound = False, min(bound, lb) if bound is not None else lb
    return SolveResult(best, proven, bound, "exhaustive",
                       evaluated=len(ranker.done), rejected=ranker.rejected,
                       stats={"solve_s": time.perf_counter() - t0, "fitting": int(len(idx))})
