"""Per-rank memory in exact integer bytes, per term and per pipeline stage; the peak is the most loaded rank.

Static state (Megatron `theoretical_memory_usage.py`, compute_weight_and_optimizer_memory): bf16 weight 2 B
+ fp32 main grad 4 B + Adam's fp32 master, m, v 12 B = 18 B/param; with --use-distributed-optimizer the 12 B
are sharded over the data-parallel group: 6 + 12/DP. We shard dense params over DP*CP (what Megatron's
distributed optimizer really does; its report uses DP, identical at CP=1) and expert params over
expert-DP = world/(ETP*EP*PP). FSDP variants shard all 18 B and add the gathered working set.
Activations: constraints/memory/activations.py times the schedule's in-flight count (constraints/memory/in_flight.py).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from pydantic import Field

from constraints.memory import activations as act
from constraints.memory.deferred_wgrad import deferred_embedding_wgrad_bytes
from constraints.memory.gemm_workspaces import te_gemm_workspace_bytes
from constraints.memory.in_flight import inflight_chunks, num_microbatches
from constraints.memory.nvfp4_weights import QuantisedWeights, rank_quantised_weights
from constraints.memory.userbuffers import userbuffer_bytes
from constraints.models.params import LayerParams, all_layer_params, layer_params, mtp_weight_depths, padded_vocab_size
from constraints.spec import (
    DataParallelSharding,
    FsdpShardingStrategy,
    JobSpec,
    ModelSpec,
    Optimizer,
    Precision,
    Recipe,
    RecomputeGranularity,
    RecomputeMethod,
    Strict,
)
from constraints.stages import Chunk, rank_chunks

WEIGHT_BYTES = 2        # bf16/fp16 model weights (Megatron mixed precision)
FP8_WEIGHT_BYTES = 1    # --fp8-param-gather keeps the model copy in FP8 (TE Float8Tensor)
GRAD_BYTES = 4          # fp32 main_grad buffer (Megatron accumulates and reduces grads in fp32 by default)
BF16_GRAD_BYTES = 2     # --grad-reduce-in-bf16 with bf16 params: accumulate_allreduce_grads_in_fp32 off, buffer in param dtype (arguments.py validate_args)
OPTIMIZER_BYTES = {Optimizer.adam: 12, Optimizer.muon: 8}  # fp32 master + moments (Adam: m, v; Muon: momentum)
# precision-aware optimizer with bf16 moments (Megatron --exp-avg-dtype / --exp-avg-sq-dtype bf16, megatron/core/optimizer
# optimizer_config.py; Megatron-Bridge recipes moonlight_16b / deepseek_v3 h100): fp32 master 4 + 2 B per moment
OPTIMIZER_BYTES_BF16_MOMENTS = {Optimizer.adam: 8, Optimizer.muon: 6}
# fp32 training (no --bf16 / --fp16): the model's own fp32 parameters are what the optimizer steps, so there is no
# separate fp32 master copy. Megatron's DistributedOptimizer takes an fp32 param's shard as a view of the param itself
# (megatron/core/optimizer/distrib_optimizer.py @d98e8a64 _build_model_and_main_param_groups, "# fp32 params." branch:
# shard_model_param = model_param.view(-1)[...], no clone), and without it FP32Optimizer steps the params in place
# (megatron/core/optimizer/optimizer.py); the main-grad buffer is fp32 (param_and_grad_buffer.py: grad_dtype =
# torch.float if grad_reduce_in_fp32 else param.dtype, fp32 either way). Per parameter: 4 B weight, 4 B grad, and the
# optimizer's moments only: Adam m, v 8 B, Muon's momentum 4 B (what OPTIMIZER_BYTES hold beyond the 4 B master).
FP32_WEIGHT_BYTES = 4
FP32_OPTIMIZER_BYTES = {Optimizer.adam: 8, Optimizer.muon: 4}
PPM = 1_000_000


class StageMemory(Strict):
    rank: int = Field(description="pipeline rank (0-based)")
    terms: dict[str, int] = Field(description="bytes per term")
    total_bytes: int


class MemoryReport(Strict):
    peak_bytes: int
    capacity_bytes: int
    usable_bytes: int = Field(description="capacity x (1 - margin)")
    stage: int = Field(description="pipeline rank holding the peak")
    terms: dict[str, int]
    stages: list[StageMemory]
    num_microbatches: int

    @property
    def fits(self) -> bool:
        return self.peak_bytes <= self.usable_bytes


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _chunk_params(model: ModelSpec, recipe: Recipe, chunk: Chunk, layers: list[LayerParams], vocab: int) -> tuple[int, int, int]:
    """(dense params on this rank, expert params on this rank, largest single layer) for one chunk."""
    tp, expert_div = recipe.tp, recipe.ep * recipe.etp_effective
    h = model.hidden_size
    dense = expert = biggest = 0
    for i in chunk.layers:
        lp = layers[i]
        d, e = _ceil_div(lp.tp_sharded, tp) + lp.replicated, _ceil_div(lp.experts, expert_div)
        dense, expert, biggest = dense + d, expert + e, max(biggest, d + e)
    vocab_shard = _ceil_div(vocab * h, tp)  # vocab-parallel embedding / output layer
    if chunk.embedding:
        dense += vocab_shard + (model.max_position_embeddings * h if model.learned_position_embeddings else 0)
    if chunk.loss:
        dense += h * (2 if model.normalization.value == "LayerNorm" else 1)  # final norm
        # untied: own output weight; tied with PP>1: the last stage keeps a copy of the embedding (Megatron)
        if not model.tied_embeddings or not chunk.embedding:
            dense += vocab_shard
    if chunk.mtp:  # each depth: its layers (constraints.models.params.mtp_params), enorm, hnorm, eh_proj, final norm
        lps = [layer_params(model, k) for k in model.mtp_layer_kinds]
        per_mtp = (_ceil_div(sum(lp.tp_sharded for lp in lps) + 2 * h * h, tp) + sum(lp.replicated for lp in lps) + 3 * h,
                   _ceil_div(sum(lp.experts for lp in lps), expert_div))
        blocks = mtp_weight_depths(model, chunk.mtp)  # one shared block with --mtp-use-repeated-layer
        dense += blocks * per_mtp[0] + (0 if chunk.embedding else vocab_shard)  # MTP shares the embedding
        expert += blocks * per_mtp[1]
    return dense, expert, biggest


def rank_params(model: ModelSpec, recipe: Recipe, chunks: list[Chunk]) -> tuple[int, int, int]:
    """(dense params, expert params, largest single layer) one pipeline rank holds; reads TP, EP, ETP,
    the vocab padding and the chunks only (so the solver caches it per those)."""
    layers = all_layer_params(model)
    vocab = padded_vocab_size(model, recipe.tp, recipe.make_vocab_size_divisible_by)
    dense = expert = biggest = 0
    for chunk in chunks:
        d, e, b = _chunk_params(model, recipe, chunk, layers, vocab)
        dense, expert, biggest = dense + d, expert + e, max(biggest, b)
    return dense, expert, biggest


def static_terms(model: ModelSpec, job: JobSpec, recipe: Recipe, world_size: int, chunks: list[Chunk]) -> dict[str, int]:
    """Weights, gradients, optimizer state (and FSDP working set) of one pipeline rank."""
    quantised = None
    if recipe.fp4_param_gather and job.precision.is_fp4:  # NVFP4 compute weights (constraints/memory/nvfp4_weights.py)
        bf16 = job.bf16_layer_indices(model.num_layers)  # --first-last-layers-bf16 layers are built outside get_fp4_context
        layers = [i for chunk in chunks for i in chunk.layers if i not in bf16]
        quantised = rank_quantised_weights(model, layers, recipe.tp, recipe.ep, recipe.etp_effective)
    return static_from_params(job, recipe, world_size, *rank_params(model, recipe, chunks), quantised=quantised)


def static_from_params(job: JobSpec, recipe: Recipe, world_size: int, dense: int, expert: int, biggest: int,
                       quantised: QuantisedWeights | None = None) -> dict[str, int]:
    """static_terms from a rank's parameter counts: the sharding arithmetic alone. `quantised` (with
    --fp4-param-gather) holds the rank's NVFP4 linear weights, which replace their bf16 bytes wherever the rank
    holds whole weights (Megatron-FSDP / FSDP2 fully sharded weights stay priced at bf16)."""
    # --num-distributed-optimizer-instances N: each instance shards over its intra-partial group, DP*CP / N ranks
    # (megatron/core/parallel_state.py:927-929 @d98e8a64) and expert-DP / N for expert parameters (:1450-1451); the
    # gradient buffer is reduced over the same group (megatron/core/distributed/distributed_data_parallel.py:157)
    instances = recipe.num_distributed_optimizer_instances
    dense_shards = max(recipe.dp(world_size) * recipe.cp // instances, 1)
    expert_shards = max(recipe.expert_dp(world_size) // instances, 1)
    fp32 = job.precision == Precision.fp32
    w_bytes = FP32_WEIGHT_BYTES if fp32 else FP8_WEIGHT_BYTES if recipe.fp8_param_gather else WEIGHT_BYTES
    g_bytes = BF16_GRAD_BYTES if recipe.grad_reduce_in_bf16 and job.precision not in (Precision.fp16, Precision.fp32) else GRAD_BYTES
    opt_bytes = (FP32_OPTIMIZER_BYTES if fp32 else
                 OPTIMIZER_BYTES_BF16_MOMENTS if job.optimizer_moments_bf16 else OPTIMIZER_BYTES)[job.optimizer]
    sharding = recipe.dp_sharding
    fsdp = recipe.fsdp_sharding_strategy if sharding == DataParallelSharding.megatron_fsdp else None
    # Megatron-FSDP no_shard holds everything like DDP; optim shards the optimizer state only (ZeRO-1), like the
    # distributed optimizer (megatron/core/distributed/fsdp/src/README.md, zero_dp_strategy 0 and 1)
    whole_weights = (dense + expert) * w_bytes
    if quantised is not None:
        whole_weights += quantised.nvfp4_bytes - quantised.elements * w_bytes
    if sharding == DataParallelSharding.none or fsdp == FsdpShardingStrategy.no_shard:
        return {"weights": whole_weights, "gradients": (dense + expert) * g_bytes,
                "optimizer_state": (dense + expert) * opt_bytes}
    sharded_params = _ceil_div(dense, dense_shards) + _ceil_div(expert, expert_shards)
    if sharding == DataParallelSharding.distributed_optimizer or fsdp == FsdpShardingStrategy.optim:
        return {"weights": whole_weights, "gradients": (dense + expert) * g_bytes,
                "optimizer_state": sharded_params * opt_bytes}
    if fsdp == FsdpShardingStrategy.optim_grads:
        # ZeRO-2 (same README, strategy 2): full weights, sharded grads and optimizer state; the largest layer's
        # full gradient is materialised before its reduce-scatter (no parameter gather: weights are whole)
        return {"weights": whole_weights, "gradients": sharded_params * g_bytes,
                "optimizer_state": sharded_params * opt_bytes, "fsdp_unsharded": biggest * g_bytes}
    # Megatron-FSDP optim_grads_params / torch FSDP2: everything sharded (ZeRO-3); the largest layer is
    # gathered for compute (current + prefetched next: 2 x weights) and its full grad reduce-scattered.
    return {"weights": sharded_params * w_bytes, "gradients": sharded_params * g_bytes,
            "optimizer_state": sharded_params * opt_bytes,
            "fsdp_unsharded": 2 * biggest * (FP32_WEIGHT_BYTES if fp32 else WEIGHT_BYTES) + biggest * g_bytes}


def offloaded_layers_peak(sizes: list[int], offloaded: int) -> int:
    """Layer activations held on the GPU at once when `--cpu-offloading-num-layers` offloads the first `offloaded` of
    these layers (one micro-batch, PP 1: Megatron's TransformerConfig refuses offloading with PP > 1 or recompute).
    Megatron wraps each decoder layer in Transformer Engine's `get_cpu_offload_context(num_layers=offloaded,
    model_layers=num_layers)` (megatron/core/transformer/transformer_block.py @ d98e8a64), whose default schedule
    (TE d0067d0d pytorch/cpu_offload.py `DefaultOffloadSynchronizer`) offloads layers 0 .. offloaded - 1 and finishes
    layer i's offload before layer n - offloaded + i runs, so at most n - offloaded consecutive layers' activations are
    on the GPU ("peak memory usage of saving activations is (num_layers - num_offloaded_layers) * T"): the largest sum
    of a window of that many layers. TE leaves tensors under 256 Ki elements on the GPU (`_check_if_offload`); those
    (per-token fp32 statistics, a few KiB a layer) are counted as offloaded."""
    keep = max(len(sizes) - offloaded, 1)
    return max(sum(sizes[i:i + keep]) for i in range(len(sizes) - keep + 1))


def chunk_activation(model: ModelSpec, recipe: Recipe, sh: act.Shape, chunk: Chunk,
                      per_layer: dict[bool, int], vocab: int, per_layer_bf16: Optional[dict] = None,
                      bf16_layers: frozenset[int] = frozenset()) -> tuple[int, int, int, int]:
    """(layer activations, embedding, output, recompute working set) of one micro-batch in one chunk. Layers in
    `bf16_layers` (--first-last-layers-bf16) take their bytes from `per_layer_bf16`: their GEMM inputs are saved
    in bf16, not fp8 / NVFP4."""
    sizes = [(per_layer_bf16 if i in bf16_layers else per_layer)[model.layer_kinds[i]] for i in chunk.layers]
    rc = recipe.recompute
    n = len(sizes)
    if rc.granularity == RecomputeGranularity.full and n:
        inp = act.layer_input_bytes(model, sh, recipe)
        k = min(rc.num_layers or 1, n)
        if rc.method == RecomputeMethod.block:
            # first k layers keep only their input; the rest keep everything (Megatron "block")
            layers = k * inp + sum(sizes[k:])
            working = max(sizes[:k])
        else:
            # groups of k layers keep one input each; backward rebuilds one group at a time ("uniform")
            layers = _ceil_div(n, k) * inp
            working = max(sum(sizes[g:g + k]) for g in range(0, n, k))
    elif recipe.cpu_offloading_num_layers and n:
        layers, working = offloaded_layers_peak(sizes, recipe.cpu_offloading_num_layers), 0
    else:
        layers, working = sum(sizes), 0
    if chunk.mtp:
        layers += chunk.mtp * (sum(per_layer[k] for k in model.mtp_layer_kinds) + act.embedding_bytes(model, sh))
    emb = act.embedding_bytes(model, sh) if chunk.embedding else 0
    out = act.output_bytes(model, sh, vocab) if chunk.loss else 0
    out += chunk.mtp * act.output_bytes(model, sh, vocab)
    return layers, emb, out, working


def comm_buffer_bytes(model: ModelSpec, recipe: Recipe, sh: act.Shape) -> int:
    """Transient communication buffers alive at the peak: the SP all-gathered layer input, PP send/recv
    buffers of one micro-batch's boundary activation, EP dispatch/combine buffers of one MoE layer."""
    T, h, e = sh.tokens, model.hidden_size, sh.act_bytes  # e: bytes per activation element (4 in fp32)
    total = e * T * h if recipe.sp_active else 0
    if recipe.pp > 1:
        total += 2 * _ceil_div(e * T * h, sh.sp_div)
    if model.is_moe and recipe.ep > 1:
        routed = _ceil_div(T, sh.sp_div) * model.moe_router_topk
        total += 2 * e * routed * model.moe_expert_width  # latent MoE dispatches latent-wide tokens
    return total


def rank_activation_terms(sums: list[int], working: int, vpp: int, inflight: int, comm_bytes: int, frag_ppm: int,
                          framework_overhead_bytes: int) -> dict[str, int]:
    """One rank's bytes beyond static state, from its chunks' summed (layers, embedding, output) activations:
    in-flight chunks spread evenly over the rank's VPP chunks (ceil), one micro-batch of output activations,
    the recompute working set, comm buffers, fragmentation (ppm of activations) and framework overhead.
    Every argument may also be a numpy int64 array (one entry per table row): the solver's tables
    (solver/tables/memory.py) price a million rows with this same arithmetic."""
    out_chunks = np.minimum(inflight, vpp) if isinstance(inflight, np.ndarray) else min(inflight, vpp)
    terms = {
        "activations": _ceil_div(inflight * sums[0], vpp),
        "embedding_activations": _ceil_div(inflight * sums[1], vpp),
        "output_activations": _ceil_div(out_chunks * sums[2], vpp),
        "recompute_working_set": working,
        "comm_buffers": comm_bytes,
    }
    act_total = terms["activations"] + terms["embedding_activations"] + terms["output_activations"] + working
    terms["fragmentation"] = act_total * frag_ppm // PPM
    terms["framework_overhead"] = framework_overhead_bytes
    return terms


def memory_report(model: ModelSpec, job: JobSpec, recipe: Recipe, world_size: int, capacity_bytes: int,
                  framework_overhead_bytes: int = 0, fragmentation_fraction: float = 0.0,
                  margin_fraction: float = 0.0, compute_capability: Optional[float] = None) -> MemoryReport:
    """Exact per-rank memory for every pipeline rank; raises StageSplitError if the split is impossible.
    `compute_capability` (the part's, None for AMD) sizes Transformer Engine's cuBLAS workspaces
    (constraints/memory/gemm_workspaces.py)."""
    all_chunks = rank_chunks(model, recipe)
    dp = max(recipe.dp(world_size), 1)
    m = max(num_microbatches(job.global_batch_size, recipe.mbs, dp), 1)
    sh = act.shape_of(job, recipe)
    kinds = set(model.layer_kinds) | set(model.mtp_layer_kinds)
    per_layer = {f: act.layer_bytes(model, sh, f, recipe) for f in kinds}
    bf16_layers = job.bf16_layer_indices(model.num_layers)
    per_layer_bf16 = None
    if bf16_layers:
        sh_bf16 = act.shape_of(job.in_bf16(), recipe)
        per_layer_bf16 = {f: act.layer_bytes(model, sh_bf16, f, recipe) for f in kinds}
    vocab = padded_vocab_size(model, recipe.tp, recipe.make_vocab_size_divisible_by)
    frag_ppm = round(fragmentation_fraction * PPM)
    comm = comm_buffer_bytes(model, recipe, sh)
    workspaces = te_gemm_workspace_bytes(compute_capability, model, recipe)
    stages = []
    for rank, chunks in enumerate(all_chunks):
        terms = static_terms(model, job, recipe, world_size, chunks)
        inflight = inflight_chunks(recipe, rank, m)
        sums = [0, 0, 0]
        working = 0
        for chunk in chunks:
            layers, emb, out, work = chunk_activation(model, recipe, sh, chunk, per_layer, vocab, per_layer_bf16, bf16_layers)
            sums[0], sums[1], sums[2] = sums[0] + layers, sums[1] + emb, sums[2] + out
            working = max(working, work)
        terms.update(rank_activation_terms(sums, working, len(chunks), inflight, comm, frag_ppm, framework_overhead_bytes))
        if any(chunk.loss for chunk in chunks) and recipe.defer_embedding_wgrad_compute:
            terms["deferred_embedding_wgrad"] = deferred_embedding_wgrad_bytes(model, recipe, sh, vocab, m)
        if recipe.tp_comm_overlap:  # TE's userbuffers: HBM outside torch's allocator (constraints/memory/userbuffers.py)
            terms["userbuffers"] = userbuffer_bytes(model, job, recipe)
        if workspaces:  # TE's cuBLAS workspaces, fixed per rank (constraints/memory/gemm_workspaces.py)
            terms["gemm_workspaces"] = workspaces
        stages.append(StageMemory(rank=rank, terms=terms, total_bytes=sum(terms.values())))
    peak = max(stages, key=lambda s: (s.total_bytes, -s.rank))
    usable = capacity_bytes * (PPM - round(margin_fraction * PPM)) // PPM
    return MemoryReport(peak_bytes=peak.total_bytes, capacity_bytes=capacity_bytes, usable_bytes=usable,
                        stage=peak.rank, terms=peak.terms, stages=stages, num_microbatches=m)
