"""Hybrid Mamba-2 / attention models end to end: pattern reading as Megatron's parse_hybrid_pattern does, the Mamba-2
mixer's parameters and saved activations, Megatron's hybrid FLOP count, --hybrid-layer-pattern flags read and rendered
back (pipes as pipeline segments, pretrain_hybrid.py) and Megatron's refusals; solve in tests/solver/test_hybrid.py. Exact totals against
HF's NemotronHForCausalLM are in tests/constraints/models/test_params.py (docs/facts/models/params.json); rule legal/illegal pairs in
tests/constraints/rules/test_rules.py."""
import pytest

from constraints.megatron.argv_to_specs import MegatronArgsError, parse_megatron_args
from constraints.memory import activations as act
from constraints.models.hybrid_pattern import HybridPatternError, split_pattern
from constraints.models.load import load_model, model_from_mapping
from constraints.models.mamba import entry_script, entry_script_problem, layout_as_segments, mamba_mixer_params, pattern_with_pipes
from constraints.models.params import layer_params
from constraints.rules.registry import RuleInput, check_rules
from constraints.spec import JobSpec, Placement, Recipe
from hardware.profile import load_profile
from measure.kernels.layer_ops import LayerKind, layer_ops
from measure.projection.flops import megatron_flops
from measure.projection.project import project
from solver.space import SpaceError, build_space
from templates.recipe_args import recipe_to_megatron_args

NH8 = "Nemotron-H-8B-Base-8K"
NANO = "Nemotron-3-Nano-30B-A3B"


def test_pattern_reads_like_megatron_parse_hybrid_pattern():
    """The docstring examples of megatron/core/models/hybrid/hybrid_layer_allocation.py parse_hybrid_pattern."""
    assert split_pattern("M*M*") == ("M*M*", None, 0)
    assert split_pattern("M*M*/MM/MM") == ("M*M*", "MM", 2)
    assert split_pattern("MMMM/*M/*M/*M") == ("MMMM", "*M", 3)
    assert split_pattern("M-M-|M-M*-/MM/MM") == ("M-M-|M-M*-", "MM", 2)
    with pytest.raises(HybridPatternError, match="identical"):
        split_pattern("M*/MM/M*")
    with pytest.raises(HybridPatternError, match="gated delta net"):
        split_pattern("MG*")


def test_mamba_mixer_parameters_follow_the_hf_and_megatron_tensors():
    """Nemotron-H-8B: in_proj 4096 x 18560 (z, x, B, C, dt = 2*8192 + 2*8*128 + 128), depthwise conv 10240 x 4 + bias,
    dt_bias / A_log / D per head (128 each), gated norm 8192, out_proj 8192 x 4096; the input norm (4096) is replicated."""
    m = load_model(NH8)
    expected = 4096 * 18560 + 10240 * 4 + 10240 + 3 * 128 + 8192 + 8192 * 4096
    assert mamba_mixer_params(m) == expected == 109_635_968
    lp = layer_params(m, "M")
    assert (lp.tp_sharded, lp.replicated, lp.experts) == (expected, 4096, 0)
    assert layer_params(m, "-").total == 4096 + 2 * 4096 * 21504  # squared-ReLU MLP, no gate
    assert layer_params(m, "*").total == 4096 + 4096 * (4096 + 2 * 1024) + 4096 * 4096


def test_nano_moe_layer_has_router_experts_and_shared_expert():
    m = load_model(NANO)
    lp = layer_params(m, "E")
    assert lp.per_expert == 2 * 2688 * 1856 and lp.experts == 128 * lp.per_expert
    assert lp.replicated == 2688 + 128 * 2688  # norm + router (the score-correction bias is a buffer)
    assert lp.tp_sharded == 2 * 2688 * 3712   # shared expert
    assert m.layer_is_moe == tuple(ch == "E" for ch in m.hybrid_layer_pattern) and m.num_moe_layers == 23


