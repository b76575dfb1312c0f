"""Projection of one recipe: step time, tokens/s/GPU, MFU and where the time goes.

Why this composition: compute is per-op (measured table entry, else roofline), communication is always
analytic (alpha-beta over the Megatron rank layout), and the pipeline schedule turns per-chunk F/B/W
times into a step time. Each piece is its own module; this one only combines them.

Per micro-batch, per layer, on one rank (see measure/kernels/layer_ops.py for shapes):
- TP: with SP an all-gather before and a reduce-scatter after each of attention and MLP, in forward and
  again in backward (Korthikanti et al. 2022, sec. 4.2.2); without SP two all-reduces each way.
  `tp_comm_overlap` hides it behind the pass's GEMMs, down to the calibration's exposed fraction (layer_cost.overlapped_tp_s).
- EP: dispatch and combine all-to-all of t/TP * topk * h bf16 per rank, forward and backward
  (AMD Primus projection, MoE A2A bytes), times the load-imbalance factor (the busiest rank finishes last);
  the flex dispatcher sends a token once per destination node (`collectives.node_dedup_all_to_all_s`);
  `overlap_moe_expert_parallel_comm` hides an A2A behind another micro-batch's opposite pass (Megatron combined
  1F1B), leaving its excess over that compute, at least the calibration's exposed fraction, on the passes that
  have a partner (`layer_cost.ep_paired_fraction`: M-1 of M at PP 1). Each MoE layer adds
  the dispatcher's host sync per pass.
- CP (p2p ring): CP-1 exchanges of the local K,V chunk, hidden behind attention compute when shorter.
- PP: one activation send per chunk boundary, t/TP (SP) * h bf16, on the simulator's critical path.
- DP: gradient reduce-scatter (distributed optimizer / FSDP) or all-reduce of bf16 grads over DP*CP
  (expert grads over expert-DP) and the bf16 param all-gather, per micro-batch under FSDP (`dp_comm_s`);
  overlapped when the flags are on.
- Recompute adds the recomputed modules' forward time to the backward.
- A layer pass takes at least its ops' host time (`_host_floor`): small kernels leave the GPU waiting on the CPU.
"""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from constraints.memory.in_flight import num_microbatches
from constraints.spec import DataParallelSharding, JobSpec, ModelSpec, Placement, Recipe, RecomputeGranularity, RecomputeMethod
from constraints.stages import rank_chunks
from hardware.profile import HardwareProfile
from measure.comm import collectives as col
from measure.comm.data_parallel import dp_comm_s
from measure.comm.topology import recipe_groups
from measure.kernels.layer_ops import Phase, head_ops, layer_kind_of, optimizer_ops
from measure.kernels.roofline import CostLookup, op_time_s
from measure.pipeline.simulator import p2p_units, simulate, staged_closed_form_s
from measure.projection.flops import flops_per_iteration
from measure.projection.layer_cost import layer_cost, timed_ops
from measure.projection.moe_routing import routed_profile


class Breakdown(BaseModel):
    model_config = ConfigDict(extra="forbid")
    compute: float
    recompute: float
    tp_comm: float
    cp_comm: float
    ep_comm: float
    dp_comm: float
    pp_comm: float
    pp_bubble: float
    optimizer: float


class Projection(BaseModel):
    """Projected step of one recipe; times in seconds."""

    model_config = ConfigDict(extra="forbid")
    iteration_time_s: float
    tokens_per_s_per_gpu: float
    mfu: float = Field(description="model FLOPs / (step time x GPUs x the part's dense bf16 peak): one denominator for "
                       "every precision, so precisions compare directly; fp8 and fp4 runs can exceed 1")
    model_tflops_per_gpu: float
    bubble_fraction: float
    breakdown: Breakdown
    tokens_per_s_per_gpu_range: Optional[tuple[float, float]] = Field(
        None, description="[low, high] where 80 % of held-out measurements fell (measure/projection/error_band.py); "
        "set by the API for every projection it returns")


def full_recompute_layers(recipe: Recipe, layers_in_chunk: int) -> int:
    """Layers of a chunk whose whole forward is recomputed (Megatron --recompute-method/num-layers)."""
    rc = recipe.recompute
    if rc.granularity != RecomputeGranularity.full:
        return 0
    if rc.method == RecomputeMethod.block:
        return min(rc.num_layers or layers_in_chunk, layers_in_chunk)
    return layers_in_chunk  # uniform: every layer group is recomputed


