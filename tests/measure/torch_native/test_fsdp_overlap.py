"""FSDP's per-block collectives show only what the neighbouring block's compute cannot cover, plus the first gathers
and the last reduce-scatters (measure/torch_native/fsdp.py)."""
from __future__ import annotations

import pytest

from measure.torch_native.fsdp import UnitTraffic, exposed_backward_s, exposed_forward_s, regathers_for_backward
from measure.torch_native.stack import FsdpVersion, TorchNativeStack


def _units(n: int, gather: float, reduce: float, fwd: float, bwd: float) -> list[UnitTraffic]:
    return [UnitTraffic(gather_s=gather, reduce_s=reduce, forward_s=fwd, backward_s=bwd) for _ in range(n)]


def test_short_collectives_leave_only_the_first_gather_and_the_last_reduce():
    units = _units(4, gather=1.0, reduce=2.0, fwd=3.0, bwd=6.0)
    assert exposed_forward_s(units, root_gather_s=0.5) == pytest.approx(0.5 + 1.0)
    assert exposed_backward_s(units, root_reduce_s=0.25, regather=True) == pytest.approx(2.0 + 0.25)


def test_long_collectives_show_their_excess_over_each_block():
    units = _units(4, gather=5.0, reduce=4.0, fwd=3.0, bwd=6.0)
    # forward: first gather 5, then 3 prefetches each 5 - 3 = 2 beyond the block before
    assert exposed_forward_s(units, root_gather_s=0.0) == pytest.approx(5.0 + 3 * 2.0)
    # backward, blocks 3..0: block 3 hides block 2's regather (5): 0; blocks 2 and 1 hide a regather and a reduce
    # (5 + 4 = 9 > 6): 3 each; block 0 hides block 1's reduce (4): 0; then block 0's own reduce (4)
    assert exposed_backward_s(units, root_reduce_s=0.0, regather=True) == pytest.approx(3.0 + 3.0 + 4.0)
    assert exposed_backward_s(units, root_reduce_s=0.0, regather=False) == pytest.approx(4.0)


def test_shard_grad_op_and_pipelined_runs_keep_parameters_for_the_backward():
    assert regathers_for_backward(TorchNativeStack(fsdp=FsdpVersion.fsdp2), pp=1)
    assert regathers_for_backward(TorchNativeStack(fsdp=FsdpVersion.full_shard), pp=1)
    assert not regathers_for_backward(TorchNativeStack(fsdp=FsdpVersion.shard_grad_op), pp=1)
    assert not regathers_for_backward(TorchNativeStack(fsdp=FsdpVersion.fsdp2), pp=4)
