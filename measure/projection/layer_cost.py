"""One transformer layer's per-micro-batch cost on one rank: compute, recompute and TP/EP/CP communication.

Why two steps: what a layer costs splits into the expensive part that depends only on the per-rank shape
(TP, CP, EP, ETP, MBS, SP: the ops, their times, the collectives' raw times; `layer_parts`) and the cheap
part that the recompute modules and the overlap flags decide (`finish_layer_cost`). The solver prices
thousands of layer shapes under several recompute sets and both `--tp-comm-overlap` values, so the
vectorised projection caches the parts per shape and finishes them per variant; `layer_cost` is the
two steps in one, which `measure.projection.project` uses.

Communication per micro-batch (see measure/projection/project.py's docstring for the sources):
- TP: with SP an all-gather and a reduce-scatter per block, else an all-reduce; the MoE block swaps its TP
  all-reduce for EP/ETP traffic but keeps the SP gather/scatter pair.
- EP: dispatch + combine all-to-all of t/TP * topk * h bf16, times the load-imbalance factor; the flex
  dispatcher deduplicates per destination node; ETP adds an all-gather + reduce-scatter over ETP. With EP A2A
  overlap, what Megatron's combined 1F1B layer schedule cannot hide behind the compute node each dispatch / combine
  is paired with stays exposed (measure/projection/ep_overlap_schedule.py, `finish_parts`).
- CP (p2p ring, Megatron's default `--cp-comm-type p2p`): CP-1 K,V exchanges of one rank's K/V shard per pass, which
  Transformer Engine runs on its own stream under the attention kernels (`cp_ring_s`); the backward moves K,V and dK,dV.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from constraints.spec import JobSpec, ModelSpec, MoeDispatcher, Placement, Recipe
from hardware.profile import Calibration, HardwareProfile
from measure.comm import collectives as col
from measure.comm.topology import recipe_groups
from measure.kernels.cuda_graphs import FULL_ITERATION, captures_experts, uncaptured_ops
from measure.kernels.layer_ops import (
    LayerKind,
    Phase,
    PhaseOp,
    alltoall_sort_ops,
    attention_key,
    attention_ops,
    block_key,
    block_ops,
    expert_activation_host_syncs,
)
from measure.kernels.mamba_ops import mamba_cp_s
from measure.kernels.roofline import CostLookup, op_time_s
from measure.projection.ep_overlap_schedule import exposed_ep_pair_s
from measure.projection.moe_routing import domain_hit_probability

# Megatron's --recompute-modules names -> the layer_ops modules whose forward they re-run
# layer_ops modules of the routed experts (grouped GEMMs, their activation, permute / unpermute): what Megatron's EP
# overlap schedule runs as the `mlp` node (measure/projection/ep_overlap_schedule.py); the rest of a layer is `pre_dispatch`
EXPERT_MODULES = frozenset({"moe", "moe_act"})
RECOMPUTE_MODULES = {"moe": {"moe", "moe_act", "router", "moe_latent_proj"}, "mlp": {"mlp"}, "core_attn": {"core_attn"},
                      "layernorm": {"layernorm"}, "moe_act": {"moe_act"}, "mla_up_proj": {"mla_up_proj"},
                      "shared_experts": {"shared_experts"}}


def recomputed_modules(modules) -> frozenset[str]:
    """layer_ops modules whose forward selective recompute of these --recompute-modules re-runs in the backward."""
    out: set[str] = set()
    for m in modules:
        out |= RECOMPUTE_MODULES.get(m.value, {m.value})
    return frozenset(out)


class LayerCost(BaseModel):
    """Seconds per micro-batch of one layer on one rank (communication already reduced by overlap),
    and the parameters its weight gradients cover (dense vs expert: they reduce over different groups)."""

    model_config = ConfigDict(extra="forbid")
    fwd: float
    dgrad: float
    wgrad: float
    recompute_selective: float
    tp_fwd: float
    tp_bwd: float
    ep_fwd: float
    ep_bwd: float
    cp_fwd: float
    cp_bwd: float
    dense_params: int
    expert_params: int


@dataclass(frozen=True)
class LayerParts:
    """The shape-determined part of a LayerCost: phase times, forward time per module (what selective
    recompute may re-run), and TP / EP communication before any overlap."""

    fwd_s: float
    dgrad_s: float
    wgrad_s: float
    fwd_by_module_s: dict
    tp_raw_s: float
    ep_raw_by_dispatcher_s: dict
    cp_s: float
    dense_params: int
    expert_params: int
    alltoall_sort_fwd_s: float = 0.0  # the alltoall dispatcher's own token re-sorts (layer_ops.alltoall_sort_ops)
    alltoall_sort_bwd_s: float = 0.0
    # the routed experts' share of fwd_s / dgrad_s / wgrad_s (EXPERT_MODULES): the `mlp` node of the EP overlap schedule
    expert_fwd_s: float = 0.0
    expert_dgrad_s: float = 0.0
    expert_wgrad_s: float = 0.0
    cp_bwd_s: Optional[float] = None  # exposed CP traffic of the backward; None: twice the forward's (`cp_bwd_exposed_s`)
    # the share of fwd_s / dgrad_s that is the host-issue floor's shortfall (`_host_floor`): the GPU waiting for the host,
    # which the pass's own exposed communication fills (`finish_parts`)
    host_wait_fwd_s: float = 0.0
    host_wait_bwd_s: float = 0.0


def cp_bwd_exposed_s(parts: "LayerParts") -> float:
    """The backward's exposed CP seconds of a layer (twice the forward's where `layer_parts` did not set them)."""
    return 2 * parts.cp_s if parts.cp_bwd_s is None else parts.cp_bwd_s


# flash attention's backward runs 5 of the forward's 2 matmul passes (FlashAttention-2, Dao 2023, sec. 3.1): the
# backward attention a ring step's exchange can hide behind is 2.5x the forward's (measure/kernels/layer_ops.py)
ATTENTION_BWD_OVER_FWD = 2.5


def cp_ring_s(model: ModelSpec, recipe: Recipe, t_tok: int, groups, profile: HardwareProfile,
              attention_fwd_s: float) -> tuple[float, float]:
    """(forward, backward) exposed seconds of one attention layer's CP ring per micro-batch. Each of the CP - 1 ring
    steps passes this rank's K and V shard (t_tok tokens, t_tok = MBS x s / CP, the KV heads this TP rank holds, bf16) to
    the next rank while the attention of the current step runs: Transformer Engine's AttnFuncWithCPAndKVP2P issues the
    send/recv on `cp_stream`, which Megatron creates for it (megatron/core/extensions/transformer_engine.py:2133-2139
    @d98e8a64). Megatron's load-balanced split (megatron/core/utils.py:2510-2557) gives every rank the same share of
    the causal work, so no rank waits on another's longer attention. The exchange shows where it outlasts the
    attention it hides behind, and at least the calibration's exposed fraction (imperfect overlap). The backward passes
    K,V and returns dK,dV (twice the bytes) behind the backward attention (2.5x the forward's)."""
    kv_heads = model.num_attention_heads if model.multi_latent_attention else model.num_query_groups
    d = (model.qk_head_dim + model.qk_pos_emb_head_dim) if model.multi_latent_attention else model.kv_channels
    kv_bytes = 2 * t_tok * max(kv_heads // recipe.tp, 1) * d * 2
    ring = (recipe.cp - 1) * col.p2p_s(kv_bytes, groups.cp.num_domains > 1, profile)
    exposed = profile.calibration.exposed_comm_fraction
    fwd = max(ring - attention_fwd_s, ring * exposed)
    bwd = max(2 * ring - ATTENTION_BWD_OVER_FWD * attention_fwd_s, 2 * ring * exposed)
    return fwd, bwd


def timed_ops(ops: list[PhaseOp], profile, table, fp, imbalance: float, cache: Optional[dict] = None) -> list[tuple[PhaseOp, float]]:
    """(op, seconds) with MoE expert ops scaled by the load imbalance; `cache` memoises per (op, phase, flops, bytes)."""
    out = []
    for p in ops:
        key = (p.op, p.phase, p.flops, p.bytes_moved)  # everything op_time_s reads but the module
        t = cache.get(key) if cache is not None else None
        if t is None:
            t = op_time_s(p, profile, table, fp)
            if cache is not None:
                cache[key] = t
        if p.module in EXPERT_MODULES:
            t *= imbalance
        out.append((p, t))
    return out


@dataclass(frozen=True)
class _OpSums:
    """What `layer_parts` reads from a list of timed ops: seconds per phase, forward seconds per module,
    host-op counts per pass and weight-gradient parameter counts. Blocks shared by many per-rank shapes
    (the attention block across EP x ETP, an MoE block across TP x CP x MBS with the same tokens per rank)
    are summed once."""

    fwd_s: float
    dgrad_s: float
    wgrad_s: float
    fwd_by_module_s: dict
    n_fwd: int
    n_bwd: int
    dense_params: int
    expert_params: int
    n_by_module: dict  # module -> (forward ops, backward ops), what CUDA graph scopes capture (measure/kernels/cuda_graphs.py)
    launches_by_module: dict  # module -> (forward, backward) GEMMs launched one by one inside ops (PhaseOp.gemm_launches)
    expert_by_phase: dict  # Phase -> seconds of the EXPERT_MODULES ops


def _op_sums(timed: list[tuple[PhaseOp, float]]) -> _OpSums:
    by = {ph: 0.0 for ph in Phase}
    fwd_by_module: dict[str, float] = {}
    n_by_module: dict[str, tuple[int, int]] = {}
    launches_by_module: dict[str, tuple[int, int]] = {}
    expert = {ph: 0.0 for ph in Phase}
    n_fwd = n_bwd = dense_p = expert_p = 0
    for p, t in timed:
        by[p.phase] += t
        if p.module in EXPERT_MODULES:
            expert[p.phase] += t
        f, b = n_by_module.get(p.module, (0, 0))
        lf, lb = launches_by_module.get(p.module, (0, 0))
        issued = int(p.host_op)  # kernels launched inside another op's module call add no host op (kernel_ops.PhaseOp)
        if p.phase == Phase.fwd:
            n_fwd += issued
            n_by_module[p.module] = (f + issued, b)
            launches_by_module[p.module] = (lf + p.gemm_launches, lb)
            fwd_by_module[p.module] = fwd_by_module.get(p.module, 0.0) + t
        elif p.phase in (Phase.bwd_dgrad, Phase.bwd_wgrad):
            n_bwd += issued
            n_by_module[p.module] = (f, b + issued)
            launches_by_module[p.module] = (lf, lb + p.gemm_launches)
        if p.phase == Phase.bwd_wgrad and p.op.kind.value in ("gemm", "grouped_gemm"):
            s = p.op.shape
            n = s[0] * s[1] * s[2] if p.op.kind.value == "grouped_gemm" else s[0] * s[1]
            if p.module == "moe":
                expert_p += n
            else:
                dense_p += n
    return _OpSums(by[Phase.fwd], by[Phase.bwd_dgrad], by[Phase.bwd_wgrad], fwd_by_module, n_fwd, n_bwd, dense_p, expert_p,
                   n_by_module, launches_by_module, expert)


def _memo(cache: dict, key: tuple, make):
    """cache[key], computed by make() the first time."""
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = make()
    return hit


def _host_floor(by: dict, fwd_host_s: float, bwd_host_s: float) -> tuple[float, float]:
    """A layer pass cannot run faster than the host issues it: forward >= its ops' host time, backward
    (dgrad + wgrad) >= theirs, the shortfall added to dgrad. Small per-rank kernels (high TP/EP, MBS 1,
    small hidden, many local experts) leave the GPU waiting on Python and launches (why CUDA graphs help MoE layers).
    Returns the (forward, backward) shortfall: GPU time spent waiting on the host, which `finish_parts` lets the pass's
    exposed communication fill."""
    fwd_wait = max(fwd_host_s - by[Phase.fwd], 0.0)
    bwd_wait = max(bwd_host_s - by[Phase.bwd_dgrad] - by[Phase.bwd_wgrad], 0.0)
    by[Phase.fwd] += fwd_wait
    by[Phase.bwd_dgrad] += bwd_wait
    return fwd_wait, bwd_wait


def _ep_raw_s(model: ModelSpec, recipe: Recipe, groups, profile: HardwareProfile, t_sp: int,
              dispatcher: MoeDispatcher) -> float:
    """Dispatch + combine (and ETP gather/scatter) seconds of one MoE layer's forward, before overlap.
    The allgather dispatcher is priced as the all-to-all (same bytes reach each rank's experts)."""
    h, cal = model.moe_expert_width, profile.calibration  # a latent MoE dispatches latent-wide tokens
    # the busiest rank receives imbalance x the mean share (the a2a ends when it does)
    a2a = t_sp * model.moe_router_topk * h * 2 * cal.moe_load_imbalance
    if dispatcher == MoeDispatcher.flex:
        hit = domain_hit_probability(model, groups.ep.size, groups.ep.per_domain)  # group-limited routing reaches fewer
        ep = 2 * col.node_dedup_all_to_all_s(a2a / model.moe_router_topk, model.moe_router_topk, groups.ep, profile, hit)
    else:
        ep = 2 * col.all_to_all_s(a2a, groups.ep, profile)
    if recipe.etp_effective > 1:
        ep += col.all_gather_s(a2a * recipe.etp_effective, groups.etp, profile) + col.reduce_scatter_s(
            a2a * recipe.etp_effective, groups.etp, profile)
    return ep


def layer_parts(model: ModelSpec, job: JobSpec, recipe: Recipe, placement: Placement, profile: HardwareProfile,
                kind: LayerKind, table: Optional[CostLookup] = None, fp: Optional[str] = None,
                op_cache: Optional[dict] = None, cuda_graph_scope: frozenset = frozenset(),
                fp8_attention: bool = False, fused_grouped_mlp: bool = False) -> LayerParts:
    """The part of a layer's cost its per-rank shape decides (reads TP, CP, EP, ETP, MBS, SP; never
    recompute, the dispatcher or the overlap flags: EP traffic is kept per dispatcher). `op_cache` may be
    shared by calls for one (model, job, placement, profile): its block entries are keyed by the recipe
    fields the blocks read (`attention_key`, `block_key`). `cuda_graph_scope` (measure/kernels/cuda_graphs.py): the kernels
    the run captures in CUDA graphs leave the host-issue floor. `fp8_attention`: the run sets Transformer Engine's
    fp8_dot_product_attention (`layer_ops.attention_ops`). `fused_grouped_mlp`: its experts run Transformer Engine's
    fused grouped MLP (`layer_ops.moe_ops`), which makes no eager activation pass and no host sync in them."""
    cal = profile.calibration
    kind = LayerKind(kind)
    op_cache = {} if op_cache is None else op_cache
    if kind.is_hybrid:  # a hybrid layer is its one block (measure/kernels/mamba_ops.py)
        attn = _memo(op_cache, ("no attention",), lambda: _op_sums([]))
    else:
        attn = _memo(op_cache, attention_key(recipe) + (fp8_attention,), lambda: _op_sums(timed_ops(
            attention_ops(model, job, recipe, fp8_attention), profile, table, fp, cal.moe_load_imbalance, op_cache)))
    blk = _memo(op_cache, block_key(model, job, recipe, kind) + (fused_grouped_mlp,), lambda: _op_sums(timed_ops(
        block_ops(model, job, recipe, kind, fused_grouped_mlp), profile, table, fp, cal.moe_load_imbalance, op_cache)))
    by = {Phase.fwd: attn.fwd_s + blk.fwd_s, Phase.bwd_dgrad: attn.dgrad_s + blk.dgrad_s,
          Phase.bwd_wgrad: attn.wgrad_s + blk.wgrad_s}
    fwd_by_module = dict(attn.fwd_by_module_s)
    for m, t in blk.fwd_by_module_s.items():
        fwd_by_module[m] = fwd_by_module.get(m, 0.0) + t
    # keyed by what the four spans read below depend on
    groups = _memo(op_cache, ("groups", recipe.tp, recipe.cp, recipe.ep, recipe.etp_effective),
                   lambda: recipe_groups(recipe, profile, placement))
    t_tok = recipe.mbs * job.seq_length // recipe.cp
    t_sp = t_tok // recipe.tp if recipe.sp_active else t_tok
    act_bytes = t_tok * model.hidden_size * 2
    # TP collectives per block: attention, MLP and the Mamba mixer each one (all-reduce, or all-gather +
    # reduce-scatter under SP); an MoE block's are replaced by EP/ETP traffic
    n_blocks = {LayerKind.dense: 2, LayerKind.moe: 1, LayerKind.moe_block: 0}.get(kind, 1)
    tp = 0.0
    ep = {d: 0.0 for d in MoeDispatcher}
    if recipe.tp > 1:
        if recipe.sp_active:
            one = col.all_gather_s(act_bytes, groups.tp, profile) + col.reduce_scatter_s(act_bytes, groups.tp, profile)
        else:
            one = col.all_reduce_s(act_bytes, groups.tp, profile)
        tp = n_blocks * one
        if kind.has_moe and recipe.sp_active:
            tp += one
    if kind.has_moe:
        # keyed by what _ep_raw_s reads (the EP / ETP spans follow the sizes)
        ep = _memo(op_cache, ("ep", t_sp, recipe.ep, recipe.etp_effective),
                   lambda: {d: _ep_raw_s(model, recipe, groups, profile, t_sp, d) for d in MoeDispatcher})
    cp, cp_bwd = 0.0, None
    if recipe.cp > 1 and kind == LayerKind.mamba:
        cp = mamba_cp_s(model, recipe, t_tok, groups, profile)
    elif recipe.cp > 1 and kind.has_attention:
        cp, cp_bwd = cp_ring_s(model, recipe, t_tok, groups, profile, fwd_by_module.get("core_attn", 0.0))
    if kind.has_moe and FULL_ITERATION not in cuda_graph_scope:  # dispatcher host sync per pass (Calibration)
        by[Phase.fwd] += cal.moe_dispatch_overhead_us * 1e-6
        by[Phase.bwd_dgrad] += cal.moe_dispatch_overhead_us * 1e-6
    syncs = expert_activation_host_syncs(model) if kind.has_moe and not (fused_grouped_mlp or captures_experts(cuda_graph_scope)) else 0
    if syncs:  # each costs what the dispatcher's does; kept under moe_act so that its recompute pays it again
        sync_s = syncs * cal.moe_dispatch_overhead_us * 1e-6
        by[Phase.fwd] += sync_s
        fwd_by_module["moe_act"] = fwd_by_module.get("moe_act", 0.0) + sync_s
    n_fwd, n_bwd = uncaptured_ops(cuda_graph_scope, kind, (attn.n_fwd, attn.n_bwd), blk.n_by_module)
    l_fwd, l_bwd = uncaptured_ops(cuda_graph_scope, kind, (0, 0), blk.launches_by_module)
    per_op_s, per_launch_s = cal.host_time_per_op_us * 1e-6, cal.gemm_launch_host_us * 1e-6
    wait_fwd, wait_bwd = _host_floor(by, n_fwd * per_op_s + l_fwd * per_launch_s, n_bwd * per_op_s + l_bwd * per_launch_s)
    sort = _memo(op_cache, ("alltoall_sort",) + block_key(model, job, recipe, kind), lambda: _op_sums(timed_ops(
        alltoall_sort_ops(model, job, recipe) if kind.has_moe else [], profile, table, fp, cal.moe_load_imbalance, op_cache)))
    return LayerParts(fwd_s=by[Phase.fwd], dgrad_s=by[Phase.bwd_dgrad], wgrad_s=by[Phase.bwd_wgrad],
                      fwd_by_module_s=fwd_by_module, tp_raw_s=tp, ep_raw_by_dispatcher_s=dict(ep), cp_s=cp, cp_bwd_s=cp_bwd,
                      dense_params=attn.dense_params + blk.dense_params,
                      expert_params=attn.expert_params + blk.expert_params,
                      alltoall_sort_fwd_s=sort.fwd_s, alltoall_sort_bwd_s=sort.dgrad_s + sort.wgrad_s,
                      expert_fwd_s=blk.expert_by_phase[Phase.fwd], expert_dgrad_s=blk.expert_by_phase[Phase.bwd_dgrad],
                      expert_wgrad_s=blk.expert_by_phase[Phase.bwd_wgrad], host_wait_fwd_s=wait_fwd, host_wait_bwd_s=wait_bwd)


def ep_paired_fraction(pp, vpp, m):
    """Share of a rank's forward (and backward) passes that the EP A2A overlap pairs with another micro-batch's
    opposite pass; scalars or numpy arrays. Megatron-LM pairs micro-batch i's forward with i-1's backward
    (combined_1f1b_schedule_for_no_pipelining: the first forward and the last backward stay alone, so M - 1 of M at
    PP 1), and with PP > 1 (VPP required) only the interleaved schedule's steady state pairs: the warm-up forwards of
    rank r, min((PP - r - 1) x 2 + (VPP - 1) x PP, M x VPP) (schedules.py get_pp_rank_microbatches), stay alone."""
    pp, vpp, m = np.asarray(pp, dtype=np.int64), np.asarray(vpp, dtype=np.int64), np.asarray(m, dtype=np.int64)
    total = np.maximum(m * vpp, 1)
    warm = np.zeros(np.broadcast(pp, vpp, m).shape)
    for r in range(int(np.max(pp))):
        warm = warm + np.where(r < pp, np.minimum(np.maximum((pp - r - 1) * 2 + (vpp - 1) * pp, 0), total), 0)
    paired = np.where(pp <= 1, (m - 1) / np.maximum(m, 1), (total - warm / np.maximum(pp, 1)) / total)
    out = np.clip(paired, 0.0, 1.0)
    return float(out) if out.ndim == 0 else out


def finish_layer_cost(parts: LayerParts, recipe: Recipe, cal: Calibration, num_microbatches: int = 1) -> LayerCost:
    """Apply what the recipe's recompute modules and overlap flags decide (see `finish_parts`); the micro-batch
    count decides how many passes EP overlap can pair."""
    paired = ep_paired_fraction(recipe.pp, recipe.vpp, num_microbatches) if recipe.overlap_moe_expert_parallel_comm else 0.0
    # userbuffers overlap only inside TE's linear modules (megatron/core/extensions/transformer_engine.py:1189
    # @d98e8a64); Megatron's local linear layers run their TP collectives exposed
    tp_overlap = recipe.tp_comm_overlap and not recipe.local_transformer_impl
    return finish_parts(parts, recomputed_modules(recipe.recompute.modules), tp_overlap,
                        recipe.moe_dispatcher, recipe.overlap_moe_expert_parallel_comm, cal, paired)


def overlapped_tp_s(tp_raw_s, fwd_gemm_s, bwd_gemm_s, exposed_fraction):
    """(forward, backward) TP communication left exposed by `--tp-comm-overlap` (TE userbuffers). Transformer Engine
    hides each TP collective behind a GEMM of the same layer (transformer_engine/pytorch/module/base.py:350-360
    @d0067d0d, `initialize_ub` defaults): in the forward the all-gathers of qkv_fprop / fc1_fprop behind their own
    chunked GEMM (ring_exchange) and the reduce-scatters of proj_fprop / fc2_fprop behind the GEMM producing them
    (pipeline); in the backward the proj / fc2 dgrad all-gathers behind their dgrad GEMM (ring_exchange), the qkv /
    fc1 input all-gathers behind the dgrad GEMM and their dgrad reduce-scatters behind the wgrad GEMM (bulk). So no
    more than a pass's GEMM time is hidden: `fwd_gemm_s` is the forward less core attention (which runs no TP
    collective), `bwd_gemm_s` dgrad + wgrad; the calibration's exposed fraction stays visible in any case, as for EP
    overlap. Works on floats and numpy arrays alike (the vectorised projection, layer_columns.finish_columns)."""
    return (np.maximum(tp_raw_s - fwd_gemm_s, tp_raw_s * exposed_fraction),
            np.maximum(tp_raw_s - bwd_gemm_s, tp_raw_s * exposed_fraction))


def comm_filled_host_wait_s(host_wait_s, exposed_comm_s):
    """Seconds of a pass's host-issue shortfall that its exposed communication fills; floats or numpy arrays.
    A kernel launch is asynchronous (CUDA C++ Programming Guide, "Asynchronous Concurrent Execution": control returns
    to the host thread before the device completes the task), so while the GPU runs or waits on a collective of the
    pass (TP, EP dispatch / combine, CP), the host goes on issuing the pass's next ops: the GPU then waits on the host
    only for what is left of the shortfall beyond that communication. Where the host itself blocks (the dispatcher's
    token-count synchronisation, `moe_dispatch_overhead_us`), it is priced on its own and stays in the pass. Measured
    check (Megatron-Bridge skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md @067f987d, Qwen3-30B-A3B on 16
    H100, EP 16, HybridEP, EP overlap off): the GPU is active 22.821 s of a 24.7138 s step, so the host leaves it idle
    at most 1.9 s (7.7 %) of the step (tests/measure/projection/test_host_floor_and_comm.py)."""
    return np.minimum(host_wait_s, exposed_comm_s)


def finish_parts(parts: LayerParts, recomputed: frozenset, tp_overlap: bool, dispatcher: MoeDispatcher, ep_overlap: bool,
                 cal: Calibration, ep_paired: float = 1.0) -> LayerCost:
    """The selective recompute's forward time over the `recomputed` layer_ops modules, the dispatcher's EP
    traffic and its own token passes (the alltoall dispatcher's re-sorts), and TP traffic under `--tp-comm-overlap`
    less what the pass's GEMMs hide (`overlapped_tp_s`); EP under `--overlap-moe-expert-parallel-comm` shows what
    Megatron's combined 1F1B layer schedule leaves of it (`ep_overlap_schedule.exposed_ep_pair_s`) on the `ep_paired`
    share of passes that have a partner (`ep_paired_fraction`; the rest show all of it)."""
    sel = sum(t for m, t in parts.fwd_by_module_s.items() if m in recomputed)
    alltoall = dispatcher == MoeDispatcher.alltoall
    sort_f, sort_b = (parts.alltoall_sort_fwd_s, parts.alltoall_sort_bwd_s) if alltoall else (0.0, 0.0)
    fwd_s, dgrad_s = parts.fwd_s + sort_f, parts.dgrad_s + sort_b
    tp_fwd, tp_bwd = map(float, overlapped_tp_s(parts.tp_raw_s, fwd_s - parts.fwd_by_module_s.get("core_attn", 0.0),
                                                 dgrad_s + parts.wgrad_s, cal.exposed_comm_fraction)) if tp_overlap \
        else (parts.tp_raw_s, parts.tp_raw_s)
    ep_raw = parts.ep_raw_by_dispatcher_s[dispatcher]
    ep_fwd = ep_bwd = ep_raw
    if ep_overlap:
        # --overlap-moe-expert-parallel-comm pairs one micro-batch's forward with another's backward, each dispatch /
        # combine hiding behind the one compute node Megatron pairs it with (measure/projection/ep_overlap_schedule.py);
        # the paired pass's exposure is split evenly between its forward and backward, unpaired passes show it all
        exposed = float(exposed_ep_pair_s(fwd_s, dgrad_s, parts.wgrad_s, parts.expert_fwd_s + sort_f,
                                          parts.expert_dgrad_s + sort_b, parts.expert_wgrad_s, ep_raw,
                                          cal.exposed_comm_fraction))
        ep_fwd = ep_bwd = ep_paired * exposed / 2 + (1.0 - ep_paired) * ep_raw
    fwd_s -= float(comm_filled_host_wait_s(parts.host_wait_fwd_s, tp_fwd + ep_fwd + parts.cp_s))
    dgrad_s -= float(comm_filled_host_wait_s(parts.host_wait_bwd_s, tp_bwd + ep_bwd + cp_bwd_exposed_s(parts)))
    return LayerCost(fwd=fwd_s, dgrad=dgrad_s, wgrad=parts.wgrad_s, recompute_selective=sel,
                     tp_fwd=tp_fwd, tp_bwd=tp_bwd, ep_fwd=ep_fwd, ep_bwd=ep_bwd, cp_fwd=parts.cp_s, cp_bwd=cp_bwd_exposed_s(parts),
                     dense_params=parts.dense_params, expert_params=parts.expert_params)


def layer_cost(model: ModelSpec, job: JobSpec, recipe: Recipe, placement: Placement, profile: HardwareProfile,
               kind: LayerKind, table: Optional[CostLookup] = None, fp: Optional[str] = None,
               num_microbatches: int = 1, cuda_graph_scope: frozenset = frozenset(),
               fp8_attention: bool = False, fused_grouped_mlp: bool = False) -> LayerCost:
    """A layer's cost for this recipe: `layer_parts` finished by `finish_layer_cost`."""
    parts = layer_parts(model, job, recipe, placement, profile, kind, table, fp, cuda_graph_scope=cuda_graph_scope,
                        fp8_attention=fp8_attention, fused_grouped_mlp=fused_grouped_mlp)
    return finish_layer_cost(parts, recipe, profile.calibration, num_microbatches)
