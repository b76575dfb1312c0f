"""A naturally routed MoE run waits for its busiest expert (measure/projection/moe_routing.py); a forced-balanced one,
as every published benchmark, does not. Factors from Wang et al. 2024 (arXiv 2408.15664) Table 1: MaxVio_global 0.52
under an auxiliary balancing loss (3B), 0.04 with the auxiliary-loss-free expert bias."""
from __future__ import annotations

import pytest

from constraints.megatron.run_flags import natural_routing_requested
from constraints.models.load import load_model
from constraints.spec import JobSpec, MoeDispatcher, Placement, Recipe
from hardware.profile import load_profile
from measure.projection.moe_routing import routed_profile
from measure.projection.project import project

H100 = load_profile("h100-sxm-80gb")


def test_the_imbalance_follows_the_models_balancing_method():
    aux = load_model("qwen3-30b-a3b")  # Qwen3 MoE: softmax router balanced by an auxiliary loss
    bias = load_model("deepseek-v3")  # topk_method noaux_tc: the expert score bias
    assert not aux.moe_router_score_bias and bias.moe_router_score_bias
    shipped = H100.calibration.moe_load_imbalance
    assert routed_profile(H100, aux, True).calibration.moe_load_imbalance == pytest.approx(shipped * 1.52)
    assert routed_profile(H100, bias, True).calibration.moe_load_imbalance == pytest.approx(shipped * 1.04)
    assert routed_profile(H100, aux, False) is H100
    assert routed_profile(H100, load_model("llama-3.1-8b"), True) is H100  # dense: no experts to wait for


def test_a_naturally_routed_step_is_slower_than_a_forced_balanced_one():
    model = load_model("qwen3-30b-a3b")
    job = JobSpec(seq_length=4096, global_batch_size=64)
    recipe = Recipe(tp=1, pp=1, ep=8, mbs=1, moe_dispatcher=MoeDispatcher.alltoall)
    placement = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    forced = project(model, job, recipe, placement, H100)
    natural = project(model, job, recipe, placement, H100, natural_routing=True)
    assert natural.breakdown.ep_comm > forced.breakdown.ep_comm
    assert natural.iteration_time_s > forced.iteration_time_s


def test_the_flag_says_how_a_run_routed():
    assert natural_routing_requested({}, is_moe=True)
    assert not natural_routing_requested({"--moe-router-force-load-balancing": True}, is_moe=True)
    assert not natural_routing_requested({}, is_moe=False)

