"""One training step of a Megatron-DeepSpeed run (Megatron's layers, DeepSpeed's pipeline engine), on one rank.

Why a step model of its own: priced as Megatron-LM of their month, MT-NLG 530B and BLOOM-176B read 14-26 % too fast
(docs/validation.md, software slice megatron-deepspeed 2022), and the engine that runs them is not Megatron's
(measure/deepspeed/engine.py lists what differs, with its sources). What it shares with measure/projection/
project.py, and reuses from there: each stage's per-micro-batch forward and backward (Megatron's layers, its
tensor-parallel all-reduces, activation recomputation of every layer, the embedding and loss head), read from
Megatron's own projection of the same recipe (its simulated pipeline's first micro-batch on each stage), and the
fitted per-step overhead of Megatron's training loop, which Megatron-DeepSpeed keeps (megatron/training.py calls
the engine's `train_batch`). What is DeepSpeed's:
- the schedule: `TrainSchedule` with blocking exchanges (measure/deepspeed/train_schedule.py);
- the stage-boundary tensors, partitioned over TP and all-gathered on arrival (measure/deepspeed/pipe_exchange.py);
- a gradient accumulation pass per micro-batch, and the tied-weight and data-parallel reductions and ZeRO-1's
  parameter all-gather after the pipeline drains (measure/deepspeed/gradients.py);
- the optimizer step over the parameters the rank updates: its 1/DP partition under ZeRO-1 / BF16_Optimizer, all of
  them otherwise (measure/kernels/layer_ops.py `optimizer_ops`).
No constant here is fitted on a Megatron-DeepSpeed row, and no fit uses those rows (bench/run_slices.py).
"""
from __future__ import annotations

from constraints.memory.in_flight import num_microbatches
from constraints.spec import JobSpec, ModelSpec, Placement, Recipe
from constraints.stages import rank_chunks
from hardware.profile import HardwareProfile
from measure.comm.topology import group_span, recipe_groups
from measure.deepspeed.engine import DeepSpeedEngine, refusal
from measure.deepspeed.gradients import accumulation_s, data_parallel_reduce_s, tied_reduce_s
from measure.deepspeed.pipe_exchange import pipe_transfers
from measure.deepspeed.train_schedule import train_schedule_s
from measure.kernels.common import Phase
from measure.kernels.layer_ops import head_ops, layer_kind_of, optimizer_ops
from measure.kernels.roofline import op_time_s
from measure.projection.flops import flops_per_iteration
from measure.projection.layer_cost import layer_parts
from measure.projection.project import Breakdown, Projection, project


def stage_passes_s(model: ModelSpec, job: JobSpec, recipe: Recipe, placement: Placement,
                   profile: HardwareProfile) -> tuple[list[float], list[float], Projection]:
    """(forward seconds, backward seconds) of one micro-batch on each stage, as Megatron's projection of the same
    recipe runs them (its 1F1B simulation's first micro-batch; the backward holds the weight gradients and the
    recomputed forward), and that projection."""
    events: list = []
    base = project(model, job, recipe, placement, profile, timeline=events)
    forward, backward = [0.0] * recipe.pp, [0.0] * recipe.pp
    for rank, kind, mb, _chunk, start, end in events:
        if mb == 0 and kind == "F":
            forward[rank] = end - start
        elif mb == 0 and kind in ("B", "W"):
            backward[rank] += end - start
    return forward, backward, base


