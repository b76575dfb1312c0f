"""--first-last-layers-bf16: the first / last N decoder layers run outside the fp8 / NVFP4 autocast (Megatron-LM
@ d98e8a64 megatron/core/fp8_utils.py is_first_last_bf16_layer, fp4_utils.py get_fp4_context; counts
--num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16, TransformerConfig defaults 1 and 1). Read from Megatron
flags and Megatron-Bridge mixed-precision recipes, judged by Megatron's two checks, rendered back, and priced: bf16
GEMMs and bf16 saved inputs in those layers, and no NVFP4 weight copy for them under --fp4-param-gather."""
from __future__ import annotations

import pytest
import yaml

from constraints.megatron.argv_to_specs import parse_megatron_args
from constraints.memory import activations as act
from constraints.memory.nvfp4_weights import rank_quantised_weights
from constraints.memory.per_rank import memory_report
from constraints.models.load import load_model
from constraints.read import load_check_input
from constraints.rules.registry import RuleInput, check_rules
from constraints.spec import JobSpec, Placement, Precision, Recipe
from hardware.profile import load_profile
from measure.projection.project import project
from solver.space import SpaceError, build_space
from templates.recipe_args import recipe_to_megatron_args
from tests.helpers.builders import TESTS

LLAMA = "Llama-3.1-8B"  # 32 layers


def _flags(*extra):
    return ["--num-layers", "32", "--hidden-size", "4096", "--ffn-hidden-size", "14336", "--num-attention-heads", "32",
            "--group-query-attention", "--num-query-groups", "8", "--swiglu", "--normalization", "RMSNorm",
            "--position-embedding-type", "rope", "--disable-bias-linear", "--untie-embeddings-and-output-weights",
            "--vocab-size", "128256", "--max-position-embeddings", "8192", "--seq-length", "8192",
            "--micro-batch-size", "1", "--global-batch-size", "64", "--bf16", *extra]


def test_flags_read_with_megatrons_defaults_and_only_under_fp8_or_fp4():
    fp8 = ["--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"]
    job = parse_megatron_args(_flags(*fp8, "--first-last-layers-bf16"), world_size=8).job
    assert (job.bf16_layers_at_start, job.bf16_layers_at_end) == (1, 1)
    job = parse_megatron_args(_flags("--fp4-format", "e2m1", "--first-last-layers-bf16", "--num-layers-at-start-in-bf16", "0",
                                     "--num-layers-at-end-in-bf16", "3"), world_size=8).job
    assert (job.precision, job.bf16_layers_at_start, job.bf16_layers_at_end) == (Precision.nvfp4, 0, 3)
    assert job.bf16_layer_indices(32) == {29, 30, 31}
    plain = parse_megatron_args(_flags("--first-last-layers-bf16"), world_size=8).job  # no autocast: nothing to keep out
    assert not plain.has_bf16_layers
    with pytest.raises(ValueError, match="set them to 0 or pick an fp8"):
        JobSpec(seq_length=4096, global_batch_size=8, bf16_layers_at_end=1)


def test_megatrons_two_checks_each_legal_and_illegal():
    """TransformerConfig.__post_init__ (fp8 only): delayed scaling refuses bf16 layers; each count must lie in
    [0, num_layers // PP]."""
    model = load_model(LLAMA)

    def verdicts(precision, start, end, pp=1):
        job = JobSpec(seq_length=4096, global_batch_size=64, precision=precision, bf16_layers_at_start=start, bf16_layers_at_end=end)
        return {v.rule for v in check_rules(RuleInput(model, job, Recipe(pp=pp), 64)) if v.severity == "error"}

    assert "bf16_layers_delayed_scaling" in verdicts(Precision.fp8_delayed, 1, 1)
    assert "bf16_layers_delayed_scaling" not in verdicts(Precision.fp8_tensorwise, 1, 1)
    assert "bf16_layers_per_stage" not in verdicts(Precision.fp8_tensorwise, 8, 8, pp=4)  # 32 // 4 = 8
    assert "bf16_layers_per_stage" in verdicts(Precision.fp8_tensorwise, 1, 9, pp=4)
    assert "bf16_layers_per_stage" not in verdicts(Precision.nvfp4, 1, 9, pp=4)  # Megatron checks only under fp8


