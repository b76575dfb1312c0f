"""A cluster's calibration factors, and the hardware profile they turn the shipped one into.

Why a few multiplicative factors on the shipped constants, not a refit of every constant: a user brings one to a
handful of logs, and a log's step time is one number (a few with `--timing-log-level`). Each factor is one
interpretable lever that many constants share, so one log can move one factor and the rest stay at the shipped
values, which were fitted on every published run (hardware/software_constants.yaml):
- compute: scales every achieved-efficiency constant of the kernels (GEMM curve, attention, memory-bound), i.e. this
  cluster's clocks, power cap, container kernels;
- communication: scales the collective and point-to-point bandwidth efficiencies and divides the fixed collective
  latency (NCCL version, network, topology);
- host: scales the host-side constants (time per op, kernel launch, MoE dispatcher sync, per-expert GEMM launch),
  i.e. the CPU, Python and framework version.
The allocator gap (`max reserved - max allocated` in Megatron's memory report) is measured, not fitted: it is added in
exact bytes to the framework reserve, so a calibrated "fits" means fits under this cluster's allocator.
Every consumer (check, solve's tables, the projection, sweep, report) reads `profile.calibration`, so a calibrated
profile is all the rest of shardplan needs.
"""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from hardware.profile import HardwareProfile

FACTOR_NAMES = ("compute", "communication", "host")
MIN_FACTOR, MAX_FACTOR = 0.25, 4.0  # a cluster 4x off the shipped constants is a misread log, not a calibration


class ClusterFactors(BaseModel):
    """Multipliers on the shipped constants; 1.0 leaves a constant as shipped. Above 1 = faster than shipped."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    compute: float = Field(1.0, ge=MIN_FACTOR, le=MAX_FACTOR, description="kernel efficiency multiplier (GEMM, attention, memory-bound)")
    communication: float = Field(1.0, ge=MIN_FACTOR, le=MAX_FACTOR, description="collective / p2p bandwidth efficiency multiplier")
    host: float = Field(1.0, ge=MIN_FACTOR, le=MAX_FACTOR, description="host speed multiplier: host-side times are divided by it")
    allocator_gap_bytes: Optional[int] = Field(None, ge=0, le=1 << 40, description="measured max reserved - max allocated, "
                                               "added to the framework reserve; None = not measured")


def _efficiency(value: float, factor: float) -> float:
    """An achieved/peak efficiency scaled by a factor, kept inside (0, 1]: no calibration makes a kernel beat peak."""
    return min(1.0, value * factor)


def apply_factors(profile: HardwareProfile, factors: ClusterFactors) -> HardwareProfile:
    """The profile whose calibration constants carry `factors` (the profile's peaks, links and memory stay as shipped)."""
    cal = profile.calibration
    c, k, h = factors.compute, factors.communication, factors.host
    update = {
        "gemm_efficiency": tuple((x, _efficiency(eff, c)) for x, eff in cal.gemm_efficiency),
        "attention_efficiency": _efficiency(cal.attention_efficiency, c),
        "memory_bound_efficiency": _efficiency(cal.memory_bound_efficiency, c),
        "collective_bandwidth_efficiency": _efficiency(cal.collective_bandwidth_efficiency, k),
        "p2p_bandwidth_efficiency": _efficiency(cal.p2p_bandwidth_efficiency, k),
        "collective_fixed_overhead_us": cal.collective_fixed_overhead_us / k,
        "host_time_per_op_us": cal.host_time_per_op_us / h,
        "kernel_launch_us": cal.kernel_launch_us / h,
        "moe_dispatch_overhead_us": cal.moe_dispatch_overhead_us / h,
        "gemm_launch_host_us": cal.gemm_launch_host_us / h,
    }
    if factors.allocator_gap_bytes is not None:
        update["framework_overhead_bytes"] = cal.framework_overhead_bytes + factors.allocator_gap_bytes
    new_cal = type(cal).model_validate({**cal.model_dump(), **update})
    return profile.model_copy(update={"calibration": new_cal})