def test_mamba_saved_activations_term_by_term():
    """One Mamba layer, TP 2 with SP, s = 8192, b = 1, bf16: residual and norm output split by SP, zxBCdt / TP, scan
    output, gated-norm input and out_proj input d_inner / TP, fp32 rstd per local group."""
    m = load_model(NH8)
    sh = act.shape_of(JobSpec(seq_length=8192, global_batch_size=8), Recipe(tp=2, sequence_parallel=True))
    terms = act.layer_terms(m, sh, "M")
    T = 8192
    assert terms == {"ln1_input": 2 * T * 4096 // 2, "mamba_in_proj_input": 2 * T * 4096 // 2,
                     "mamba_zxbcdt": 2 * T * 18560 // 2, "mamba_scan_output": 2 * T * 4096, "mamba_norm_input": 2 * T * 4096,
                     "mamba_norm_rstd": 4 * T * 4, "mamba_out_proj_input": 2 * T * 4096}
    assert set(act.layer_terms(m, sh, "*")) >= {"q_k", "v", "softmax_stats"} and "fc1_output" not in act.layer_terms(m, sh, "*")
    assert "fc1_output" in act.layer_terms(m, sh, "-") and "q_k" not in act.layer_terms(m, sh, "-")


def test_flops_equal_megatron_hybrid_flops_by_hand():
    """training.py hybrid_flops for Nemotron-H-8B at s = 8192, one sample, padded vocab 131072 (d_inner taken as 2h
    in mamba_layer_flops, as Megatron writes it)."""
    m = load_model(NH8)
    T, s2, h = 8192, 8192 * 8192, 4096
    attn = 4 * T * h * 1.0 * (h + h * 8 / 32) + 2 * s2 * h * 1.0
    mlp = 4 * T * h * 21504
    mamba = 2 * T * h * (2 * 8192 + 2 * 8 * 128 + 128) + 7 * T * 8192 * 128 + 2 * T * 8192 * h
    logits = 2 * T * h * 131072
    assert megatron_flops(m, 8192, 1, 131072) == pytest.approx(3 * (4 * attn + 24 * mlp + 24 * mamba + logits), rel=1e-12)


def _flags(*extra):
    return ["--hybrid-layer-pattern", "M-M*-|M-M*-", "--hidden-size", "1024", "--num-attention-heads", "8",
            "--ffn-hidden-size", "4096", "--max-position-embeddings", "4096", "--vocab-size", "32000", "--seq-length", "4096",
            "--micro-batch-size", "1", "--global-batch-size", "16", "--bf16", "--normalization", "RMSNorm", "--squared-relu",
            *extra]


