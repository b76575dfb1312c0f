"""Megatron-LM's own memory estimator, re-derived, for a side-by-side comparison in bench/validate_memory.py.

Source: NVIDIA/Megatron-LM megatron/training/theoretical_memory_usage.py @d98e8a6 (2026-08-22),
`report_theoretical_memory` = `compute_weight_and_optimizer_memory` + (`compute_activation_memory` when
sequence parallel AND selective recompute, else `compute_activation_memory_without_sp`). Re-derived from the
formulas (not copied):
- parameters of the most loaded shard (first pipeline stage: its 1/PP of the layers, one MTP block, the
  embedding): TP-sharded (attention, dense MLP, shared experts, embedding) / TP, replicated (norms, router,
  shared-expert gate) undivided, routed experts / (ETP x EP); plus the untied output layer / TP at PP = 1;
- bytes per parameter 18, or 6 + 12 / DP with the distributed optimizer (dense part over DP = world / (TP PP CP),
  experts over expert-DP = world / (ETP EP PP));
- activations, SP + selective: s b h (18 + 4 ffn / h) per layer x all layers, + 8 s b PP + s b h PP (embedding),
  x (1 + (PP - 1) / (PP VPP)) interleaved or x min(1, M / PP) 1F1B, + s b h 4 (1 + V / h) at PP = 1, all / TP;
- activations otherwise: s b h (10 + 24 / TP) per layer, same embedding and schedule factors, + 2 (s b V / TP + s b h)
  at PP = 1, x 1.05.
What the estimator cannot express is reported as None with the reason: torch FSDP2 / Megatron-FSDP sharding,
hybrid (Mamba) models (Megatron returns nothing for them). It ignores CP, FP8, MoE / MLA activations and full
recompute by construction; those rows are still compared, since that is what a Megatron user would see.
"""
from __future__ import annotations

from typing import Optional

from constraints.memory.in_flight import num_microbatches
from constraints.spec import DataParallelSharding, JobSpec, ModelSpec, Normalization, PipelineSchedule, Recipe, RecomputeGranularity
from measure.kernels.layer_ops import padded_vocab


def _params(model: ModelSpec, recipe: Recipe, world: int, dp: int) -> float:
    """Weight + optimizer bytes of the most loaded shard (compute_weight_and_optimizer_memory)."""
    h = model.hidden_size
    glu = 1.5 if model.activation.gated else 1.0
    norm = 1 if model.normalization == Normalization.rmsnorm else 2
    heads = model.num_attention_heads
    if model.multi_latent_attention:
        qk = (model.qk_head_dim or 0) + (model.qk_pos_emb_head_dim or 0)
        q = h * heads * qk if model.q_lora_rank is None else model.q_lora_rank * (h + heads * qk + norm)
        attn = (q + model.kv_lora_rank * (h + heads * ((model.qk_head_dim or 0) + (model.v_head_dim or 0)) + norm)
                + h * (model.qk_pos_emb_head_dim or 0) + heads * (model.v_head_dim or 0) * h)
    else:
        attn = 2 * h * h * (1 + model.num_query_groups / heads) * (model.kv_channels * heads / h)
    flags = list(model.moe_layers) if model.is_moe else [False] * model.num_layers
    n_moe = sum(flags)
    n_dense = model.num_layers - n_moe
    mtp_moe = model.mtp_num_layers if (model.mtp_num_layers and flags[-1]) else 0
    mtp_dense = model.mtp_num_layers - mtp_moe
    dense_mlp = 2 * h * model.ffn_hidden_size * glu
    shared = 2 * h * (model.moe_shared_expert_intermediate_size or 0) * glu
    routed = 2 * h * (model.moe_ffn_hidden_size or 0) * (model.num_experts or 0) * glu
    norms = 2 * h * norm
    router = (h * model.num_experts + (model.num_experts if model.moe_router_bias else 0)) if model.is_moe else 0
    emb = h * padded_vocab(model, recipe)
    tp_block = (attn + dense_mlp) * n_dense + (attn + shared) * n_moe
    rep_block = norms * n_dense + (norms + router) * n_moe + norm * h
    exp_block = routed * n_moe
    tp_mtp = (attn + dense_mlp) * mtp_dense + (attn + shared) * mtp_moe
    rep_mtp = norms * mtp_dense + (norms + router) * mtp_moe
    exp_mtp = routed * mtp_moe
    etp = recipe.etp or recipe.tp
    tp_shard = (tp_block / recipe.pp + tp_mtp + emb) / recipe.tp
    if not model.tied_embeddings and recipe.pp == 1:
        tp_shard += emb / recipe.tp
    rep_shard = rep_block / recipe.pp + rep_mtp
    exp_shard = (exp_block / recipe.pp + exp_mtp) / (etp * recipe.ep)
    dist = recipe.dp_sharding == DataParallelSharding.distributed_optimizer
    edp = max(world // (etp * recipe.ep * recipe.pp), 1)

    def per_param(d: int) -> float:
        return 6 + 12 / d if dist else 18

    return (tp_shard + rep_shard) * per_param(dp) + exp_shard * per_param(edp)


def _activations(model: ModelSpec, job: JobSpec, recipe: Recipe, m: int) -> float:
    """Activation bytes of the first stage (compute_activation_memory[_without_sp])."""
    s, b, h, tp, pp = job.seq_length, recipe.mbs, model.hidden_size, recipe.tp, recipe.pp
    vocab = padded_vocab(model, recipe)
    interleaved = recipe.schedule == PipelineSchedule.interleaved and recipe.vpp > 1
    selective_sp = recipe.sequence_parallel and recipe.recompute.granularity == RecomputeGranularity.selective
    per_layer = s * b * h * ((18 + 4 * model.ffn_hidden_size / h) if selective_sp else (10 + 24 / tp))
    act = per_layer * model.num_layers + 8 * s * b * pp + s * b * h * pp
    if interleaved:
        act *= 1 + (pp - 1) / (pp * recipe.vpp)
    elif pp > 1:
        act *= min(1, m / pp)
    if selective_sp:
        if pp == 1:
            act += s * b * h * 4 * (1 + vocab / h)
        return act / tp
    if pp == 1:
        act += (s * b * vocab / tp + s * b * h) * 2
    return act * 1.05


def megatron_estimate_bytes(model: ModelSpec, job: JobSpec, recipe: Recipe, world: int) -> tuple[Optional[float], str]:
    """(bytes, "") Megatron's report_theoretical_memory total, or (None, reason) when it cannot express the row."""
    if recipe.dp_sharding not in (DataParallelSharding.distributed_optimizer, DataParallelSharding.none):
        return None, f"dp_sharding {recipe.dp_sharding.value} (the estimator knows DDP and the distributed optimizer only)"
    if getattr(model, "hybrid_layer_pattern", None):
        return None, "hybrid model (Megatron's estimator returns nothing)"
    dp = max(world // (recipe.tp * recipe.pp * recipe.cp), 1)
    m = max(num_microbatches(job.global_batch_size, recipe.mbs, dp), 1)
    return _params(model, recipe, world, dp) + _activations(model, job, recipe, m), ""