def test_rendered_flags_read_back():
    model = load_model(LLAMA)
    job = JobSpec(seq_length=8192, global_batch_size=64, precision=Precision.nvfp4, bf16_layers_at_start=0, bf16_layers_at_end=14)
    argv = recipe_to_megatron_args(model, job, Recipe(tp=2))
    back = parse_megatron_args(argv, world_size=8).job
    assert (back.bf16_layers_at_start, back.bf16_layers_at_end) == (0, 14)
    plain = recipe_to_megatron_args(model, job.model_copy(update={"bf16_layers_at_end": 0}), Recipe(tp=2))
    assert "--first-last-layers-bf16" not in plain


def test_bridge_recipes_and_mapping_defaults(tmp_path):
    """mixed_precision.py @067f987d: nemotron_3_super_bf16_with_nvfp4_mixed keeps the last 14 layers in bf16 (start 0,
    MixedPrecisionConfig's default); a mapping that turns first_last_layers_bf16 on without counts keeps none."""
    base = yaml.safe_load((TESTS / "data" / "stack_configs" / "bridge-llama8b-legal.yaml").read_text())

    def job_for(mixed):
        path = tmp_path / "cfg.yaml"
        path.write_text(yaml.safe_dump({**base, "mixed_precision": mixed}))
        return load_check_input(str(path), "b200", 1, 8).case.job

    job = job_for("nemotron_3_super_bf16_with_nvfp4_mixed")
    assert (job.precision, job.bf16_layers_at_start, job.bf16_layers_at_end) == (Precision.nvfp4, 0, 14)
    job = job_for("bf16_with_fp8_current_scaling_mixed")
    assert (job.precision, job.bf16_layers_at_start, job.bf16_layers_at_end) == (Precision.fp8_tensorwise, 1, 1)
    job = job_for({"bf16": True, "fp8": "hybrid", "fp8_recipe": "tensorwise", "first_last_layers_bf16": True})
    assert not job.has_bf16_layers


def test_memory_prices_bf16_layers_at_bf16_exactly():
    """One rank (PP 1) holds every layer: keeping the last 4 of 32 out of NVFP4 adds, exactly, their bf16 weights less
    their NVFP4 copies (constraints/memory/nvfp4_weights.py) and their bf16 saved GEMM inputs less the NVFP4 ones."""
    model = load_model(LLAMA)
    recipe = Recipe(tp=2, sequence_parallel=True, fp4_param_gather=True)
    nv = JobSpec(seq_length=8192, global_batch_size=64, precision=Precision.nvfp4)
    kept = nv.model_copy(update={"bf16_layers_at_end": 4})
    cap = load_profile("b200").hbm_capacity_bytes
    a, b = memory_report(model, nv, recipe, 8, cap).terms, memory_report(model, kept, recipe, 8, cap).terms
    q = rank_quantised_weights(model, [28, 29, 30, 31], 2, 1, 2)
    assert b["weights"] - a["weights"] == q.elements * 2 - q.nvfp4_bytes > 0
    per_layer = {s: act.layer_bytes(model, act.shape_of(j, recipe), False, recipe) for s, j in (("nv", nv), ("bf16", nv.in_bf16()))}
    assert b["activations"] - a["activations"] == 4 * (per_layer["bf16"] - per_layer["nv"]) > 0


def test_projection_prices_bf16_layers_between_all_quantised_and_all_bf16():
    model, prof = load_model(LLAMA), load_profile("b200")
    placement, recipe = Placement(hardware="b200", num_nodes=1, gpus_per_node=8), Recipe(tp=2, sequence_parallel=True)
    nv = JobSpec(seq_length=8192, global_batch_size=64, precision=Precision.nvfp4)

    def t(job):
        return project(model, job, recipe, placement, prof).iteration_time_s
    some = t(nv.model_copy(update={"bf16_layers_at_start": 1, "bf16_layers_at_end": 1}))
    every = t(nv.model_copy(update={"bf16_layers_at_start": 32}))
    assert t(nv) < some < every
    assert every == pytest.approx(t(nv.in_bf16()), rel=1e-12)  # every layer out of the autocast is a bf16 run


def test_solve_refuses_a_job_with_bf16_layers_in_one_line():
    job = JobSpec(seq_length=4096, global_batch_size=64, precision=Precision.mxfp8, bf16_layers_at_end=1)
    with pytest.raises(SpaceError, match="set both to 0 to search"):
        build_space(load_model(LLAMA), job, Placement(hardware="b200", num_nodes=1, gpus_per_node=8))
