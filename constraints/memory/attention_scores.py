"""The s x s attention tensors the unfused backends keep for backward: `--attention-backend local` and `unfused`.

Why its own module: flash / fused attention (Megatron's default `auto`) keeps only Q, K, V, the output and a
per-head fp32 log-sum-exp (constraints/memory/activations.py). The two unfused backends materialise the score matrix,
and what they keep of it depends on which softmax runs, so the rule for each is written out here, once, from
the source (NVIDIA/Megatron-LM @ d98e8a64, NVIDIA/TransformerEngine @ d0067d0d):

local = megatron/core/transformer/dot_product_attention.py DotProductAttention (selected by
  megatron/training/models/gpt.py when attention_backend is local):
  - GQA: K and V are `repeat_interleave`d to every query head before the batched matmuls, which save the
    expanded copies (the unexpanded ones are freed): K and V each hold a/t heads instead of g/t groups;
  - scores = baddbmm(Q, K^T) in bf16 (not saved: the softmax backward needs its output only);
  - megatron/core/fusions/fused_softmax.py FusedScaleMaskSoftmax: the fused CUDA kernel
    (ScaledUpperTriangMaskedSoftmax for the causal mask) runs when masked_softmax_fusion is on (the default;
    off with --no-masked-softmax-fusion), the input is fp16/bf16, 16 < s_k <= 4096, s_q % 4 == 0,
    s_k % 4 == 0, b*np % 4 == 0 and b*np is a multiple of the kernel's batches per block; it saves its
    fp16/bf16 output (2 bytes per score). Otherwise torch softmax saves its output, in fp32 with
    --attention-softmax-in-fp32 (4 bytes; set too by --apply-query-key-layer-scaling, arguments.py), and the
    bf16 cast of it is a second tensor (2 bytes), kept by the PV matmul when there is no dropout;
  - attention dropout > 0: a 1-byte mask and the 2-byte dropout output (which the PV matmul keeps instead of
    the softmax output) — with the 2-byte softmax output this is the 5as^2b of Korthikanti et al. 2022
    (arXiv 2205.05198) Table 2: softmax 2as^2b, dropout mask as^2b, dropout output 2as^2b.
unfused = transformer_engine/pytorch/attention/dot_product_attention/backends.py UnfusedDotProductAttention
  (NVTE_UNFUSED_ATTN=1, set by megatron/core/models/common/language_module/language_module.py for unfused):
  the same expansion, matmuls and dropout; its softmax (.../dot_product_attention/softmax.py
  FusedScaleMaskSoftmax) is always fp32 on the torch path (softmax_in_fp32=True there; Megatron's flag is
  not passed) and its fused kernel needs 16 < s_k < 16384, s_k % 8 == 0, s_q % 4 == 0, b*np % 4 == 0 and
  s_q a multiple of the batches per block (NVTE_MASKED_SOFTMAX_FUSION, default 1, is taken as set). On the
  torch path the causal mask it builds each call (get_full_mask, then logical_or with the cached causal
  mask) is a new bool tensor of s_q x s_k bytes that the in-place masked_fill_ keeps.
Batches per block: softmax.py get_batch_per_block (the formula of the scaled_masked_softmax CUDA extension
Megatron imports): 8 when s_k <= 128, else 4.
fp32 training (no --bf16 / --fp16): Transformer Engine's DotProductAttention disables FlashAttention and FusedAttention
  for a qkv_dtype outside fp16 / bf16 (transformer_engine/pytorch/attention/dot_product_attention/utils.py
  get_attention_backend, "Disabling FlashAttention 2 for unsupported qkv_dtype", "Disabling FusedAttention for
  unsupported qkv_dtype" @ d0067d0d), so the default backend runs UnfusedDotProductAttention, whose fused softmax needs
  fp16 input (softmax.py is_kernel_available: `if not self.input_in_float16: return False`): the torch path, every
  tensor above 4 bytes per element, and no half-precision cast of the probabilities.
Selective `core_attn` recompute checkpoints the core attention from its Q, K, V inputs: everything here is
dropped (constraints/memory/activations.py _DROPPED_BY).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from constraints.spec import AttentionBackend, JobSpec, ModelSpec, Precision, Recipe

# keys of the saved tensors this module adds (core_attn recompute drops them all)
SCORE_TERMS = ("attn_kv_expanded", "attn_softmax_output", "attn_probs_bf16", "attn_probs_dropout_mask",
               "attn_probs_dropout_output", "attn_causal_mask")


@dataclass(frozen=True)
class CoreAttention:
    """What of a recipe and job decides the score tensors (hashable: part of activations.Shape)."""

    backend: AttentionBackend
    batch: int  # micro-batch size b
    seq_q: int  # query tokens per rank (s / CP)
    seq_kv: int  # key tokens (s)
    masked_softmax_fusion: bool
    softmax_in_fp32: bool
    fp32: bool = False  # fp32 training: every tensor here in fp32, the fused softmax never runs (module docstring)


def core_attention_of(job: JobSpec, recipe: Recipe) -> Optional[CoreAttention]:
    """None for the fused backends (nothing here applies); in fp32 training they fall back to TE's unfused attention."""
    fp32 = job.precision == Precision.fp32
    if recipe.local_transformer_impl:  # --transformer-impl local: Megatron's DotProductAttention whatever the backend
        backend = AttentionBackend.local  # (megatron/core/models/backends.py:129-131 LocalSpecProvider.core_attention)
    elif recipe.attention_backend.stores_scores or fp32:
        backend = recipe.attention_backend if recipe.attention_backend.stores_scores else AttentionBackend.unfused
    else:
        return None
    return CoreAttention(backend=backend, batch=recipe.mbs, seq_q=job.seq_length // recipe.cp,
                         seq_kv=job.seq_length, masked_softmax_fusion=recipe.masked_softmax_fusion,
                         softmax_in_fp32=recipe.attention_softmax_in_fp32 or fp32, fp32=fp32)


