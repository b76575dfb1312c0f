"""Data-parallel communication of one training step: gradient reduction and parameter gathering per sharding."""
from __future__ import annotations

from constraints.spec import DataParallelSharding
from hardware.profile import HardwareProfile
from measure import collectives as col
from measure.topology import Groups

FSDP_SHARDINGS = (DataParallelSharding.megatron_fsdp, DataParallelSharding.torch_fsdp2)


def dp_comm_s(sharding: DataParallelSharding, dense_bytes: float, expert_bytes: float, num_microbatches: int, groups: Groups,
              profile: HardwareProfile, overlap: bool) -> float:
    """Data-parallel traffic of one step for one rank's bf16 params/grads (dense over DP x CP, experts over
    expert-DP). DDP: one gradient all-reduce. Distributed optimizer: one reduce-scatter of grads and one
    all-gather of params (Megatron `DistributedOptimizer`). FSDP (ZeRO-3: Megatron-FSDP optim_grads_params,
    torch FSDP2 with reshard after forward): params are all-gathered before each micro-batch's forward and
    again before its backward, and grads reduce-scattered after each backward (Zhao et al. 2023, "PyTorch
    FSDP", sec. 3.2), so 3 passes per micro-batch. Overlapped collectives leave the exposed fraction."""
    if sharding == DataParallelSharding.none:
        t = col.all_reduce_s(dense_bytes, groups.dp, profile) + col.all_reduce_s(expert_bytes, groups.edp, profile)
    else:
        one = (col.reduce_scatter_s(dense_bytes, groups.dp, profile) + col.reduce_scatter_s(expert_bytes, groups.edp, profile))
        t = (3 * num_microbatches if sharding in FSDP_SHARDINGS else 2) * one  # all-gather costs what reduce-scatter does
    return t * (profile.calibration.exposed_comm_fraction if overlap else 1.0)
