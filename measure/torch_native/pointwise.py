"""The element-wise work eager PyTorch adds over fused kernels, and that `torch.compile` removes.

Why only these: measure/kernels/layer_ops.py prices each element-wise step of a block as one fused pass (Megatron's
fused SwiGLU, Transformer Engine's norms and fused RoPE). An eager torchtitan Llama block (torchtitan/models/llama/
model.py @041336434) differs in two or three places (its residual adds are single passes either way):
- RMSNorm: the configs of 2024-04 use a fused Triton kernel (`norm_type = "fused_rmsnorm"` in every train config of
  041336434); those of 2024-12 (`norm_type = "rmsnorm"`, train_configs/llama3_8b.toml @9dec370) run torchtitan's eager
  `RMSNorm` (torchtitan/models/norms.py @9dec370: `x.float()`, `pow(2)`, `mean`, `x * rsqrt(...)`, `type_as`,
  `* weight`): read 2 + write 4, read 4 + write 4, read 4, read 4 + write 4, read 4 + write 2, read 2 + write 2 bytes
  per element, 36 where the fused kernel moves 4 (`NORM_EAGER_PASS_RATIO` = 9, applied to its backward too) when the
  stack says its norms are eager (`TorchNativeStack.eager_norm`);
- SwiGLU is `F.silu(self.w1(x)) * self.w3(x)`: a silu pass (one read, one write) and a multiply (two reads, one
  write), five tensor-sized passes where the fused kernel makes three (`SWIGLU_EAGER_PASS_RATIO`); autograd's
  backward of the two is priced at the same ratio;
- RoPE is `apply_rotary_emb`: `xq.float()` (read 2 B, write 4 B per element), the complex multiply (read 4 B, write
  4 B; `freqs_cis` is small) and `type_as` (read 4 B, write 2 B), 20 bytes per element of Q and of K forward
  (`ROPE_EAGER_BYTES_PER_ELEMENT`), the backward as many again; fused, RoPE is folded into its neighbours and not
  priced (as layer_ops does for Transformer Engine's fused RoPE).
`torch.compile` generates fused Triton kernels for these chains (Ansel et al., "PyTorch 2", ASPLOS 2024, sec. 5:
TorchInductor's pointwise fusion), so a compiled block, like one of Transformer Engine modules, takes no extra here.
"""
from __future__ import annotations

from constraints.spec import ModelSpec
from measure.kernels.common import Phase, PhaseOp
from measure.kernels.ops import Op, OpKind

SWIGLU_EAGER_PASS_RATIO = 5 / 3
NORM_EAGER_PASS_RATIO = 36 / 4
ROPE_EAGER_BYTES_PER_ELEMENT = 20.0


def eager_rope_ops(model: ModelSpec, tokens: int, heads: int, kv_heads: int) -> list[PhaseOp]:
    """Eager complex-number RoPE over Q and K of one micro-batch on one rank (forward and backward)."""
    n = tokens * (heads + kv_heads) * model.kv_channels
    return [PhaseOp(Op(OpKind.elementwise, (n,), "fp32"), phase, "qkv", 6.0 * n, ROPE_EAGER_BYTES_PER_ELEMENT * n)
            for phase in (Phase.fwd, Phase.bwd_dgrad)]


def eager_extra_s(timed: list[tuple[PhaseOp, float]], eager_norm: bool) -> dict[Phase, float]:
    """Seconds per phase the eager silu-then-multiply (and, when `eager_norm`, the eager RMSNorm) add over the fused
    ops in `timed`."""
    ratio = {OpKind.swiglu: SWIGLU_EAGER_PASS_RATIO}
    if eager_norm:
        ratio[OpKind.rmsnorm] = NORM_EAGER_PASS_RATIO
    out = {Phase.fwd: 0.0, Phase.bwd_dgrad: 0.0}
    for p, t in timed:
        if p.op.kind in ratio and p.phase in out:
            out[p.phase] += (ratio[p.op.kind] - 1.0) * t
    return out
