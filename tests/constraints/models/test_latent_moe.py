"""Latent MoE (Nemotron 3 Super, Megatron --moe-latent-size) end to end: parameters as HF's NemotronHMoE and
Megatron's theoretical_memory_usage.py count them, saved activations and dispatch buffers in the latent width,
NVFP4 weight shapes, Megatron's FLOP count (training.py hybrid_flops / transformer_flops), the kernels, and the flag
read and rendered back. Exact totals against HF on the meta device: tests/constraints/models/test_params.py; the shared-expert-overlap
refusal's legal / illegal pair: tests/constraints/rules/test_rules.py."""
from constraints.megatron.argv_to_specs import parse_megatron_args
from constraints.memory import activations as act
from constraints.memory.nvfp4_weights import layer_shapes
from constraints.memory.per_rank import comm_buffer_bytes
from constraints.models.latent_moe import latent_projection_params
from constraints.models.load import load_model
from constraints.models.params import LayerParams, layer_params, param_counts
from constraints.spec import JobSpec, Recipe
from measure.kernels.layer_ops import LayerKind, layer_ops
from measure.projection.flops import megatron_flops
from templates.recipe_args import recipe_to_megatron_args

SUPER = "Nemotron-3-Super-120B-A12B"


def test_moe_layer_parameters():
    """One Super MoE layer (h 4096, L 1024, 512 experts of ffn 2688 with squared ReLU, shared 5376): router
    4096 x 512 = 2,097,152 and the projections 2 x 4096 x 1024 = 8,388,608 (Megatron latent_projection_params = 2 h L)
    replicated with the 4096 norm; each expert 1024 x 2688 + 2688 x 1024 = 5,505,024 (HF params_per_routed_expert);
    the shared expert 2 x 4096 x 5376 = 44,040,192 split over TP."""
    model = load_model(SUPER)
    assert model.moe_latent_size == 1024 and model.moe_expert_width == 1024
    assert latent_projection_params(model) == 8_388_608
    assert layer_params(model, "E") == LayerParams(tp_sharded=44_040_192, replicated=4096 + 2_097_152 + 8_388_608,
                                                   experts=512 * 5_505_024, per_expert=5_505_024)


def test_without_the_latent_size_the_experts_would_be_h_wide():
    """The same config read as a plain MoE: experts 4096 wide (4 x the expert parameters), no projections."""
    model = load_model(SUPER)
    plain = model.model_copy(update={"moe_latent_size": None})
    assert layer_params(plain, "E").per_expert == 2 * 4096 * 2688
    assert param_counts(model).total - param_counts(plain).total == 40 * (8_388_608 - 512 * 3 * 1024 * 2688 * 2)


def test_saved_activations_and_dispatch_buffers_are_latent_wide():
    """Super, seq 8192, MBS 1, TP 1: 8192 x 22 = 180,224 routed copies, each 1024 wide in bf16 (369,098,752 B for the
    expert fc1 input; the experts' fc2 output is not kept, see constraints/memory/activations.py); fc2_latent_proj keeps its
    8192 x 1024 input (16,777,216 B);
    fc1_latent_proj's bf16 input is the router's (0 extra), its FP8 copy 8192 x 4096 x 1 B."""
    model = load_model(SUPER)
    sh = act.shape_of(JobSpec(seq_length=8192, global_batch_size=64), Recipe())
    terms = act.layer_terms(model, sh, "E")
    assert terms["expert_fc1_input"] == 2 * 180_224 * 1024 == 369_098_752 and "expert_output" not in terms
    assert (terms["latent_fc2_input"], terms["latent_fc1_input"]) == (16_777_216, 0)
    fp8 = act.shape_of(JobSpec(seq_length=8192, global_batch_size=64, precision="fp8-tensorwise"), Recipe())
    assert act.layer_terms(model, fp8, "E")["latent_fc1_input"] == 8192 * 4096
    # EP dispatch + combine buffers: 2 x 2 B x routed copies x L
    assert comm_buffer_bytes(model, Recipe(ep=8), sh) == 2 * 2 * 180_224 * 1024


def test_nvfp4_weights_of_a_latent_moe_layer():
    """At EP 64 a rank holds 8 experts of (2688, 1024) and (1024, 2688), the two projections whole, and the shared
    expert; the router stays bf16."""
    model = load_model(SUPER)
    assert layer_shapes(model, "E", 1, 64, 1) == [(2688, 1024, 8), (1024, 2688, 8), (1024, 4096, 1), (4096, 1024, 1),
                                                  (5376, 4096, 1), (4096, 5376, 1)]


