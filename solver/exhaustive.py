"""`--method exhaustive`: the same top-K as CP-SAT by exact numpy enumeration over the same tables.

Why it exists: a cross-check that shares nothing with CP-SAT but the tables. Every (activation row,
sharding) pair is scored in numpy — structural legality, exact peak bytes (max over ranks of static +
activation) and the step-time lower bound — then candidates are projected exactly in bound order
(ties by table order) until the K-th best exact time is <= the next bound.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np

from solver.cpsat_model import axis_value
from solver.cpsat_solve import ExactRanker, SolveResult
from solver.tables import Tables


def fitting_candidates(tables: Tables, pins: Optional[dict] = None) -> tuple[np.ndarray, np.ndarray]:
    """(act, shard) arrays of every legal, fitting candidate that satisfies the pins, in (lb, act, shard) order."""
    n_act, n_shard = len(tables.act_rows), len(tables.shardings)
    a = np.repeat(np.arange(n_act, dtype=np.int64), n_shard)
    s = np.tile(np.arange(n_shard, dtype=np.int64), n_act)
    keep = tables.static_ok[tables.act_struct[a], s] if n_act else np.zeros(0, dtype=bool)
    a, s = a[keep], s[keep]
    keep = tables.peak_bytes(a, s) <= tables.usable_bytes if len(a) else np.zeros(0, dtype=bool)
    a, s = a[keep], s[keep]
    for name, allowed in (pins or {}).items():
        allowed = list(allowed)
        ok_act = np.array([axis_value(tables, i, 0, name) in allowed for i in range(n_act)]) if name != "dp_sharding" else None
        if name == "dp_sharding":
            ok_shard = np.array([v in allowed for v in tables.shardings])
            keep = ok_shard[s]
        else:
            keep = ok_act[a]
        a, s = a[keep], s[keep]
    order = np.lexsort((s, a, tables.lb_us[a]))
    return a[order], s[order]


def solve_exhaustive(tables: Tables, k: int = 10, pins=None, margin_fraction: float = 0.0) -> SolveResult:
    t0 = time.perf_counter()
    a, s = fitting_candidates(tables, pins)
    ranker = ExactRanker(tables, margin_fraction)
    ranker.evaluate_in_bound_order(a, s, tables.lb_us[a], k)
    best = ranker.best(k)
    return SolveResult(best, True, best[0].time_us if best else None, "exhaustive", evaluated=len(ranker.done),
                       rejected=ranker.rejected, stats={"solve_s": time.perf_counter() - t0, "fitting": int(len(a))})
