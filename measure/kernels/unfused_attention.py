"""Core attention without a fused (flash) kernel: the kernels Megatron's own DotProductAttention runs.

Why: before flash attention (Megatron-LM d693034e, 2022-12) and Transformer Engine, and still under
`--transformer-impl local` or `--attention-backend unfused|local`, core attention is two batched GEMMs around a softmax
over the whole s_q x s_kv score matrix (megatron/model/transformer.py @ v2.5 CoreAttention: torch.baddbmm, line 271;
apex FusedScaleMaskSoftmax, lines 26 and 167; attention dropout; torch.bmm with V;
megatron/core/transformer/dot_product_attention.py @ d98e8a64 likewise). Against a flash kernel this
- computes every score, masked ones included (baddbmm over the full matrix; flash skips the causal half), and
- writes the scores, the probabilities (and the dropout output) to HBM and reads them back in the backward, a
  memory-bound pass over b * heads * s_q * s_kv elements each time (FlashAttention, Dao et al. 2022, arXiv
  2205.14135 sec. 2.2: "standard attention implementation" materialises S and P in HBM).
Each batched GEMM is priced as the one GEMM of the same M*N*K stacked over its b * heads batches (cuBLAS strided
batched GEMM fills the GPU with all of them), with its true bytes; the softmax is the fused kernel's one read and one
write per element where that kernel runs (constraints/memory/attention_scores.py fused_softmax_runs), else torch's
mask-fill and softmax passes. GQA's K and V are expanded to every head first (one copy each way).
"""
from __future__ import annotations

from constraints.memory.attention_scores import core_attention_of, fused_softmax_runs
from constraints.spec import JobSpec, ModelSpec, Recipe
from measure.kernels.common import DTYPE_BYTES, Phase, PhaseOp
from measure.kernels.ops import Op, OpKind


def runs_unfused(job: JobSpec, recipe: Recipe) -> bool:
    """Whether core attention runs without a fused kernel in a bf16 / fp16 job (local transformer modules, or an
    unfused or local backend). fp32 jobs keep their own pricing (measure/kernels/roofline.py: fp32 core attention)."""
    return core_attention_of(job, recipe) is not None and job.precision.value != "fp32"


def _bmm(phase: Phase, m: int, n: int, k: int, batches: int, dtype: str, read_bytes: float, write_bytes: float) -> PhaseOp:
    """`batches` GEMMs of (m, n, k), priced as the stacked GEMM (batches * m, n, k) with these bytes."""
    return PhaseOp(Op(OpKind.gemm, (batches * m, n, k), dtype), phase, "core_attn", 2.0 * batches * m * n * k,
                   read_bytes + write_bytes)


def _pass(phase: Phase, elements: int, bytes_per_element: float) -> PhaseOp:
    return PhaseOp(Op(OpKind.elementwise, (elements,), "bf16"), phase, "core_attn", float(elements),
                   bytes_per_element * elements)


def unfused_attention_ops(model: ModelSpec, job: JobSpec, recipe: Recipe, heads: int, kv_heads: int, head_dim: int,
                          dtype: str) -> list[PhaseOp]:
    """Forward and backward kernels of unfused core attention on one rank for one micro-batch (module docstring)."""
    core = core_attention_of(job, recipe)
    b, s_q, s_kv, d, e = recipe.mbs, job.seq_length // recipe.cp, job.seq_length, head_dim, DTYPE_BYTES[dtype]
    batches = b * heads
    scores = batches * s_q * s_kv
    q_bytes, kv_bytes = batches * s_q * d * e, batches * s_kv * d * e
    fwd, bwd = Phase.fwd, Phase.bwd_dgrad
    ops: list[PhaseOp] = []
    if kv_heads < heads:  # K and V expanded from the query groups to every head, and the gradients summed back
        expanded = 2 * b * heads * s_kv * d
        ops += [_pass(fwd, expanded, 2 * e), _pass(bwd, expanded, 2 * e)]
    fused = fused_softmax_runs(core, heads, model.attention_sinks)
    # fused scale-mask-softmax: read the scores, write the probabilities; torch: a mask fill (reads a 1-byte mask) and
    # the softmax, upcast to fp32 and back when --attention-softmax-in-fp32
    upcast = 2 * (e + 4) if core.softmax_in_fp32 and not fused else 0
    softmax_fwd = 2 * e if fused else (2 * e + 1) + 2 * e + upcast
    softmax_bwd = 3 * e if fused else 3 * e + (2 * e + 1) + upcast
    ops.append(_bmm(fwd, s_q, s_kv, d, batches, dtype, q_bytes + kv_bytes, scores * e))  # S = Q K^T
    ops.append(_pass(fwd, scores, softmax_fwd))
    dropout = model.attention_dropout > 0
    if dropout:
        ops.append(_pass(fwd, scores, 2 * e + 1))
    ops.append(_bmm(fwd, s_q, d, s_kv, batches, dtype, scores * e + kv_bytes, q_bytes))  # O = P V
    ops.append(_bmm(bwd, s_q, s_kv, d, batches, dtype, q_bytes + kv_bytes, scores * e))  # dP = dO V^T
    ops.append(_bmm(bwd, s_kv, d, s_q, batches, dtype, scores * e + q_bytes, kv_bytes))  # dV = P^T dO
    if dropout:
        ops.append(_pass(bwd, scores, 2 * e + 1))
    ops.append(_pass(bwd, scores, softmax_bwd))
    ops.append(_bmm(bwd, s_q, d, s_kv, batches, dtype, scores * e + kv_bytes, q_bytes))  # dQ = dS K
    ops.append(_bmm(bwd, s_kv, d, s_q, batches, dtype, scores * e + q_bytes, kv_bytes))  # dK = dS^T Q
    return ops
