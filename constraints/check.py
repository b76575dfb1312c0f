"""`check`: one recipe's verdict — every rule, the memory of the most loaded rank, and fixes.

Why separate from the CLI: the solver re-verifies every answer through this same function, so a
recipe the solver returns and a recipe a user writes are judged by one piece of code.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from pydantic import Field

from constraints.case import Case
from constraints.memory.allocator import near_limit
from constraints.memory.per_rank import MemoryReport, memory_report
from constraints.rules.registry import RuleInput, Violation, check_rules
from constraints.spec import DataParallelSharding, Strict
from constraints.stages import StageSplitError


class MemorySummary(Strict):
    peak_bytes: int
    capacity_bytes: int
    usable_bytes: int
    stage: int
    terms: dict[str, int]
    stages: list[dict[str, Any]] = Field(description="per pipeline rank: rank, total_bytes, terms")
    num_microbatches: int
    near_limit: bool = Field(False, description="fits within a few percent of HBM of the usable limit (constraints/memory/allocator.py)")

    @classmethod
    def of(cls, report: MemoryReport) -> "MemorySummary":
        return cls(peak_bytes=report.peak_bytes, capacity_bytes=report.capacity_bytes, usable_bytes=report.usable_bytes,
                   stage=report.stage, terms=report.terms, num_microbatches=report.num_microbatches,
                   near_limit=near_limit(report.peak_bytes, report.usable_bytes, report.capacity_bytes),
                   stages=[{"rank": s.rank, "total_bytes": s.total_bytes, "terms": s.terms} for s in report.stages])


class CheckReport(Strict):
    legal: bool
    fits: bool
    violations: list[Violation]
    warnings: list[Violation]
    memory: Optional[MemorySummary]
    projection: Optional[dict[str, Any]] = None
    unknown_flags: list[str] = []
    ignored_flags: list[str] = []
    dp: int
    expert_dp: int
    world_size: int

    @property
    def ok(self) -> bool:
        return self.legal and self.fits


def memory_violation(mem: MemoryReport, sharding: Optional[DataParallelSharding] = None) -> Optional[Violation]:
    """The memory 'rule': the most loaded rank must fit in usable HBM. `sharding` (the recipe's) keeps the fix from
    proposing the sharding the recipe already has."""
    if mem.fits:
        return None
    biggest = max(mem.terms, key=lambda k: mem.terms[k])
    gib = 1024 ** 3
    return Violation(rule="memory_fits",
                     message=(f"pipeline rank {mem.stage} needs {mem.peak_bytes / gib:.2f} GiB > usable {mem.usable_bytes / gib:.2f} GiB "
                              f"(largest term: {biggest} {mem.terms[biggest] / gib:.2f} GiB)"),
                     fix=_memory_fix(biggest, sharding))


def _memory_fix(term: str, sharding: Optional[DataParallelSharding] = None) -> str:
    if term == "optimizer_state" and sharding not in (None, DataParallelSharding.none):
        return "raise DP (the states are already sharded over it), shard further with TP/PP/EP, or use Megatron-FSDP"
    return {
        "activations": "add recompute (--recompute-granularity selective/full), raise TP/CP/PP or lower --micro-batch-size",
        "optimizer_state": "add --use-distributed-optimizer or raise DP, or shard further with TP/PP/EP",
        "gradients": "raise TP/PP/EP, or use Megatron-FSDP",
        "weights": "raise TP/PP/EP, or use Megatron-FSDP",
        "output_activations": "raise TP (vocab-parallel logits) or use the fused cross-entropy",
    }.get(term, "raise TP/PP/EP or lower --micro-batch-size")


def model_config_warnings(model) -> list[Violation]:
    """What the model's config reader did not follow (constraints/models/hf_reading.py), as warnings: the verdict stands on
    the model as read, and the user learns what that reading left out."""
    return [Violation(rule="model_config", message=note, severity="warning",
                      fix="where it changes the model, write a model YAML whose fields express it (README 'Recipe "
                          "YAML'); otherwise the verdict stands on the model as read")
            for note in model.config_notes]


def node_size_warnings(gpus_per_node: int, profile) -> list[Violation]:
    """A node said to hold more GPUs than the part's server or tray does (`HardwareProfile.gpus_per_node`): the verdict
    stands (measure.comm.topology prices NVLink domains of the profile's size), but such a node is not that part's, so it
    is said rather than judged silently."""
    have = getattr(profile, "gpus_per_node", None)
    if not have or gpus_per_node <= have:
        return []
    return [Violation(rule="node_size", severity="warning",
                      message=f"{gpus_per_node} GPUs per node, but a {profile.name} server holds {have}: the world "
                              f"size is taken as given, the NVLink domain as the profile's "
                              f"({profile.scale_up_domain_size} GPUs)",
                      fix=f"use --gpus-per-node {have} (and count nodes as servers of {have} GPUs)")]


def check_case(case: Case, profile, flags: Mapping[str, object] | None = None, env: Mapping[str, str] | None = None,
               margin_fraction: float = 0.0, validated_by: Optional[str] = None) -> CheckReport:
    """Legality (all rules) and memory fit of one case on one hardware profile (`validated_by`: RuleInput's)."""
    x = RuleInput(model=case.model, job=case.job, recipe=case.recipe, world_size=case.world_size, profile=profile,
                  flags=flags or {}, env=env, validated_by=validated_by)
    found = check_rules(x)
    errors = [v for v in found if v.severity == "error"]
    warnings = [v for v in found if v.severity != "error"] + model_config_warnings(case.model) \
        + node_size_warnings(case.placement.gpus_per_node, profile)
    mem = None
    fits = False
    structural = {"world_divisible", "layers_split", "pipeline_layout", "expert_grid"}
    if not any(v.rule in structural for v in errors):
        cal = profile.calibration
        try:
            report = memory_report(case.model, case.job, case.recipe, case.world_size, profile.hbm_capacity_bytes,
                                   cal.framework_overhead_bytes, cal.activation_fragmentation_fraction, margin_fraction,
                                   compute_capability=profile.compute_capability)
        except StageSplitError as exc:
            errors.append(Violation(rule="layers_split", message=str(exc), fix="change the pipeline split"))
        else:
            mem = MemorySummary.of(report)
            fits = report.fits
            mv = memory_violation(report, case.recipe.dp_sharding)
            if mv:
                errors.append(mv)
    legal = not any(v.rule != "memory_fits" for v in errors)
    return CheckReport(legal=legal, fits=fits, violations=errors, warnings=warnings, memory=mem,
                       dp=case.recipe.dp(case.world_size), expert_dp=case.recipe.expert_dp(case.world_size),
                       world_size=case.world_size)
