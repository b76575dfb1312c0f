"""One training step of a torch-native stack (torchtitan, NeMo AutoModel, PyTorch FSDP1/FSDP2), on one rank.

Why a step model of its own: priced as Megatron, these runs read 20-40 % off in both directions (docs/validation.md,
torch-native slice), for reasons that are the stack's, not the kernels': FSDP gathers every block's parameters on every
micro-batch and hides them behind the previous block (measure/torch_native/fsdp.py), eager PyTorch runs element-wise
chains unfused unless `torch.compile` or Transformer Engine modules fuse them (pointwise.py), activation checkpointing
follows PyTorch's policies (activation_checkpoint.py) and float8 comes from torchao (float8.py). Tensor parallelism is
DTensor's (`ColwiseParallel` / `RowwiseParallel` with `SequenceParallel`): its all-gathers and reduce-scatters sit on
the critical path, priced whole. Async TP (PyTorch symmetric-memory micro-pipelining, `enable_async_tensor_parallel`) is
refused by name (`refusal`): a decomposition that hides each piece's transfer behind the previous piece's GEMM (Wang et
al., ASPLOS 2023) projects +33 % on torchtitan's 2D Llama 3.1 70B run, where the publication measured +5.7 %
(benchmarks/llama3_h100_202412_torchtitan.md Table 4: 829 -> 876 TPS/GPU), and one published pair cannot fit a
better one. What it shares with measure/projection/project.py, and reuses from there: the per-op kernel
times of a block (measure/projection/layer_cost.layer_parts, measure/kernels: measured tables, else the roofline with
the part's calibrated efficiencies), the collective model (measure/comm), the expert dispatch and the CP ring, the
embedding / loss head and the pipeline simulator (measure/pipeline/simulator.py; torch.distributed.pipelining's
1F1B / interleaved 1F1B run backward with its weight gradients, so W is part of B).
Not priced: Megatron's fitted per-step overhead (`Calibration.step_overhead_s`, fitted on Megatron rows), NCCL's
slowdown of overlapped compute, the optimizer's foreach vs fused implementation (priced as a fused Adam), gradient
clipping. No constant here is fitted on a torch-native row.
"""
from __future__ import annotations

from typing import Optional

from constraints.memory.in_flight import num_microbatches
from constraints.spec import JobSpec, ModelSpec, MoeDispatcher, Placement, Recipe
from constraints.stages import rank_chunks
from hardware.profile import HardwareProfile
from measure.comm import collectives as col
from measure.comm.topology import recipe_groups
from measure.kernels.common import Phase, rank_tokens
from measure.kernels.layer_ops import head_ops, layer_kind_of, layer_ops, optimizer_ops
from measure.kernels.roofline import op_time_s
from measure.pipeline.simulator import simulate
from measure.projection.flops import flops_per_iteration
from measure.projection.layer_cost import layer_parts, timed_ops
from measure.projection.project import Breakdown, Projection
from measure.torch_native.activation_checkpoint import recompute_s
from measure.torch_native.float8 import weight_cast_ops
from measure.torch_native.fsdp import UnitTraffic, exposed_backward_s, exposed_forward_s, regathers_for_backward
from measure.torch_native.pointwise import eager_extra_s, eager_rope_ops
from measure.torch_native.stack import TorchNativeStack


