"""What DeepSpeed's pipeline engine does with gradients: one accumulation pass per micro-batch, then, after the
pipeline has drained, the tied-weight and data-parallel reductions and ZeRO-1's parameter all-gather, none of them
behind compute.

Why each term (microsoft/DeepSpeed @559c4ce11, 2021-12-30, and @9b70ce56e, 2022-06-29):
- accumulation: DeepSpeed's engine has no gradient-accumulation fusion (Megatron's wgrad GEMM that adds into
  `main_grad` in place), so each micro-batch's gradients are added in a pass of their own. With BF16_Optimizer the
  engine frees the bf16 gradients before each backward (`clear_lp_grads`) and adds them into the fp32 copy after it
  (deepspeed/runtime/bf16_optimizer.py `update_hp_grads`: `hp_grad.data.add_(lp.grad.data.to(hp_grad.dtype))`):
  read 2 + read 4 + write 4 bytes per parameter (`BF16_ACCUMULATE_BYTES_PER_PARAM`). Otherwise autograd accumulates
  into the existing `.grad` in the training dtype (PyTorch `AccumulateGrad`, `variable_grad += new_grad` in
  torch/csrc/autograd/functions/accumulate_grad.h): read 2 + read 2 + write 2 (`AUTOGRAD_ACCUMULATE_BYTES_PER_PARAM`);
- `ReduceTiedGrads` (pipe/engine.py `_exec_reduce_tied_grads`): the embedding shared by the first and last stage
  (Megatron-DeepSpeed's `TiedLayerSpec('embed', ...)`) is all-reduced between those two ranks, fp32 under
  BF16_Optimizer (`weight._hp_grad`), else in the training dtype;
- `ReduceGrads` (`_exec_reduce_grads`): under BF16_Optimizer an all-reduce of the fp32 gradients over data parallel
  (`_bf16_reduce_grads`: `buffered_allreduce_fallback(grads=self.optimizer.get_grads_for_reduction())`), then,
  after each rank updates its 1/DP partition, an all-gather of the bf16 parameters (bf16_optimizer.py `step`:
  `all_gather_dp_groups`); with ZeRO stage 1 otherwise, each gradient slice reduced to the rank that owns it
  (zero/stage_1_and_2.py `reduce_gradients` -> `average_tensor`: reduce-scatter traffic) and the updated parameters
  all-gathered; with no ZeRO, an all-reduce in the training dtype (engine.py `allreduce_gradients` ->
  `buffered_allreduce_fallback`).
All collectives are priced by measure/comm/collectives.py over the recipe's groups (measure/comm/topology.py).
"""
from __future__ import annotations

from hardware.profile import HardwareProfile
from measure.comm import collectives as col
from measure.comm.topology import GroupSpan
from measure.deepspeed.engine import DeepSpeedEngine
from measure.kernels.common import DTYPE_BYTES, Phase, PhaseOp
from measure.kernels.ops import Op, OpKind
from measure.kernels.roofline import op_time_s

BF16_ACCUMULATE_BYTES_PER_PARAM = 2 + 4 + 4
AUTOGRAD_ACCUMULATE_BYTES_PER_PARAM = 2 + 2 + 2


def accumulation_op(params_on_rank: int, engine: DeepSpeedEngine) -> PhaseOp:
    """One micro-batch's gradient accumulation pass over this rank's parameters (memory-bound)."""
    n = max(int(params_on_rank), 1)
    per = BF16_ACCUMULATE_BYTES_PER_PARAM if engine.bf16_optimizer else AUTOGRAD_ACCUMULATE_BYTES_PER_PARAM
    return PhaseOp(Op(OpKind.elementwise, (n,), "fp32" if engine.bf16_optimizer else "bf16"), Phase.bwd_wgrad,
                   "optimizer", float(n), float(per * n))


def accumulation_s(params_on_rank: int, engine: DeepSpeedEngine, profile: HardwareProfile) -> float:
    """Seconds of `accumulation_op`: one streaming `add_` over whole parameter tensors (hundreds of MB each), priced at
    the part's published copy rate (its profile's `microbench.hbm_fraction` of the datasheet bandwidth), not at the
    element-wise efficiency fitted on Megatron's in-layer kernels; a profile without microbenchmarks falls back to
    that fitted efficiency (measure/kernels/roofline.py)."""
    op = accumulation_op(params_on_rank, engine)
    if profile.microbench is None:
        return op_time_s(op, profile)
    return op.bytes_moved / (profile.hbm_bandwidth_gb_per_s * 1e9 * profile.microbench.hbm_fraction)


def reduced_bytes_per_param(engine: DeepSpeedEngine) -> int:
    """Bytes per parameter of the gradients the engine reduces: fp32 under BF16_Optimizer, else the training dtype."""
    return DTYPE_BYTES["fp32"] if engine.bf16_optimizer else DTYPE_BYTES["bf16"]


def tied_reduce_s(tied_params: int, engine: DeepSpeedEngine, pair: GroupSpan, profile: HardwareProfile) -> float:
    """`ReduceTiedGrads`: the tied embedding's gradient all-reduced between the first and last stage."""
    return col.all_reduce_s(tied_params * reduced_bytes_per_param(engine), pair, profile) if tied_params else 0.0


def data_parallel_reduce_s(params_on_rank: int, engine: DeepSpeedEngine, dp: GroupSpan, profile: HardwareProfile) -> float:
    """`ReduceGrads` and, under ZeRO-1, the parameter all-gather after the optimizer step (see the module docstring)."""
    if dp.size <= 1:
        return 0.0
    grads = params_on_rank * reduced_bytes_per_param(engine)
    params = params_on_rank * DTYPE_BYTES["bf16"]
    if engine.bf16_optimizer:
        return col.all_reduce_s(grads, dp, profile) + col.all_gather_s(params, dp, profile)
    if engine.zero_stage == 1:
        return col.reduce_scatter_s(grads, dp, profile) + col.all_gather_s(params, dp, profile)
    return col.all_reduce_s(grads, dp, profile)
