"""A generation applied to what the projection prices: recipe knobs set, contradictions refused, solve's pins.

Why knobs and not factors: each missing feature has a knob the projection already prices, so the generation changes
the projection by the same mechanism a user's flag would. Without Transformer Engine, core attention is Megatron's
own (`local_transformer_impl`: torch.baddbmm + fused softmax, priced unfused in measure/kernels/unfused_attention.py
and holding the s x s scores in constraints/memory/attention_scores.py); without the distributed optimizer the
replicas keep whole optimizer states (dp_sharding none); without --overlap-grad-reduce the gradient all-reduce waits
for the backward. A recipe that states a knob its generation lacks (`Recipe.model_fields_set`: a YAML key or a
script flag) is refused in one line; a knob left at shardplan's default is set to what the generation runs, with a
note.
"""
from __future__ import annotations

from typing import Optional

from constraints.software.generation import Generation, SoftwareError, load_timeline
from constraints.spec import AttentionBackend, DataParallelSharding, JobSpec, ModelSpec, MoeDispatcher, Recipe, RecomputeGranularity


def _since(feature: str) -> str:
    return load_timeline().features[feature].since


def _refuse(gen: Generation, what: str, feature: str, fix: str) -> SoftwareError:
    return SoftwareError(f"software {gen.software}: {what}, which Megatron has since {_since(feature)} "
                         f"(docs/software.md); {fix}")


def _torch_native_refusal(gen: Generation) -> SoftwareError:
    """The one line both apply_generation and solve_pins give a torch-native stack: Megatron's projection does not price it."""
    return SoftwareError(f"software {gen.software}: a torch-native stack, whose step shardplan does not model "
                         "(docs/software.md); give a Megatron-family stack or leave --software out")


def apply_generation(gen: Generation, model: ModelSpec, job: JobSpec, recipe: Recipe,
                     stated: Optional[set[str]] = None) -> tuple[Recipe, list[str]]:
    """(the recipe as `gen` runs it, one note per knob set). SoftwareError where the recipe or job states a feature the
    generation lacks, or the stack is not one the projection prices. `stated`: the recipe fields its author wrote
    (default `recipe.model_fields_set`; bench/runs.py passes what a row's columns state)."""
    if gen.torch_native:
        raise _torch_native_refusal(gen)
    stated = recipe.model_fields_set if stated is None else stated
    update: dict = {}
    notes: list[str] = []

    def lacks(feature: str, field: str, using: bool, default_value, what: str, fix: str) -> None:
        if gen.has(feature) or not using:
            return
        if field in stated:
            raise _refuse(gen, what, feature, fix)
        update[field] = default_value
        notes.append(f"{what.removeprefix('the recipe uses ')} off: not in {gen.software} (Megatron has it since {_since(feature)})")

    if not gen.has("transformer_engine"):
        if job.precision.is_fp8 or job.precision.is_fp4:
            raise _refuse(gen, f"{job.precision.value} training needs Transformer Engine", "transformer_engine",
                          "train in bf16 or fp16, or name a newer --software")
        if not recipe.local_transformer_impl:
            update["local_transformer_impl"] = True
            notes.append(f"Megatron's local transformer modules (no Transformer Engine before {_since('transformer_engine')}): "
                         "core attention unfused (baddbmm + fused softmax)")
    elif not gen.has("flash_attention") and not recipe.attention_backend.stores_scores:
        update["attention_backend"] = AttentionBackend.unfused
        notes.append(f"unfused core attention (no flash attention before {_since('flash_attention')})")
    lacks("distributed_optimizer", "dp_sharding", recipe.dp_sharding == DataParallelSharding.distributed_optimizer,
          DataParallelSharding.none, "the recipe uses the distributed optimizer", "use dp_sharding none or a newer --software")
    lacks("megatron_fsdp", "dp_sharding", recipe.dp_sharding == DataParallelSharding.megatron_fsdp,
          DataParallelSharding.distributed_optimizer if gen.has("distributed_optimizer") else DataParallelSharding.none,
          "the recipe uses Megatron FSDP", "use the distributed optimizer or a newer --software")
    if update.get("dp_sharding") == DataParallelSharding.none:
        update["overlap_param_gather"] = False
    lacks("overlap_grad_reduce", "overlap_grad_reduce", recipe.overlap_grad_reduce, False,
          "the recipe uses overlapped gradient reduction", "drop --overlap-grad-reduce or name a newer --software")
    lacks("sequence_parallel", "sequence_parallel", recipe.sp_active, False, "the recipe uses sequence parallelism",
          "drop --sequence-parallel or name a newer --software")
    if recipe.recompute.granularity == RecomputeGranularity.selective and not gen.has("selective_recompute"):
        raise _refuse(gen, "the recipe uses selective recompute", "selective_recompute", "use full recompute or none")
    if model.is_moe:
        lacks("moe_grouped_gemm", "moe_grouped_gemm", recipe.moe_grouped_gemm, False, "the recipe uses grouped GEMM experts",
              "drop --moe-grouped-gemm or name a newer --software")
        lacks("deepep", "moe_dispatcher", recipe.moe_dispatcher == MoeDispatcher.flex, MoeDispatcher.alltoall,
              "the recipe uses the flex dispatcher (DeepEP)", "use the alltoall dispatcher or a newer --software")
        lacks("ep_comm_overlap", "overlap_moe_expert_parallel_comm", recipe.overlap_moe_expert_parallel_comm, False,
              "the recipe uses expert-parallel communication overlap", "drop --overlap-moe-expert-parallel-comm")
    return (recipe.model_copy(update=update) if update else recipe), notes