def batches_per_block(seq_kv: int) -> int:
    """The softmax kernel's batches per CUDA block (TE softmax.py get_batch_per_block, 128 threads, warp 32)."""
    pow2 = 1 << (seq_kv - 1).bit_length()
    warp = min(pow2, 32)
    return (128 // warp) * (2 if pow2 <= 128 else 1)


def fused_softmax_runs(core: CoreAttention, heads_per_rank: int, attention_sinks: bool) -> bool:
    """Whether the fused softmax kernel runs (module docstring: each backend's is_kernel_available, causal mask)."""
    sq, sk, attn_batches = core.seq_q, core.seq_kv, core.batch * heads_per_rank
    if attention_sinks:  # a softmax offset always takes the torch path (SoftmaxOne / the sink column)
        return False
    if core.backend == AttentionBackend.local:
        return (core.masked_softmax_fusion and 16 < sk <= 4096 and sq % 4 == 0 and sk % 4 == 0
                and attn_batches % 4 == 0 and attn_batches % batches_per_block(sk) == 0)
    return (16 < sk < 16384 and sk % 8 == 0 and sq > 1 and sq == sk and sq % 4 == 0 and attn_batches % 4 == 0
            and sq % batches_per_block(sk) == 0)


def score_terms(model: ModelSpec, core: CoreAttention, heads_per_rank: int, groups_per_rank: int) -> dict[str, int]:
    """Bytes of the saved score tensors of one layer for one micro-batch (keys: SCORE_TERMS), and the extra bytes
    of K and V expanded from `groups_per_rank` to `heads_per_rank` heads (GQA)."""
    scores = core.batch * heads_per_rank * core.seq_q * core.seq_kv
    fused = not core.fp32 and fused_softmax_runs(core, heads_per_rank, model.attention_sinks)
    fp32 = not fused and (core.softmax_in_fp32 or core.backend == AttentionBackend.unfused)
    e = 4 if core.fp32 else 2  # bytes of an element of Q, K, V and the probabilities the PV matmul keeps
    # the torch softmax over the sink column is one wider (SoftmaxOne concatenates it, then slices it off)
    softmax_elems = scores + (core.batch * heads_per_rank * core.seq_q if model.attention_sinks and not fused else 0)
    dropout = model.attention_dropout > 0
    return {
        "attn_kv_expanded": 2 * e * core.batch * core.seq_kv * (heads_per_rank - groups_per_rank) * model.kv_channels,
        "attn_softmax_output": (4 if fp32 else 2) * softmax_elems,
        # the bf16 cast the PV matmul keeps (none in fp32 training: the probabilities are already its dtype)
        "attn_probs_bf16": 2 * scores if fp32 and not dropout and not core.fp32 else 0,
        "attn_probs_dropout_mask": scores if dropout else 0,
        "attn_probs_dropout_output": e * scores if dropout else 0,
        "attn_causal_mask": core.seq_q * core.seq_kv if core.backend == AttentionBackend.unfused and not fused else 0,
    }
