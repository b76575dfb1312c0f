"""Per-layer attention variants: sliding windows (gpt-oss, Mistral) and Llama 4's NoPE layers, interleaved MoE and
shared expert. Windows change core attention's work only (tile-granular, as FlashAttention computes it), never memory
nor Megatron's reported FLOPs; the flags read and render as Megatron spells them."""
import pytest

from constraints.megatron.argv_to_specs import parse_megatron_args
from constraints.memory import activations as act
from constraints.models.load import load_model
from constraints.models.window import causal_pairs, flags_from_skip_freq, mean_pair_fraction, tile_pairs
from constraints.spec import JobSpec, Recipe
from measure.kernels.layer_ops import attention_ops
from measure.projection.flops import megatron_flops
from templates.recipe_args import recipe_to_megatron_args


def test_pair_counts_exact_and_tile_granular():
    assert causal_pairs(8, None) == 36 and causal_pairs(8, 2) == 1 + 2 + 3 * 6  # query i sees min(i, 2) + 1 keys
    assert causal_pairs(8, 100) == 36
    # 64 query tiles of 128: full causal touches 64*65/2 tiles; a 127-token window touches 1 + 2*63 (the band cuts two)
    assert tile_pairs(8192, None) == 2080 * 128 * 128 and tile_pairs(8192, 127) == 127 * 128 * 128


def test_gpt_oss_windows_alternate_like_megatron_bridge():
    """Megatron-Bridge GPTOSSBridge: window_size (sliding_window - 1, 0) = (127, 0), window_attn_skip_freq 2; Megatron's
    is_layer_window_attention: layer numbers from 1, layer % 2 != 0 is windowed, so HF's layer 0 (sliding) is."""
    m = load_model("gpt-oss-120b")
    assert m.window_size == 127 and m.window_layers == flags_from_skip_freq(2, 36) and m.window_layers[:2] == (True, False)
    argv = recipe_to_megatron_args(m, JobSpec(seq_length=8192, global_batch_size=64), Recipe(tp=1, ep=8))
    i = argv.index("--window-size")
    assert argv[i:i + 4] == ["--window-size", "(127,0)", "--window-attn-skip-freq", "2"]
    back = parse_megatron_args(argv, world_size=8).model
    assert (back.window_size, back.window_layers) == (m.window_size, m.window_layers)


def test_window_scales_core_attention_only():
    m = load_model("gpt-oss-120b")
    full = m.model_copy(update={"window_size": None, "window_layers": None})
    job, recipe = JobSpec(seq_length=8192, global_batch_size=8), Recipe(tp=2, sequence_parallel=True)
    core = {k: [p.flops for p in attention_ops(x, job, recipe) if p.module == "core_attn"] for k, x in (("w", m), ("f", full))}
    share = (18 * 127 + 18 * 2080) / (36 * 2080)
    assert mean_pair_fraction(m, 8192) == pytest.approx(share)
    # core attention is priced by tile steps, with one fixed step for each of the 64 query tiles
    # (measure/kernels/attention_tiles.py): (mean tiles + 64) / (2080 + 64) of the full model's
    steps = ((18 * 127 + 18 * 2080) / 36 + 64) / (2080 + 64)
    assert core["w"] == pytest.approx([f * steps for f in core["f"]])
    others = {k: [p.flops for p in attention_ops(x, job, recipe) if p.module != "core_attn"] for k, x in (("w", m), ("f", full))}
    assert others["w"] == others["f"]
    sh = act.shape_of(job, recipe)
    assert act.layer_terms(m, sh, True) == act.layer_terms(full, sh, True)  # flash attention saves the same tensors
    assert megatron_flops(m, 8192, 8, 201088) == megatron_flops(full, 8192, 8, 201088)  # Megatron's count ignores windows


def test_mistral_window_covers_short_sequences():
    m = load_model("Mistral-7B-v0.1")
    assert m.window_size == 4095 and m.window_layers is None
    assert mean_pair_fraction(m, 4096) == 1.0 and mean_pair_fraction(m, 32768) < 0.3


def test_llama4_moe_interleave_shared_expert_and_nope_layers():
    scout, maverick = load_model("Llama-4-Scout-17B-16E"), load_model("Llama-4-Maverick-17B-128E")
    assert scout.num_moe_layers == 48 and maverick.layer_is_moe[:4] == (False, True, False, True)  # HF moe_layers 1, 3, ...
    assert (scout.ffn_hidden_size, scout.moe_ffn_hidden_size, scout.moe_shared_expert_intermediate_size) == (16384, 8192, 8192)
    assert scout.no_rope_layers == tuple((i + 1) % 4 == 0 for i in range(48)) and scout.qk_l2_norm
    argv = recipe_to_megatron_args(maverick, JobSpec(seq_length=8192, global_batch_size=64), Recipe(ep=64))
    assert argv[argv.index("--no-rope-freq") + 1] == "4"
    assert argv[argv.index("--moe-layer-freq") + 1].startswith("([0]*1+[1]*1")  # Megatron's int N would put MoE on 0, 2, ...
    back = parse_megatron_args(argv, world_size=64).model
    assert (back.layer_is_moe, back.no_rope_layers) == (maverick.layer_is_moe, maverick.no_rope_layers)


def test_no_rope_freq_list_and_int_read_like_transformer_config():
    base = ["--num-layers", "8", "--hidden-size", "512", "--num-attention-heads", "8", "--seq-length", "1024",
            "--max-position-embeddings", "1024", "--vocab-size", "1000", "--micro-batch-size", "1", "--global-batch-size", "8",
            "--bf16", "--use-rotary-position-embeddings"]
    four = parse_megatron_args(base + ["--no-rope-freq", "4"]).model.no_rope_layers
    listed = parse_megatron_args(base + ["--no-rope-freq", "([0]*3+[1]*1)*2"]).model.no_rope_layers
    assert four == listed == (False, False, False, True) * 2