# Knobs solve cannot set on its candidates (every candidate is built from Recipe()'s defaults for them): a generation
# that lacks one of these is refused by solve and sweep, and `check` of a recipe is the way to price it.
UNSEARCHABLE = ("transformer_engine", "flash_attention", "overlap_grad_reduce")


def solve_pins(gen: Generation, model: ModelSpec, pins: dict) -> dict:
    """solve's pins (solver/workflow.py collect_pins) restricted to what `gen` has: the distributed optimizer, Megatron
    FSDP, sequence parallelism, the flex dispatcher and EP overlap pinned off where it lacks them. A user's pin of a missing feature,
    or a generation solve cannot search (UNSEARCHABLE, grouped GEMM for an MoE model), is refused in one line."""
    if gen.torch_native:
        raise _torch_native_refusal(gen)
    missing = [f for f in UNSEARCHABLE + (("moe_grouped_gemm",) if model.is_moe else ()) if not gen.has(f)]
    if missing:
        raise SoftwareError(f"software {gen.software}: solve searches recipes with {', '.join(missing)}, which this "
                            f"generation lacks (docs/software.md); check a recipe with --software instead")
    out = dict(pins)
    for feature, axis, off, on_values in (("distributed_optimizer", "dp_sharding", DataParallelSharding.none.value,
                                           (DataParallelSharding.distributed_optimizer.value,)),
                                          ("sequence_parallel", "sp", False, (True,)),
                                          ("deepep", "moe_dispatcher", MoeDispatcher.alltoall.value, (MoeDispatcher.flex.value,)),
                                          ("ep_comm_overlap", "ep_comm_overlap", False, (True,))):
        if gen.has(feature) or (axis in ("moe_dispatcher", "ep_comm_overlap") and not model.is_moe):
            continue
        given = out.get(axis)
        if given is not None and any(v in on_values for v in given):
            raise _refuse(gen, f"--{axis.replace('_', '-')} {given[0]} needs {feature.replace('_', ' ')}", feature,
                          "drop that pin or name a newer --software")
        out[axis] = [off]
    if not gen.has("megatron_fsdp"):  # the sharding axis keeps the generation's other shardings (none, distributed optimizer)
        given = out.get("dp_sharding")
        if given is not None and DataParallelSharding.megatron_fsdp.value in given:
            raise _refuse(gen, "--dp-sharding megatron_fsdp needs Megatron FSDP", "megatron_fsdp",
                          "drop that pin or name a newer --software")
        if given is None:
            out["dp_sharding"] = [DataParallelSharding.distributed_optimizer.value, DataParallelSharding.none.value]
    return out
