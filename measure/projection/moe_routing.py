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

import math

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


def domain_hit_probability(model: ModelSpec, ep: int, ep_per_domain: int) -> float:
    """Chance that one token's top-k experts include one on a given scale-up domain of its EP group, under forced-balanced
    routing: what a node-aware dispatcher (flex: DeepEP / HybridEP) sends across the network once per token
    (measure/comm/collectives.py node_dedup_all_to_all_s).

    Megatron-LM @d98e8a64: `--moe-router-force-load-balancing` replaces the router's logits by random ones
    (megatron/core/transformer/moe/router.py TopKRouter.forward, `apply_random_logits`), and the routing that follows
    still limits a token to `moe_router_group_topk` of `moe_router_num_groups` contiguous expert groups, chosen by the sum
    of each group's top topk / group_topk scores (moe_utils.py `group_limited_topk`; DeepSeek-V3's node-limited routing,
    arXiv 2412.19437 sec. 2.1.2: each token to at most 4 nodes). Experts sit on EP ranks in order (rank r holds experts
    r E/EP .. (r + 1) E/EP - 1), so a domain of `ep_per_domain` EP ranks holds consecutive experts, and random scores
    pick the groups uniformly:
    - no groups: the top-k experts are uniform over all E, so P = 1 - (1 - 1/d)^topk for d domains;
    - groups inside domains (q groups per domain): the domain is hit when one of its q groups is among the m picked,
      P = 1 - C(G - q, m) / C(G, m) (DeepSeek-V3 on 8 nodes at EP 64: G = 8, q = 1, m = 4: 1/2, against 0.66 unlimited);
    - domains inside groups (r domains per group): the group is picked with chance m / G, and its topk / m experts then
      fall uniformly on its r domains.
    A layout where neither nests falls back to the unlimited formula."""
    d = max(ep // max(ep_per_domain, 1), 1)
    topk, groups, picked = model.moe_router_topk, model.moe_router_num_groups, model.moe_router_group_topk
    unlimited = 1.0 - (1.0 - 1.0 / d) ** topk
    if not groups or not picked or picked >= groups:
        return unlimited
    experts_per_domain, experts_per_group = model.num_experts // d, model.num_experts // groups
    if experts_per_domain % experts_per_group == 0:
        q = experts_per_domain // experts_per_group
        return 1.0 - math.comb(groups - q, picked) / math.comb(groups, picked)
    if experts_per_group % experts_per_domain == 0:
        r = experts_per_group // experts_per_domain
        return picked / groups * (1.0 - (1.0 - 1.0 / r) ** max(topk // picked, 1))
    return unlimited
