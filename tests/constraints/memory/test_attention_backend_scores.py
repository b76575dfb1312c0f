"""`--attention-backend local / unfused` store the s x s attention scores: the bytes of each saved tensor, worked by
hand from the sources constraints/memory/attention_scores.py names (Megatron-LM dot_product_attention.py and
fused_softmax.py, Transformer Engine's UnfusedDotProductAttention and softmax.py) and from Korthikanti et al. 2022
(arXiv 2205.05198) Table 2, whose attention block without flash keeps 5as^2b bytes: softmax output 2as^2b, dropout
mask as^2b, dropout output 2as^2b."""
from __future__ import annotations

from constraints.memory import activations as act
from constraints.memory.attention_scores import batches_per_block
from constraints.spec import AttentionBackend, JobSpec, ModelSpec, Recipe, Recompute, RecomputeGranularity, RecomputeModule

# a GPT-3 1.3B-shaped layer (Korthikanti's notation: h hidden, a heads, s sequence, b micro-batch)
H, A, D = 2048, 16, 128


def _model(groups: int = A, attention_dropout: float = 0.0, **extra) -> ModelSpec:
    return ModelSpec(name="t", num_layers=2, hidden_size=H, num_attention_heads=A, num_query_groups=groups,
                     kv_channels=D, ffn_hidden_size=4 * H, vocab_size=32000, max_position_embeddings=16384,
                     attention_dropout=attention_dropout,
                     hidden_dropout=0.0, **extra)


def _terms(model: ModelSpec, s: int, b: int = 1, **recipe) -> dict[str, int]:
    sh = act.shape_of(JobSpec(seq_length=s, global_batch_size=64), Recipe(mbs=b, **recipe))
    return act.layer_terms(model, sh, False)


def _kept(model: ModelSpec, s: int, modules=(), **recipe) -> int:
    r = Recipe(recompute=Recompute(granularity=RecomputeGranularity.selective, modules=modules), **recipe) if modules \
        else Recipe(**recipe)
    return act.layer_bytes(model, act.shape_of(JobSpec(seq_length=s, global_batch_size=64), r), False, r)


SCORE_KEYS = ("attn_softmax_output", "attn_probs_bf16", "attn_probs_dropout_mask", "attn_probs_dropout_output",
              "attn_causal_mask")


def _scores(terms: dict[str, int]) -> int:
    return sum(terms.get(k, 0) for k in SCORE_KEYS)


def test_local_with_dropout_keeps_korthikantis_5as2b_and_flash_keeps_none_of_it():
    # s = 2048 <= 4096, b*a = 16 (a multiple of 4 and of the 4 batches per block): Megatron's fused causal softmax
    # kernel runs and keeps its bf16 output; dropout 0.1 adds the mask and the dropout output: 5 * a * s^2 * b
    s, b = 2048, 1
    local = _terms(_model(attention_dropout=0.1), s, b, attention_backend=AttentionBackend.local)
    assert _scores(local) == 5 * A * s * s * b == 335_544_320
    assert (local["attn_softmax_output"], local["attn_probs_dropout_mask"], local["attn_probs_dropout_output"]) == (
        2 * A * s * s, A * s * s, 2 * A * s * s)
    assert "softmax_stats" not in local  # no flash log-sum-exp
    flash = _terms(_model(attention_dropout=0.1), s, b)
    assert _scores(flash) == 0 and flash["softmax_stats"] == 4 * s * b * A  # fp32 LSE per head and token
    # everything else of the layer is the same tensors: the difference is exactly 5as^2b - the LSE
    assert sum(local.values()) - sum(flash.values()) == 5 * A * s * s * b - 4 * s * b * A


