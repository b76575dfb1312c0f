"""Feature legality rules: experts, recompute, data-parallel sharding, precision, hardware.

Same contract as constraints/rules/registry.py (pure, one Megatron check each, registered with @rule).
"""
from __future__ import annotations

from typing import Optional

from constraints.rules.base import SPLIT_FIELDS, RuleInput, Violation, divisors, nearest, rule, violation
from constraints.spec import DataParallelSharding, MoeDispatcher, Optimizer, PipelineSchedule, Precision, RecomputeGranularity, RecomputeMethod, RecomputeModule
from constraints.stages import StageSplitError, virtual_stage_layer_counts


# ---------------------------------------------------------------- experts
@rule(reads="ep")
def experts_divisible_by_ep(x: RuleInput) -> Optional[Violation]:
    """[23] EP>1 requires --num-experts and num_experts % EP == 0."""
    ep, e = x.recipe.ep, x.model.num_experts
    if ep == 1:
        return None
    if e is None:
        return violation("experts_divisible_by_ep", f"--expert-model-parallel-size {ep} on a dense model (no --num-experts)",
                  "use --expert-model-parallel-size 1")
    if e % ep == 0:
        return None
    return violation("experts_divisible_by_ep", f"{e} experts are not divisible by EP={ep}",
              f"use --expert-model-parallel-size {nearest([d for d in divisors(e) if x.world_size % d == 0], ep)}")


@rule(reads="etp tp")
def expert_tp_on_dense(x: RuleInput) -> Optional[Violation]:
    """--expert-tensor-parallel-size only means something for MoE models; on a dense model it must not
    change the grid (Megatron builds the expert grid anyway, so ETP must still divide it)."""
    r = x.recipe
    if x.model.is_moe or r.etp is None or r.etp == r.tp:
        return None
    return violation("expert_tp_on_dense", f"--expert-tensor-parallel-size {r.etp} on a dense model", "drop --expert-tensor-parallel-size",
              "warning")


@rule(reads="tp etp")
def moe_bias_needs_etp1(x: RuleInput) -> Optional[Violation]:
    """MoE layers with linear biases (--add-bias-linear on experts, e.g. gpt-oss) need ETP == 1
    (Megatron experts.py: bias is not supported with expert tensor parallelism)."""
    if x.model.is_moe and x.model.mlp_bias and x.recipe.etp_effective > 1:
        return violation("moe_bias_needs_etp1", f"experts with bias need --expert-tensor-parallel-size 1, got {x.recipe.etp_effective}",
                  "use --expert-tensor-parallel-size 1")
    return None


@rule(reads="ep tp sequence_parallel")
def moe_sequence_parallel(x: RuleInput) -> Optional[Violation]:
    """[18] EP>1 with TP>1 and no SP: Megatron warns "sequence parallelism must be used"."""
    r = x.recipe
    if r.ep > 1 and r.tp > 1 and not r.sequence_parallel:
        return violation("moe_sequence_parallel", "EP>1 with TP>1 needs --sequence-parallel", "add --sequence-parallel", "warning")
    return None


@rule(reads="moe_shared_expert_overlap moe_dispatcher")
def shared_expert_overlap_dispatcher(x: RuleInput) -> Optional[Violation]:
    """[25] --moe-shared-expert-overlap only with the alltoall or flex dispatcher, checked only for a model with shared
    experts (TransformerConfig.__post_init__, under `moe_shared_expert_intermediate_size is not None`)."""
    r = x.recipe
    if r.moe_shared_expert_overlap and r.moe_dispatcher == MoeDispatcher.allgather and x.model.moe_shared_expert_intermediate_size:
        return violation("shared_expert_overlap_dispatcher", "--moe-shared-expert-overlap needs --moe-token-dispatcher-type alltoall or flex",
                  "use --moe-token-dispatcher-type alltoall")
    return None