def project(model: ModelSpec, job: JobSpec, recipe: Recipe, placement: Placement, profile: HardwareProfile,
            cost_table: Optional[CostLookup] = None, fingerprint: Optional[str] = None, simulate_pipeline: bool = True,
            timeline: Optional[list] = None, cuda_graph_scope: frozenset = frozenset(),
            fp8_attention: bool = False, fused_grouped_mlp: bool = False, natural_routing: bool = False) -> Projection:
    """Project one iteration. `cost_table` entries for `fingerprint` (default: the table's only device)
    replace roofline times; `simulate_pipeline=False` uses the closed-form schedule time (ranking). `timeline`, when
    given, receives the simulated pipeline ops (measure.pipeline.simulator.simulate's `events`). `cuda_graph_scope`: what
    the run captures in CUDA graphs (measure/kernels/cuda_graphs.py; none unless given). `fp8_attention`: the run sets Transformer
    Engine's fp8_dot_product_attention (an fp8 job's core attention in fp8; measure/layer_ops.attention_ops).
    `fused_grouped_mlp`: the run uses Transformer Engine's fused grouped MLP for its experts (measure/layer_ops.moe_ops;
    Megatron sets it for the whole module, so layers kept in bf16 take it too). `natural_routing`: a MoE run routes by its
    learned router, not force-balanced, so its busiest expert carries more than the mean (measure/projection/moe_routing.py)."""
    profile = routed_profile(profile, model, natural_routing)
    if cost_table is not None and fingerprint is None:
        fps = cost_table.fingerprints() if hasattr(cost_table, "fingerprints") else []
        fingerprint = fps[0] if len(fps) == 1 else None
    cal = profile.calibration
    world = placement.world_size
    dp = max(recipe.dp(world), 1)
    m = max(num_microbatches(job.global_batch_size, recipe.mbs, dp), 1)
    kinds = {k: layer_cost(model, job, recipe, placement, profile, layer_kind_of(k), cost_table, fingerprint, m, cuda_graph_scope,
                           fp8_attention, fused_grouped_mlp)
             for k in set(model.layer_kinds) | set(model.mtp_layer_kinds)}
    bf16_layers = job.bf16_layer_indices(model.num_layers)  # --first-last-layers-bf16: these layers' GEMMs run in bf16
    kinds_bf16 = {k: layer_cost(model, job.in_bf16(), recipe, placement, profile, layer_kind_of(k), cost_table, fingerprint, m,
                                cuda_graph_scope, fused_grouped_mlp=fused_grouped_mlp) for k in {model.layer_kinds[i] for i in bf16_layers}}
    head = timed_ops(head_ops(model, job, recipe), profile, cost_table, fingerprint, 1.0)
    emb_fwd = sum(t for p, t in head if p.op.kind.value == "embedding" and p.phase == Phase.fwd)
    emb_bwd = sum(t for p, t in head if p.op.kind.value == "embedding" and p.phase != Phase.fwd)
    loss = {ph: sum(t for p, t in head if p.op.kind.value != "embedding" and p.phase == ph) for ph in Phase}
    flags = model.layer_kinds
    chunks = rank_chunks(model, recipe)
    pp, v = recipe.pp, len(chunks[0])
    f_s = [[0.0] * v for _ in range(pp)]
    b_s = [[0.0] * v for _ in range(pp)]
    w_s = [[0.0] * v for _ in range(pp)]
    parts = {k: [0.0] * pp for k in ("compute", "recompute", "tp", "cp", "ep")}
    dense_params = [0] * pp
    expert_params = [0] * pp
    for r in range(pp):
        for c, chunk in enumerate(chunks[r]):
            layer_list = [(kinds_bf16 if i in bf16_layers else kinds)[flags[i]] for i in chunk.layers] \
                + [kinds[k] for k in model.mtp_layer_kinds] * chunk.mtp
            full = full_recompute_layers(recipe, len(chunk.layers))
            rec = sum(lc.fwd + lc.tp_fwd + lc.ep_fwd for lc in layer_list[:full])
            if recipe.recompute.granularity == RecomputeGranularity.selective:
                rec += sum(lc.recompute_selective for lc in layer_list)
            f = sum(lc.fwd + lc.tp_fwd + lc.ep_fwd + lc.cp_fwd for lc in layer_list)
            b = sum(lc.dgrad + lc.tp_bwd + lc.ep_bwd + lc.cp_bwd for lc in layer_list) + rec
            w = sum(lc.wgrad for lc in layer_list)
            comp = sum(lc.fwd + lc.dgrad + lc.wgrad for lc in layer_list)
            if chunk.embedding:
                f += emb_fwd
                w += emb_bwd
                comp += emb_fwd + emb_bwd
            if chunk.loss:
                f += loss[Phase.fwd]
                b += loss[Phase.bwd_dgrad]
                w += loss[Phase.bwd_wgrad]
                comp += loss[Phase.fwd] + loss[Phase.bwd_dgrad] + loss[Phase.bwd_wgrad]
            f_s[r][c], b_s[r][c], w_s[r][c] = f, b, w
            parts["compute"][r] += m * comp
            parts["recompute"][r] += m * rec
            parts["tp"][r] += m * sum(lc.tp_fwd + lc.tp_bwd for lc in layer_list)
            parts["ep"][r] += m * sum(lc.ep_fwd + lc.ep_bwd for lc in layer_list)
            parts["cp"][r] += m * sum(lc.cp_fwd + lc.cp_bwd for lc in layer_list)
            dense_params[r] += sum(lc.dense_params for lc in layer_list)
            expert_params[r] += sum(lc.expert_params for lc in layer_list)
            vocab_rows = (sum(p.op.shape[0] * p.op.shape[1] for p, _ in head if p.phase == Phase.bwd_wgrad and p.op.kind.value == "gemm")
                          // max(1 + model.mtp_num_layers, 1))
            if chunk.embedding or chunk.loss:
                dense_params[r] += vocab_rows if (chunk.loss and not model.tied_embeddings or chunk.embedding) else 0
    groups = recipe_groups(recipe, profile, placement)
    p2p = 0.0
    if pp > 1:
        t_tok = recipe.mbs * job.seq_length // recipe.cp
        act = (t_tok // recipe.tp if recipe.sp_active else t_tok) * model.hidden_size * 2
        p2p = col.p2p_s(act, groups.pp.num_domains > 1, profile)
        if recipe.overlap_p2p_comm:
            p2p *= cal.exposed_comm_fraction
    if pp == 1 and v == 1:
        step = m * (f_s[0][0] + b_s[0][0] + w_s[0][0])
        bubble, crit = 0.0, 0
        busy = [step]
        if timeline is not None:  # no pipeline: each micro-batch's forward then its backward (with wgrad)
            t_mb, f0 = f_s[0][0] + b_s[0][0] + w_s[0][0], f_s[0][0]
            timeline += [ev for i in range(m) for ev in ((0, "F", i, 0, i * t_mb, i * t_mb + f0),
                                                         (0, "B", i, 0, i * t_mb + f0, (i + 1) * t_mb))]
    elif simulate_pipeline:
        res = simulate(recipe.schedule, f_s, b_s, w_s, m, p2p, recipe.microbatch_group_size, events=timeline)
        step, bubble = res.step_time_s, res.bubble_fraction
        busy = list(res.busy_s)
        crit = max(range(pp), key=lambda r: busy[r])
    else:
        crit = max(range(pp), key=lambda r: sum(f_s[r]) + sum(b_s[r]) + sum(w_s[r]))
        step = staged_closed_form_s(recipe.schedule, [sum(x) for x in f_s], [sum(x) for x in b_s], [sum(x) for x in w_s],
                                    v, m) + p2p_units(recipe.schedule, pp, v, m) * p2p
        busy = [m * (sum(f_s[r]) + sum(b_s[r]) + sum(w_s[r])) for r in range(pp)]
        bubble = 1.0 - sum(busy) / (pp * step)
    # data-parallel gradient reduction and parameter gather (bf16), on the heaviest rank
    rank_dp = max(range(pp), key=lambda r: dense_params[r] + expert_params[r])
    dpb, epb = dense_params[rank_dp] * 2, expert_params[rank_dp] * 2
    dp_t = dp_comm_s(recipe.dp_sharding, dpb, epb, m, groups, profile, recipe.overlap_grad_reduce, recipe.overlap_param_gather,
                     fwd_window_s=sum(f_s[rank_dp]), bwd_window_s=sum(b_s[rank_dp]) + sum(w_s[rank_dp]))
    sharded = recipe.dp_sharding != DataParallelSharding.none
    owned = (dense_params[rank_dp] / (dp * recipe.cp) + expert_params[rank_dp] / max(recipe.expert_dp(world), 1)) if sharded \
        else dense_params[rank_dp] + expert_params[rank_dp]
    opt = sum(op_time_s(p, profile, cost_table, fingerprint) for p in optimizer_ops(model, recipe, int(owned)))
    total = step + dp_t + opt + cal.step_overhead_s
    flops = flops_per_iteration(model, job, recipe)
    tokens = job.global_batch_size * job.seq_length
    pp_comm = 2 * m * v * p2p if pp > 1 else 0.0
    accounted = sum(parts[k][crit] for k in parts) + pp_comm
    breakdown = Breakdown(compute=parts["compute"][crit], recompute=parts["recompute"][crit], tp_comm=parts["tp"][crit],
                          cp_comm=parts["cp"][crit], ep_comm=parts["ep"][crit], dp_comm=dp_t, pp_comm=pp_comm,
                          pp_bubble=max(step - accounted, 0.0), optimizer=opt + cal.step_overhead_s)
    return Projection(iteration_time_s=total, tokens_per_s_per_gpu=tokens / total / world,
                      mfu=flops / (total * world * profile.peak_tflops.bf16 * 1e12),
                      model_tflops_per_gpu=flops / total / world / 1e12, bubble_fraction=bubble, breakdown=breakdown)
