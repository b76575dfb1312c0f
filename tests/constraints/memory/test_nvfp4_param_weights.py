"""--fp4-param-gather weights: the bytes Megatron + Transformer Engine keep per NVFP4 weight (row- and column-wise
E2M1 data, E4M3 scales padded to 128 x 4 tiles, two fp32 amax), which weights are quantised, and the per-rank
weights term. Every expected number below is worked by hand from TE's NVFP4Quantizer.get_scale_shape /
inner_tensor_specs (constraints/memory/nvfp4_weights.py names the sources)."""
from constraints.memory.nvfp4_weights import layer_shapes, nvfp4_tensor_bytes, rank_quantised_weights
from constraints.memory.per_rank import memory_report
from constraints.models.load import load_model
from constraints.models.params import layer_params
from constraints.spec import JobSpec, Recipe

B200_BYTES = 192 * 2**30


def test_one_weight_without_padding():
    """Llama-3.1-8B's fused QKV at TP 1, (6144, 4096): data 2 x 6144*4096/2 = 25,165,824; row-wise scales
    6144 x 256 = 1,572,864; column-wise 4096 x 384 = 1,572,864; amax 2 x 4."""
    assert nvfp4_tensor_bytes(6144, 4096) == 25_165_824 + 1_572_864 + 1_572_864 + 8 == 28_311_560


def test_scale_tiles_pad_small_dimensions():
    """(48, 4096): row-wise scales pad 48 rows to 128 (128 x 256 = 32,768, not 48 x 256); column-wise scales pad
    ceil(48/16) = 3 columns to 4 (4096 x 4 = 16,384)."""
    assert nvfp4_tensor_bytes(48, 4096) == 196_608 + 32_768 + 16_384 + 8
    # (2048, 96), a Qwen3-30B-A3B expert fc2 at expert-TP 8: row-wise 2048 x round_up(6, 4) = 16,384; column-wise
    # round_up(96, 128) x 128 = 16,384
    assert nvfp4_tensor_bytes(2048, 96) == 196_608 + 16_384 + 16_384 + 8


def test_llama_layer_at_one_and_one_eighth_bytes_per_weight():
    """A Llama-3.1-8B layer at TP 1: QKV 28,311,560 + proj (4096, 4096) 18,874,376 + fc1 (28672, 4096)
    132,120,584 + fc2 (4096, 14336) 66,060,296 = 245,366,816 B for 218,103,808 weights (1.125 B each + 32 B of amax),
    against 436,207,616 B in bf16."""
    model = load_model("Llama-3.1-8B")
    assert layer_shapes(model, False, 1, 1, 1) == [(6144, 4096, 1), (4096, 4096, 1), (28672, 4096, 1), (4096, 14336, 1)]
    q = rank_quantised_weights(model, [0], 1, 1, 1)
    assert (q.elements, q.nvfp4_bytes) == (218_103_808, 245_366_816)
    # only the norms stay out: the layer's parameters are the linears plus two RMSNorm weights
    assert layer_params(model, False).total - q.elements == 2 * 4096


def test_local_experts_are_quantised_and_the_router_is_not():
    """Qwen3-30B-A3B at EP 8: 16 local experts, each fc1 (1536, 2048) 3,538,952 B and fc2 (2048, 768) 1,769,480 B."""
    model = load_model("Qwen3-30B-A3B")
    shapes = layer_shapes(model, True, 1, 8, 1)
    assert shapes[2:] == [(1536, 2048, 16), (2048, 768, 16)]
    assert nvfp4_tensor_bytes(1536, 2048) == 3_145_728 + 196_608 + 196_608 + 8
    assert nvfp4_tensor_bytes(2048, 768) == 1_572_864 + 98_304 + 98_304 + 8
    lp = layer_params(model, True)
    q_all = rank_quantised_weights(model, [0], 1, 1, 1)
    router = 2048 * 128
    assert lp.total - q_all.elements == router + 2 * 2048 + 2 * 128  # router, two norms, q/k head norms


def test_hybrid_layers_quantise_in_and_out_projections_only():
    """Nemotron-H-8B: a Mamba layer's in_proj (2*8192 + 2*8*128 + 128 = 18,560 rows, 4096) and out_proj
    (4096, 8192); its conv, dt_bias, A_log, D and gated norm stay bf16."""
    model = load_model("Nemotron-H-8B-Base-8K")
    assert layer_shapes(model, "M", 1, 1, 1) == [(18560, 4096, 1), (4096, 8192, 1)]
    assert layer_shapes(model, "M", 4, 1, 1) == [(4640, 4096, 1), (4096, 2048, 1)]


def test_weights_term_with_fp4_param_gather():
    """Llama-3.1-8B, NVFP4, one B200 rank holding all 32 layers (TP = PP = 1, distributed optimizer): the weights
    term drops by 32 x (436,207,616 - 245,366,816) = 6,106,905,600 B with --fp4-param-gather; gradients and
    optimizer state are unchanged (fp32 main grads, fp32 master in the optimizer)."""
    model = load_model("Llama-3.1-8B")
    job = JobSpec(seq_length=4096, global_batch_size=8, precision="nvfp4")
    plain = memory_report(model, job, Recipe(), 8, B200_BYTES)
    packed = memory_report(model, job, Recipe(fp4_param_gather=True), 8, B200_BYTES)
    assert plain.terms["weights"] - packed.terms["weights"] == 32 * (436_207_616 - 245_366_816) == 6_106_905_600
    for term in ("gradients", "optimizer_state", "activations"):
        assert plain.terms[term] == packed.terms[term]


def test_fp4_param_gather_without_fp4_training_changes_nothing():
    """The flag without --fp4-format is Megatron's refusal (rule fp4_param_gather); memory then prices bf16."""
    model = load_model("Llama-3.1-8B")
    job = JobSpec(seq_length=4096, global_batch_size=8)
    a = memory_report(model, job, Recipe(), 8, B200_BYTES).terms["weights"]
    assert memory_report(model, job, Recipe(fp4_param_gather=True), 8, B200_BYTES).terms["weights"] == a
