"""World / data-parallel and batch legality rules (Megatron-LM's process-group and micro-batch checks).

Same contract as every rule module (constraints/rules/base.py): pure functions marked with @rule, each naming
the Megatron-LM check it mirrors; constraints/rules/registry.py lists them first. Sources: docs/facts/megatron-rules.md
(numbers in brackets).
"""
from __future__ import annotations

import math
from typing import Optional

from constraints.rules.base import RuleInput, Violation, divisors, nearest, rule, violation


# ---------------------------------------------------------------- world / data parallel
@rule(reads="tp pp cp")
def world_divisible(x: RuleInput) -> Optional[Violation]:
    """[1] world_size % (TP*PP*CP) == 0 (arguments.py validate_args; parallel_state.initialize_model_parallel)."""
    r = x.recipe
    mp = r.tp * r.pp * r.cp
    if x.world_size % mp == 0:
        return None
    ok = [d for d in divisors(x.world_size) if d % (r.tp * r.cp) == 0]
    pp = nearest([d // (r.tp * r.cp) for d in ok], r.pp)
    return violation("world_divisible", f"world size {x.world_size} is not divisible by TP*PP*CP = {r.tp}*{r.pp}*{r.cp} = {mp}",
              f"use --pipeline-model-parallel-size {pp}" if pp else "choose TP*CP dividing the world size")


@rule(reads="tp etp ep pp")
def expert_grid(x: RuleInput) -> Optional[Violation]:
    """[2] world_size % (ETP*EP*PP) == 0; expert-DP = world/(ETP*EP*PP) (parallel_state expert grid,
    --expert-tensor-parallel-size, --expert-model-parallel-size)."""
    r = x.recipe
    grid = r.etp_effective * r.ep * r.pp
    if x.world_size % grid == 0 or (r.ep == 1 and r.etp_effective == r.tp):
        return None  # without EP or a separate expert TP the grid is TP*PP, which world_divisible already judges
    per_pp = x.world_size // r.pp if x.world_size % r.pp == 0 else x.world_size
    ep = nearest([d for d in divisors(per_pp // r.etp_effective if per_pp % r.etp_effective == 0 else 1)], r.ep)
    if r.ep == 1 or x.world_size % r.pp:  # EP cannot fix it: PP (or ETP) does not divide the world
        per_etp = x.world_size // r.etp_effective if x.world_size % r.etp_effective == 0 else 1
        fix = f"use --pipeline-model-parallel-size {nearest(divisors(per_etp), r.pp)}"
    else:
        fix = f"use --expert-model-parallel-size {ep}"
    return violation("expert_grid", f"world size {x.world_size} is not divisible by ETP*EP*PP = {r.etp_effective}*{r.ep}*{r.pp} = {grid}", fix)


@rule(reads="tp pp cp ep etp")
def expert_dp_matches_dp(x: RuleInput) -> Optional[Violation]:
    """[2] With a rank order whose PP is not outermost (--use-tp-pp-dp-mapping) and PP>1, the dense and
    expert grids only share PP groups if expert-DP*EP*ETP lines up with DP*CP*TP, i.e. expert-DP == DP."""
    r = x.recipe
    mapped = x.flags.get("--use-tp-pp-dp-mapping") or x.flags.get("use_tp_pp_dp_mapping")  # a script's flag, or a YAML key
    if not mapped or r.pp == 1 or r.ep * r.etp_effective == 1:
        return None
    if r.expert_dp(x.world_size) == r.dp(x.world_size):
        return None
    return violation("expert_dp_matches_dp", f"expert-DP {r.expert_dp(x.world_size)} != DP {r.dp(x.world_size)} under --use-tp-pp-dp-mapping with PP>1",
              "drop --use-tp-pp-dp-mapping (default order tp-cp-ep-dp-pp) or make EP*ETP equal TP*CP")


@rule(reads="num_distributed_optimizer_instances tp pp cp etp ep")
def distributed_optimizer_instances(x: RuleInput) -> Optional[Violation]:
    """[3] (DP*CP) and expert-DP % --num-distributed-optimizer-instances == 0 (Megatron-LM
    megatron/core/parallel_state.py:initialize_model_parallel asserts both, when the groups are built)."""
    r = x.recipe
    n = r.num_distributed_optimizer_instances
    grid = r.etp_effective * r.ep * r.pp
    dpcp, edp = r.dp(x.world_size) * r.cp, (r.expert_dp(x.world_size) if x.world_size % grid == 0 else 0)  # 0: expert_grid reports
    if n == 1 or (dpcp and dpcp % n == 0 and (not edp or edp % n == 0)):
        return None
    both = math.gcd(dpcp, edp) if edp else dpcp
    return violation("distributed_optimizer_instances", f"DP*CP = {dpcp} or expert-DP = {edp} is not divisible by --num-distributed-optimizer-instances {n}",
              f"use --num-distributed-optimizer-instances {nearest(divisors(max(both, 1)), n)}")


# ---------------------------------------------------------------- batch
@rule(reads="tp pp cp mbs")
def global_batch_divisible(x: RuleInput) -> Optional[Violation]:
    """[5] --global-batch-size % (--micro-batch-size * DP) == 0 (num_microbatches_calculator)."""
    r = x.recipe
    if x.world_size % (r.tp * r.pp * r.cp):
        return None  # world_divisible reports it
    dp = r.dp(x.world_size)
    gbs = x.job.global_batch_size
    if gbs % (r.mbs * dp) == 0:
        return None
    mbs = nearest([d for d in divisors(gbs // dp)] if gbs % dp == 0 else [], r.mbs)
    fix = (f"use --micro-batch-size {mbs}" if mbs else
           f"use --global-batch-size {max(r.mbs * dp, gbs // (r.mbs * dp) * r.mbs * dp)}")
    return violation("global_batch_divisible", f"global batch {gbs} is not divisible by MBS*DP = {r.mbs}*{dp} = {r.mbs * dp}", fix)
