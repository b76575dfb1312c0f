"""Branch and bound over structural rows: expand only the rows that can hold one of the K fastest fitting candidates.

Why: a structural row (TP, PP, VPP, CP, EP, ETP, schedule, split) fans out into hundreds of candidates (MBS, SP,
recompute, TP overlap, sharding, MoE variant), each needing rule calls, exact bytes and a price; on Mixtral-8x22B /
64 GPUs only 6 of 5,958 rows hold a top-10 candidate. Each row gets a lower bound on the ranking time of every
candidate under it, whatever its legality or memory:
- the closed form (measure/projection/vectorized.py) of the row with recompute off, under every MBS, SP / TP-overlap pair,
  MoE variant and DP sharding of the space, minimised. Recompute only adds the re-run forward to the backward pass
  (`rec` >= 0 in `_step_terms`), and the staged closed form, p2p, DP and optimizer terms are non-decreasing in it,
  so a recomputing candidate is never faster than the same candidate without recompute (tests hold the bound
  below every exact price on several spaces);
- TP and EP communication overlap only scale exposed traffic down (the exposed fraction is <= 1), so the bound
  prices overlap on where the space allows it and skips the same row with it off;
- minus 1 µs against float reassociation.
Then rows are expanded best first (in bound order, batches doubling) until the next row's bound exceeds T, the K-th
best fitting time found, and the rows with bound <= T are built together (solver/tables/build.py). A row left out has
bound > T, so each of its candidates ranks after the K-th: the top-K of the pruned tables is the top-K of the space,
and solver/cpsat/solve.py proves optimality only for answers below `Tables.pruned_lb_us`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from solver.tables.time import UNPRICEABLE_US, ranking_time_us, row_columns
from solver.variants import DEFAULT as DEFAULT_VARIANT
from solver.variants import space_variants

FIRST_ROWS = 16  # rows expanded in the first batch (each next batch doubles)
FULL_BUILD_FRACTION = 0.35  # past this share of the rows, build them all at once (measured: memory-bound MoE spaces
# where the bound, which ignores memory, let batches reach every row and then a second build of most of them)


def struct_lower_bounds_us(space, profile, struct: list, shardings: list, rcs_all: list, split_keys: list,
                           evaluator=None, ok_rows: list = None) -> np.ndarray:
    """Per structural row, a lower bound (µs) on the ranking time of every candidate under it (see the module
    docstring), over the DP shardings the row accepts (`ok_rows`, per row a verdict per sharding; all when None);
    0 where the closed form cannot price the row (it is then always expanded), int64 max where the space's SP /
    TP-overlap domains or its shardings leave the row no candidate."""
    d = space.domains
    rc_none = 0  # solver.space.recompute_choices puts "none" first
    lb = np.full(len(struct), np.iinfo(np.int64).max, dtype=np.int64)
    # (mbs, sp, tp overlap) rows per structural row, for TP = 1 and for TP > 1 (SP needs TP > 1)
    combos = [np.array([(mbs, int(sp), int(tpo)) for mbs in d["mbs"] for sp in d["sp"]
                        for tpo in _fastest(d["tp_comm_overlap"], sp and multi) if not (sp and not multi)],
                       dtype=np.int64).reshape(-1, 3) for multi in (False, True)]
    multi_tp = np.array([r[0] > 1 for r in struct], dtype=bool)
    blocks = []
    for multi in (False, True):
        idx, c = np.flatnonzero(multi_tp == multi), combos[multi]
        blk = np.zeros((len(idx) * len(c), 5), dtype=np.int64)
        blk[:, 0] = np.repeat(idx, len(c))
        blk[:, [1, 2, 4]] = np.tile(c, (len(idx), 1))
        blk[:, 3] = rc_none
        blocks.append(blk)
    act = np.concatenate(blocks)
    if not len(act):
        return lb
    act = act[np.argsort(act[:, 0], kind="stable")]
    cols = row_columns(space, struct, act, split_keys)
    every = space_variants(space, profile) or [DEFAULT_VARIANT]
    variants = [v for v in every if v[1] or (v[0], True) not in every]  # EP overlap on is never slower
    n_v, n_s = len(variants), len(shardings)
    a = np.repeat(np.arange(len(act), dtype=np.int64), n_v * n_s)
    v = np.tile(np.repeat(np.arange(n_v, dtype=np.int64), n_s), len(act))
    s = np.tile(np.arange(n_s, dtype=np.int64), len(act) * n_v)
    t = ranking_time_us(space, profile, cols, rcs_all, shardings, a, s, variants, v, evaluator)
    t = np.where(t >= UNPRICEABLE_US, 0, t - 1)
    if ok_rows is not None:  # a sharding the row's structural rules refuse holds no candidate of it
        accepted = np.asarray(ok_rows, dtype=bool).reshape(len(struct), n_s)
        t = np.where(accepted[act[a, 0], s], t, np.iinfo(np.int64).max)
    np.minimum.at(lb, act[a, 0], t)
    return np.maximum(lb, 0)


def _fastest(tpo_domain: list, can_overlap: bool) -> list:
    """The TP-overlap values to price for a bound: overlap on where the row may take it (the exposed fraction <= 1
    scales TP traffic down, measure/layer_columns.finish_columns), else off; none if the domain allows neither."""
    allowed = [t for t in tpo_domain if can_overlap or not t]
    return [max(allowed)] if allowed else []


def explore(space, profile, struct: list, ok_rows: list, shardings: list, rcs_all: list, split_keys: list, k: int,
            build: Callable, evaluator=None):
    """Tables over the structural rows that can hold a top-K candidate (module docstring); `build(indices)` makes
    exact tables over a subset of `struct` (indices ascending, so table order and its tie-break are the full
    tables'). Best first: rows are built in bound order, in batches doubling from FIRST_ROWS, keeping the K best
    fitting times seen; it stops once the next row's bound exceeds the K-th (T), then builds the rows with bound <= T
    together (one build when the first batch suffices). Once a batch would pass FULL_BUILD_FRACTION of the rows, every
    row is built instead (complete tables, nothing pruned)."""
    n = len(struct)
    lb = struct_lower_bounds_us(space, profile, struct, shardings, rcs_all, split_keys, evaluator, ok_rows)
    order = np.argsort(lb, kind="stable")
    best = np.zeros(0, dtype=np.int64)  # the K smallest fitting ranking times so far
    pos, batch, built, tables, tau = 0, FIRST_ROWS, 0, None, None
    sorted_lb = lb[order]
    while pos < n or tables is None:
        # past the first K fitting times, only rows whose bound is <= the K-th can matter (and it only falls)
        end = pos + batch if tau is None else min(pos + batch, int(np.searchsorted(sorted_lb, tau, side="right")))
        if pos and end > n * FULL_BUILD_FRACTION:
            # most rows will be needed (few candidates fit, or many tie near the K-th): one build of every row costs
            # less than more batches plus the final build of the rows that can reach the top K
            pos, built, tables = n, 1, build(np.arange(n))
            break
        chunk = np.sort(order[pos:end])
        tables, built = build(chunk), built + 1
        priced_fit = (tables.cand_peak <= tables.usable_bytes) & ~tables.cand_unpriced
        best = np.sort(np.concatenate([best, tables.cand_time_us[priced_fit]]))[:k]
        pos += len(chunk)
        tau = int(best[k - 1]) if len(best) >= k else None
        if tau is not None and (pos >= n or lb[order[pos]] > tau):
            break
        batch *= 2
    chosen = np.sort(order[:pos])
    if built > 1:  # the last batch holds only its own rows: build the ones that can reach the top K together
        chosen = np.sort(order[:pos][lb[order[:pos]] <= tau]) if tau is not None else np.arange(n)
        tables = build(chosen)
    left = np.ones(n, dtype=bool)
    left[chosen] = False
    left &= lb < np.iinfo(np.int64).max
    if left.any():
        tables.pruned_lb_us = int(lb[left].min())
        # a fitting candidate the projection cannot price ranks after every priced one in the full tables, so here
        # after every candidate left out too (an answer list reaching it is then unproven)
        t = tables.cand_time_us
        t[tables.cand_unpriced] = np.maximum(t[tables.cand_unpriced], tables.pruned_lb_us + 1)
        c = tables.counts
        # the counts of the expanded rows, named so; the whole space's legal and fitting counts are not enumerated
        tables.counts = {"declared": c["declared"], "structural_rows": n, "structural_rows_expanded": int(len(chosen)),
                         **{f"{key}_expanded": c[key] for key in ("activation_rows", "candidates", "fitting")},
                         "pruned_lower_bound_s": tables.pruned_lb_us / 1e6}
    else:
        tables.counts.update({"structural_rows_expanded": n, "pruned_lower_bound_s": None})
    return tables
