"""The ranking projection of every candidate: measure.projection.vectorized's closed-form iteration time in whole µs.

Why closed form for ranking: it equals measure.projection.project.project(..., simulate_pipeline=False) (tests hold
1e-9) and prices a million candidates per second; the event simulator then reports the projection of the top
of the list (solver/cpsat/solve.py), as issue #4 prescribes. Rounded *up* so equal times tie exactly and
the integer objective CP-SAT minimises is the same number numpy sorts.
"""
from __future__ import annotations

import numpy as np

from constraints.spec import DataParallelSharding, MoeDispatcher, PipelineSchedule, Recipe
from measure.projection.recipe_batch import DISPATCHERS
from measure.projection.vectorized import SCHEDULES, SHARDINGS, Evaluator, RecipeBatch
from solver.splits import split_code
from solver.tables.codes import unique_ints

US = 1_000_000
UNPRICEABLE_US = np.int64(1) << 50  # a candidate the projection cannot price (NaN) ranks last, never first


def ranking_time_us(space, profile, cols: dict, rcs_all, shardings, cand_act: np.ndarray, cand_shard: np.ndarray,
                    variants: list, cand_variant: np.ndarray, evaluator: Evaluator = None) -> np.ndarray:
    """Closed-form iteration time (µs, ceil) of candidates (activation row, sharding, index into `variants`:
    (MoE dispatcher, EP overlap), solver/variants.py) from the row columns solver/tables/build.py builds; the
    sentinel where the projection cannot price one. One Evaluator prices each distinct (row, variant) once under
    every sharding of the space (a sharding changes only the data-parallel terms); pass one `evaluator` to every
    call over the same space so its factor tables (layer costs, stage rows, spans) are filled once."""
    if not len(cand_act):
        return np.zeros(0, dtype=np.int64)
    v, n_var = np.asarray(cand_variant, dtype=np.int64), len(variants)
    uniq, inv = unique_ints(np.asarray(cand_act, dtype=np.int64) * n_var + v)
    a, uv = uniq // n_var, uniq % n_var
    sched_codes = np.array([SCHEDULES.index(PipelineSchedule(s)) for s in space.domains["schedule"]], dtype=np.int64)
    shard_codes = [SHARDINGS.index(DataParallelSharding(s)) for s in shardings]
    batch = RecipeBatch(tp=cols["tp"][a], pp=cols["pp"][a], vpp=cols["vpp"][a], cp=cols["cp"][a], ep=cols["ep"][a],
                        etp=cols["etp"][a], mbs=cols["mbs"][a], sp=cols["sp"][a].astype(bool), recompute=cols["rc"][a],
                        schedule=sched_codes[cols["sched"][a]], dp_sharding=np.zeros(len(a), dtype=np.int64),
                        acc_split=cols["acc"][a].astype(bool), tp_comm_overlap=cols["tpo"][a].astype(bool),
                        first_stage_layers=cols["first"][a], last_stage_layers=cols["last"][a],
                        moe_dispatcher=np.array([DISPATCHERS.index(MoeDispatcher(d)) for d, _ in variants], dtype=np.int64)[uv],
                        ep_overlap=np.array([bool(o) for _, o in variants], dtype=bool)[uv],
                        recompute_choices=tuple(rcs_all), base=Recipe())
    ev = evaluator if evaluator is not None else Evaluator(space.model, space.job, space.placement, profile)
    per_shard = ev.evaluate_shardings(batch, shard_codes)
    t_s = per_shard[inv.reshape(-1), np.asarray(cand_shard, dtype=np.int64)]
    t_us = np.ceil(np.nan_to_num(t_s, nan=np.inf, posinf=np.inf) * US)
    return np.where(np.isfinite(t_us), t_us, UNPRICEABLE_US).astype(np.int64)


def row_columns(space, struct, act_rows, split_keys: list) -> dict[str, np.ndarray]:
    """Per activation row, the integer columns the memory and time tables read (kept here, beside
    the time table that reads most of them, so solver/prune.py and solver/tables/build.py share it without importing each
    other); the `split` column indexes
    `split_keys` ((PP, VPP, split value) keys, MemoryTables.split_keys)."""
    ar = np.asarray(act_rows, dtype=np.int64).reshape(len(act_rows), 5)
    sched_names = space.domains["schedule"]
    split_id = {k: j for j, k in enumerate(split_keys)}
    s_cols = np.array([(tp, pp, vpp, cp, ep, etp or 0, sched_names.index(sch), *split_code(acc), split_id[(pp, vpp, acc)])
                       for tp, pp, vpp, cp, ep, etp, sch, acc in struct], dtype=np.int64).reshape(len(struct), 11)
    g = s_cols[ar[:, 0]]
    cols = {"struct": ar[:, 0], "mbs": ar[:, 1], "sp": (ar[:, 2] & (g[:, 0] > 1)).astype(np.int64), "rc": ar[:, 3],
            "tpo": ar[:, 4]}
    for j, name in enumerate(("tp", "pp", "vpp", "cp", "ep", "etp", "sched", "acc", "first", "last", "split")):
        cols[name] = g[:, j]
    dp = np.maximum(space.world_size // (cols["tp"] * cols["pp"] * cols["cp"]), 1)
    cols["m"] = np.maximum(space.job.global_batch_size // (cols["mbs"] * dp), 1)
    return cols
