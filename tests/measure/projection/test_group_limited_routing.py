"""Group-limited (node-limited) routing reaches fewer domains, so a node-aware dispatcher sends less across the network.

Sources: Megatron-LM @d98e8a64 megatron/core/transformer/moe/moe_utils.py `group_limited_topk` (groups picked by the sum
of their top topk / group_topk scores, then the top-k experts of the picked groups), router.py TopKRouter.forward
(`--moe-router-force-load-balancing` swaps in random logits before that routing); DeepSeek-V3's HF config
(constraints/models/hf_configs/DeepSeek-V3.json: n_group 8, topk_group 4; arXiv 2412.19437 sec. 2.1.2, at most 4 nodes
per token).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from constraints.megatron.argv_to_specs import MegatronArgsError, parse_megatron_args
from constraints.megatron.launch_script import extract_argv
from constraints.models.load import load_model
from constraints.spec import ModelSpec
from measure.projection.moe_routing import domain_hit_probability
from tests.helpers.builders import REPO

DSV3 = load_model("DeepSeek-V3")
SCRIPTS = REPO / "tests" / "data" / "scripts"


def _megatron_group_limited_hits(experts, topk, groups, picked, domains, tokens=20000, seed=0):
    """The share of tokens whose experts include one on domain 1, routed as Megatron's group_limited_topk does on random
    logits (numpy port of moe_utils.py: group score = sum of the top topk // picked scores of the group)."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((tokens, experts))
    group_scores = np.sort(scores.reshape(tokens, groups, -1), axis=-1)[..., -(topk // picked):].sum(-1)
    chosen = np.argsort(-group_scores, axis=-1)[:, :picked]
    mask = np.zeros((tokens, groups), dtype=bool)
    np.put_along_axis(mask, chosen, True, axis=-1)
    masked = np.where(np.repeat(mask, experts // groups, axis=-1), scores, -np.inf)
    top = np.argsort(-masked, axis=-1)[:, :topk]
    return float(((top // (experts // domains)) == 1).any(axis=-1).mean())


def test_deepseek_v3_reads_its_node_limit():
    assert (DSV3.moe_router_num_groups, DSV3.moe_router_group_topk) == (8, 4)
    assert load_model("Kimi-K2-Instruct").moe_router_group_topk is None  # n_group 1: no limit


@pytest.mark.parametrize("ep, per_domain", [(64, 8), (32, 8), (128, 8)])
def test_domain_hit_probability_matches_megatron_routing(ep, per_domain):
    """EP 64 on 8 nodes: one group per node, 1 - C(7,4)/C(8,4) = 1/2 (0.656 without the limit); EP 32 on 4 nodes: two
    groups per node; EP 128 on 16 nodes: each group spans two nodes."""
    p = domain_hit_probability(DSV3, ep, per_domain)
    if ep == 64:
        assert p == pytest.approx(1 - math.comb(7, 4) / math.comb(8, 4)) == 0.5
    simulated = _megatron_group_limited_hits(256, 8, 8, 4, ep // per_domain)
    assert p == pytest.approx(simulated, abs=0.02)
    assert p < 1 - (1 - per_domain / ep) ** 8  # fewer domains than the unlimited draw


def test_megatron_flags_set_the_limit():
    """tests/data/scripts/qwen_moe.args sets --moe-router-num-groups 8 alone (no limit, as in Megatron); adding
    --moe-router-group-topk 4 limits the routing."""
    argv = extract_argv((SCRIPTS / "qwen_moe.args").read_text()).script_args
    assert parse_megatron_args(argv).model.moe_router_group_topk is None
    c = parse_megatron_args(argv + ["--moe-router-group-topk", "4"])
    assert (c.model.moe_router_num_groups, c.model.moe_router_group_topk) == (8, 4)
    assert "--moe-router-group-topk" not in c.unknown_flags


def test_a_limit_megatron_would_refuse_is_one_line_naming_the_flag():
    """TransformerConfig.__post_init__ (transformer_config.py @d98e8a64) refuses group_topk without num_groups and groups
    that do not divide the experts; shardplan says so in the flags' own names."""
    argv = extract_argv((SCRIPTS / "qwen_moe.args").read_text()).script_args
    with pytest.raises(MegatronArgsError, match="--moe-router-num-groups=8, --moe-router-group-topk=16|moe_router_group_topk=16"):
        parse_megatron_args(argv + ["--moe-router-group-topk", "16"])
    with pytest.raises(ValueError, match="moe_router_group_topk needs moe_router_num_groups"):
        ModelSpec.model_validate({**DSV3.model_dump(), "moe_router_num_groups": None})
