"""A "nothing fits" why line judges a pin with the user's other pins set (`--vpp 3 --pp 2` is judged at PP 2, not at
the default PP 1, which gave the untrue "VPP=3 needs PP >= 2, got PP=1"), and pins that fail only together get a
line naming both (`--schedule zb-h1 --pp 1` had none)."""
from __future__ import annotations

from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.explain import explain_infeasible

# Llama-3.1-8B: 32 layers (meta-llama/Llama-3.1-8B config.json), 8 GPUs
MODEL, JOB = load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=64)
PLACE = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
H100 = load_profile("h100-sxm-80gb")


def why(pins: dict) -> list[str]:
    return explain_infeasible(MODEL, JOB, PLACE, H100, pins, {}, 0.0, remedies=False)["why"]


def test_vpp_is_judged_at_the_pinned_pp():
    lines = why({"vpp": [3], "pp": [2]})
    assert any("PP*VPP=6" in ln and "layers_split" in ln for ln in lines), lines  # 32 layers over 2 x 3 stages
    assert not any("got PP=1" in ln for ln in lines), lines


def test_a_zero_bubble_schedule_at_pp1_says_why():
    lines = why({"schedule": ["zb-h1"], "pp": [1]})
    assert any("--pp 1" in ln and "--schedule zb-h1" in ln and "schedule_matches_vpp" in ln for ln in lines), lines


def test_pins_at_their_defaults_still_say_why():
    """`--tp 1 --pp 1 --cp 1` on 8 GPUs with a global batch of 63: DP 8 does not divide it. The pins equal the default
    recipe, so no rule failed "only together"; the line names the rule the pinned recipe fails (it had no why)."""
    job = JobSpec(seq_length=4096, global_batch_size=63)
    lines = explain_infeasible(MODEL, job, PLACE, H100, {"tp": [1], "pp": [1], "cp": [1]}, {}, 0.0, remedies=False)["why"]
    assert any("global_batch_divisible" in ln and "63" in ln for ln in lines), lines


def test_a_pinned_flex_dispatcher_on_a_part_without_its_backends_says_why():
    """`--moe-dispatcher flex` on MI300X or A100 gave "nothing fits: --moe-dispatcher" with no reason: solve tries flex
    only where DeepEP / HybridEP run (NVIDIA compute capability >= 9.0, solver/variants.supports_flex). The why line
    names the part and what it lacks."""
    moe = load_model("Qwen3-30B-A3B")
    for part, lacks in (("mi300x", "an AMD part"), ("a100-sxm-80gb", "of compute capability 8.0")):
        place = Placement(hardware=part, num_nodes=1, gpus_per_node=8)
        lines = explain_infeasible(moe, JOB, place, load_profile(part), {"moe_dispatcher": ["flex"]}, {}, 0.0,
                                   remedies=False)["why"]
        assert any(ln.startswith("--moe-dispatcher flex") and f"{part} is {lacks}" in ln for ln in lines), lines


def test_the_flex_reason_stays_when_memory_fails_too():
    """DeepSeek-V3 on one MI300X node: nothing fits in memory with or without the pin, and no recipe could use flex on
    that part anyway: the why line says both, so adding nodes alone is not presented as the way out."""
    ds = load_model("DeepSeek-V3")
    place = Placement(hardware="mi300x", num_nodes=1, gpus_per_node=8)
    job = JobSpec(seq_length=4096, global_batch_size=1024)
    lines = explain_infeasible(ds, job, place, load_profile("mi300x"), {"moe_dispatcher": ["flex"]}, {}, 0.0,
                               remedies=False)["why"]
    assert any(ln.startswith("--moe-dispatcher flex") for ln in lines), lines


def test_flex_pinned_with_tp1_and_ep1_names_the_group_rule():
    """`--tp 1 --ep 1 --moe-dispatcher flex` said "nothing fits: --tp + --ep + --moe-dispatcher" with no why: the
    dispatcher pin was not among the pins the pair check sets. Megatron's flex dispatcher needs TP x EP > 1
    (megatron/core/transformer/moe/token_dispatcher.py MoEFlexTokenDispatcher), which the rule flex_dispatcher_group
    holds; the line names all three pins and that rule."""
    moe = load_model("Qwen3-30B-A3B")
    pins = {"tp": [1], "ep": [1], "moe_dispatcher": ["flex"]}
    lines = explain_infeasible(moe, JOB, PLACE, H100, pins, {}, 0.0, remedies=False)["why"]
    assert any("--tp 1" in ln and "--ep 1" in ln and "--moe-dispatcher flex" in ln and "flex_dispatcher_group" in ln
               for ln in lines), lines
