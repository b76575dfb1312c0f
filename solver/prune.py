"""Branch and bound over structural rows: expand only the rows that can hold one of the K fastest fitting candidates.

Why: a structural row (TP, PP, VPP, CP, EP, ETP, schedule, split) fans out into hundreds of candidates (MBS, SP,
recompute, TP overlap, sharding, MoE variant), each needing rule calls, exact bytes and a price; on Mixtral-8x22B /
64 GPUs only 6 of 5,958 rows hold a top-10 candidate. Each row gets a lower bound on the ranking time of every
candidate under it, whatever its legality or memory:
- the closed form (measure/vectorized.py) of the row with recompute off, under every MBS, SP / TP-overlap pair,
  MoE variant and DP sharding of the space, minimised. Recompute only adds the re-run forward to the backward pass
  (`rec` >= 0 in `_step_terms`), and the staged closed form, p2p, DP and optimizer terms are non-decreasing in it,
  so a recomputing candidate is never faster than the same candidate without recompute (tests hold the bound
  below every exact price on several spaces);
- minus 1 µs against float reassociation.
Then rows are expanded in bound order until K fitting candidates are known, T = the K-th best time, and every row
with bound <= T is expanded exactly (solver/tables.py). A row left out has bound > T, so each of its candidates
ranks after the K-th: the top-K of the pruned tables is the top-K of the space, and solver/cpsat_solve.py proves
optimality only for answers below `Tables.pruned_lb_us`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from solver.table_time import UNPRICEABLE_US, ranking_time_us
from solver.variants import DEFAULT as DEFAULT_VARIANT, space_variants

FIRST_ROWS = 16  # rows expanded in the first round (x4 per round while fewer than K candidates fit)


def struct_lower_bounds_us(space, profile, struct: list, shardings: list, rcs_all: list, split_keys: list,
                           evaluator=None) -> np.ndarray:
    """Per structural row, a lower bound (µs) on the ranking time of every candidate under it (see the module
    docstring); 0 where the closed form cannot price the row (it is then always expanded), int64 max where the
    space's SP / TP-overlap domains leave the row no candidate."""
    from solver.tables import _columns

    d = space.domains
    rc_none = 0  # solver.space.recompute_choices puts "none" first
    rows = [(i, mbs, int(sp), rc_none, int(tpo)) for i, r in enumerate(struct) for mbs in d["mbs"] for sp in d["sp"]
            for tpo in d["tp_comm_overlap"] if not (sp and r[0] == 1) and not (tpo and not (sp and r[0] > 1))]
    lb = np.full(len(struct), np.iinfo(np.int64).max, dtype=np.int64)
    if not rows:
        return lb
    act = np.array(rows, dtype=np.int64)
    cols = _columns(space, struct, act, _SplitKeys(split_keys))
    variants = space_variants(space, profile) or [DEFAULT_VARIANT]
    n_v, n_s = len(variants), len(shardings)
    a = np.repeat(np.arange(len(act), dtype=np.int64), n_v * n_s)
    v = np.tile(np.repeat(np.arange(n_v, dtype=np.int64), n_s), len(act))
    s = np.tile(np.arange(n_s, dtype=np.int64), len(act) * n_v)
    t = ranking_time_us(space, profile, cols, rcs_all, shardings, a, s, variants, v, evaluator)
    t = np.where(t >= UNPRICEABLE_US, 0, t - 1)
    np.minimum.at(lb, act[a, 0], t)
    return np.maximum(lb, 0)


class _SplitKeys:
    """The one attribute solver.tables._columns reads from MemoryTables."""

    def __init__(self, split_keys: list) -> None:
        self.split_keys = split_keys


def kth_fitting_time_us(tables, k: int):
    """The K-th smallest ranking time among fitting candidates, None when fewer than K fit."""
    t = tables.cand_time_us[tables.cand_peak <= tables.usable_bytes]
    return int(np.partition(t, k - 1)[k - 1]) if len(t) >= k else None


def explore(space, profile, struct: list, ok_rows: list, shardings: list, rcs_all: list, split_keys: list, k: int,
            build: Callable, evaluator=None):
    """Tables over the structural rows that can hold a top-K candidate (module docstring); `build(indices)` makes
    exact tables over a subset of `struct` (indices ascending, so table order and its tie-break are the full
    tables')."""
    n = len(struct)
    lb = struct_lower_bounds_us(space, profile, struct, shardings, rcs_all, split_keys, evaluator)
    order = np.argsort(lb, kind="stable")
    take = min(n, FIRST_ROWS)
    chosen = np.sort(order[:take])
    while True:
        tables = build(chosen)
        tau = kth_fitting_time_us(tables, k)
        if tau is not None or take >= n:
            break
        take = min(n, take * 4)
        chosen = np.sort(order[:take])
    if tau is not None:
        need = np.union1d(chosen, np.flatnonzero(lb <= tau))
        if len(need) > len(chosen):
            chosen = need
            tables = build(chosen)
    left = np.ones(n, dtype=bool)
    left[chosen] = False
    left &= lb < np.iinfo(np.int64).max
    if left.any():
        tables.pruned_lb_us = int(lb[left].min())
    tables.counts.update({"structural_rows_total": n, "structural_rows_expanded": int(len(chosen))})
    return tables