def test_without_dropout_only_the_softmax_output_is_kept_and_tp_splits_the_heads():
    s, b, tp = 2048, 2, 4  # b * a/t = 8 heads: still a multiple of 4
    local = _terms(_model(), s, b, tp=tp, attention_backend=AttentionBackend.local)
    assert _scores(local) == local["attn_softmax_output"] == 2 * b * (A // tp) * s * s == 67_108_864


def test_torch_softmax_in_fp32_keeps_the_fp32_output_and_its_bf16_cast():
    # --no-masked-softmax-fusion forces the torch path: fp32 softmax output 4 B + the bf16 cast the PV matmul keeps 2 B
    s = 2048
    model = _model()
    fp32 = _terms(model, s, attention_backend=AttentionBackend.local, masked_softmax_fusion=False,
                  attention_softmax_in_fp32=True)
    assert (fp32["attn_softmax_output"], fp32["attn_probs_bf16"]) == (4 * A * s * s, 2 * A * s * s)
    # with dropout the bf16 cast only feeds the dropout (which keeps its mask, not its input): 4 + 1 + 2 bytes
    drop = _terms(_model(attention_dropout=0.1), s, attention_backend=AttentionBackend.local,
                  masked_softmax_fusion=False, attention_softmax_in_fp32=True)
    assert _scores(drop) == 7 * A * s * s
    # the fused kernel runs whatever --attention-softmax-in-fp32 says and keeps 2 B per score
    fused = _terms(model, s, attention_backend=AttentionBackend.local, attention_softmax_in_fp32=True)
    assert _scores(fused) == 2 * A * s * s
    # torch path in bf16 (no fp32 flag): the bf16 output is kept once
    bf16 = _terms(model, s, attention_backend=AttentionBackend.local, masked_softmax_fusion=False)
    assert _scores(bf16) == 2 * A * s * s


def test_megatron_fused_kernel_limits_sequence_and_batches_per_block():
    model = _model()
    # s = 8192 > 4096: Megatron's kernel does not apply; with the fp32 flag: 4 + 2 bytes per score
    long = _terms(model, 8192, attention_backend=AttentionBackend.local, attention_softmax_in_fp32=True)
    assert _scores(long) == 6 * A * 8192 * 8192
    # s = 128: 8 batches per block (two rows a warp); b * a/t = 1 * 16/4 = 4 is not a multiple -> torch path
    assert [batches_per_block(n) for n in (32, 64, 128, 129, 4096)] == [8, 8, 8, 4, 4]
    short = _terms(model, 128, tp=4, attention_backend=AttentionBackend.local, attention_softmax_in_fp32=True)
    assert _scores(short) == 6 * 4 * 128 * 128


def test_local_gqa_keeps_k_and_v_expanded_to_every_query_head():
    # 16 heads, 4 groups, TP 2: 8 query heads and 2 K/V groups per rank; repeat_interleave keeps K and V at 8 heads
    s, tp, g = 2048, 2, 4
    local = _terms(_model(groups=g), s, tp=tp, attention_backend=AttentionBackend.local)
    flash = _terms(_model(groups=g), s, tp=tp)
    assert (local["q_k"], local["v"]) == (flash["q_k"], flash["v"])  # Q, K, V as flash keeps them ...
    assert local["attn_kv_expanded"] == 2 * 2 * s * (A // tp - g // tp) * D == 6_291_456  # ... plus the expansion


def test_unfused_te_softmax_is_fp32_on_the_torch_path_and_keeps_its_causal_mask():
    # TE's fused kernel needs s < 16384: at s = 16384 the torch softmax runs in fp32 (always, in TE), its bf16 cast
    # is kept by the PV matmul, and the causal mask built each call (bool, s x s) is kept by masked_fill_
    s, tp = 16384, 8
    unfused = _terms(_model(), s, tp=tp, attention_backend=AttentionBackend.unfused)
    per_rank = (A // tp) * s * s
    assert (unfused["attn_softmax_output"], unfused["attn_probs_bf16"], unfused["attn_causal_mask"]) == (
        4 * per_rank, 2 * per_rank, s * s)
    # TE's kernel applies at 8192 (< 16384, a multiple of 8) with b * a/t = 4: 2 B per score, no mask kept, and
    # Megatron's --attention-softmax-in-fp32 is not read; at TP 8 (b * a/t = 2, not a multiple of 4) it does not
    fused = _terms(_model(), 8192, tp=4, attention_backend=AttentionBackend.unfused, attention_softmax_in_fp32=True)
    assert _scores(fused) == fused["attn_softmax_output"] == 2 * 4 * 8192 * 8192
    torch_path = _terms(_model(), 8192, tp=8, attention_backend=AttentionBackend.unfused)
    assert _scores(torch_path) == (4 + 2) * 2 * 8192 * 8192 + 8192 * 8192


def test_core_attn_recompute_drops_the_scores_and_the_expansion():
    model = _model(groups=4, attention_dropout=0.1)
    for backend in (AttentionBackend.local, AttentionBackend.unfused):
        recomputed = _kept(model, 2048, (RecomputeModule.core_attn,), attention_backend=backend)
        # what is left is what flash keeps under the same recompute (Q, K, V and the rest of the layer)
        assert recomputed == _kept(model, 2048, (RecomputeModule.core_attn,))
        assert _kept(model, 2048, attention_backend=backend) > recomputed + 5 * A * 2048 * 2048 - 1
