"""Megatron-Bridge benchmark presets as the validation rows' unstated recipe fields (bench/mbridge_presets.py)."""
import ast

from bench.mbridge_presets import preset_defaults, preset_for, preset_table
from bench.runs import load_runs
from constraints.spec import MoeDispatcher


def test_preset_ast_reader_follows_replace_and_aliases():
    src = ("class WorkloadBaseConfig:\n    num_gpus: int = 1\n    moe_a2a_overlap: bool = False\n"
           "A = WorkloadBaseConfig(num_gpus=8)\nB = replace(A, moe_a2a_overlap=True)\nC = B\n")
    presets = preset_table(src, preset_defaults(src))
    assert presets["A"] == {"num_gpus": 8, "moe_a2a_overlap": False}
    assert presets["C"] == {"num_gpus": 8, "moe_a2a_overlap": True}
    ast.parse(src)


def test_qwen3_30b_gb200_mxfp8_turned_on_ep_overlap_in_26_06():
    """Megatron-Bridge scripts/performance/configs/qwen/qwen3_workload_base_configs.py: at v0.4.2 (26.04.01) the
    GB200 FP8_MX preset is HybridEP with TE graphs on the router; at v0.5.0 (26.06) it adds moe_a2a_overlap and
    full-iteration CUDA graphs (the release where the published rate went 26.1k -> 40.7k tokens/s/GPU)."""
    old = preset_for("26.04.01", "Qwen3-30B-A3B", "GB200", "MXFP8", 1, 1, 1, 8, 4)
    new = preset_for("26.06", "Qwen3-30B-A3B", "GB200", "MXFP8", 1, 1, 1, 8, 4)
    assert old["moe_flex_dispatcher_backend"] == new["moe_flex_dispatcher_backend"] == "hybridep"
    assert not old["moe_a2a_overlap"] and new["moe_a2a_overlap"]
    assert new["cuda_graph_impl"] == "full_iteration"
    assert preset_for("26.06", "Qwen3-30B-A3B", "GB200", "MXFP8", 1, 1, 1, 8, 2) is None  # MBS must match


def test_rows_take_their_release_preset():
    cases = {c.id: c for c in load_runs()}
    r26_06, r26_04 = cases["MBR-048"].recipe, cases["MBR-144"].recipe  # same recipe, releases 26.06 / 26.04
    assert r26_06.moe_dispatcher == r26_04.moe_dispatcher == MoeDispatcher.flex
    assert r26_06.overlap_moe_expert_parallel_comm and not r26_04.overlap_moe_expert_parallel_comm
    assert cases["MBSKILL-536"].recipe.overlap_moe_expert_parallel_comm  # notes: "EP overlap on"
    assert not cases["MBSKILL-535"].recipe.overlap_moe_expert_parallel_comm  # notes: "EP overlap off"


def test_published_global_batch_picks_the_preset_variant():
    """Megatron-Bridge v0.4.0 (26.02.01) scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py: the GB200
    BF16 V1 (GBS 512) and V2 (GBS 1280) presets share TP1/PP1/EP64/MBS4 and differ in EP overlap and the dispatcher; the
    table's row publishes GBS 1280, so it ran V2 (without the GBS the two disagree and no preset applies)."""
    assert preset_for("26.02.01", "GPT-OSS-120B", "GB200", "BF16", 1, 1, 1, 64, 4) is None
    v2 = preset_for("26.02.01", "GPT-OSS-120B", "GB200", "BF16", 1, 1, 1, 64, 4, gbs=1280)
    assert v2["moe_a2a_overlap"] is True and v2["moe_flex_dispatcher_backend"] == "hybridep"
    assert v2["recompute_modules"] == ["layernorm", "moe_act"]
    assert preset_for("26.02.01", "GPT-OSS-120B", "GB200", "BF16", 1, 1, 1, 64, 4, gbs=512)["moe_a2a_overlap"] is False
    case = {c.id: c for c in load_runs()}["MBR-183"]  # GPT-OSS-120B GB200 BF16 GBS 1280, release 26.02.01
    assert case.recipe.overlap_moe_expert_parallel_comm and case.recipe.moe_dispatcher == MoeDispatcher.flex
