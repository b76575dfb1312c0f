"""Seconds of the tensors DeepSpeed's pipeline engine moves between stages, and the all-gathers that rebuild them.

Why split and rebuilt: with tensor parallelism every TP rank of a stage holds the same activation, so the engine sends
only its 1/TP share (microsoft/DeepSpeed deepspeed/runtime/pipe/engine.py @9b70ce56e, `is_pipe_partitioned =
is_model_parallel`, `is_grad_partitioned = is_model_parallel`; `PartitionedTensor` in deepspeed/runtime/utils.py
splits the flat tensor evenly) and the receiver all-gathers it over the TP group before using it
(`PartitionedTensor.full()`: `dist.all_gather`). Three such all-gathers run per micro-batch and stage boundary:
- the activation, before the receiving stage's forward (`_exec_forward_pass`: `part_input.full()`);
- the gradient, before the sending stage's backward (`_exec_backward_pass`: `part_grad.full()`);
- the stage's own forward output, kept only as its 1/TP share between forward and backward and rebuilt before the
  backward (`_exec_backward_pass`: "Reconstruct if we previously partitioned the output", `part_output.full()`).
The wire transfer is a blocking NCCL send / receive between neighbouring stages (pipe/p2p.py), priced by
measure/comm/collectives.py `p2p_s`; the all-gathers by `all_gather_s` over the TP group. The tensor is Megatron's
[s, b, h] hidden state in the training dtype (Megatron-DeepSpeed has no sequence parallelism). Not priced: the small
meta tensor sent before each share (one latency) and an attention mask that some model pipes pass along (at most
s*s bytes).
"""
from __future__ import annotations

from dataclasses import dataclass

from constraints.spec import JobSpec, ModelSpec, Recipe
from hardware.profile import HardwareProfile
from measure.comm import collectives as col
from measure.comm.topology import Groups
from measure.deepspeed.engine import DeepSpeedEngine
from measure.deepspeed.train_schedule import Exchange

ACTIVATION_BYTES_PER_ELEMENT = 2  # fp16 / bf16 hidden states (Megatron-DeepSpeed casts the pipe input: `_to_float16`)


@dataclass(frozen=True)
class PipeTransfers:
    """One micro-batch's stage-boundary traffic: the wire `exchange` (train_schedule.py), the all-gather a receiving
    stage adds to its forward, and the all-gathers a sending stage adds to its backward."""

    exchange: Exchange
    forward_gather_s: float
    backward_gather_s: float


def activation_bytes(model: ModelSpec, job: JobSpec, recipe: Recipe) -> int:
    """Bytes of one micro-batch's hidden state at a stage boundary (the whole tensor, before partitioning)."""
    return recipe.mbs * (job.seq_length // recipe.cp) * model.hidden_size * ACTIVATION_BYTES_PER_ELEMENT


def pipe_transfers(model: ModelSpec, job: JobSpec, recipe: Recipe, engine: DeepSpeedEngine, groups: Groups,
                   profile: HardwareProfile) -> PipeTransfers:
    """The boundary traffic of one micro-batch (see the module docstring)."""
    full = activation_bytes(model, job, recipe)
    partitioned = engine.pipe_partitioned and recipe.tp > 1
    share = -(-full // recipe.tp) if partitioned else full
    wire = col.p2p_s(share, groups.pp.num_domains > 1, profile)
    gather = col.all_gather_s(full, groups.tp, profile) if partitioned else 0.0
    return PipeTransfers(exchange=Exchange(activation_s=wire, gradient_s=wire), forward_gather_s=gather,
                         backward_gather_s=2 * gather)