def test_pattern_flag_sets_layers_mamba_defaults_and_pipeline_segments():
    c = parse_megatron_args(_flags("--num-layers", "99", "--pipeline-model-parallel-size", "2"))
    m, r = c.model, c.recipe
    assert m.num_layers == 10 and m.hybrid_layer_pattern == "M-M*-M-M*-"  # the pattern wins over --num-layers
    # ... and, as Megatron's validate_args warns, the ignored --num-layers is said
    assert "--num-layers 99 ignored: the hybrid layer pattern holds 10 layers" in " ".join(c.notes)
    assert not [n for n in parse_megatron_args(_flags("--num-layers", "10")).notes if "ignored" in n]
    assert (m.mamba_num_heads, m.mamba_head_dim, m.mamba_state_dim, m.mamba_num_groups) == (2 * 1024 // 64, 64, 128, 8)
    assert r.vpp == 1 and layout_as_segments(r.pipeline_layout) == [5, 5]
    c4 = parse_megatron_args(_flags("--pipeline-model-parallel-size", "1"))
    assert c4.recipe.vpp == 2  # two segments on PP 1 are two virtual stages
    with pytest.raises(MegatronArgsError, match="cannot both"):
        parse_megatron_args(_flags("--hybrid-override-pattern", "M-M*-M-M*-"))
    mtp = parse_megatron_args(["--hybrid-layer-pattern", "M*/M*"] + _flags()[2:]).model  # MTP: tests/constraints/memory/test_hybrid_mtp.py
    assert (mtp.hybrid_layer_pattern, mtp.mtp_hybrid_pattern, mtp.mtp_num_layers) == ("M*", "M*", 1)


def test_render_writes_the_pattern_with_pipes_and_reads_back_the_same_case():
    m = load_model(NH8)
    recipe = Recipe(tp=2, pp=2, vpp=2, schedule="interleaved", pipeline_layout="Et*13|t*13|t*13|t*13L", sequence_parallel=True)
    job = JobSpec(seq_length=8192, global_batch_size=64)
    argv = recipe_to_megatron_args(m, job, recipe)
    assert "--num-layers" not in argv and "--pipeline-model-parallel-layout" not in argv
    pattern = argv[argv.index("--hybrid-layer-pattern") + 1]
    assert pattern == pattern_with_pipes(m, [13, 13, 13, 13]) and pattern.count("|") == 3
    back = parse_megatron_args(argv, world_size=8)
    assert back.recipe.vpp == 2 and back.recipe.pipeline_layout == "Et" + "t" * 12 + "|" + "t" * 13 + "|" + "t" * 13 + "|" + "t" * 13 + "L"
    assert back.model.hybrid_layer_pattern == m.hybrid_layer_pattern and back.model.mamba_num_heads == 128
    assert entry_script(m) == "pretrain_hybrid.py"


def test_entry_script_must_build_the_model():
    hybrid, gpt = load_model(NH8), load_model("Llama-3.1-8B")
    assert entry_script_problem("/x/pretrain_gpt.py", hybrid) and entry_script_problem("pretrain_hybrid.py", gpt)
    assert entry_script_problem("pretrain_mamba.py", hybrid) is None  # the deprecated alias runs pretrain_hybrid.py
    assert entry_script_problem(None, hybrid) is None


def test_fp8_needs_an_in_proj_width_multiple_of_16():
    """MambaMixer asserts (2 d_inner + 2 groups N + heads) % 16 == 0 under FP8: 24 heads of 64, 8 groups of 128
    give 2*1536 + 2048 + 24 = 5144, not a multiple of 16; 32 heads give 6176 = 16 * 386."""
    def model(heads):
        return model_from_mapping({"num_layers": 4, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 8,
                                   "vocab_size": 32000, "hybrid_layer_pattern": "M*M-", "mamba_num_heads": heads,
                                   "mamba_head_dim": 64, "mamba_state_dim": 128, "mamba_num_groups": 8}, "tiny")
    rules = {}
    for heads in (24, 32):
        x = RuleInput(model=model(heads), job=JobSpec(seq_length=4096, global_batch_size=8, precision="fp8-tensorwise"),
                      recipe=Recipe(), world_size=8, profile=load_profile("h100-sxm-80gb"))
        rules[heads] = {v.rule for v in check_rules(x)}
    assert "mamba_fp8_width" in rules[24] and "mamba_fp8_width" not in rules[32]


def test_projection_prices_each_layer_kind_and_mamba_context_parallel():
    m = load_model(NH8)
    job = JobSpec(seq_length=8192, global_batch_size=64)
    recipe = Recipe(tp=2, sequence_parallel=True)
    mods = {p.module for p in layer_ops(m, job, recipe, LayerKind.mamba)}
    assert "mamba" in mods and "core_attn" not in mods and "qkv" not in mods
    place, prof = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8), load_profile("h100-sxm-80gb")
    base = project(m, job, recipe, place, prof)
    with_cp = project(m, job, recipe.model_copy(update={"cp": 2}), place, prof)
    assert base.breakdown.cp_comm == 0 and with_cp.breakdown.cp_comm > 0
    assert 0.2 < base.mfu < 0.8


def test_solve_space_of_a_hybrid_model_never_tries_account_for_splits():
    """Megatron refuses --account-for-embedding/loss-in-pipeline-split with a pattern; solve's answers on hybrid models
    are tested in tests/solver/test_hybrid.py."""
    space = build_space(load_model(NANO), JobSpec(seq_length=8192, global_batch_size=64),
                        Placement(hardware="b200", num_nodes=1, gpus_per_node=8))
    assert space.domains["acc_split"] == [False]
    with pytest.raises(SpaceError, match="refused by Megatron") as exc:
        build_space(load_model(NANO), JobSpec(seq_length=8192, global_batch_size=64),
                    Placement(hardware="b200", num_nodes=1, gpus_per_node=8), pins={"acc_split": [True]})
    assert "\n" not in str(exc.value)


def test_linear_attention_is_refused_as_not_modelled():
    """Gated delta-net layers (Megatron --linear-attention-freq, hybrid symbol G, HF qwen3_next) have no terms here."""
    with pytest.raises(MegatronArgsError, match="not modelled"):
        parse_megatron_args(_flags("--linear-attention-freq", "4"))
    with pytest.raises(MegatronArgsError, match="gated delta net"):
        parse_megatron_args(["--hybrid-layer-pattern", "MG*-"] + _flags()[2:])
    from constraints.models.load import ModelError
    with pytest.raises(ModelError, match="not modelled"):
        model_from_mapping({"model_type": "qwen3_next", "hidden_size": 2048, "num_attention_heads": 16,
                            "num_hidden_layers": 48, "intermediate_size": 5120, "vocab_size": 151936}, "q3n")
