"""What DeepSpeed's engine runs around Megatron's model code in a Megatron-DeepSpeed training (MT-NLG, BLOOM).

Why its own description: Megatron-DeepSpeed keeps Megatron's transformer layers and tensor parallelism but hands the
pipeline, the gradients and the optimizer to DeepSpeed (`deepspeed.runtime.pipe.engine.PipelineEngine`; Smith et al.
2022, arXiv 2201.11990 sec. 2.2: "pipeline parallelism and data parallelism from DeepSpeed with tensor slicing from
Megatron"). What differs from Megatron-LM of the same month, each read from microsoft/DeepSpeed (commits 559c4ce11,
2021-12-30, and 9b70ce56e, 2022-06-29, the releases of MT-NLG's and BLOOM's months):
- the schedule is `TrainSchedule` (deepspeed/runtime/pipe/schedule.py): 1F1B on a global step grid, no interleaving,
  every send and receive blocking (pipe/p2p.py `send` / `recv`: "Doesn't support async_op true"), priced by
  measure/deepspeed/train_schedule.py;
- activations and their gradients cross stages split over the tensor-parallel ranks (`is_pipe_partitioned =
  is_model_parallel`, pipe/engine.py) and are all-gathered again on arrival (`PartitionedTensor.full()`), priced by
  measure/deepspeed/pipe_exchange.py;
- gradients are reduced after the whole pipeline has drained (`ReduceTiedGrads`, `ReduceGrads` in the last step of
  `TrainSchedule.steps`), not overlapped with any backward; with DeepSpeed's BF16_Optimizer (bf16 + ZeRO stage 1,
  BLOOM) every micro-batch's bf16 gradients are added into an fp32 copy (`update_hp_grads`), the fp32 copy is the one
  all-reduced (`_bf16_reduce_grads`: `get_grads_for_reduction()`), and the updated bf16 partitions are all-gathered
  after the step (`all_gather_dp_groups`); priced by measure/deepspeed/gradients.py.
ZeRO stages 2 and 3 with pipeline parallelism are refused by DeepSpeed itself (pipe/engine.py: "ZeRO-2 and ZeRO-3 are
incompatible with pipeline parallelism"); stage 3 without it is refused here by name (`refusal`).
"""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field


class DeepSpeedEngine(BaseModel):
    """The DeepSpeed settings the Megatron-DeepSpeed step model reads (measure/deepspeed/step.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    zero_stage: int = Field(0, ge=0, le=3, description="DeepSpeed `zero_optimization.stage`; 0 where the run does "
                            "not state one (a plain all-reduce of the gradients, the same traffic as stage 1's "
                            "reduce then all-gather)")
    bf16_optimizer: bool = Field(False, description="DeepSpeed's BF16_Optimizer (bf16 with ZeRO stage 1 in the "
                                 "pipeline engine): fp32 gradient accumulation and an fp32 all-reduce")
    pipe_partitioned: bool = Field(True, description="DeepSpeed config `pipeline.pipe_partitioned` / "
                                   "`grad_partitioned` (deepspeed/runtime/config.py default True): stage-to-stage "
                                   "tensors split over the tensor-parallel ranks when TP > 1")


# microsoft/DeepSpeed 56c522386 (2022-04-19) "bf16+pipeline parallelism (#1801)" adds deepspeed/runtime/bf16_optimizer.py;
# from then a bf16 run without ZeRO gets BF16_Optimizer (engine.py `_configure_optimizer`: `elif self.bfloat16_enabled():
# self.optimizer = self._configure_bf16_optimizer(...)`), and the pipeline engine's plain all-reduce refuses bf16
# (`allreduce_gradients`: "not valid when bfloat+pipeline_parallelism is enabled")
BF16_OPTIMIZER_SINCE = "2022-04"
STACK = "megatron-deepspeed"


def engine_of_generation(stack: str, month: str, bf16: bool, zero_stage: int = 0, stated_bf16_optimizer: bool = False
                         ) -> Optional[DeepSpeedEngine]:
    """The DeepSpeed engine a Megatron-DeepSpeed generation runs (None for another stack): `zero_stage` as the run
    states it (0 where it does not), BF16_Optimizer where the run names it or where a bf16 run's DeepSpeed has it
    (`BF16_OPTIMIZER_SINCE`)."""
    if stack != STACK and not zero_stage:
        return None
    return DeepSpeedEngine(zero_stage=zero_stage,
                           bf16_optimizer=stated_bf16_optimizer or (bf16 and zero_stage < 2 and month >= BF16_OPTIMIZER_SINCE))


# What the stage-3 refusal says, with the facts behind it (docs/software.md, "Megatron-DeepSpeed").
ZERO3_REFUSAL = ("DeepSpeed ZeRO-3 is not priced: its step is set by stage 3's per-module parameter all-gathers, "
                 "fetched as each module runs with a prefetch of stage3_prefetch_bucket_size elements (default 5e7, "
                 "DeepSpeed zero/constants.py; PartitionedParameterCoordinator in zero/stage3.py), whose exposed time "
                 "no source gives for a run (measure/deepspeed/engine.py)")


def refusal(engine: DeepSpeedEngine, pp: int, vpp: int) -> Optional[str]:
    """Why the Megatron-DeepSpeed step model does not price this run (None when it does)."""
    if engine.zero_stage == 3:
        return ZERO3_REFUSAL
    if pp > 1 and engine.zero_stage == 2:
        return ("DeepSpeed ZeRO-2 with pipeline parallelism: DeepSpeed refuses it (deepspeed/runtime/pipe/engine.py "
                "'ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism')")
    if pp == 1:
        return ("the DeepSpeed engine without pipeline parallelism is not priced: it reduces gradients in buckets "
                "during the backward (zero/stage_1_and_2.py overlap_comm), which the pipeline step model does not "
                "follow (measure/deepspeed/engine.py)")
    if vpp > 1:
        return "DeepSpeed's TrainSchedule has no interleaved (virtual pipeline) stages: give vpp 1"
    return None
