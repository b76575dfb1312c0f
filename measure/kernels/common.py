"""Kernel-level op builders shared by every layer kind: the phases, a per-rank op (PhaseOp), GEMMs with their
quantisation passes, bytes-bound point-wise kernels, norms and the tokens a rank sees.

Why apart from measure/kernels/layer_ops.py: the transformer layers (layer_ops) and the Mamba-2 layers (mamba_ops) build
their kernel lists from these same pieces, so both import them from here and neither imports the other back.
Conventions are layer_ops' (its module docstring): a GEMM `gemm:(m,n,k)` costs 2mnk FLOPs, its dgrad is (m,k,n)
and its wgrad (k,n,m); fp8 / NVFP4 GEMMs add the casts of their activation input and incoming gradient.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from constraints.spec import JobSpec, ModelSpec, Precision, Recipe
from measure.kernels.ops import Op, OpKind
from measure.kernels.quantization import (
    TRANSPOSED_COPY_DTYPE,
    quantise_bytes_per_element,
    transposed_copy_bytes_per_element,
)


class Phase(str, Enum):
    fwd = "fwd"
    bwd_dgrad = "bwd_dgrad"
    bwd_wgrad = "bwd_wgrad"
    optimizer = "optimizer"


# fp4: E2M1 pairs packed in a byte plus one E4M3 scale byte per 16 elements (arXiv 2509.25149 sec. 2)
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp4": 9 / 16, "fp32": 4, "tf32": 4}


@dataclass(frozen=True)
class PhaseOp:
    """One kernel at a per-rank shape, in one phase, with the module it belongs to (for recompute).

    module names follow Megatron `--recompute-modules` where one applies: layernorm, core_attn, mlp,
    moe, moe_act, shared_experts, mla_up_proj; else qkv, proj, router, residual, head, optimizer."""

    op: Op
    phase: Phase
    module: str
    flops: float
    bytes_moved: float
    # whether the host issues it as an op of its own (measure/projection/layer_cost.py's host floor counts these); a GEMM's
    # quantisation cast is launched inside the same Transformer Engine module call as its GEMM (te.Linear /
    # LayerNormLinear quantise their inputs in the module's forward and backward), so it adds no framework call
    host_op: bool = True
    # GEMM launches the host issues one by one inside this op's module call: a Transformer Engine GroupedLinear
    # outside a fused grouped MLP runs one cuBLAS GEMM per local expert (`grouped_gemm_ops`), 0 for every other op
    gemm_launches: int = 0

    @property
    def key(self) -> str:
        """Cost-table op key: phase and the shared op key, e.g. `bwd_wgrad/gemm:8192x1024x4096:bf16`."""
        return f"{self.phase.value}/{self.op.key}"


def gemm_dtype(job: JobSpec) -> str:
    """The format a GEMM runs in. fp32 training runs its GEMMs in TF32: Megatron's linear layers are Transformer
    Engine's (transformer_impl defaults to transformer_engine), whose cuBLASLt GEMM picks CUBLAS_COMPUTE_32F_FAST_TF32
    when A, B and D are all fp32 ("Use TF32 only for pure FP32 GEMM", transformer_engine/common/gemm/cublaslt_gemm.cu
    @ d0067d0d); Megatron itself never turns torch's allow_tf32 on or off (no such call in megatron/ @ d98e8a64)."""
    if job.precision.is_fp4:
        return "fp4"
    if job.precision.is_fp8:
        return "fp8"
    if job.precision == Precision.fp32:
        return "tf32"
    return "fp16" if job.precision == Precision.fp16 else "bf16"


def unquantised_gemm_dtype(job: JobSpec) -> str:
    """The format of the GEMMs fp8 / fp4 recipes leave unquantised (router, output layer): bf16, TF32 in fp32 training
    (gemm_dtype)."""
    return "tf32" if job.precision == Precision.fp32 else "bf16"


