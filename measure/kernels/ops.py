"""The vocabulary of kernels shared by the cost table (measured) and the roofline model (analytic).

Why a shared key: a projection looks an op up in the measured table first and falls back to the
roofline only when it is missing, so both sides must name an op, its per-rank shape and its dtype
the same way. No torch here: this module is imported by the projection, which must run without torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class OpKind(str, Enum):
    """Kernel families. Shapes (all per rank, after TP/CP/EP slicing):
    gemm: (m, n, k)            C[m,n] = A[m,k] @ B[k,n]
    grouped_gemm: (g, m, n, k) g independent GEMMs of (m, n, k) (MoE experts on one rank)
    attention_fwd / attention_bwd: (b, heads, kv_heads, s_q, s_kv, head_dim, causal 0/1)
    rmsnorm / layernorm: (tokens, hidden)
    swiglu / gelu / squared_relu: (tokens, width)   width = output width of the activation
    elementwise: (num_elements,)  residual add, dropout, bias, copy; bytes-bound
    ssd_scan: (num_elements,)     one kernel of mamba_ssm's chunked SSD scan (measure/kernels/mamba_ssd.py), bytes / 6
                                  as elements; bytes-bound at the part's own scan bandwidth (measure/kernels/roofline.py)
    softmax_cross_entropy: (tokens, vocab)
    embedding: (tokens, hidden)
    optimizer_step: (num_params,)  fused Adam over fp32 master params
    """

    gemm = "gemm"
    grouped_gemm = "grouped_gemm"
    attention_fwd = "attention_fwd"
    attention_bwd = "attention_bwd"
    rmsnorm = "rmsnorm"
    layernorm = "layernorm"
    swiglu = "swiglu"
    gelu = "gelu"
    squared_relu = "squared_relu"
    elementwise = "elementwise"
    ssd_scan = "ssd_scan"
    softmax_cross_entropy = "softmax_cross_entropy"
    embedding = "embedding"
    optimizer_step = "optimizer_step"


@dataclass(frozen=True)
class Op:
    """One kernel invocation at a concrete per-rank shape and dtype ("bf16", "fp8", "fp32")."""

    kind: OpKind
    shape: tuple[int, ...]
    dtype: str

    @property
    def key(self) -> str:
        """Stable string key used in the cost table, e.g. `gemm:8192x1024x4096:bf16`."""
        return f"{self.kind.value}:{'x'.join(str(d) for d in self.shape)}:{self.dtype}"

    @classmethod
    def from_key(cls, key: str) -> "Op":
        kind, shape, dtype = key.split(":")
        return cls(OpKind(kind), tuple(int(d) for d in shape.split("x")), dtype)
