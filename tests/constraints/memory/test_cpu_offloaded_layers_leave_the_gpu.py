"""`--cpu-offloading-num-layers N` takes N decoder layers' activations off the GPU, as Transformer Engine's CPU offload
schedules them (constraints/memory/per_rank.py `offloaded_layers_peak`).

Why: the flag was read into the recipe but the memory model still held every layer's activations, so a script that
offloads was told it does not fit. Transformer Engine (d0067d0d, pytorch/cpu_offload.py `DefaultOffloadSynchronizer`)
offloads layers 0 .. N-1 and finishes layer i's offload before layer L-N+i runs, "to ensure that activation memory
usage is equal to (num_layers - num_offloaded_layers) * T" (its `get_cpu_offload_context` docstring); Megatron-LM
(d98e8a64) wraps each decoder layer in that context with model_layers = num_layers and allows it only at PP 1 without
recompute.
"""
from __future__ import annotations

import pytest

from constraints.memory.per_rank import memory_report, offloaded_layers_peak
from constraints.models.load import load_model
from constraints.read import load_check_input
from constraints.spec import JobSpec, Recipe
from shardplan.verdict import check_and_project

LLAMA = load_model("Llama-3.1-8B")  # 32 decoder layers of one kind
JOB = JobSpec(seq_length=8192, global_batch_size=64)


def _activations(model, offloaded: int) -> int:
    return memory_report(model, JOB, Recipe(cpu_offloading_num_layers=offloaded), 8, 80 * 2**30).terms["activations"]


@pytest.mark.parametrize("offloaded", [1, 16, 31])
def test_uniform_layers_hold_the_layers_not_offloaded(offloaded):
    """(num_layers - num_offloaded_layers) * T, exactly, when every layer holds T."""
    full = _activations(LLAMA, 0)
    assert full % 32 == 0
    assert _activations(LLAMA, offloaded) == (32 - offloaded) * (full // 32)


def test_mixed_layers_hold_the_heaviest_run_of_consecutive_layers():
    """Layer i's offload ends before layer L-N+i starts, so the GPU holds a sliding window of L-N consecutive layers;
    with layers of different sizes (a hybrid model) the peak is the heaviest such window, not (L-N) x the mean."""
    assert offloaded_layers_peak([1, 5, 1, 5, 1], 3) == 6   # windows of 2: 6, 6, 6, 6
    assert offloaded_layers_peak([1, 5, 1, 5, 1], 2) == 11  # windows of 3: 7, 11, 7
    assert offloaded_layers_peak([4, 1, 1, 1], 2) == 5      # the first window holds the heavy layer
    assert offloaded_layers_peak([3, 3], 0) == 6


def test_a_hybrid_model_offloads_by_its_own_layer_sizes():
    nemotron_h = load_model("Nemotron-H-8B-Base-8K")
    full, half = _activations(nemotron_h, 0), _activations(nemotron_h, nemotron_h.num_layers // 2)
    assert full // 2 <= half < full  # the heaviest half-window holds at least half of the bytes


def _check(tmp_path, extra: str) -> dict:
    path = tmp_path / "train.sh"
    path.write_text("export CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nproc_per_node 8 pretrain_gpt.py --bf16 "
                    "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
                    "--group-query-attention --num-query-groups 8 --swiglu --normalization RMSNorm "
                    "--position-embedding-type rope --seq-length 8192 --max-position-embeddings 8192 "
                    "--micro-batch-size 1 --global-batch-size 64 --vocab-size 128256 --tokenizer-type NullTokenizer "
                    "--use-distributed-optimizer " + extra + "\n")
    return check_and_project(load_check_input(str(path), "h100-sxm-80gb", None, None))["json"]


def test_check_of_an_offloading_script_fits_where_the_same_script_without_it_does_not(tmp_path):
    plain, offloading = _check(tmp_path, ""), _check(tmp_path, "--cpu-offloading-num-layers 16")
    assert not plain["fits"] and offloading["fits"] and offloading["legal"]
    assert offloading["memory"]["terms"]["activations"] * 2 == plain["memory"]["terms"]["activations"]
    assert "cpu_offloading_not_priced" in {w["rule"] for w in offloading["warnings"]}
    assert "cpu_offloading_not_priced" not in {w["rule"] for w in plain["warnings"]}


def test_offloading_with_recompute_is_still_refused(tmp_path):
    result = _check(tmp_path, "--cpu-offloading-num-layers 16 --recompute-activations")
    assert not result["legal"] and "cpu_offloading" in {v["rule"] for v in result["violations"]}


def test_published_offloading_runs_fit_where_every_layer_on_the_gpu_would_not():
    """Megatron-Bridge 26.04.01 Llama-3.1-70B Megatron-FSDP FP8 on 64 GB200 (MBR-126) ran with its workload preset's
    `cpu_offloading_num_layers` 40, which Bridge turns on (scripts/performance/utils/overrides.py
    `_set_recompute_overrides`): as read from the preset it fits 185 GiB; with every layer held it would not."""
    from bench.runs import load_runs
    from hardware.profile import load_profile

    case = {c.id: c for c in load_runs()}["MBR-126"]
    assert case.recipe.cpu_offloading_num_layers == 40 and case.outcome == "ran"
    gb200 = load_profile(case.hardware)

    def fits(recipe) -> bool:
        return memory_report(case.model, case.job, recipe, case.placement.world_size, gb200.hbm_capacity_bytes,
                             gb200.calibration.framework_overhead_bytes,
                             gb200.calibration.activation_fragmentation_fraction).fits

    assert fits(case.recipe)
    assert not fits(case.recipe.model_copy(update={"cpu_offloading_num_layers": 0}))


def test_a_recipe_that_sets_the_count_without_turning_offloading_on_offloads_nothing():
    """Bridge 26.08's gpt-oss 20B recipes set `cfg.model.cpu_offloading_num_layers = 95` without
    `cfg.model.cpu_offloading` (perf_recipes/gpt_oss/common.py), and Megatron-Core offloads only with the latter."""
    import json

    from bench.mbridge_presets import DATA

    presets = json.loads(DATA.read_text())["26.08"]["presets"]
    oss = {k: v for k, v in presets.items() if k.startswith("GPT_OSS_20B")}
    assert oss and not any(v.get("cpu_offloading_num_layers") for v in oss.values())
    assert presets["LLAMA31_405B_PRETRAIN_CONFIG_GB300_BF16_V1"]["cpu_offloading_num_layers"] == 40
