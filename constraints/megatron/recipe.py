"""Recipe fields from parsed Megatron-LM flags: parallel sizes, pipeline shape, recompute, sharding, overlaps.

Why its own module: `shardplan check` judges hand-written Megatron configurations, so the Recipe must say
exactly what Megatron would run. Every field is therefore set explicitly from the flags, with Megatron's own
default where a flag is absent (Recipe's defaults are the solver's, not Megatron's). Defaults and derivations
follow megatron/training/arguments.py (validate_args) @ d98e8a64 unless a comment says otherwise.
"""
from __future__ import annotations

from typing import Any, Optional

from constraints.megatron.errors import MegatronArgsError, MegatronRecipeIllegal
from constraints.megatron.hybrid_flags import hybrid_split
from constraints.megatron.patterns import layout_stages
from constraints.spec import (
    AttentionBackend,
    CpCommType,
    DataParallelSharding,
    FsdpShardingStrategy,
    MoeDispatcher,
    PipelineSchedule,
    Recompute,
    RecomputeGranularity,
    RecomputeMethod,
    RecomputeModule,
)


def _vpp(raw: dict[str, Any], num_layers: Optional[int], pp: int) -> int:
    """VPP from whichever of the three mutually exclusive flags is set (validate_args, rules 7-9)."""
    given = [f for f in ("--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
                         "--pipeline-model-parallel-layout") if f in raw]
    if len(given) > 1:
        raise MegatronArgsError(f"{' and '.join(given)} are mutually exclusive; keep one")
    if not given:
        return 1
    flag = given[0]
    if flag == "--num-virtual-stages-per-pipeline-rank":
        return raw[flag]
    if flag == "--pipeline-model-parallel-layout":
        stages = layout_stages(raw[flag])
        if pp <= 0 or stages % pp:
            raise MegatronArgsError(f"{flag} has {stages} stages, not a multiple of --pipeline-model-parallel-size {pp}; fix the layout")
        return stages // pp
    per_virtual = raw[flag]
    if num_layers is None:
        raise MegatronArgsError(f"{flag} needs --num-layers to derive the virtual pipeline size; add --num-layers")
    layers = num_layers + bool(raw.get("--account-for-embedding-in-pipeline-split")) + bool(raw.get("--account-for-loss-in-pipeline-split"))
    if pp <= 0 or per_virtual <= 0:
        raise MegatronArgsError(f"{flag} {per_virtual} with PP {pp}: both must be positive; fix their values")
    if layers % pp or (layers // pp) % per_virtual:
        # validate_args: num_layers % PP == 0 and layers per stage % layers per virtual stage == 0
        fix = (f"use a --pipeline-model-parallel-size dividing {layers}" if layers % pp else
               f"use a {flag} dividing {layers // pp}")
        raise MegatronRecipeIllegal(f"{flag} {per_virtual} does not divide the {layers} layers / PP {pp} per stage",
                                    rule="layers_split", fix=fix, flag=flag)
    return (layers // pp) // per_virtual


def _recompute(raw: dict[str, Any]) -> Recompute:
    """--recompute-*: granularity, method, layer count and selective modules. --recompute-activations sets the
    granularity to selective over any --recompute-granularity (validate_args: `if args.recompute_activations:
    args.recompute_granularity = 'selective'`, megatron/training/arguments.py @ d98e8a64)."""
    gran = "selective" if raw.get("--recompute-activations") else raw.get("--recompute-granularity")
    modules = raw.get("--recompute-modules")
    if gran == "selective" and modules is None:
        modules = ["core_attn"]  # TransformerConfig default recompute_modules
    known = {m.value for m in RecomputeModule}
    bad = [m for m in modules or [] if m not in known]
    if bad:
        raise MegatronArgsError(f"--recompute-modules {bad[0]} is not modelled; use {', '.join(sorted(known))}")
    method = raw.get("--recompute-method")
    n = raw.get("--recompute-num-layers")
    if gran == "full" and method == "block" and n == 0:
        # TransformerConfig only refuses None; megatron/core/recompute.py's block method then checkpoints the first 0 layers
        # of each stage, so every layer keeps its activations: no recompute (Primus ships Mixtral-8x22B this way)
        return Recompute(granularity=RecomputeGranularity.none)
    if n is not None and not 0 < n <= 4096:
        raise MegatronArgsError(f"--recompute-num-layers={n}: must be between 1 and the layers per stage; fix its value")
    return Recompute(granularity=RecomputeGranularity(gran or "none"), method=RecomputeMethod(method) if method else None,
                     num_layers=raw.get("--recompute-num-layers"),
                     modules=tuple(RecomputeModule(m) for m in modules) if gran == "selective" else ())


def _dp_sharding(raw: dict[str, Any]) -> DataParallelSharding:
    """How data-parallel state is sharded; the FSDP flags take precedence over --use-distributed-optimizer."""
    if raw.get("--use-megatron-fsdp"):
        return DataParallelSharding.megatron_fsdp
    if raw.get("--use-torch-fsdp2"):
        return DataParallelSharding.torch_fsdp2
    if raw.get("--use-distributed-optimizer"):
        return DataParallelSharding.distributed_optimizer
    return DataParallelSharding.none


def _fsdp_strategy(raw: dict[str, Any]) -> FsdpShardingStrategy:
    """--data-parallel-sharding-strategy (default optim_grads_params); Megatron reads it only with Megatron-FSDP,
    so without --use-megatron-fsdp it stays the default (it changes nothing there)."""
    value = raw.get("--data-parallel-sharding-strategy")
    if value is None or not raw.get("--use-megatron-fsdp"):
        return FsdpShardingStrategy.optim_grads_params
    if value not in FsdpShardingStrategy.__members__:
        raise MegatronArgsError(f"--data-parallel-sharding-strategy {value}: not one of Megatron's choices; use one of "
                                f"{', '.join(FsdpShardingStrategy.__members__)}")
    return FsdpShardingStrategy(value)


def _cp_comm_type(raw: dict[str, Any]) -> CpCommType:
    """--cp-comm-type (default p2p); per-layer lists are modelled only when every layer uses one type."""
    types = raw.get("--cp-comm-type", ["p2p"])
    if len(set(types)) > 1:
        raise MegatronArgsError("per-layer --cp-comm-type lists with different types are not modelled; give one type")
    return CpCommType(types[0])


def recipe_fields(raw: dict[str, Any], num_layers: Optional[int]) -> dict[str, Any]:
    """Keyword arguments for Recipe; the caller builds it so a pydantic error can be worded with these values."""
    g = raw.get
    if "--micro-batch-size" not in raw:
        raise MegatronArgsError("--micro-batch-size is required by Megatron; add --micro-batch-size 1")
    pp = g("--pipeline-model-parallel-size", 1)
    vpp = _vpp(raw, num_layers, pp)
    hybrid = hybrid_split(raw, pp)  # a hybrid pattern's '|' segments: VPP and the stages (constraints/megatron/hybrid_flags.py)
    if hybrid:
        vpp = hybrid["vpp"]
    dispatcher = "flex" if g("--moe-enable-deepep") else g("--moe-token-dispatcher-type", "allgather")
    return dict(
        tp=g("--tensor-model-parallel-size", 1), pp=pp, vpp=vpp, cp=g("--context-parallel-size", 1),
        ep=g("--expert-model-parallel-size", 1), etp=g("--expert-tensor-parallel-size"), mbs=g("--micro-batch-size"),
        sequence_parallel=g("--sequence-parallel", False), recompute=_recompute(raw), dp_sharding=_dp_sharding(raw),
        fsdp_sharding_strategy=_fsdp_strategy(raw),
        schedule=PipelineSchedule.interleaved if vpp > 1 else PipelineSchedule.one_f_one_b,
        first_stage_layers=g("--decoder-first-pipeline-num-layers"), last_stage_layers=g("--decoder-last-pipeline-num-layers"),
        account_for_embedding_in_pipeline_split=g("--account-for-embedding-in-pipeline-split", False),
        account_for_loss_in_pipeline_split=g("--account-for-loss-in-pipeline-split", False),
        pipeline_layout=hybrid["pipeline_layout"] if hybrid else g("--pipeline-model-parallel-layout"),
        microbatch_group_size=g("--microbatch-group-size-per-virtual-pipeline-stage"),
        overlap_p2p_comm=not g("--no-overlap-p2p-communication", False),  # default on (store_false flag)
        overlap_grad_reduce=g("--overlap-grad-reduce", False), overlap_param_gather=g("--overlap-param-gather", False),
        tp_comm_overlap=g("--tp-comm-overlap", False), moe_dispatcher=MoeDispatcher(dispatcher),
        moe_grouped_gemm=g("--moe-grouped-gemm", False),
        overlap_moe_expert_parallel_comm=g("--overlap-moe-expert-parallel-comm", False),
        fp8_param_gather=g("--fp8-param-gather", False), fp4_param_gather=g("--fp4-param-gather", False),
        grad_reduce_in_bf16=g("--grad-reduce-in-bf16", False) or raw.get("--main-grads-dtype") == "bf16",
        cross_entropy_loss_fusion=g("--cross-entropy-loss-fusion", False),
        num_distributed_optimizer_instances=g("--num-distributed-optimizer-instances", 1), cp_comm_type=_cp_comm_type(raw),
        hierarchical_cp_sizes=tuple(g("--hierarchical-context-parallel-sizes")) if "--hierarchical-context-parallel-sizes" in raw else None,
        distribute_saved_activations=g("--distribute-saved-activations", False),
        moe_shared_expert_overlap=g("--moe-shared-expert-overlap", False),
        cpu_offloading_num_layers=g("--cpu-offloading-num-layers", 0),
        # --padded-vocab-size turns Megatron's padding off (argument_utils.py: should_pad_vocab False): pad by 1, which
        # leaves any vocabulary that TP divides as it is
        make_vocab_size_divisible_by=1 if g("--padded-vocab-size") is not None else g("--make-vocab-size-divisible-by", 128),
        attention_backend=AttentionBackend(g("--attention-backend", "auto")),
        local_transformer_impl=raw.get("--transformer-impl") == "local",
        defer_embedding_wgrad_compute=g("--defer-embedding-wgrad-compute", False),
        # counted when the native impl is stated; left to Megatron's default it is warned by name instead
        # (constraints/megatron/unmodelled.py memory_raising_flags), so a rendered recipe reads back as it was priced
        compiled_loss_fusion=bool(g("--cross-entropy-loss-fusion", False)) and raw.get("--cross-entropy-fusion-impl") == "native",
        wgrad_deferral_limit=g("--wgrad-deferral-limit", 0),
        masked_softmax_fusion=not g("--no-masked-softmax-fusion", False),  # store_false flag, default on
        # validate_args: --apply-query-key-layer-scaling also sets attention_softmax_in_fp32
        attention_softmax_in_fp32=g("--attention-softmax-in-fp32", False) or g("--apply-query-key-layer-scaling", False),
    )