@rule(reads="moe_shared_expert_overlap")
def latent_moe_shared_expert_overlap(x: RuleInput) -> Optional[Violation]:
    """A latent MoE (--moe-latent-size) cannot overlap its shared experts in training: the shared expert must see
    the full hidden state before fc1_latent_proj, and MoELayer.preprocess raises "Shared expert overlap with MoE
    latent projections is not supported during training" (megatron/core/transformer/moe/moe_layer.py @ d98e8a64)."""
    if x.recipe.moe_shared_expert_overlap and x.model.moe_latent_size and x.model.moe_shared_expert_intermediate_size:
        return violation("latent_moe_shared_expert_overlap", "--moe-shared-expert-overlap with --moe-latent-size is refused in training",
                  "drop --moe-shared-expert-overlap")
    return None


@rule(reads="moe_dispatcher tp ep")
def flex_dispatcher_group(x: RuleInput) -> Optional[Violation]:
    """The flex dispatcher's default DeepEP backend needs TP x EP > 1 (megatron/core/transformer/moe/
    token_dispatcher.py MoEFlexTokenDispatcher: assert tp_size * ep_size > 1, raised when the model is built)."""
    r = x.recipe
    if x.model.is_moe and r.moe_dispatcher == MoeDispatcher.flex and r.tp * r.ep <= 1:
        return violation("flex_dispatcher_group", "--moe-token-dispatcher-type flex (DeepEP) needs TP x EP > 1",
                  "use --moe-token-dispatcher-type alltoall or set --expert-model-parallel-size > 1")
    return None


# the flex dispatcher's backends: DeepEP ("Hopper GPUs", its README) and HybridEP (Blackwell NVL72) run on NVIDIA
# compute capability 9.0 and newer
FLEX_MIN_COMPUTE_CAPABILITY = 9.0


def flex_hardware_gap(profile) -> str:
    """'' where the flex dispatcher's backends run on this part, else what the part lacks, as the rest of a sentence
    that starts with its name (`is an AMD part`). One test for the rule below, `solve`'s variant screen
    (solver/variants.supports_flex) and its nothing-fits line."""
    vendor, cc = getattr(profile, "vendor", ""), getattr(profile, "compute_capability", None)
    if vendor == "nvidia" and cc is not None and cc >= FLEX_MIN_COMPUTE_CAPABILITY:
        return ""
    return (f"is of compute capability {cc:.1f}" if cc else f"is an {vendor.upper()} part" if vendor == "amd"
            else "gives no compute capability")


@rule(reads="moe_dispatcher")
def flex_dispatcher_hardware(x: RuleInput) -> Optional[Violation]:
    """--moe-token-dispatcher-type flex on a part where its DeepEP / HybridEP backends do not run (AMD, or NVIDIA below
    compute capability 9.0): Megatron-LM's validation does not know the part, so this is a warning, not a verdict
    (a stack may bring its own port, e.g. an AMD DeepEP build); `solve` does not try flex there."""
    if not (x.model.is_moe and x.recipe.moe_dispatcher == MoeDispatcher.flex) or x.profile is None:
        return None
    gap = flex_hardware_gap(x.profile)
    if not gap:
        return None
    return violation("flex_dispatcher_hardware", f"--moe-token-dispatcher-type flex needs DeepEP / HybridEP, which run on NVIDIA "
                     f"compute capability {FLEX_MIN_COMPUTE_CAPABILITY:.1f} or newer; {x.profile.name} {gap}",
                     "use --moe-token-dispatcher-type alltoall", "warning")


@rule(reads="overlap_moe_expert_parallel_comm ep moe_dispatcher pp vpp recompute moe_shared_expert_overlap")
def ep_comm_overlap(x: RuleInput) -> Optional[Violation]:
    """[26] --overlap-moe-expert-parallel-comm: EP>1, alltoall/flex dispatcher, VPP set when PP>1, no full
    recompute and no 'moe' recompute module, bf16/fp16 training, no --moe-shared-expert-overlap, at most one MTP
    layer ("MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm", repeated or not)
    (TransformerConfig.__post_init__ asserts)."""
    r = x.recipe
    if not r.overlap_moe_expert_parallel_comm:
        return None
    problems = []
    if r.ep == 1:
        problems.append("EP>1")
    if r.moe_dispatcher == MoeDispatcher.allgather:
        problems.append("an alltoall/flex dispatcher")
    if r.pp > 1 and r.vpp == 1:
        problems.append("a virtual pipeline when PP>1")
    if r.recompute.granularity == RecomputeGranularity.full or RecomputeModule.moe in r.recompute.modules:
        problems.append("no full or 'moe' recompute")
    if r.moe_shared_expert_overlap:
        problems.append("no --moe-shared-expert-overlap")
    if x.model.mtp_num_layers > 1:
        problems.append(f"at most one MTP layer (--mtp-num-layers is {x.model.mtp_num_layers})")
    if not problems:
        return None
    return violation("ep_comm_overlap", "--overlap-moe-expert-parallel-comm needs " + ", ".join(problems),
              "drop --overlap-moe-expert-parallel-comm or meet its requirements")


