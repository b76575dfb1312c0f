"""Whole-job magnitude bounds: the model's training state and the job's activations must stay inside the
integer range the memory model and the CP-SAT model compute in.

Why: per-rank bytes are exact integers held in numpy int64 and passed to CP-SAT, whose coefficients must stay
below 2**62 (OR-Tools `cp_model` bounds); numpy wraps silently past 2**63. Every per-rank quantity is a share
of a whole-job total (parameters times bytes per parameter; activations of every layer for every sample of
the global batch), so bounding the totals at 2**61 bytes (2 EiB, ~10^7 times an 80 GB GPU) keeps every
per-rank sum of a few terms in range. Each field's own bound (constraints/spec.py) is not enough on its
own: a 2**20 hidden size times 2**16 experts times 4096 layers is 2**71 parameters.

The estimates are upper bounds, not the memory model: they only decide whether the exact arithmetic can run.
"""
from __future__ import annotations

from typing import Optional, Protocol


class ModelSizes(Protocol):
    """The model fields the bounds read (constraints.spec.ModelSpec has them all). A protocol here, not the spec's
    class: ModelSpec's own validator calls magnitude_error, so this module sits below constraints/spec.py."""

    name: str
    num_layers: int
    mtp_num_layers: int
    hidden_size: int
    ffn_hidden_size: int
    num_attention_heads: int
    kv_channels: int
    vocab_size: int
    num_experts: Optional[int]
    moe_router_topk: Optional[int]
    moe_ffn_hidden_size: Optional[int]
    moe_shared_expert_intermediate_size: Optional[int]
    q_lora_rank: Optional[int]
    kv_lora_rank: Optional[int]
    qk_head_dim: Optional[int]
    qk_pos_emb_head_dim: Optional[int]
    v_head_dim: Optional[int]


class JobSizes(Protocol):
    """The job fields the activation bound reads (constraints.spec.JobSpec has them)."""

    seq_length: int
    global_batch_size: int


MAX_TOTAL_BYTES = 1 << 61

# Bytes per parameter of mixed-precision Adam training: bf16 weight 2 + fp32 grad 4 + fp32 master and two
# moments 12 (Rajbhandari et al. 2020, ZeRO, sec. 3.1: 16 B, plus Megatron's fp32 main grad = 18 B).
_STATE_BYTES_PER_PARAM = 18


def params_upper_bound(model: ModelSizes) -> int:
    """At least the model's parameter count: every projection at its widest (MLA ranks included), every
    expert and shared expert, embedding and output untied, MTP layers as full layers."""
    h = model.hidden_size
    attn_width = max(model.num_attention_heads * model.kv_channels, h)
    mla = sum(v or 0 for v in (model.q_lora_rank, model.kv_lora_rank, model.qk_head_dim, model.qk_pos_emb_head_dim,
                               model.v_head_dim)) * (h + model.num_attention_heads * 4)
    attention = 4 * h * attn_width + mla
    mlp = 3 * h * model.ffn_hidden_size
    experts = (model.num_experts or 0) * 3 * h * (model.moe_ffn_hidden_size or 0)
    shared = 3 * h * (model.moe_shared_expert_intermediate_size or 0)
    per_layer = attention + mlp + experts + shared + (model.num_experts or 0) * h + 8 * h
    return (model.num_layers + model.mtp_num_layers) * per_layer + 2 * model.vocab_size * h


def activations_upper_bound(model: ModelSizes, job: JobSizes) -> int:
    """More than the activation bytes of every layer for the whole global batch, held at once
    (Korthikanti et al. 2022, Table 2: 34·s·b·h + 5·a·s²·b per layer, widened for the MLP width, top-k
    routed copies and fp32 terms)."""
    s, b = job.seq_length, job.global_batch_size
    topk = model.moe_router_topk or 0
    widest = max(model.ffn_hidden_size, model.moe_ffn_hidden_size or 0)
    per_token = 64 * model.hidden_size * (1 + topk) + 8 * widest * (1 + topk) + 8 * model.num_attention_heads * s
    layers = model.num_layers + model.mtp_num_layers + 2  # + embedding and loss
    return s * b * layers * per_token + 8 * s * b * model.vocab_size


def magnitude_error(model: ModelSizes, job: JobSizes | None = None) -> str | None:
    """One line saying which total is past `MAX_TOTAL_BYTES`, or None when the job is in range."""
    state = params_upper_bound(model) * _STATE_BYTES_PER_PARAM
    if state > MAX_TOTAL_BYTES:
        return (f"model {model.name}: its training state is about {state:.2e} bytes, past the 2**61-byte (2 EiB) range "
                "shardplan computes exact bytes in (no cluster holds it); check hidden_size, ffn sizes, num_experts "
                "and num_layers")
    if job is not None:
        act = activations_upper_bound(model, job)
        if act > MAX_TOTAL_BYTES:
            return (f"job: seq_length {job.seq_length} x global_batch_size {job.global_batch_size} on {model.name} "
                    f"gives activations of about {act:.2e} bytes per step, past the 2**61-byte (2 EiB) range shardplan "
                    "computes exact bytes in; lower seq_length or global_batch_size")
    return None
