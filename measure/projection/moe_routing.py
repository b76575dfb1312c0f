"""The busiest expert's load when a MoE run routes naturally instead of force-balancing its router.

Why an input: the shipped constants were fitted on benchmark runs that force-balance routing (Megatron-LM
`--moe-router-force-load-balancing`, megatron/core/transformer/moe/router.py: every token goes to a uniformly drawn set
of experts; NVIDIA's performance tables "force-balance the token distribution among experts", bench/data/COLUMNS.md
"MoE rows"), so each expert gets the mean load and `Calibration.moe_load_imbalance` (max / mean expert load, 1.0 as
shipped) prices what is left. A run on real data routes by the learned router and each step waits for its busiest
expert. How busy, under the two balancing methods Megatron-LM offers:
- an auxiliary balancing loss (`--moe-router-load-balancing-type aux_loss` / `seq_aux_loss` / `global_aux_loss`):
  Wang et al. 2024, "Auxiliary-Loss-Free Load Balancing Strategy for Mixture-of-Experts" (arXiv 2408.15664), Table 1,
  measure MaxVio_global = max_i load_i / mean load - 1 = 0.52 on their 3B MoE (0.72 on the 1B) trained with the
  auxiliary loss: the busiest expert takes 1.52x the mean;
- the auxiliary-loss-free expert bias (`--moe-router-enable-expert-bias`, DeepSeek-V3's `noaux_tc`, ModelSpec
  `moe_router_score_bias`): the same table reads MaxVio_global 0.04 at both sizes: 1.04x.
The factor multiplies `moe_load_imbalance` wherever the projection uses it (expert GEMMs and EP traffic of the busiest
rank, measure/projection/layer_cost.py), so the number is the per-expert max over mean; with several experts per rank
the busiest rank's excess is smaller, so this is an upper bound on that rank's (a stated simplification, not fitted: no
row of bench/data/runs.csv set it). Engineer-owned constants of the MoE step cost stay in hardware/software_constants.yaml.
"""
from __future__ import annotations

from constraints.spec import ModelSpec
from hardware.profile import HardwareProfile

AUX_LOSS_MAX_OVER_MEAN = 1.52  # arXiv 2408.15664 Table 1, 3B, loss-controlled: MaxVio_global 0.52
EXPERT_BIAS_MAX_OVER_MEAN = 1.04  # arXiv 2408.15664 Table 1, loss-free balancing: MaxVio_global 0.04


def natural_routing_imbalance(model: ModelSpec) -> float:
    """Max / mean expert load of a naturally routed run of `model` (module docstring): by its balancing method."""
    return EXPERT_BIAS_MAX_OVER_MEAN if model.moe_router_score_bias else AUX_LOSS_MAX_OVER_MEAN


def routed_profile(profile: HardwareProfile, model: ModelSpec, natural_routing: bool) -> HardwareProfile:
    """`profile` with its expert load imbalance multiplied by the natural-routing factor when the run routes naturally;
    unchanged for a forced-balanced run or a dense model."""
    if not natural_routing or not model.is_moe:
        return profile
    cal = profile.calibration
    imbalance = cal.moe_load_imbalance * natural_routing_imbalance(model)
    return profile.model_copy(update={"calibration": cal.model_copy(update={"moe_load_imbalance": imbalance})})
