"""Data-parallel communication of one training step: gradient reduction and parameter gathering per sharding,
and how much of it the step's compute hides.

Why a window and not only a share: Megatron-LM reduces gradients only in the last micro-batch's backward. Its
schedules run every other micro-batch inside `no_sync_func()` (megatron/core/pipeline_parallel/schedules.py,
`forward_backward_no_pipelining`: "Run computation for last microbatch out of context handler (want to
synchronize gradients)"; the pipelined schedules call `enable_grad_sync()` before each chunk's last backward), so
the bucketed reduce-scatter / all-reduce that `overlap_grad_reduce` launches (distributed/param_and_grad_buffer.py)
can only hide behind one micro-batch's backward. With `overlap_param_gather` the distributed optimizer's parameter
all-gather is waited on bucket by bucket in the next step's forward pre-hooks
(distributed/distributed_data_parallel.py `_make_forward_pre_hook`), i.e. behind the first micro-batch's forward.
A rank holding many parameters per GPU (experts over a narrow expert-DP group across nodes, few micro-batches)
therefore shows the part of its traffic that does not fit its window; the calibrated share
(`Calibration.exposed_comm_fraction`: the last bucket's reduce and the first bucket's gather always wait) is the
floor. FSDP keeps the calibrated share alone: it is priced as gathering before each micro-batch's forward and
backward and reducing after each backward (Zhao et al. 2023, "PyTorch FSDP", sec. 3.2), and whether a torch-native
stack does that under gradient accumulation is its own setting (NeMo AutoModel's GPT-OSS-120B on 64 H100 at EP 1
measured 4.3 s a step for 4 micro-batches, less than one all-gather of its 234 GB of bf16 params per micro-batch
would take over InfiniBand), so a window over a pass count that may not be the run's is not applied (docs/limits.md).
"""
from __future__ import annotations

import numpy as np

from constraints.spec import DataParallelSharding
from hardware.profile import HardwareProfile
from measure.comm import collectives as col
from measure.comm.topology import Groups

FSDP_SHARDINGS = (DataParallelSharding.megatron_fsdp, DataParallelSharding.torch_fsdp2)


def hidden_behind(comm_s, window_s, exposed_fraction: float, overlapped):
    """Seconds of an overlapped collective of `comm_s` left showing behind `window_s` of compute: what does not fit
    the window, and never less than the calibrated exposed share; all of it when not overlapped (scalars or numpy
    arrays)."""
    return np.where(overlapped, np.maximum(comm_s - window_s, comm_s * exposed_fraction), comm_s)


def exposed_dp_s(sharded, fsdp, one_pass_s, all_reduce_s, num_microbatches, fwd_window_s, bwd_window_s,
                 exposed_fraction: float, overlap_grad_reduce: bool, overlap_param_gather: bool):
    """Exposed data-parallel seconds of one step (scalars or numpy arrays, shared by `measure.projection.project` and
    `measure.projection.vectorized`). `one_pass_s`: one reduce-scatter (= one all-gather) of the rank's bf16 params over DP and
    expert-DP; `all_reduce_s`: their all-reduce (unsharded DDP); windows: one micro-batch's forward and backward
    (with weight gradients) on that rank. DDP: the all-reduce behind the last backward. Distributed optimizer: the
    reduce-scatter behind the last backward, the all-gather behind the first forward. FSDP: three passes per
    micro-batch at the calibrated share (see the module docstring)."""
    f = exposed_fraction
    ddp = hidden_behind(all_reduce_s, bwd_window_s, f, overlap_grad_reduce)
    dist_opt = hidden_behind(one_pass_s, bwd_window_s, f, overlap_grad_reduce) \
        + hidden_behind(one_pass_s, fwd_window_s, f, overlap_param_gather)
    fsdp_s = 3 * num_microbatches * one_pass_s * np.where(overlap_grad_reduce, f, 1.0)
    return np.where(sharded, np.where(fsdp, fsdp_s, dist_opt), ddp)


def dp_comm_s(sharding: DataParallelSharding, dense_bytes: float, expert_bytes: float, num_microbatches: int, groups: Groups,
              profile: HardwareProfile, overlap_grad_reduce: bool, overlap_param_gather: bool, fwd_window_s: float,
              bwd_window_s: float) -> float:
    """Exposed data-parallel traffic of one step for one rank's bf16 params/grads (dense over DP x CP, experts over
    expert-DP): `exposed_dp_s` of Megatron's collectives (DDP: one all-reduce; distributed optimizer: one
    reduce-scatter of grads and one all-gather of params; FSDP: three passes per micro-batch)."""
    sharded = sharding != DataParallelSharding.none
    one = col.reduce_scatter_s(dense_bytes, groups.dp, profile) + col.reduce_scatter_s(expert_bytes, groups.edp, profile)
    ar = 0.0 if sharded else col.all_reduce_s(dense_bytes, groups.dp, profile) + col.all_reduce_s(expert_bytes, groups.edp, profile)
    return float(exposed_dp_s(sharded, sharding in FSDP_SHARDINGS, one, ar, num_microbatches, fwd_window_s, bwd_window_s,
                              profile.calibration.exposed_comm_fraction, overlap_grad_reduce, overlap_param_gather))
