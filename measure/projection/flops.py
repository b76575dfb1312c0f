"""Model FLOPs per iteration exactly as Megatron-LM counts them, so MFU and TFLOP/s/GPU compare with
published numbers (NVIDIA's "Model TFLOP/s/GPU" is this count divided by step time and GPUs).

Source: `num_floating_point_operations` / `transformer_flops` in megatron/training/training.py
(NVIDIA/Megatron-LM, main as of 2026-08): every GEMM counted 3x (fwd, dgrad, wgrad) at 2 FLOPs per
multiply-add; causal core attention counted at half the s^2 score matrix; no recompute; logits over the
padded vocabulary once per output head (1 + MTP depth). Norms, softmax and element-wise work are not
counted except the MLA "+1" norm terms and the MTP norm terms Megatron includes. The gated-MLP factor follows
Megatron-Bridge's `gated_linear_unit` (flop_utils.py), which the published rows report: Megatron-LM's own count
tests `args.swiglu`, so for `--quick-geglu` (gpt-oss) its log counts the MLP as ungated (2 matrices, not 3).
"""
from __future__ import annotations

from constraints.spec import JobSpec, ModelSpec, Recipe
from measure.kernels.layer_ops import padded_vocab

FWD_BWD = 3  # fwd + dgrad + wgrad (training.py: forward_backward_expansion_factor)
FMA = 2  # 2 FLOPs per multiply-add (training.py: fma_expansion_factor)


def _attention_per_token(m: ModelSpec) -> tuple[float, float]:
    """(token-linear FLOPs per token, core-attention FLOPs per token per unit of sequence length)."""
    nh = m.num_attention_heads
    if m.multi_latent_attention:
        dqk = m.qk_head_dim + m.qk_pos_emb_head_dim
        if m.q_lora_rank is None:
            q_term = m.hidden_size * nh * dqk
        else:
            q_term = m.q_lora_rank * (m.hidden_size + nh * dqk + 1)
        linear = FWD_BWD * FMA * (
            q_term
            + m.kv_lora_rank * (m.hidden_size + nh * (m.qk_head_dim + m.v_head_dim) + 1)
            + m.hidden_size * m.qk_pos_emb_head_dim
            + nh * m.v_head_dim * m.hidden_size
        )
        core = FWD_BWD * FMA * (nh * dqk / 2 + nh * m.v_head_dim / 2)
        return linear, core
    q = m.kv_channels * nh
    kv = m.kv_channels * m.num_query_groups
    linear = FWD_BWD * FMA * (m.hidden_size * (q + 2 * kv) + q * m.hidden_size)
    core = FWD_BWD * FMA * q / 2 * 2  # causal half, QK^T and PV
    return linear, core


def hybrid_flops(model: ModelSpec, seq_length: int, global_batch_size: int, padded_vocab_size: int) -> float:
    """Megatron's `hybrid_flops` (training.py num_floating_point_operations, is_hybrid_model): per layer kind of
    --hybrid-layer-pattern, forward FLOPs times 3. Its Mamba term takes d_inner = 2h whatever the head count
    (mamba_layer_flops), and the scan as 7 T d_inner N; mirrored as written, so TFLOP/s compare with Megatron's log."""
    m, h = model, model.hidden_size
    T, s2 = global_batch_size * seq_length, global_batch_size * seq_length * seq_length
    # get_hybrid_layer_counts: the main pattern's layers, plus the MTP pattern's once per depth
    counts = {sym: m.hybrid_layer_pattern.count(sym) + m.mtp_num_layers * (m.mtp_hybrid_pattern or "").count(sym) for sym in "M*-E"}
    scale = 1.5 if m.activation.gated else 1.0
    p = m.kv_channels * m.num_attention_heads / h
    attn = 4 * T * h * p * (h + h * (m.num_query_groups / m.num_attention_heads)) + 2 * s2 * h * p
    mlp = 4 * scale * T * h * m.ffn_hidden_size
    moe = 0.0
    if m.is_moe:
        # moe_layer_flops: routed experts in the latent width of a latent MoE, plus its two projections 4 T h L
        moe = 4 * T * m.moe_expert_width * m.moe_ffn_hidden_size * m.moe_router_topk * scale
        moe += 4 * T * h * (m.moe_latent_size or 0)
        moe += 4 * T * h * (m.moe_shared_expert_intermediate_size or 0) * scale
    mamba = 0.0
    if counts["M"]:
        d_in, g, n, heads = 2 * h, m.mamba_num_groups, m.mamba_state_dim, m.mamba_num_heads
        mamba = 2 * T * h * (2 * d_in + 2 * g * n + heads) + 7 * T * d_in * n + 2 * T * d_in * h
    fwd = (counts["*"] * attn + counts["-"] * mlp + counts["M"] * mamba + counts["E"] * moe
           + 2 * T * h * padded_vocab_size * (1 + m.mtp_num_layers))
    return float(3 * fwd)


def megatron_flops(model: ModelSpec, seq_length: int, global_batch_size: int, padded_vocab_size: int) -> float:
    """FLOPs of one iteration (one global batch), Megatron's `transformer_flops` for BSHD inputs (`hybrid_flops`
    for a hybrid model)."""
    if model.is_hybrid:
        return hybrid_flops(model, seq_length, global_batch_size, padded_vocab_size)
    m = model
    pattern = m.moe_layers
    num_moe = sum(pattern) if m.is_moe else 0
    num_dense = m.num_layers - num_moe
    topk = m.moe_router_topk if m.is_moe else 0
    mtp = m.mtp_num_layers
    last_is_moe = 1 if (m.is_moe and pattern[-1]) else 0
    num_moe += last_is_moe * mtp
    num_dense += (1 - last_is_moe) * mtp
    num_layers = m.num_layers + mtp
    ffn_factor = 3 if m.activation.gated else 2
    moe_ffn = m.moe_ffn_hidden_size or m.ffn_hidden_size
    shared = m.moe_shared_expert_intermediate_size or 0
    attn_linear, attn_core = _attention_per_token(m)
    tokens = global_batch_size * seq_length
    # a latent MoE's routed experts run in its latent width L (expert term scaled by L / h) plus its two
    # projections 2 L per token per MoE layer (transformer_flops, moe_latent_size)
    latent = m.moe_latent_size or 0
    routed = moe_ffn * topk * ffn_factor * (latent / m.hidden_size if latent else 1) + 2 * latent
    per_token = (
        FWD_BWD * FMA * m.hidden_size * (
            m.ffn_hidden_size * ffn_factor * num_dense
            + routed * num_moe
            + shared * ffn_factor * num_moe
        )
        + attn_linear * num_layers
        + FWD_BWD * FMA * mtp * (3 * m.hidden_size + 2 * m.hidden_size * m.hidden_size)
        + FWD_BWD * FMA * m.hidden_size * padded_vocab_size * (mtp + 1)
    )
    return float(tokens * per_token + global_batch_size * seq_length * seq_length * attn_core * num_layers)


def flops_per_iteration(model: ModelSpec, job: JobSpec, recipe: Recipe) -> float:
    """Megatron model FLOPs of one step of this job, vocabulary padded as this recipe's TP pads it."""
    return megatron_flops(model, job.seq_length, job.global_batch_size, padded_vocab(model, recipe))


def flops_per_token(model: ModelSpec, seq_length: int, padded_vocab_size: int) -> float:
    """Model FLOPs per trained token: TFLOP/s/GPU = tokens/s/GPU * this / 1e12."""
    return megatron_flops(model, seq_length, 1, padded_vocab_size) / seq_length
