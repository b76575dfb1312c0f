"""Peak allocated memory over the first training iteration, before the optimizer's moments exist.

Why: a run that is measured (or dies) right after iteration 1 never held its Adam/Muon moments together with its
activations. Megatron's distributed optimizer builds the fp32 master shards when it is constructed
(megatron/core/optimizer/distrib_optimizer.py `_build_model_and_main_param_groups`, `shard_main_param`), but the
moments are created lazily by the first `step()` (Transformer Engine FusedAdam, transformer_engine/pytorch/optimizers/
fused_adam.py `step`: `if len(state) == 0: self.initialize_state(...)`; torch.optim.Adam `_init_group` likewise), after
backward has freed the activations. So iteration 1 peaks at the larger of
- the steady-state peak without the moments (forward/backward with weights, grads, master shards), and
- the optimizer step: all static state (moments included) plus the framework overhead, activations gone.
Iteration 2 onward is the steady-state `MemoryReport.peak_bytes`. (Megatron-Bridge prints memory after iterations 1
and 2 for this reason: "Make sure the memory after the second iteration is reported to include optimizer state
memory", src/megatron/bridge/training/utils/train_utils.py training_log @067f987d.)
"""
from __future__ import annotations

from constraints.memory.per_rank import OPTIMIZER_BYTES, OPTIMIZER_BYTES_BF16_MOMENTS, MemoryReport
from constraints.spec import JobSpec, Precision

MASTER_WEIGHT_BYTES = 4  # the fp32 master copy inside every OPTIMIZER_BYTES entry (the rest is moments)
STATIC_TERMS = ("weights", "gradients", "optimizer_state", "fsdp_unsharded", "framework_overhead", "userbuffers",
                "gemm_workspaces")  # the last two are allocated once, before the first step (userbuffers.py, gemm_workspaces.py)


def moment_bytes(terms: dict[str, int], job: JobSpec) -> int:
    """Bytes of optimizer moments in one rank's terms: the optimizer_state term less its fp32 master share (exact:
    optimizer_state is sharded params x bytes per param)."""
    if job.precision == Precision.fp32:  # fp32 training holds no master copy: the optimizer state is all moments
        return terms.get("optimizer_state", 0)
    per_param = (OPTIMIZER_BYTES_BF16_MOMENTS if job.optimizer_moments_bf16 else OPTIMIZER_BYTES)[job.optimizer]
    return terms.get("optimizer_state", 0) * (per_param - MASTER_WEIGHT_BYTES) // per_param


def first_iteration_peak_bytes(report: MemoryReport, job: JobSpec) -> int:
    """Peak over iteration 1 on the most loaded rank (module docstring): per pipeline rank, max(its steady total -
    its moments, its static state + overhead)."""
    return max(max(stage.total_bytes - moment_bytes(stage.terms, job), sum(stage.terms.get(k, 0) for k in STATIC_TERMS))
               for stage in report.stages)
