"""What a Megatron-LM training log measured, in the units every projection uses.

Why a summary of its own: the log reader keeps per-iteration records (constraints/megatron/training_log.py); check,
calibrate and the report need one steady-state figure per quantity. The step time is the MEDIAN of the steady
iterations (robust to the odd slow step the reader's outlier rule leaves), tokens/s/GPU is derived from it exactly as
Megatron's own throughput line is (global batch x sequence length / step time / world size), and the memory is the
largest `max allocated` / `max reserved` any rank reported: the most loaded rank decides whether a recipe fits.
"""
from __future__ import annotations

import statistics
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field


class MeasuredRun(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    tokens_per_s_per_gpu: float = Field(gt=0, description="global batch x sequence length / step time / GPUs")
    iteration_time_s: float = Field(gt=0, description="median steady-state seconds per iteration")
    tflops_per_gpu: Optional[float] = Field(None, description="median of the log's own TFLOP/s/GPU (--log-throughput)")
    max_allocated_bytes: Optional[int] = Field(None, ge=0, description="largest `max allocated` any rank reported")
    max_reserved_bytes: Optional[int] = Field(None, ge=0, description="largest `max reserved` any rank reported")
    iterations_used: int = Field(ge=1, description="steady-state iterations the figures come from")
    phases_s: dict[str, float] = Field(default_factory=dict, description="per-phase timers (--timing-log-level >= 1), seconds")
    versions: dict[str, str] = Field(default_factory=dict, description="software versions the log printed")

    @property
    def allocator_gap_bytes(self) -> Optional[int]:
        """max reserved - max allocated: what the caching allocator holds beyond live tensors on this cluster."""
        if self.max_allocated_bytes is None or self.max_reserved_bytes is None:
            return None
        return max(self.max_reserved_bytes - self.max_allocated_bytes, 0)


def measured_from_log(log, global_batch_size: int, seq_length: int, world_size: int) -> MeasuredRun:
    """The steady-state summary of a read training log (constraints.megatron.training_log.TrainingLog)."""
    steady = log.steady
    step_s = statistics.median(r.iteration_time_s for r in steady)
    tflops = [r.tflops_per_gpu for r in steady if r.tflops_per_gpu is not None]
    alloc = [m.max_allocated_bytes for m in log.memory]
    reserved = [m.max_reserved_bytes for m in log.memory]
    phases = dict(log.phases.phase_mean_s) if log.phases is not None else {}
    return MeasuredRun(tokens_per_s_per_gpu=global_batch_size * seq_length / step_s / world_size, iteration_time_s=step_s,
                       tflops_per_gpu=statistics.median(tflops) if tflops else None,
                       max_allocated_bytes=max(alloc) if alloc else None, max_reserved_bytes=max(reserved) if reserved else None,
                       iterations_used=len(steady), phases_s=phases, versions=dict(log.versions))
