"""`check --software megatron-deepspeed:...` prices DeepSpeed's pipeline engine (measure/deepspeed/step.py) and says so;
a recipe that engine does not price (no pipeline) falls back to Megatron-LM of the same month with a warning."""
from __future__ import annotations

from shardplan import api

RECIPE = {"model": "Llama-3.1-8B", "hardware": "a100-sxm-80gb", "nodes": 2, "gpus_per_node": 8,
          "job": {"seq_length": 2048, "global_batch_size": 256, "precision": "bf16"}, "recipe": {"tp": 4, "pp": 4, "mbs": 1, "overlap_param_gather": False}}


def _check(recipe: dict, software: str):
    return api.check(recipe, software=software)


def test_a_bf16_megatron_deepspeed_run_is_priced_with_bf16_optimizer():
    ds = _check(RECIPE, "megatron-deepspeed:2022-07")
    megatron = _check(RECIPE, "megatron-lm:2022-07")
    assert any("BF16_Optimizer" in n and "DeepSpeed's pipeline engine" in n for n in ds.software["notes"])
    # the same layers, plus a gradient accumulation pass per micro-batch and exchanges in series: slower
    assert ds.projection.tokens_per_s_per_gpu < megatron.projection.tokens_per_s_per_gpu
    assert not any(w.rule == "deepspeed_engine_not_priced" for w in ds.warnings)


def test_before_deepspeed_had_bf16_with_pipelines_the_gradients_stay_in_the_training_dtype():
    # microsoft/DeepSpeed 56c522386 (2022-04-19) added BF16_Optimizer with "bf16+pipeline parallelism (#1801)"
    ds = _check(RECIPE, "megatron-deepspeed:2022-01")
    assert any("training dtype" in n for n in ds.software["notes"])


def test_without_a_pipeline_it_is_priced_as_megatron_and_said():
    flat = {**RECIPE, "nodes": 1, "recipe": {"tp": 8, "pp": 1, "mbs": 1, "overlap_param_gather": False}}
    ds = _check(flat, "megatron-deepspeed:2022-07")
    megatron = _check(flat, "megatron-lm:2022-07")
    assert any(w.rule == "deepspeed_engine_not_priced" for w in ds.warnings)
    assert ds.projection.tokens_per_s_per_gpu == megatron.projection.tokens_per_s_per_gpu


def test_other_stacks_get_no_deepspeed_note():
    assert not any("DeepSpeed" in n for n in _check(RECIPE, "megatron-lm:2022-07").software["notes"])
