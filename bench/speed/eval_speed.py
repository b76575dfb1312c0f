"""Recipe evaluations per second: vectorised closed-form projection vs the scalar `project` call.

Usage: `.venv/bin/python -m bench.speed.eval_speed [--rows 1000000] [--scalar 200]`. For each model, a grid
over every batch axis (TP, PP, VPP, CP, EP, ETP, MBS, SP, recompute, schedule, DP sharding, split) is
priced once to fill the factor tables (timed apart: "first call", which also prices the grid), rows with an impossible pipeline
split are dropped, the rest is tiled to --rows, and the timed runs are pure numpy. The scalar path is
`project(..., simulate_pipeline=False)` on a sample of the same recipes. Prints a markdown table.
"""
from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Recompute, RecomputeMethod, RecomputeModule
from hardware.profile import load_profile
from measure.projection.project import project
from measure.projection.vectorized import SCHEDULES, Evaluator, RecipeBatch

RECOMPUTES = (Recompute.none(), Recompute.selective(RecomputeModule.core_attn),
              Recompute.selective(RecomputeModule.core_attn, RecomputeModule.mlp), Recompute.full(RecomputeMethod.uniform, 1),
              Recompute.full(RecomputeMethod.block, 2))
CASES = (("Llama-3.1-70B", "h100-sxm-80gb", 32, 8), ("Mixtral-8x7B-v0.1", "h100-sxm-80gb", 16, 8),
         ("DeepSeek-V3", "h100-sxm-80gb", 128, 8))


def grid_batch(model, world: int) -> RecipeBatch:
    """Every combination of the axis values below whose TP*PP*CP and ETP*EP*PP divide the world."""
    ep_vals = [1, 2, 4, 8, 16, 32, 64] if model.is_moe else [1]
    etp_vals = [0, 1, 2] if model.is_moe else [0]
    axes = [[1, 2, 4, 8], [1, 2, 4, 8, 16], [1, 2, 4], [1, 2, 4], ep_vals, etp_vals, [1, 2, 4], [False, True],
            range(len(RECOMPUTES)), range(len(SCHEDULES)), [0, 1, 2], [False, True]]
    g = np.array(list(itertools.product(*axes)), dtype=np.int64).T
    tp, pp, vpp, cp, ep, etp, mbs, sp, rc, sched, shard, acc = g
    eff_etp = np.where(etp == 0, tp, etp)
    keep = (world % (tp * pp * cp) == 0) & (world % (eff_etp * ep * pp) == 0)
    g = g[:, keep]
    tp, pp, vpp, cp, ep, etp, mbs, sp, rc, sched, shard, acc = g
    return RecipeBatch(tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, etp=etp, mbs=mbs, sp=sp.astype(bool), recompute=rc, schedule=sched,
                       dp_sharding=shard, acc_split=acc.astype(bool), recompute_choices=RECOMPUTES)


def take(batch: RecipeBatch, idx: np.ndarray) -> RecipeBatch:
    arrays = {k: getattr(batch, k)[idx] for k in ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sp", "recompute", "schedule",
                                                  "dp_sharding", "acc_split")}
    return RecipeBatch(**arrays, recompute_choices=batch.recompute_choices, base=batch.base)


def bench_case(name: str, hw: str, nodes: int, gpn: int, rows: int, scalar_n: int) -> dict:
    model, profile = load_model(name), load_profile(hw)
    job = JobSpec(seq_length=4096, global_batch_size=1024)
    place = Placement(hardware=hw, num_nodes=nodes, gpus_per_node=gpn)
    grid = grid_batch(model, place.world_size)
    ev = Evaluator(model, job, place, profile)
    t0 = time.perf_counter()
    first = ev.evaluate(grid)["iteration_time_s"]
    fill_s = time.perf_counter() - t0
    ok = np.flatnonzero(np.isfinite(first))
    big = take(grid, np.resize(ok, rows))
    ev.evaluate(big)  # warm caches and allocator
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        ev.evaluate(big)
        times.append(time.perf_counter() - t0)
    vec_per_s = rows / min(times)
    sample = np.random.default_rng(0).choice(ok, size=min(scalar_n, len(ok)), replace=False)
    recipes = [grid.recipe(int(i)) for i in sample]
    t0 = time.perf_counter()
    for r in recipes:
        project(model, job, r, place, profile, simulate_pipeline=False)
    scalar_per_s = len(recipes) / (time.perf_counter() - t0)
    return {"model": name, "gpus": place.world_size, "grid": len(grid.tp), "valid": len(ok), "fill_s": fill_s,
            "layer_rows": len(ev.layers.rows), "stage_rows": len(ev.stages.rows), "vec_per_s": vec_per_s,
            "scalar_per_s": scalar_per_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="recipes per timed vectorised batch")
    ap.add_argument("--scalar", type=int, default=200, help="recipes timed through the scalar project()")
    args = ap.parse_args()
    print("| model | GPUs | grid recipes (valid split) | first call s, fills tables (layer/stage rows) | vectorised evals/s | scalar evals/s | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for case in CASES:
        r = bench_case(*case, args.rows, args.scalar)
        print(f"| {r['model']} | {r['gpus']} | {r['grid']:,} ({r['valid']:,}) | {r['fill_s']:.1f} ({r['layer_rows']}/{r['stage_rows']}) "
              f"| {r['vec_per_s']:,.0f} | {r['scalar_per_s']:,.0f} | {r['vec_per_s'] / r['scalar_per_s']:,.0f}x |")


if __name__ == "__main__":
    main()
