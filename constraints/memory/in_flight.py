"""Micro-batches (or virtual chunks) in flight per pipeline rank, per schedule.

Why here and not in the simulator: memory legality must not depend on running a simulation, and the
projection's simulator (measure/pipeline/simulator.py) is tested to report the same counts, so memory and
time agree on the schedule.
"""
from __future__ import annotations

from constraints.spec import PipelineSchedule, Recipe


def num_microbatches(global_batch_size: int, mbs: int, dp: int) -> int:
    """GBS / (MBS*DP) (Megatron num_microbatches_calculator); callers check divisibility first."""
    return global_batch_size // (mbs * dp)


def inflight_chunks(recipe: Recipe, rank: int, num_microbatches: int) -> int:
    """Peak forward passes whose activations rank `rank` (0-based) holds, counted in chunks of
    1/VPP of its layers (VPP=1: whole-stage micro-batches).

    - 1F1B (PipeDream-flush; Narayanan et al. 2021): warm-up PP-rank-1 forwards + 1 -> min(PP - rank, M).
    - Interleaved 1F1B (Megatron schedules.py): warm-up (PP-rank-1)*2 + (VPP-1)*N chunks, N = micro-batch
      group size (default PP), + 1 -> capped at M*VPP. Rank 0 with N=PP gives PP*VPP + PP - 1 chunks,
      i.e. Korthikanti et al. 2022's factor (1 + (PP-1)/(PP*VPP)) of PP stages' worth.
    - ZB-H1 (Qi et al. 2023, zero-bubble): same activation peak as 1F1B by construction.
    - ZB-V (Qi et al. 2024): two chunks per rank in a V; the peak equals 1F1B's PP micro-batches of a
      whole stage, i.e. 2*PP chunks on every rank, capped at 2*M.
    """
    pp, vpp, m = recipe.pp, recipe.vpp, num_microbatches
    if recipe.schedule == PipelineSchedule.interleaved and vpp > 1:
        group = recipe.microbatch_group_size or pp
        warmup = (pp - rank - 1) * 2 + (vpp - 1) * group
        return min(warmup + 1, m * vpp)
    if recipe.schedule == PipelineSchedule.zbv:
        return min(2 * pp, 2 * m)
    return min(pp - rank, m)