def test_flops_follow_megatron_latent_formula():
    """training.py moe_layer_flops with moe_latent_size: routed 4 T L ffn k (squared ReLU, scale 1) plus 4 T h L for
    the projections, instead of 4 T h ffn k. Per token and MoE layer the forward differs by
    4 x 2688 x 22 x (1024 - 4096) + 4 x 4096 x 1024 = -709,885,952; x 3 (fwd + bwd) x 41 MoE layers (40 in the
    decoder, one in the release's MTP depth "*E")."""
    model = load_model(SUPER)
    plain = model.model_copy(update={"moe_latent_size": None})
    seq, gbs, vocab = 8192, 2, 131072
    delta = megatron_flops(model, seq, gbs, vocab) - megatron_flops(plain, seq, gbs, vocab)
    assert delta == 3 * 41 * seq * gbs * -709_885_952


def test_flops_of_a_transformer_latent_moe():
    """transformer_flops: the routed term 3 x 2 x h x (ffn k 3 L / h + 2 L) per token per MoE layer (SwiGLU).
    Qwen3-30B-A3B (h 2048, ffn 768, top-8, 48 MoE layers) with L = 512: per token 3 x 2 x (768 x 8 x 3 x 512 +
    2 x 2048 x 512) = 69,206,016 against 3 x 2 x 2048 x 768 x 8 x 3 = 226,492,416 without."""
    model = load_model("Qwen3-30B-A3B")
    latent = model.model_copy(update={"moe_latent_size": 512})
    delta = megatron_flops(latent, 4096, 1, 151936) - megatron_flops(model, 4096, 1, 151936)
    assert delta == 4096 * 48 * (69_206_016 - 226_492_416)


def test_kernels_run_the_experts_and_dispatch_in_the_latent_width():
    model = load_model(SUPER)
    job, recipe = JobSpec(seq_length=8192, global_batch_size=64, precision="bf16"), Recipe(ep=8)
    ops = layer_ops(model, job, recipe, LayerKind.moe_block)
    proj = [p.op.shape for p in ops if p.module == "moe_latent_proj" and p.phase.value == "fwd"]
    assert proj == [(8192, 1024, 4096), (8192, 4096, 1024)]
    experts = [p.op.shape for p in ops if p.op.kind.value == "grouped_gemm" and p.phase.value == "fwd"]
    # (groups, tokens, n, k): fc1 reads L and writes ffn, fc2 reads ffn and writes L
    assert [s[2:] for s in experts] == [(2688, 1024), (1024, 2688)]


def test_flag_is_read_and_rendered():
    """--moe-latent-size sets the field (TransformerConfig.moe_latent_size) and render writes it back."""
    model = load_model(SUPER)
    job = JobSpec(seq_length=8192, global_batch_size=64)
    argv = recipe_to_megatron_args(model, job, Recipe(ep=8))
    assert argv[argv.index("--moe-latent-size") + 1] == "1024"
    back = parse_megatron_args(argv, world_size=8, entry_point="pretrain_hybrid.py")
    assert back.model.moe_latent_size == 1024
    assert param_counts(back.model).total == param_counts(model).total
    assert "--moe-latent-size" not in recipe_to_megatron_args(load_model("Nemotron-3-Nano-30B-A3B"), job, Recipe(ep=8))


def test_transformer_latent_moe_layer_equals_megatron_theoretical_memory():
    """megatron/training/theoretical_memory_usage.py with moe_latent_size: routed_expert_params =
    2 L ffn E x 1.5 (SwiGLU), latent_projection_params = 2 h L, router h E, attention and norms unchanged. For
    Qwen3-30B-A3B's MoE layer read with L = 512: routed 2 x 512 x 768 x 128 x 1.5 = 150,994,944 (a quarter of the
    603,979,776 at h = 2048), projections 2 x 2048 x 512 = 2,097,152."""
    model = load_model("Qwen3-30B-A3B").model_copy(update={"moe_latent_size": 512})
    h, L, f, E = 2048, 512, 768, 128
    routed = 2 * L * f * E * 3 // 2
    assert routed == 150_994_944
    lp, dense_attn = layer_params(model, True), layer_params(load_model("Qwen3-30B-A3B"), False)
    attention_and_norms = dense_attn.total - (2 * h * 6144 * 3 // 2)  # the dense layer less its SwiGLU MLP
    assert lp.experts == routed
    assert lp.total == attention_and_norms + routed + 2 * h * L + h * E