class _Block:
    """One layer kind's per-micro-batch seconds on this rank, before FSDP: forward, backward (dgrad + wgrad +
    exposed TP / EP / CP), the forward ops activation checkpointing reads, and the parameters FSDP moves."""

    def __init__(self, model: ModelSpec, job: JobSpec, recipe: Recipe, placement: Placement, profile: HardwareProfile,
                 kind, stack: TorchNativeStack):
        cal = profile.calibration
        kind = layer_kind_of(kind)
        parts = layer_parts(model, job, recipe, placement, profile, kind)
        ops = timed_ops(layer_ops(model, job, recipe, kind), profile, None, None, cal.moe_load_imbalance)
        self.forward_ops = ops
        alltoall = recipe.moe_dispatcher == MoeDispatcher.alltoall
        fwd = parts.fwd_s + (parts.alltoall_sort_fwd_s if alltoall else 0.0)
        bwd = parts.dgrad_s + parts.wgrad_s + (parts.alltoall_sort_bwd_s if alltoall else 0.0)
        if not stack.fused_pointwise:
            extra = eager_extra_s(ops, stack.eager_norm)
            t, _ = rank_tokens(job, recipe)
            heads = max(model.num_attention_heads // recipe.tp, 1)
            kv = max(model.num_query_groups // recipe.tp, 1)
            rope = timed_ops(eager_rope_ops(model, t, heads, kv), profile, None, None, 1.0) \
                if not model.multi_latent_attention and kind.has_attention else []
            fwd += extra[Phase.fwd] + sum(s for p, s in rope if p.phase == Phase.fwd)
            bwd += extra[Phase.bwd_dgrad] + sum(s for p, s in rope if p.phase != Phase.fwd)
        dp_shards = recipe.dp(placement.world_size) * recipe.cp
        if job.precision.is_fp8:
            casts = weight_cast_ops(parts.dense_params + parts.expert_params, dp_shards if stack.fp8_all_gather else 1)
            fwd += sum(s for _, s in timed_ops(casts, profile, None, None, 1.0))
        tp = parts.tp_raw_s  # DTensor TP collectives sit on the critical path (see the module docstring)
        ep = parts.ep_raw_by_dispatcher_s[recipe.moe_dispatcher]
        self.tp_s, self.ep_s, self.cp_s = 2 * tp, 2 * ep, 3 * parts.cp_s
        self.forward_s = fwd + tp + ep + parts.cp_s
        self.compute_s = fwd + bwd
        self.backward_s = bwd + tp + ep + 2 * parts.cp_s
        self.dense_params, self.expert_params = parts.dense_params, parts.expert_params


def refusal(stack: TorchNativeStack) -> Optional[str]:
    """Why the step model does not price this stack (None when it does)."""
    if stack.async_tp:
        return ("async TP (torch symmetric-memory micro-pipelining) is not priced by the torch-native step model: its "
                "overlap is not known well enough (measure/torch_native/step.py)")
    return None


def _collective_s(dense_bytes: float, expert_bytes: float, groups, profile: HardwareProfile, gather: bool) -> float:
    """One all-gather (or reduce-scatter) of a unit's dense and expert parameters over their FSDP groups."""
    op = col.all_gather_s if gather else col.reduce_scatter_s
    dense = op(dense_bytes, groups.dp, profile) if groups.dp.size > 1 else 0.0
    expert = op(expert_bytes, groups.edp, profile) if expert_bytes and groups.edp.size > 1 else 0.0
    return dense + expert


def project_torch_native(model: ModelSpec, job: JobSpec, recipe: Recipe, placement: Placement, profile: HardwareProfile,
                         stack: TorchNativeStack) -> Projection:
    """Project one step of `recipe` run by a torch-native `stack` (see the module docstring); a stack with a
    `refusal` raises ValueError with it."""
    refused = refusal(stack)
    if refused:
        raise ValueError(refused)
    world = placement.world_size
    dp = max(recipe.dp(world), 1)
    m = max(num_microbatches(job.global_batch_size, recipe.mbs, dp), 1)
    groups = recipe_groups(recipe, profile, placement)
    blocks = {k: _Block(model, job, recipe, placement, profile, k, stack) for k in set(model.layer_kinds)}
    gather_bytes = 1 if (stack.fp8_all_gather and job.precision.is_fp8) else 2
    head = timed_ops(head_ops(model, job, recipe), profile, None, None, 1.0)
    emb = [sum(t for p, t in head if p.op.kind.value == "embedding" and (p.phase == Phase.fwd) == fwd) for fwd in (True, False)]
    loss = [sum(t for p, t in head if p.op.kind.value != "embedding" and (p.phase == Phase.fwd) == fwd) for fwd in (True, False)]
    # the output layer's weight on this rank (its wgrad GEMM; MTP heads share it, as measure/projection/project.py counts)
    vocab_params = (sum(p.op.shape[0] * p.op.shape[1] for p, _ in head if p.phase == Phase.bwd_wgrad and p.op.kind.value == "gemm")
                    // max(1 + model.mtp_num_layers, 1))
    chunks = rank_chunks(model, recipe)
    pp, v = recipe.pp, len(chunks[0])
    regather = regathers_for_backward(stack, pp)
    f_s = [[0.0] * v for _ in range(pp)]
    b_s = [[0.0] * v for _ in range(pp)]
    totals = {k: [0.0] * pp for k in ("compute", "recompute", "tp", "cp", "ep", "dp")}
    owned = [0.0] * pp
    for r in range(pp):
        for c, chunk in enumerate(chunks[r]):
            units, rec = [], 0.0
            for i in chunk.layers:
                blk = blocks[model.layer_kinds[i]]
                again = recompute_s(stack.activation_checkpoint, model, blk.forward_ops, blk.forward_s, i)
                rec += again
                units.append(UnitTraffic(
                    gather_s=_collective_s(blk.dense_params * gather_bytes, blk.expert_params * gather_bytes, groups, profile, True),
                    reduce_s=_collective_s(blk.dense_params * stack.reduce_bytes_per_elem,
                                           blk.expert_params * stack.reduce_bytes_per_elem, groups, profile, False),
                    forward_s=blk.forward_s, backward_s=blk.backward_s + again))
                for key, value in (("compute", blk.compute_s), ("tp", blk.tp_s), ("ep", blk.ep_s), ("cp", blk.cp_s)):
                    totals[key][r] += m * value
                owned[r] += blk.dense_params / (dp * recipe.cp) + blk.expert_params / max(recipe.expert_dp(world), 1)
            # the root FSDP unit: the embedding where the chunk holds it, the output layer unless it is the same tied weight
            root = vocab_params * (int(chunk.embedding) + int(chunk.loss and not (model.tied_embeddings and chunk.embedding)))
            root_gather = _collective_s(root * 2, 0, groups, profile, True)
            root_reduce = _collective_s(root * stack.reduce_bytes_per_elem, 0, groups, profile, False)
            owned[r] += root / (dp * recipe.cp)
            fsdp_f = exposed_forward_s(units, root_gather)
            fsdp_b = exposed_backward_s(units, root_reduce, regather)
            head_f = (emb[0] if chunk.embedding else 0.0) + (loss[0] if chunk.loss else 0.0)
            head_b = (emb[1] if chunk.embedding else 0.0) + (loss[1] if chunk.loss else 0.0)
            f_s[r][c] = sum(u.forward_s for u in units) + fsdp_f + head_f
            b_s[r][c] = sum(u.backward_s for u in units) + fsdp_b + head_b
            totals["compute"][r] += m * (head_f + head_b)
            totals["recompute"][r] += m * rec
            totals["dp"][r] += m * (fsdp_f + fsdp_b)
    p2p = 0.0
    if pp > 1:
        t_tok = recipe.mbs * job.seq_length // recipe.cp
        act = (t_tok // recipe.tp if recipe.sp_active else t_tok) * model.hidden_size * 2
        p2p = col.p2p_s(act, groups.pp.num_domains > 1, profile)
    if pp == 1 and v == 1:
        step, bubble, crit = m * (f_s[0][0] + b_s[0][0]), 0.0, 0
    else:
        res = simulate(recipe.schedule, f_s, b_s, [[0.0] * v for _ in range(pp)], m, p2p, recipe.microbatch_group_size)
        step, bubble = res.step_time_s, res.bubble_fraction
        crit = max(range(pp), key=lambda r: res.busy_s[r])
    opt = sum(op_time_s(p, profile) for p in optimizer_ops(model, recipe, int(max(owned))))
    total = step + opt
    flops = flops_per_iteration(model, job, recipe)
    tokens = job.global_batch_size * job.seq_length
    pp_comm = 2 * m * v * p2p if pp > 1 else 0.0
    accounted = sum(totals[k][crit] for k in totals) + pp_comm
    breakdown = Breakdown(compute=totals["compute"][crit], recompute=totals["recompute"][crit], tp_comm=totals["tp"][crit],
                          cp_comm=totals["cp"][crit], ep_comm=totals["ep"][crit], dp_comm=totals["dp"][crit],
                          pp_comm=pp_comm, pp_bubble=max(step - accounted, 0.0), optimizer=opt)
    return Projection(iteration_time_s=total, tokens_per_s_per_gpu=tokens / total / world,
                      mfu=flops / (total * world * profile.peak_tflops.bf16 * 1e12),
                      model_tflops_per_gpu=flops / total / world / 1e12, bubble_fraction=bubble, breakdown=breakdown)
