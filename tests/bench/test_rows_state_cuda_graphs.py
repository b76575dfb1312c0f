"""Rows whose publication states its CUDA graph capture in prose get that capture (bench/runs.py STATED_GRAPH_SCOPES).

Megatron-Bridge @067f987d: skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md ("CUDA graph: Transformer Engine
scopes moe_router + moe_preprocess"), skills/nemo-mbridge-perf-moe-dispatcher-selection/SKILL.md (the alltoall smoke run
"used ... the recipe's Transformer Engine CUDA graph scopes (`moe_router`, `moe_preprocess`)") and
examples/model_verification_cards/qwen3-30b-a3b/card.yaml (pretrain.H100 / pretrain.GB200 enabled_features
cuda_graph scopes [moe_router, moe_preprocess]; pretrain_performance.H100 "capture completes for all 48 graphable layers
with moe_router and moe_preprocess scopes").
"""
from __future__ import annotations

from bench.runs import load_runs

ROUTER_GRAPHS = frozenset({"moe_router", "moe_preprocess"})


def test_qwen3_30b_studies_and_card_items_capture_the_router():
    cases = {c.id: c for c in load_runs()}
    for rid in ("MBSKILL-535", "MBSKILL-536", "MBSKILL-537", "MBSKILL-538", "MBCARD-499", "MBCARD-500", "MBCARD-501"):
        assert cases[rid].cuda_graph_scope == ROUTER_GRAPHS, rid


def test_other_items_of_the_card_keep_their_own_capture():
    """The card's GB300 weak-scaling points run the full-iteration graph of their preset, not the router scopes."""
    cases = {c.id: c for c in load_runs()}
    assert cases["MBCARD-505"].cuda_graph_scope == {"full_iteration"}
    assert cases["MBCARD-472"].cuda_graph_scope == frozenset()  # DeepSeek-V3's card states no capture
