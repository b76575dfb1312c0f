"""The CP ring's merge passes: what Transformer Engine's p2p context parallelism does per ring step besides attention.

Why: under `--cp-comm-type p2p` (Megatron's default) each rank runs its attention as CP kernel calls, one per K/V shard
of the ring, and every call returns a partial output (and, in the backward, partial dQ, dK, dV) that has to be merged
into the running result. Those merges are element-wise passes over the rank's whole output, CP - 1 times per layer pass,
outside the attention kernels: forward, the partial outputs are rescaled by their log-sum-exp and added up after the
ring loop (`flash_attn_fwd_out_correction_init` once, then `flash_attn_fwd_out_correction` or its second-half variant
per step); backward, each step's dQ is added into dQ (`dq.add_(dq_)`) and its dK, dV into the dK, dV buffer that
travels the ring (`dk.add_(dk_)`, `dv.add_(dv_)`) (transformer_engine/pytorch/attention/dot_product_attention/
context_parallel.py, AttnFuncWithCPAndKVP2P.forward / backward @d0067d0d). They run on the compute stream after the
step's kernel, so no ring transfer hides them. Per rank they grow as the sequence (CP - 1 passes over s / CP tokens),
as the attention kernels do at a fixed shard, so they add a fixed share to a CP rank's attention (about 6 % of the
forward on H100 at head dim 128) that the attention rate and the K/V exchange (`measure/projection/layer_cost.py`
cp_ring_s) do not price, and nothing without CP.

Bytes, bf16 (non-FP8 attention: `out`, `dq` and the dK, dV buffer are bf16):
- forward: the first step reads its output and writes `out` (2 passes); each later step reads its output, reads and
  writes `out` (3 passes) over all of the rank's queries or, under the causal load-balanced split, only the second
  half: rank r runs r steps over all its queries and CP - 1 - r over half, so a step covers 3/4 of the output on
  average over the ranks (the ranks' work is equal: megatron/core/utils.py:2510-2557 @d98e8a64 gives each two chunks);
- backward: the first step copies dQ and dK, dV (2 passes), each later step adds dQ (3 passes over 3/4 of the queries,
  as above) and dK, dV (3 passes over 3/4 of the K/V shard: the same split on the key side).
The log-sum-exp corrections (one fp32 value per query and head) are under 2 % of these bytes at head dim 128 and
are left out.
"""
from __future__ import annotations

from measure.kernels.common import DTYPE_BYTES, Phase, PhaseOp
from measure.kernels.ops import Op, OpKind

# mean share of a rank's queries (or keys) one later ring step covers under the causal load-balanced split (above)
LATER_STEP_SHARE = 0.75
FIRST_STEP_PASSES = 2  # read the step's partial result, write the running one
LATER_STEP_PASSES = 3  # read the partial result, read and write the running one


def cp_merge_ops(cp: int, tokens: int, out_width: int, kv_width: int) -> list[PhaseOp]:
    """Forward and backward merge passes of one attention layer's p2p CP ring per micro-batch: `tokens` queries of this
    rank (MBS x s / CP), `out_width` its output width (local heads x value head dim), `kv_width` its K and V widths
    together (local KV heads x (key + value head dims)). Empty without CP."""
    if cp <= 1:
        return []
    later = cp - 1
    out_elems, kv_elems = tokens * out_width, tokens * kv_width
    passes = FIRST_STEP_PASSES + LATER_STEP_PASSES * LATER_STEP_SHARE * later
    fwd_bytes = DTYPE_BYTES["bf16"] * out_elems * passes
    bwd_bytes = DTYPE_BYTES["bf16"] * (out_elems + kv_elems) * passes
    shape = (tokens, out_width, kv_width, cp)
    return [
        PhaseOp(Op(OpKind.elementwise, shape, "bf16"), Phase.fwd, "core_attn", float(out_elems * later), fwd_bytes),
        PhaseOp(Op(OpKind.elementwise, shape, "bf16"), Phase.bwd_dgrad, "core_attn", float((out_elems + kv_elems) * later),
                bwd_bytes),
    ]