@rule(reads="recompute moe_grouped_gemm")
def moe_act_needs_grouped_gemm(x: RuleInput) -> Optional[Violation]:
    """[27] 'moe_act' in --recompute-modules needs --moe-grouped-gemm (TransformerConfig.__post_init__ raises, dense
    models too). The launch script writes no MoE flag for a dense model, so there only an explicit flag counts."""
    r = x.recipe
    grouped = r.moe_grouped_gemm and (x.model.is_moe or "--moe-grouped-gemm" in x.flags)
    if RecomputeModule.moe_act in r.recompute.modules and not grouped:
        return violation("moe_act_needs_grouped_gemm", "recompute module moe_act needs --moe-grouped-gemm", "add --moe-grouped-gemm")
    return None


@rule(reads="moe_grouped_gemm")
def grouped_gemm_arch(x: RuleInput) -> Optional[Violation]:
    """[27] --moe-grouped-gemm needs compute capability >= 8."""
    cc = getattr(x.profile, "compute_capability", None)
    if x.model.is_moe and x.recipe.moe_grouped_gemm and cc is not None and cc < 8:
        return violation("grouped_gemm_arch", f"--moe-grouped-gemm needs compute capability >= 8, hardware has {cc}", "drop --moe-grouped-gemm")
    return None


# ---------------------------------------------------------------- recompute
def _layers_per_stage(x: RuleInput) -> int:
    try:
        counts = virtual_stage_layer_counts(x.model, x.recipe)
    except StageSplitError:
        return x.model.num_layers // x.recipe.pp
    return max(counts) * x.recipe.vpp


@rule(reads="recompute " + SPLIT_FIELDS)
def full_recompute_args(x: RuleInput) -> Optional[Violation]:
    """[30] full: --recompute-method in {uniform, block} and --recompute-num-layers of at least 1. Megatron asserts only
    that both are set (TransformerConfig.__post_init__) and clamps a larger N to the layers of the stage
    (core/recompute.py), as the memory model and the projection do: N above the layers per stage is a warning that
    names the count that runs, not a verdict. With MTP layers, uniform needs N == 1
    (multi_token_prediction.py MultiTokenPredictionLayer._checkpointed_forward asserts it)."""
    rc = x.recipe.recompute
    if rc.granularity != RecomputeGranularity.full:
        return None
    per_stage = _layers_per_stage(x)
    if rc.method is None or rc.num_layers is None:
        missing = [flag for flag, said in (("--recompute-method", rc.method), ("--recompute-num-layers", rc.num_layers))
                   if said is None]
        add = {"--recompute-method": "--recompute-method uniform", "--recompute-num-layers": "--recompute-num-layers 1"}
        return violation("full_recompute_args", f"--recompute-granularity full needs {' and '.join(missing)}",
                         f"add {' '.join(add[m] for m in missing)}")
    if rc.num_layers < 1:
        return violation("full_recompute_args", f"--recompute-num-layers {rc.num_layers} is below 1", "use --recompute-num-layers 1")
    if x.model.mtp_num_layers and rc.method == RecomputeMethod.uniform and rc.num_layers != 1:
        return violation("full_recompute_args", f"uniform recompute of the MTP layer needs --recompute-num-layers 1, got {rc.num_layers}",
                  "use --recompute-num-layers 1 or --recompute-method block")
    if rc.num_layers > per_stage:
        return violation("full_recompute_args", f"--recompute-num-layers {rc.num_layers} is above the {per_stage} layers per "
                                                f"stage: Megatron recomputes {per_stage}",
                         f"use --recompute-num-layers {per_stage}", "warning")
    return None


