"""torchao float8 training (`model.converters = "float8"`): which GEMMs run in float8 and what its casts add.

Why it is not Transformer Engine's fp8: both run the linear layers' GEMMs in float8 with per-tensor dynamic scales
(torchao `Float8LinearConfig` tensorwise recipe, the default; https://github.com/pytorch/ao/tree/main/torchao/float8),
so the GEMMs and the activation / gradient casts are priced as measure/kernels/layer_ops.py prices an fp8 recipe
(`Precision.fp8_tensorwise`; the output layer stays bf16, torchtitan `filter_fqns = "output"`). What differs is the
weight: Transformer Engine casts it once per step and caches it across micro-batches, torchao casts it in every
forward (`Float8Linear.forward` casts `self.weight` each call). With `enable_fsdp_float8_all_gather` the cast moves
before the all-gather, onto the rank's 1/DP shard, and the gather carries 1 byte per weight instead of 2
(measure/torch_native/fsdp.py); `precompute_float8_dynamic_scale_for_fsdp` makes the amax one reduction per step.
A weight cast reads bf16 and writes float8 and its transposed copy: `measure.kernels.common.CAST_BYTES_PER_ELEMENT`.
"""
from __future__ import annotations

from measure.kernels.common import CAST_BYTES_PER_ELEMENT, Phase, PhaseOp
from measure.kernels.ops import Op, OpKind


def weight_cast_ops(weight_elems: int, shards: int) -> list[PhaseOp]:
    """The per-micro-batch float8 cast of a layer's `weight_elems` linear weights (on 1/`shards` of them when the
    gather is in float8)."""
    n = max(weight_elems // max(shards, 1), 1)
    return [PhaseOp(Op(OpKind.elementwise, (n,), "bf16"), Phase.fwd, "qkv", float(n), CAST_BYTES_PER_ELEMENT["fp8"] * n)]
