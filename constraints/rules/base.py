"""The rule machinery shared by every rule module: Violation, RuleInput, the @rule marker and the small helpers
rules use for their fixes.

Why a module of its own: the rule modules (constraints/rules/*.py) import these, and constraints/rules/registry.py
imports the rule modules to list them in one fixed order; with the machinery here, nothing imports back up.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from constraints.spec import JobSpec, ModelSpec, Recipe, Strict


class Violation(Strict):
    rule: str
    message: str
    fix: str
    severity: str = "error"  # "error" makes the recipe illegal; "warning" is what Megatron only warns about


@dataclass(frozen=True)
class RuleInput:
    model: ModelSpec
    job: JobSpec
    recipe: Recipe
    world_size: int
    profile: object = None  # hardware.profile.HardwareProfile, when known
    flags: Mapping[str, object] = field(default_factory=dict)  # raw Megatron flags beyond Recipe
    env: Optional[Mapping[str, str]] = None  # launch environment, when known (scripts)
    # the stack whose own launcher validates a config's flags instead of Megatron-LM's validate_args ("bridge": Megatron-
    # Bridge's ConfigContainer.validate); None for Megatron-LM's scripts, argument files and the stacks that call it
    validated_by: Optional[str] = None


BRIDGE_VALIDATED = "bridge"  # RuleInput.validated_by of a Megatron-Bridge config (its stack kind)


Rule = Callable[[RuleInput], Optional[Violation]]


# Recipe fields that decide the pipeline split (constraints.stages.virtual_stage_layer_counts reads them all)
UNEVEN_SPLIT_FIELDS = ("first_stage_layers last_stage_layers account_for_embedding_in_pipeline_split "
                       "account_for_loss_in_pipeline_split")
SPLIT_FIELDS = "pp vpp pipeline_layout " + UNEVEN_SPLIT_FIELDS


def rule(fn: Optional[Rule] = None, *, reads: Optional[str] = None):
    """Register a rule: `@rule` or `@rule(reads="tp pp cp")`.

    `reads` names every Recipe field the rule may look at, on any path (properties spelled as their fields:
    etp_effective = tp etp, sp_active = sequence_parallel tp, dp() = tp pp cp, expert_dp() = tp etp ep pp);
    model, job, world size, profile, flags and env are free to read. Why: the solver memoises a rule's
    verdict by the values of these fields alone (solver/tables/rules.py), so a field missing here makes the
    solver wrong; tests/constraints/rules/test_rule_reads_cover_verdicts.py varies every other field and holds the verdict.
    None (undeclared) means every field."""
    def register(f: Rule) -> Rule:
        f.reads = None if reads is None else frozenset(reads.split())
        f.is_rule = True  # constraints.rules.registry collects marked functions, module by module, in a fixed order
        return f

    return register if fn is None else register(fn)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0] if n > 0 else []


def nearest(candidates: list[int], target: int) -> Optional[int]:
    """Closest candidate (ties: the smaller), for 'the nearest legal value' fixes."""
    return min(candidates, key=lambda c: (abs(c - target), c)) if candidates else None


def violation(name: str, message: str, fix: str, severity: str = "error") -> Violation:
    """A Violation from its four fields, positionally (every rule builds one)."""
    return Violation(rule=name, message=message, fix=fix, severity=severity)
