"""gpt-oss's expert activation as Megatron-LM runs it: a gated quick-GELU (`--quick-geglu`) with its inputs clamped at
7 and 1 added to the up half (HF GptOssExperts; Megatron-Bridge's gpt-oss bridge), whose fused path
(`fused_bias_geglu.weighted_bias_quick_geglu_impl`) clamps and concatenates in eager PyTorch and builds a device tensor
on every call (a blocking host-to-device copy, i.e. a stream synchronisation); Transformer Engine's fused grouped MLP
replaces all of it (measure/kernels/layer_ops.py)."""
from __future__ import annotations

import pytest

from bench.runs import load_all
from constraints.case import Case
from constraints.megatron.argv_to_specs import parse_megatron_args
from constraints.megatron.launch_script import extract_argv
from constraints.models.load import load_model
from constraints.read import LoadedCase, load_check_input
from constraints.spec import Activation, JobSpec, ModelSpec, Placement, Precision, Recipe, Recompute
from hardware.profile import load_profile
from measure.kernels.common import Phase
from measure.kernels.layer_ops import LayerKind, expert_activation_host_syncs, expert_glu_clamp_ops, moe_ops
from measure.projection.layer_cost import layer_cost, layer_parts
from shardplan.verdict import check_and_project
from templates.render import RenderError, render_script

JOB = JobSpec(seq_length=4096, global_batch_size=1280, precision=Precision.bf16)
RECIPE = Recipe(tp=1, pp=1, ep=64, mbs=4)
PLACE = Placement(hardware="gb200-nvl72", num_nodes=16, gpus_per_node=4)


def test_hf_gpt_oss_reads_as_clamped_quick_geglu():
    oss = load_model("gpt-oss-120b")  # config.json: hidden_act "silu", swiglu_limit 7.0 (the modelling code decides)
    assert oss.activation == Activation.quick_geglu and oss.activation.gated
    assert (oss.glu_clamp, oss.glu_linear_offset) == (7.0, 1.0)
    assert load_model("Qwen3-30B-A3B").activation == Activation.swiglu


def test_render_writes_quick_geglu_and_reads_it_back():
    model = load_model("gpt-oss-120b")
    case = Case(model=model, job=JobSpec(seq_length=4096, global_batch_size=128), recipe=Recipe(tp=1, ep=8),
                placement=Placement(hardware="b200", num_nodes=1, gpus_per_node=8))
    argv = extract_argv(render_script(case, "torchrun")).script_args
    text = " ".join(argv)
    assert "--quick-geglu --activation-func-clamp-value 7 --glu-linear-offset 1" in text and "--swiglu" not in text
    parsed = parse_megatron_args(argv)
    assert (parsed.model.activation, parsed.model.glu_clamp, parsed.model.glu_linear_offset) == (Activation.quick_geglu, 7.0, 1.0)


def test_clamp_without_a_gate_is_refused():
    with pytest.raises(ValueError, match="glu_clamp / glu_linear_offset act on a gated activation"):
        ModelSpec(name="x", num_layers=2, hidden_size=64, ffn_hidden_size=128, num_attention_heads=4, num_query_groups=4,
                  kv_channels=16, vocab_size=100, max_position_embeddings=128, activation=Activation.gelu, glu_clamp=7.0)


def test_clamp_and_concatenation_bytes():
    """EP 64, MBS 4 x 4096 tokens, top-4: the rank's 2 experts receive 65,536 token copies; FC1's output is 2 x 2880
    wide. Forward: two clamps (a read and a write of each half) and the concatenation (a read and a write of the
    whole): 4 passes of 65,536 x 5,760 bf16 = 3,019,898,880 B; backward 5 passes."""
    oss = load_model("gpt-oss-120b")
    ops = expert_glu_clamp_ops(oss, 65_536, 2880)
    assert sum(o.bytes_moved for o in ops if o.phase == Phase.fwd) == 4 * 65_536 * 5_760 * 2 == 3_019_898_880
    assert sum(o.bytes_moved for o in ops if o.phase != Phase.fwd) == 5 * 65_536 * 5_760 * 2
    assert all(o.module == "moe_act" for o in ops)  # recomputed with moe_act
    assert expert_glu_clamp_ops(load_model("Qwen3-30B-A3B"), 65_536, 768) == []


def test_fused_grouped_mlp_drops_the_eager_passes():
    oss = load_model("gpt-oss-120b")
    eager = moe_ops(oss, JOB, RECIPE)
    fused = moe_ops(oss, JOB, RECIPE, fused_grouped_mlp=True)
    assert len(eager) - len(fused) == 4  # clamp + cat and the output bias, forward and backward each
    assert sum(o.bytes_moved for o in eager) > sum(o.bytes_moved for o in fused)


