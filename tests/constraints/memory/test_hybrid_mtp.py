"""MTP depths of hybrid models ('/' in --hybrid-layer-pattern): each depth is Megatron's MultiTokenPredictionLayer
around a HybridStack of the MTP pattern's layers (enorm, hnorm, eh_proj 2h -> h, the layers, final norm), on the last
pipeline stage, sharing the embedding and output layer; read from HF (num_nextn_predict_layers +
mtp_hybrid_override_pattern) and from Megatron flags (unified or legacy pattern), rendered back, counted in FLOPs as
Megatron's get_hybrid_layer_counts does, and searched by solve."""
from __future__ import annotations

import json
import math

import pytest

from constraints.case import Case
from constraints.megatron.argv_to_specs import parse_megatron_args
from constraints.memory.per_rank import memory_report
from constraints.models.load import MODELS_DIR, ModelError, load_model, model_from_mapping
from constraints.models.params import mtp_params, param_counts
from constraints.read import LoadedCase
from constraints.spec import JobSpec, ModelSpec, Placement, Recipe
from hardware.profile import load_profile
from measure.projection.flops import megatron_flops
from measure.projection.project import project
from shardplan.verdict import check_and_project
from solver.workflow import solve_case
from templates.recipe_args import recipe_to_megatron_args

SUPER = "Nemotron-3-Super-120B-A12B"


def _super_with_mtp(depth: int = 1):
    raw = json.loads((MODELS_DIR / f"{SUPER}.json").read_text())
    return model_from_mapping({**raw, "num_nextn_predict_layers": depth}, SUPER + "-MTP")


def test_super_with_its_mtp_layer_has_the_release_tensor_count():
    """NVIDIA-Nemotron-3-Super-120B-A12B-BF16 safetensors: 123,611,012,096 weights, 2,942,324,736 of them the MTP layer
    (docs/facts/models/Nemotron-3-Super-120B-A12B.source.md); its MTP pattern "*E" is one attention and one latent MoE
    layer plus enorm, hnorm, eh_proj (2 x 4096 -> 4096) and the final norm."""
    m = _super_with_mtp()
    assert (m.mtp_num_layers, m.mtp_hybrid_pattern, m.mtp_layer_kinds) == (1, "*E", ("*", "E"))
    assert mtp_params(m) == 2_942_324_736
    assert param_counts(m, include_mtp=True).total == 123_611_012_096
    assert param_counts(m).total == param_counts(_super_with_mtp(0)).total == 120_668_687_360  # HF builds no MTP layers


def test_hf_and_model_fields_need_the_mtp_pattern_with_a_depth():
    raw = json.loads((MODELS_DIR / f"{SUPER}.json").read_text())
    with pytest.raises(ModelError, match="needs mtp_hybrid_override_pattern"):
        model_from_mapping({**{k: v for k, v in raw.items() if k != "mtp_hybrid_override_pattern"},
                            "num_nextn_predict_layers": 1}, "x")
    # the bundled config keeps the release's num_nextn_predict_layers 1 (HF config.json)
    assert (load_model(SUPER).mtp_num_layers, load_model(SUPER).mtp_hybrid_pattern) == (1, "*E")
    with pytest.raises(ValueError, match="without hybrid_layer_pattern"):
        ModelSpec.model_validate({**load_model("Llama-3.1-8B").model_dump(), "mtp_hybrid_pattern": "*"})


def _flags(pattern, *extra):
    return ["--hybrid-layer-pattern", pattern, "--hidden-size", "1024", "--num-attention-heads", "8",
            "--ffn-hidden-size", "4096", "--max-position-embeddings", "4096", "--vocab-size", "32000", "--seq-length", "4096",
            "--micro-batch-size", "1", "--global-batch-size", "16", "--bf16", "--normalization", "RMSNorm", "--squared-relu",
            "--position-embedding-type", "rope", *extra]


def test_megatron_flags_read_unified_and_legacy_mtp_patterns():
    """validate_args @ d98e8a64: the unified pattern's '/' parts set --mtp-num-layers (a conflicting value only warns);
    the deprecated --mtp-hybrid-override-pattern with --mtp-num-layers N becomes main + ('/' + mtp) x N; --mtp-num-layers
    with no MTP pattern builds no MTP block (HybridModel.mtp_process)."""
    m = parse_megatron_args(_flags("M-M-|M-M*-/MM/MM", "--pipeline-model-parallel-size", "2")).model
    assert (m.hybrid_layer_pattern, m.mtp_hybrid_pattern, m.mtp_num_layers) == ("M-M-M-M*-", "MM", 2)
    assert parse_megatron_args(_flags("M-M-|M-M*-/MM/MM", "--mtp-num-layers", "5")).model.mtp_num_layers == 2
    legacy = parse_megatron_args(_flags("M-M-M-M*-", "--mtp-hybrid-override-pattern", "MM", "--mtp-num-layers", "2")).model
    assert (legacy.mtp_hybrid_pattern, legacy.mtp_num_layers) == ("MM", 2)
    assert parse_megatron_args(_flags("M-M-M-M*-", "--mtp-num-layers", "2")).model.mtp_num_layers == 0