def stage_params(model: ModelSpec, job: JobSpec, recipe: Recipe, placement: Placement, profile: HardwareProfile) -> tuple[list[int], int]:
    """(parameters each stage's rank holds, the tied embedding's parameters on one rank). Megatron-DeepSpeed's
    GPTModelPipe ties the input embedding and the output layer whatever the model says (two `TiedLayerSpec('embed',
    ...)`, bigscience-workshop/Megatron-DeepSpeed megatron/model/gpt_model.py @8387ae17): DeepSpeed keeps a copy on the
    first and on the last stage and all-reduces its gradient between them."""
    per_kind = {k: layer_parts(model, job, recipe, placement, profile, layer_kind_of(k)) for k in set(model.layer_kinds)}
    head = head_ops(model, job, recipe)
    vocab = (sum(p.op.shape[0] * p.op.shape[1] for p in head if p.phase == Phase.bwd_wgrad and p.op.kind.value == "gemm")
             // max(1 + model.mtp_num_layers, 1))
    out = []
    for chunks in rank_chunks(model, recipe):
        chunk = chunks[0]
        n = sum(per_kind[model.layer_kinds[i]].dense_params + per_kind[model.layer_kinds[i]].expert_params for i in chunk.layers)
        out.append(n + vocab * int(chunk.embedding or chunk.loss))
    return out, vocab


def project_megatron_deepspeed(model: ModelSpec, job: JobSpec, recipe: Recipe, placement: Placement,
                               profile: HardwareProfile, engine: DeepSpeedEngine) -> Projection:
    """Project one step of `recipe` run by Megatron-DeepSpeed with `engine` (see the module docstring); a run with a
    `refusal` raises ValueError with it."""
    refused = refusal(engine, recipe.pp, recipe.vpp)
    if refused:
        raise ValueError(refused)
    world, pp = placement.world_size, recipe.pp
    dp = max(recipe.dp(world), 1)
    m = max(num_microbatches(job.global_batch_size, recipe.mbs, dp), 1)
    groups = recipe_groups(recipe, profile, placement)
    forward, backward, base = stage_passes_s(model, job, recipe, placement, profile)
    params, tied = stage_params(model, job, recipe, placement, profile)
    moves = pipe_transfers(model, job, recipe, engine, groups, profile)
    accumulate = [accumulation_s(n, engine, profile) for n in params]
    f_s = [f + (moves.forward_gather_s if r > 0 else 0.0) for r, f in enumerate(forward)]
    b_s = [b + (moves.backward_gather_s if r < pp - 1 else 0.0) + accumulate[r] for r, b in enumerate(backward)]
    step = train_schedule_s(f_s, b_s, m, moves.exchange)
    heaviest = max(range(pp), key=lambda r: params[r])
    # the two ranks holding the tied embedding: first and last stage, `(pp - 1) * dp * tp` ranks apart
    pair = group_span(2, (pp - 1) * dp * recipe.tp * recipe.cp, profile, placement)
    reduce_s = tied_reduce_s(tied, engine, pair, profile) + data_parallel_reduce_s(params[heaviest], engine, groups.dp, profile)
    owned = params[heaviest] // dp if (engine.bf16_optimizer or engine.zero_stage >= 1) else params[heaviest]
    opt = sum(op_time_s(p, profile) for p in optimizer_ops(model, recipe, owned))
    overhead = profile.calibration.step_overhead_s
    total = step + reduce_s + opt + overhead
    crit = max(range(pp), key=lambda r: f_s[r] + b_s[r])
    b0 = base.breakdown
    # a middle stage receives and sends each micro-batch's activation and gradient, and runs its three all-gathers
    pp_comm = m * (2 * (moves.exchange.activation_s + moves.exchange.gradient_s) + moves.forward_gather_s
                   + moves.backward_gather_s)
    accounted = b0.compute + b0.recompute + b0.tp_comm + b0.cp_comm + b0.ep_comm + pp_comm + m * accumulate[crit]
    breakdown = Breakdown(compute=b0.compute + m * accumulate[crit], recompute=b0.recompute, tp_comm=b0.tp_comm,
                          cp_comm=b0.cp_comm, ep_comm=b0.ep_comm, dp_comm=reduce_s, pp_comm=pp_comm,
                          pp_bubble=max(step - accounted, 0.0), optimizer=opt + overhead)
    flops = flops_per_iteration(model, job, recipe)
    tokens = job.global_batch_size * job.seq_length
    return Projection(iteration_time_s=total, tokens_per_s_per_gpu=tokens / total / world,
                      mfu=flops / (total * world * profile.peak_tflops.bf16 * 1e12),
                      model_tflops_per_gpu=flops / total / world / 1e12, bubble_fraction=max(step - accounted, 0.0) / step,
                      breakdown=breakdown)