def test_one_host_sync_per_forward_priced_like_the_dispatchers():
    oss, prof = load_model("gpt-oss-120b"), load_profile("gb200-nvl72")
    assert expert_activation_host_syncs(oss) == 1 and expert_activation_host_syncs(load_model("Qwen3-30B-A3B")) == 0
    sync_s = prof.calibration.moe_dispatch_overhead_us * 1e-6
    eager = layer_parts(oss, JOB, RECIPE, PLACE, prof, LayerKind.moe)
    fused = layer_parts(oss, JOB, RECIPE, PLACE, prof, LayerKind.moe, fused_grouped_mlp=True)
    no_fused_ops = layer_parts(oss, JOB, RECIPE, PLACE, prof, LayerKind.moe, cuda_graph_scope=frozenset({"moe"}))
    clamp_fwd_s = eager.fwd_by_module_s["moe_act"] - no_fused_ops.fwd_by_module_s["moe_act"]
    assert clamp_fwd_s == pytest.approx(sync_s)  # a captured MoE block keeps the clamp, loses the sync
    assert eager.fwd_s - no_fused_ops.fwd_s == pytest.approx(sync_s)
    # the sync is in the forward and under moe_act, so selective recompute of moe_act pays it again
    recompute = RECIPE.model_copy(update={"recompute": Recompute(granularity="selective", modules=["moe_act"])})
    m = 5  # micro-batches
    with_sync = layer_cost(oss, JOB, recompute, PLACE, prof, LayerKind.moe, num_microbatches=m).recompute_selective
    captured = layer_cost(oss, JOB, recompute, PLACE, prof, LayerKind.moe, num_microbatches=m,
                          cuda_graph_scope=frozenset({"moe"})).recompute_selective
    assert with_sync - captured == pytest.approx(sync_s)
    assert fused.fwd_by_module_s.get("moe_act", 0.0) < eager.fwd_by_module_s["moe_act"] - sync_s


def test_published_presets_carry_the_fused_grouped_mlp():
    by_id = {c.id: c for c in load_all()[0]}
    # Megatron-Bridge 26.06 GB200 MXFP8 V2 preset: cutedsl_fused_grouped_mlp True; 26.08 perf recipe:
    # use_transformer_engine_op_fuser = True (perf_recipes/gpt_oss/common.py); BF16 presets: off
    assert by_id["MBR-045"].fused_grouped_mlp and by_id["MBR-005"].fused_grouped_mlp
    assert not by_id["MBR-139"].fused_grouped_mlp and not by_id["MBR-046"].fused_grouped_mlp
    assert by_id["MBR-045"].run_options()["fused_grouped_mlp"] is True


@pytest.mark.parametrize("fmt,suffix", [("primus", ".yaml"), ("bridge", ".yaml")])
def test_stack_configs_state_the_gate_and_check_like_the_recipe(tmp_path, fmt, suffix):
    """Bridge: gated_linear_unit with activation_func megatron.core.fusions.fused_bias_geglu.quick_gelu (what
    Megatron-Bridge's gpt-oss bridge sets), read back as --quick-geglu; Primus: Megatron's own argument names."""
    case = Case(model=load_model("gpt-oss-120b"), job=JobSpec(seq_length=4096, global_batch_size=128),
                recipe=Recipe(tp=1, ep=8), placement=Placement(hardware="b200", num_nodes=1, gpus_per_node=8))
    path = tmp_path / f"config{suffix}"
    path.write_text(render_script(case, fmt))
    loaded = load_check_input(str(path), "b200", 1, 8)
    assert loaded.unknown_flags == []
    m = loaded.case.model
    assert (m.activation, m.glu_clamp, m.glu_linear_offset) == (Activation.quick_geglu, 7.0, 1.0)
    assert check_and_project(loaded)["json"]["projection"] == check_and_project(LoadedCase(case=case))["json"]["projection"]


@pytest.mark.parametrize("fmt", ["bridge-overrides"])
def test_formats_that_cannot_state_the_gate_refuse(fmt):
    case = Case(model=load_model("gpt-oss-120b"), job=JobSpec(seq_length=4096, global_batch_size=128),
                recipe=Recipe(tp=1, ep=8), placement=Placement(hardware="b200", num_nodes=1, gpus_per_node=8))
    with pytest.raises(RenderError, match="quick"):
        render_script(case, fmt)


def test_clamped_gate_keeps_a_second_copy_of_fc1_output_unless_recomputed():
    """Memory: the fused function saves the concatenation while the clamps keep FC1's output: routed tokens x 2 ffn
    x 2 B more per MoE layer (65,536 x 5,760 x 2 = 754,974,720 B at EP 64, MBS 4), gone under moe_act recompute."""
    from constraints.memory.activations import layer_terms, shape_of
    sh = shape_of(JOB, RECIPE)
    assert layer_terms(load_model("gpt-oss-120b"), sh, True)["expert_glu_clamp_output"] == 65_536 * 5_760 * 2 == 754_974_720
    assert layer_terms(load_model("Qwen3-30B-A3B"), sh, True)["expert_glu_clamp_output"] == 0


def test_megatron_flag_precedence_and_refusals():
    from constraints.megatron.argv_to_specs import parse_megatron_args
    from constraints.megatron.errors import MegatronArgsError
    base = ("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
            "--micro-batch-size 1 --global-batch-size 8 --vocab-size 100 --bf16").split()
    # argument_utils.py: --squared-relu is tested before --quick-geglu; the clamp is ignored off a gated unit
    p = parse_megatron_args(base + ["--squared-relu", "--quick-geglu", "--activation-func-clamp-value", "7"])
    assert p.model.activation == Activation.squared_relu and p.model.glu_clamp is None
    with pytest.raises(MegatronArgsError, match="--swiglu with --squared-relu or --quick-geglu"):
        parse_megatron_args(base + ["--swiglu", "--quick-geglu"])
    # without the fusion the experts run Megatron's eager glu(), which is not priced: said, not dropped
    assert "--no-bias-gelu-fusion" in parse_megatron_args(base + ["--quick-geglu", "--no-bias-gelu-fusion"]).unknown_flags