def test_flops_count_mtp_layers_as_get_hybrid_layer_counts():
    """get_hybrid_layer_counts("M-M-|M-M*-/MM/MM") = {'*': 1, 'M': 8, '-': 4} (its docstring): the MTP pattern counts
    once per depth, and the logits once per output head (1 + depth)."""
    with_mtp = parse_megatron_args(_flags("M-M-|M-M*-/MM/MM", "--pipeline-model-parallel-size", "2")).model
    main_only = parse_megatron_args(_flags("M-M-|M-M*-", "--pipeline-model-parallel-size", "2")).model
    eight_m = parse_megatron_args(_flags("M-M-M-M*-MMMM", "--pipeline-model-parallel-size", "1")).model
    T, h, v = 4096, 1024, 32768
    assert megatron_flops(with_mtp, 4096, 1, v) == pytest.approx(
        megatron_flops(eight_m, 4096, 1, v) + 3 * 2 * 2 * T * h * v, rel=1e-12)
    assert megatron_flops(with_mtp, 4096, 1, v) > megatron_flops(main_only, 4096, 1, v)


def test_mtp_sits_on_the_last_stage_of_a_pipe_split_and_renders_back():
    m = _super_with_mtp()
    job = JobSpec(seq_length=8192, global_batch_size=256)
    layout = "E" + "t" * 44 + "|" + "t" * 44 + "L"
    recipe = Recipe(tp=2, pp=2, ep=16, sequence_parallel=True, pipeline_layout=layout)
    prof = load_profile("b200")
    rep = memory_report(m, job, recipe, 64, prof.hbm_capacity_bytes)
    base = memory_report(_super_with_mtp(0), job, recipe, 64, prof.hbm_capacity_bytes)
    assert rep.stages[0].total_bytes == base.stages[0].total_bytes  # the first stage holds no MTP
    assert rep.stages[1].terms["weights"] > base.stages[1].terms["weights"]
    assert rep.stages[1].terms["activations"] > base.stages[1].terms["activations"]
    argv = recipe_to_megatron_args(m, job, recipe)
    pattern = argv[argv.index("--hybrid-layer-pattern") + 1]
    assert pattern.endswith("|" + m.hybrid_layer_pattern[44:] + "/*E") and argv[argv.index("--mtp-num-layers") + 1] == "1"
    back = parse_megatron_args(argv, world_size=64)
    assert back.model.mtp_hybrid_pattern == "*E" and back.model.mtp_num_layers == 1 and back.recipe.pipeline_layout == layout


def test_solve_answers_for_a_hybrid_model_with_mtp_agree_with_check():
    m = _super_with_mtp()
    job, placement = JobSpec(seq_length=8192, global_batch_size=512), Placement(hardware="b200", num_nodes=8, gpus_per_node=8)
    prof = load_profile("b200")
    result, _ = solve_case(m, job, placement, prof, {"pp": [1, 2, 4]}, {}, 3, 0.0, "cpsat", 60.0)
    assert len(result.ranked) == 3 and result.proven_optimal and result.rejected == []
    for r in result.ranked:
        got = check_and_project(LoadedCase(case=Case(model=m, job=job, recipe=r.recipe, placement=placement)))["json"]
        assert got["legal"] and got["fits"]
        assert got["memory"]["peak_bytes"] == r.check.memory.peak_bytes
        assert round(got["projection"]["iteration_time_s"] * 1e6) == r.time_us
        closed = project(m, job, r.recipe, placement, prof, simulate_pipeline=False)
        assert r.rank_time_us == math.ceil(closed.iteration_time_s * 1e6)


def test_activation_coefficients_count_the_mtp_pattern_on_the_last_stage():
    from constraints.memory.activation_coef import evaluate, rank_coefficients, values_of
    from constraints.stages import rank_chunks
    from tests.constraints.memory.test_activation_coef import RECOMPUTES, chunk_activation_sums

    m = _super_with_mtp(2)
    job = JobSpec(seq_length=4096, global_batch_size=64)
    for rc in RECOMPUTES:
        recipe = Recipe(tp=2, pp=2, ep=8, sequence_parallel=True, recompute=rc,
                        pipeline_layout="E" + "t" * 40 + "|" + "t" * 48 + "L")
        values = values_of(m, job, recipe)
        chunks = rank_chunks(m, recipe)
        assert [c.mtp for cs in chunks for c in cs] == [0, 2]
        for cs in chunks:
            assert evaluate(rank_coefficients(m, recipe, cs), values) == chunk_activation_sums(m, job, recipe, cs)