def act_dtype(job: JobSpec) -> str:
    """The format of the activations (and of core attention, which runs unfused in fp32: TE disables its flash and
    fused kernels for fp32 inputs, constraints/memory/attention_scores.py; torch's fp32 batched matmuls stay fp32,
    allow_tf32 being off by default)."""
    if job.precision == Precision.fp32:
        return "fp32"
    return "fp16" if job.precision == Precision.fp16 else "bf16"


# bytes a plain cast pass moves per element of the tensor it quantises, by the GEMM's format, where no recipe is given
# (torchao float8, measure/torch_native/float8.py; a Megatron job's recipe prices its own: measure/kernels/quantization.py):
# - fp8: read bf16 (2 B), write fp8 (1 B) plus its transposed copy for the other GEMM (1 B), an amax/scale pass folded
#   in (Transformer Engine `cast_transpose`, per-tensor on Hopper, 1x32 block scales on Blackwell);
# - fp4: read bf16 (2 B), write the row-wise fp4 copy and the column-wise one for the other GEMM (each 9/16 B with its
#   E4M3 block scales), the amax and the 16-point random Hadamard transform of the wgrad operands folded in (TE
#   NVFP4BlockScaling; arXiv 2509.25149 sec. 4).
CAST_BYTES_PER_ELEMENT = {"fp8": 2.0 + 2 * DTYPE_BYTES["fp8"], "fp4": 2.0 + 2 * DTYPE_BYTES["fp4"]}


def _casts(dtype: str, fwd_elems: int, bwd_elems: int, module: str, quant: Optional[Precision] = None,
           norm_fed: bool = False) -> list[PhaseOp]:
    """The quantisation passes a GEMM in `dtype` adds (none in bf16/fp16): its activation input in the forward and its
    incoming gradient in the backward. `quant`: the job's recipe, whose passes measure/kernels/quantization.py prices
    (`norm_fed`: the input comes out of a fused LayerNormLinear norm); without one, `CAST_BYTES_PER_ELEMENT`'s plain
    cast. Weights are quantised once per step and cached across micro-batches (TE `is_first_microbatch`), so they are
    not here. Each pass runs inside the GEMM's module call (host_op=False)."""
    if dtype not in CAST_BYTES_PER_ELEMENT:
        return []
    if quant is None or not (quant.is_fp8 or quant.is_fp4):
        per_elem = CAST_BYTES_PER_ELEMENT[dtype]
        return [PhaseOp(Op(OpKind.elementwise, (elems,), "bf16"), phase, module, float(elems), per_elem * elems, host_op=False)
                for elems, phase in ((fwd_elems, Phase.fwd), (bwd_elems, Phase.bwd_dgrad))]
    ops = []
    copy_b = transposed_copy_bytes_per_element(quant)
    for elems, phase, per_elem in ((fwd_elems, Phase.fwd, quantise_bytes_per_element(quant, norm_fed)),
                                   (bwd_elems, Phase.bwd_dgrad, quantise_bytes_per_element(quant))):
        ops.append(PhaseOp(Op(OpKind.elementwise, (elems,), "bf16"), phase, module, float(elems), per_elem * elems, host_op=False))
        if copy_b:  # written by the same kernel where the part needs it (measure/kernels/roofline.py)
            ops.append(PhaseOp(Op(OpKind.elementwise, (elems,), TRANSPOSED_COPY_DTYPE), phase, module, 0.0, copy_b * elems,
                               host_op=False))
    return ops


def gemm_ops(m: int, n: int, k: int, dtype: str, module: str, out_dtype: str = "bf16", quant: Optional[Precision] = None,
             norm_fed: bool = False) -> list[PhaseOp]:
    """Forward, dgrad and wgrad of Y[m,n] = X[m,k] W[k,n]; bytes = inputs at dtype + output at out_dtype;
    fp8 / fp4 add the quantisation of X and dY under the recipe `quant` (`_casts`)."""
    ib, ob = DTYPE_BYTES[dtype], DTYPE_BYTES[out_dtype]
    flops = 2.0 * m * n * k
    ops = [
        PhaseOp(Op(OpKind.gemm, (m, n, k), dtype), Phase.fwd, module, flops, (m * k + k * n) * ib + m * n * ob),
        PhaseOp(Op(OpKind.gemm, (m, k, n), dtype), Phase.bwd_dgrad, module, flops, (m * n + k * n) * ib + m * k * ob),
        PhaseOp(Op(OpKind.gemm, (k, n, m), dtype), Phase.bwd_wgrad, module, flops, (m * k + m * n) * ib + k * n * 4),
    ]
    return ops + _casts(dtype, m * k, m * n, module, quant, norm_fed)