@rule(reads="recompute moe_shared_expert_overlap")
def selective_recompute_args(x: RuleInput) -> Optional[Violation]:
    """[31] selective: --recompute-method and --recompute-num-layers must be unset; mla_up_proj needs MLA;
    shared_experts conflicts with --moe-shared-expert-overlap; none without granularity."""
    r, rc = x.recipe, x.recipe.recompute
    if rc.granularity == RecomputeGranularity.none:
        if rc.modules or rc.method or rc.num_layers:
            return violation("selective_recompute_args", "recompute modules/method/num-layers given without --recompute-granularity",
                      "add --recompute-granularity selective (modules) or full (method, num-layers)")
        return None
    if rc.granularity != RecomputeGranularity.selective:
        return None
    if rc.method is not None or rc.num_layers is not None:
        return violation("selective_recompute_args", "selective recompute takes no --recompute-method / --recompute-num-layers",
                  "drop --recompute-method and --recompute-num-layers")
    if RecomputeModule.mla_up_proj in rc.modules and not x.model.multi_latent_attention:
        return violation("selective_recompute_args", "recompute module mla_up_proj needs multi-latent attention", "drop mla_up_proj")
    if RecomputeModule.shared_experts in rc.modules and r.moe_shared_expert_overlap:
        return violation("selective_recompute_args", "recompute module shared_experts conflicts with --moe-shared-expert-overlap",
                  "drop shared_experts from --recompute-modules")
    return None


@rule(reads="recompute")
def fp8_delayed_recompute(x: RuleInput) -> Optional[Violation]:
    """[31] The fp8 delayed-scaling recipe disallows moe_act and layernorm recompute."""
    mods = set(x.recipe.recompute.modules)
    if x.job.precision == Precision.fp8_delayed and mods & {RecomputeModule.moe_act, RecomputeModule.layernorm}:
        return violation("fp8_delayed_recompute", "fp8 delayed scaling cannot recompute moe_act or layernorm",
                  "use --fp8-recipe tensorwise or drop those modules")
    return None


@rule(reads="distribute_saved_activations tp recompute sequence_parallel")
def distribute_saved_activations(x: RuleInput) -> Optional[Violation]:
    """[32] --distribute-saved-activations: TP>1, full recompute with a method, and not sequence parallel."""
    r = x.recipe
    if not r.distribute_saved_activations:
        return None
    if r.tp > 1 and r.recompute.granularity == RecomputeGranularity.full and r.recompute.method and not r.sequence_parallel:
        return None
    return violation("distribute_saved_activations", "--distribute-saved-activations needs TP>1, full recompute with a method, and no SP",
              "drop --distribute-saved-activations")


@rule(reads="cpu_offloading_num_layers pp recompute")
def cpu_offloading(x: RuleInput) -> Optional[Violation]:
    """[33] --cpu-offloading-num-layers > 0: fewer than the model's layers (TransformerConfig.__post_init__,
    megatron/core/transformer/transformer_config.py: "CPU offloading can be done only for layers less than
    num_layers"), PP must be 1 and no recompute."""
    r = x.recipe
    if r.cpu_offloading_num_layers >= x.model.num_layers:
        return violation("cpu_offloading", f"--cpu-offloading-num-layers {r.cpu_offloading_num_layers} is not below the "
                  f"model's {x.model.num_layers} layers (Megatron offloads at most num_layers - 1)",
                  f"use at most {x.model.num_layers - 1}")
    if r.cpu_offloading_num_layers and (r.pp > 1 or r.recompute.granularity != RecomputeGranularity.none):
        return violation("cpu_offloading", "CPU offloading needs PP=1 and no recompute", "drop --cpu-offloading-num-layers")
    return None


@rule(reads="schedule recompute")
def zero_bubble_no_recompute(x: RuleInput) -> Optional[Violation]:
    """Split-wgrad (zero-bubble) schedules keep wgrad inputs alive past backward, which recompute frees
    (AMD Primus config_validation: recompute is incompatible with zerobubble/zbv)."""
    r = x.recipe
    if r.schedule in (PipelineSchedule.zb_h1, PipelineSchedule.zbv) and r.recompute.granularity == RecomputeGranularity.full:
        return violation("zero_bubble_no_recompute", f"{r.schedule.value} cannot run with full recompute", "use schedule 1f1b or interleaved")
    return None


