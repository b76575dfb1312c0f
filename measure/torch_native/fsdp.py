"""FSDP's own communication schedule: per-layer all-gathers prefetched behind compute, per-layer reduce-scatters behind
the backward, and the collectives nothing can hide.

Why per layer: FSDP wraps every transformer block as its own unit (torchtitan parallelize_llama.py @041336434 calls
`fully_shard` per block and then on the root; AutoModel does the same), so a step is a chain of small collectives, each
issued on its own stream next to the compute it can hide behind (Zhao et al. 2023, "PyTorch FSDP: Experiences on Scaling
Fully Sharded Data Parallel", VLDB, sec. 3.3: forward and backward prefetching, the separate communication stream):
- forward: the all-gather of block l+1 is issued while block l computes (FSDP2's implicit forward prefetch, FSDP1's
  CPU running ahead); only what is longer than that block's forward shows. The first gather has nothing before it: it
  is exposed, with the root module's (embedding, final norm, output layer), which FSDP2 does not reshard after forward;
- backward: while block l runs its backward, block l-1's parameters are gathered again (FULL_SHARD / FSDP2 with
  `reshard_after_forward`, not SHARD_GRAD_OP, and not the last block, which torchtitan never reshards: "do not reshard
  after forward for the last transformer block since FSDP would prefetch it immediately") and block l+1's gradients are
  reduce-scattered; the sum shows where it exceeds the block's backward. The last reduce-scatters (first block, root)
  follow the last backward compute: exposed. With pipeline parallelism torchtitan keeps parameters gathered between
  forward and backward (`fsdp_reshard_after_forward` "default": no reshard when PP is on, config_manager.py @e7c0cae);
- gradient accumulation: every micro-batch gathers and reduces again (torchtitan's train loop never disables gradient
  sync; AutoModel's benchmark configs set `defer_fsdp_grad_sync: False` with GA > 1).
Gradients reduce in `TorchNativeStack.reduce_bytes_per_elem` (float32 in torchtitan), parameters gather in bf16, or
float8 for linear weights under torchao's float8 all-gather. Dense parameters reduce over DP x CP, experts over
expert-DP (measure/comm/topology.py). The collective times are measure/comm/collectives.py's.
"""
from __future__ import annotations

from dataclasses import dataclass

from measure.torch_native.stack import FsdpVersion, TorchNativeStack


@dataclass(frozen=True)
class UnitTraffic:
    """One FSDP unit (a block) per micro-batch: its gather and reduce-scatter seconds, and the compute they may hide
    behind (forward, and backward with recompute and its exposed TP / EP traffic)."""

    gather_s: float
    reduce_s: float
    forward_s: float
    backward_s: float


def regathers_for_backward(stack: TorchNativeStack, pp: int) -> bool:
    """Whether blocks gather their parameters again for the backward (see the module docstring)."""
    return stack.fsdp != FsdpVersion.shard_grad_op and pp == 1


def exposed_forward_s(units: list[UnitTraffic], root_gather_s: float) -> float:
    """Forward seconds of one chunk's micro-batch spent waiting on gathers: the root's and the first block's, then each
    block's gather beyond the previous block's forward."""
    if not units:
        return root_gather_s
    hidden = sum(max(nxt.gather_s - prev.forward_s, 0.0) for prev, nxt in zip(units, units[1:]))
    return root_gather_s + units[0].gather_s + hidden


def exposed_backward_s(units: list[UnitTraffic], root_reduce_s: float, regather: bool) -> float:
    """Backward seconds of one chunk's micro-batch spent waiting on collectives. Blocks run last to first; behind block
    l's backward go block l-1's re-gather (when `regather`; the last block is kept gathered) and block l+1's
    reduce-scatter; the first block's and the root's reduce-scatters come after all compute."""
    if not units:
        return root_reduce_s
    exposed = 0.0
    n = len(units)
    for i in range(n - 1, -1, -1):
        comm = (units[i - 1].gather_s if regather and i > 0 else 0.0) + (units[i + 1].reduce_s if i + 1 < n else 0.0)
        exposed += max(comm - units[i].backward_s, 0.0)
    return exposed + units[0].reduce_s + root_reduce_s