def grouped_gemm_ops(g: int, m: int, n: int, k: int, dtype: str, module: str, per_group_launch: bool = True,
                     quant: Optional[Precision] = None) -> list[PhaseOp]:
    """g GEMMs of m tokens each (`gemm_ops` per group; the roofline prices small m, see `grouped_token_efficiency`).

    `per_group_launch`: the host launches one GEMM per group. Transformer Engine's GroupedLinear (what Megatron's
    TEGroupedMLP runs) calls `general_grouped_gemm` -> `nvte_multi_tensor_gemm`, which outside Hopper's opt-in CUTLASS
    path (NVTE_USE_CUTLASS_GROUPED_GEMM) is `multi_stream_cublas_gemm`: a loop that builds and launches one cuBLASLt
    GEMM per group (descriptors, heuristic query, launch) over the compute streams (TransformerEngine d0067d0d,
    common/gemm/cublaslt_gemm.cu); its single-kernel grouped-tensor path (cuBLAS 13.3+) is opt-in and newer than the
    published runs. A fused grouped MLP (one CUTLASS kernel per GEMM) passes False."""
    ib = DTYPE_BYTES[dtype]
    flops = 2.0 * g * m * n * k
    casts = _casts(dtype, g * m * k, g * m * n, module, quant)  # every expert's split in one multi-tensor pass
    launches = g if per_group_launch else 0
    return casts + [
        PhaseOp(Op(OpKind.grouped_gemm, (g, m, n, k), dtype), Phase.fwd, module, flops, g * ((m * k + k * n) * ib + m * n * 2),
                gemm_launches=launches),
        PhaseOp(Op(OpKind.grouped_gemm, (g, m, k, n), dtype), Phase.bwd_dgrad, module, flops, g * ((m * n + k * n) * ib + m * k * 2),
                gemm_launches=launches),
        PhaseOp(Op(OpKind.grouped_gemm, (g, k, n, m), dtype), Phase.bwd_wgrad, module, flops, g * ((m * k + m * n) * ib + k * n * 4),
                gemm_launches=launches),
    ]


def pointwise_ops(kind: OpKind, shape: tuple[int, ...], module: str, reads: int, writes: int, flops_per_elem: float = 1.0,
               bwd_factor: float = 2.0) -> list[PhaseOp]:
    """Bytes-bound kernel: reads/writes are tensor-sized passes over prod(shape) bf16 elements; the
    backward reads the saved input and the incoming gradient, so about bwd_factor x the forward bytes."""
    n = 1
    for d in shape:
        n *= d
    fwd_bytes = (reads + writes) * n * 2
    return [
        PhaseOp(Op(kind, shape, "bf16"), Phase.fwd, module, flops_per_elem * n, fwd_bytes),
        PhaseOp(Op(kind, shape, "bf16"), Phase.bwd_dgrad, module, 2 * flops_per_elem * n, bwd_factor * fwd_bytes),
    ]


def norm_ops(model: ModelSpec, tokens: int, width: int, module: str = "layernorm") -> list[PhaseOp]:
    kind = OpKind.rmsnorm if model.normalization.value == "RMSNorm" else OpKind.layernorm
    return pointwise_ops(kind, (tokens, width), module, 1, 1, flops_per_elem=4.0)


def rank_tokens(job: JobSpec, recipe: Recipe) -> tuple[int, int]:
    """(tokens through the TP GEMMs, tokens through norms/residuals) per rank per micro-batch."""
    t = recipe.mbs * job.seq_length // recipe.cp
    return t, (t // recipe.tp if recipe.sp_active else t)