# ---------------------------------------------------------------- data-parallel sharding / optimizer
@rule(reads="overlap_param_gather dp_sharding overlap_grad_reduce")
def overlap_param_gather(x: RuleInput) -> Optional[Violation]:
    """[34] --overlap-param-gather requires the distributed optimizer (or Megatron-FSDP) and --overlap-grad-reduce."""
    r = x.recipe
    if not r.overlap_param_gather:
        return None
    if r.dp_sharding in (DataParallelSharding.distributed_optimizer, DataParallelSharding.megatron_fsdp) and r.overlap_grad_reduce:
        return None
    return violation("overlap_param_gather", "--overlap-param-gather needs --use-distributed-optimizer and --overlap-grad-reduce",
              "drop --overlap-param-gather or add both")


@rule(reads="fp8_param_gather dp_sharding")
def fp8_param_gather(x: RuleInput) -> Optional[Violation]:
    """[36] --fp8-param-gather requires the distributed optimizer or FSDP, and FP8 training."""
    r = x.recipe
    if not r.fp8_param_gather:
        return None
    if r.dp_sharding == DataParallelSharding.none or not x.job.precision.is_fp8:
        return violation("fp8_param_gather", "--fp8-param-gather needs FP8 training and --use-distributed-optimizer or FSDP",
                  "drop --fp8-param-gather")
    return None


@rule(reads="dp_sharding pp ep")
def torch_fsdp2(x: RuleInput) -> Optional[Violation]:
    """[37] --use-torch-fsdp2: PP == 1, EP == 1, untied embeddings, no fp16."""
    r = x.recipe
    if r.dp_sharding != DataParallelSharding.torch_fsdp2:
        return None
    problems = [p for p, bad in (("PP=1", r.pp > 1), ("EP=1", r.ep > 1), ("untied embeddings", x.model.tied_embeddings),
                                 ("bf16 (not fp16)", x.job.precision == Precision.fp16)) if bad]
    if not problems:
        return None
    return violation("torch_fsdp2", "--use-torch-fsdp2 needs " + ", ".join(problems), "use --use-distributed-optimizer instead")


@rule(reads="dp_sharding")
def muon_no_fsdp(x: RuleInput) -> Optional[Violation]:
    """[39] Non-Adam optimizers (Muon) cannot run under FSDP."""
    if x.job.optimizer == Optimizer.muon and x.recipe.dp_sharding in (DataParallelSharding.torch_fsdp2, DataParallelSharding.megatron_fsdp):
        return violation("muon_no_fsdp", "the Muon optimizer cannot run under FSDP", "use --use-distributed-optimizer")
    return None


# ---------------------------------------------------------------- precision / hardware
# the fix on a part without FP8 tensor cores (a script may already pass --bf16 beside its FP8 flags); solver/explain_why.py
# speaks it as solve's option
NO_FP8_FIX = "drop --fp8-format / --fp8-recipe and train in bf16 (--bf16)"

@rule(reads="")
def precision_supported(x: RuleInput) -> Optional[Violation]:
    """[40] FP8 needs FP8 tensor cores (Hopper/Ada/MI300+); MXFP8 needs block-scaled FP8 (Blackwell)."""
    p, hw = x.job.precision, x.profile
    if hw is None or not p.is_fp8:
        return None
    if not getattr(hw, "supports_fp8", True):
        return violation("precision_supported", f"{hw.name} has no FP8 tensor cores", NO_FP8_FIX)
    if p == Precision.mxfp8 and not getattr(hw, "supports_mxfp8", False):
        return violation("precision_supported", f"MXFP8 needs block-scaled FP8 hardware; {hw.name} has none", "use --fp8-recipe tensorwise")
    return None


@rule(reads="")
def mla_excludes_gqa(x: RuleInput) -> Optional[Violation]:
    """[43] MLA and GQA are mutually exclusive."""
    m = x.model
    if m.multi_latent_attention and m.num_query_groups != m.num_attention_heads:
        return violation("mla_excludes_gqa", "multi-latent attention cannot be combined with --group-query-attention", "drop --group-query-attention")
    return None
