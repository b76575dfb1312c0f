"""Seconds a layer's backward spends re-running forward work under PyTorch activation checkpointing.

Why per op and not Megatron's recompute modules: torchtitan's selective policy is a rule over ATen ops, not over
modules. Its per-op policy (`checkpoint_wrapper` in torchtitan/parallelisms/parallelize_llama.py @041336434, the
`no_recompute_list` and `_custom_policy`) saves the outputs of `aten.mm` except every second call, of flash / efficient
SDPA and of reduce-scatter, and recomputes everything else. A Llama block issues its matmuls in the order wq, wk, wv,
wo, w1, w3, w2 (torchtitan/models/llama/model.py Attention.forward / FeedForward.forward @041336434: `self.w2(F.silu(
self.w1(x)) * self.w3(x))`), so the second, fourth and sixth (wk, wo, w3) run again, with every norm, RoPE and
element-wise op; attention itself does not. Per layer (`selective_ac_option = '2'`) checkpoints every second block in
full. Full re-runs the whole block forward, its expert-parallel dispatch included (AutoModel checkpoints the whole
block: nemo_automodel/components/moe/parallelizer.py `apply_ac`).
"""
from __future__ import annotations

from constraints.spec import ModelSpec
from measure.kernels.common import Phase, PhaseOp
from measure.torch_native.stack import ActivationCheckpoint

_NOT_RECOMPUTED_KINDS = ("attention_fwd",)


def recomputed_matmul_share(model: ModelSpec) -> float:
    """FLOP share of a dense block's matmuls that the per-op policy recomputes: wk, wo and w3 of wq, wk, wv, wo, w1, w3,
    w2 (see the module docstring); from the model's own widths (GQA keeps wk small)."""
    h, d = model.hidden_size, model.kv_channels
    q, kv, f = model.num_attention_heads * d, model.num_query_groups * d, model.ffn_hidden_size
    total = h * q + 2 * h * kv + q * h + 3 * h * f
    return (h * kv + q * h + h * f) / total


def recompute_s(mode: ActivationCheckpoint, model: ModelSpec, forward_ops: list[tuple[PhaseOp, float]], forward_s: float,
                layer_index: int) -> float:
    """Backward seconds of re-run forward work for one layer. `forward_ops`: its timed forward ops (op, seconds);
    `forward_s`: the whole block's forward (with its expert dispatch), what full recompute runs again."""
    if mode == ActivationCheckpoint.full:
        return forward_s
    if mode == ActivationCheckpoint.selective_layer:
        return forward_s if layer_index % 2 == 0 else 0.0
    if mode == ActivationCheckpoint.selective_op:
        share = recomputed_matmul_share(model)
        gemm = sum(t for p, t in forward_ops if p.phase == Phase.fwd and p.op.kind.value in ("gemm", "grouped_gemm"))
        rest = sum(t for p, t in forward_ops if p.phase == Phase.fwd and p.op.kind.value not in ("gemm", "grouped_gemm")
                   and p.op.kind.value not in _NOT_RECOMPUTED_KINDS)
        return share * gemm + rest
    return 0.0
