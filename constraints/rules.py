"""Legality rules: small pure functions, each mirroring one Megatron-LM check (named in its docstring).

Why pure functions over a RuleInput: `check` runs all of them on one recipe, and the solver runs the
same functions to build its legal tables, so the two can never disagree. A rule returns None when it
holds, else a Violation naming the rule, the offending values and the nearest fix. This module holds the
rule machinery and the world / data-parallel / batch rules; the pipeline-split rules are in
rules_pipeline.py, the attention / TP / SP / CP rules in rules_attention.py, feature rules (MoE, recompute,
optimizer, precision) in rules_features.py. Sources: docs/facts/megatron-rules.md (numbers in brackets).

Importing any of the first three registers them all in one order (rules -> rules_pipeline -> rules_attention,
each importing the next at its end), so check_rules lists violations in the same order whichever comes first;
`from constraints.rules import layers_split` keeps working (module __getattr__).
"""
from __future__ import annotations

import math
import sys
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


Rule = Callable[[RuleInput], Optional[Violation]]
RULES: list[Rule] = []


# Recipe fields that decide the pipeline split (constraints.stages.virtual_stage_layer_counts reads them all)
UNEVEN_SPLIT_FIELDS = ("first_stage_layers last_stage_layers account_for_embedding_in_pipeline_split "
                       "account_for_loss_in_pipeline_split")
SPLIT_FIELDS = "pp vpp pipeline_layout " + UNEVEN_SPLIT_FIELDS


def rule(fn: Optional[Rule] = None, *, reads: Optional[str] = None):
    """Register a rule: `@rule` or `@rule(reads="tp pp cp")`.

    `reads` names every Recipe field the rule may look at, on any path (properties spelled as their fields:
    etp_effective = tp etp, sp_active = sequence_parallel tp, dp() = tp pp cp, expert_dp() = tp etp ep pp);
    model, job, world size, profile, flags and env are free to read. Why: the solver memoises a rule's
    verdict by the values of these fields alone (solver/table_rules.py), so a field missing here makes the
    solver wrong; tests/test_rule_reads_cover_verdicts.py varies every other field and holds the verdict.
    None (undeclared) means every field."""
    def register(f: Rule) -> Rule:
        f.reads = None if reads is None else frozenset(reads.split())
        RULES.append(f)
        return f

    return register if fn is None else register(fn)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0] if n > 0 else []


def nearest(candidates: list[int], target: int) -> Optional[int]:
    """Closest candidate (ties: the smaller), for 'the nearest legal value' fixes."""
    return min(candidates, key=lambda c: (abs(c - target), c)) if candidates else None


def _v(name: str, message: str, fix: str, severity: str = "error") -> Violation:
    return Violation(rule=name, message=message, fix=fix, severity=severity)


# ---------------------------------------------------------------- world / data parallel
@rule(reads="tp pp cp")
def world_divisible(x: RuleInput) -> Optional[Violation]:
    """[1] world_size % (TP*PP*CP) == 0 (arguments.py validate_args; parallel_state.initialize_model_parallel)."""
    r = x.recipe
    mp = r.tp * r.pp * r.cp
    if x.world_size % mp == 0:
        return None
    ok = [d for d in divisors(x.world_size) if d % (r.tp * r.cp) == 0]
    pp = nearest([d // (r.tp * r.cp) for d in ok], r.pp)
    return _v("world_divisible", f"world size {x.world_size} is not divisible by TP*PP*CP = {r.tp}*{r.pp}*{r.cp} = {mp}",
              f"use --pipeline-model-parallel-size {pp}" if pp else "choose TP*CP dividing the world size")


@rule(reads="tp etp ep pp")
def expert_grid(x: RuleInput) -> Optional[Violation]:
    """[2] world_size % (ETP*EP*PP) == 0; expert-DP = world/(ETP*EP*PP) (parallel_state expert grid,
    --expert-tensor-parallel-size, --expert-model-parallel-size)."""
    r = x.recipe
    grid = r.etp_effective * r.ep * r.pp
    if x.world_size % grid == 0 or (r.ep == 1 and r.etp_effective == r.tp):
        return None  # without EP or a separate expert TP the grid is TP*PP, which world_divisible already judges
    per_pp = x.world_size // r.pp if x.world_size % r.pp == 0 else x.world_size
    ep = nearest([d for d in divisors(per_pp // r.etp_effective if per_pp % r.etp_effective == 0 else 1)], r.ep)
    if r.ep == 1 or x.world_size % r.pp:  # EP cannot fix it: PP (or ETP) does not divide the world
        per_etp = x.world_size // r.etp_effective if x.world_size % r.etp_effective == 0 else 1
        fix = f"use --pipeline-model-parallel-size {nearest(divisors(per_etp), r.pp)}"
    else:
        fix = f"use --expert-model-parallel-size {ep}"
    return _v("expert_grid", f"world size {x.world_size} is not divisible by ETP*EP*PP = {r.etp_effective}*{r.ep}*{r.pp} = {grid}", fix)


@rule(reads="tp pp cp ep etp")
def expert_dp_matches_dp(x: RuleInput) -> Optional[Violation]:
    """[2] With a rank order whose PP is not outermost (--use-tp-pp-dp-mapping) and PP>1, the dense and
    expert grids only share PP groups if expert-DP*EP*ETP lines up with DP*CP*TP, i.e. expert-DP == DP."""
    r = x.recipe
    mapped = x.flags.get("--use-tp-pp-dp-mapping") or x.flags.get("use_tp_pp_dp_mapping")  # a script's flag, or a YAML key
    if not mapped or r.pp == 1 or r.ep * r.etp_effective == 1:
        return None
    if r.expert_dp(x.world_size) == r.dp(x.world_size):
        return None
    return _v("expert_dp_matches_dp", f"expert-DP {r.expert_dp(x.world_size)} != DP {r.dp(x.world_size)} under --use-tp-pp-dp-mapping with PP>1",
              "drop --use-tp-pp-dp-mapping (default order tp-cp-ep-dp-pp) or make EP*ETP equal TP*CP")


@rule(reads="num_distributed_optimizer_instances tp pp cp etp ep")
def distributed_optimizer_instances(x: RuleInput) -> Optional[Violation]:
    """[3] (DP*CP) and expert-DP % --num-distributed-optimizer-instances == 0 (Megatron-LM
    megatron/core/parallel_state.py:initialize_model_parallel asserts both, when the groups are built)."""
    r = x.recipe
    n = r.num_distributed_optimizer_instances
    grid = r.etp_effective * r.ep * r.pp
    dpcp, edp = r.dp(x.world_size) * r.cp, (r.expert_dp(x.world_size) if x.world_size % grid == 0 else 0)  # 0: expert_grid reports
    if n == 1 or (dpcp and dpcp % n == 0 and (not edp or edp % n == 0)):
        return None
    both = math.gcd(dpcp, edp) if edp else dpcp
    return _v("distributed_optimizer_instances", f"DP*CP = {dpcp} or expert-DP = {edp} is not divisible by --num-distributed-optimizer-instances {n}",
              f"use --num-distributed-optimizer-instances {nearest(divisors(max(both, 1)), n)}")


# ---------------------------------------------------------------- batch
@rule(reads="tp pp cp mbs")
def global_batch_divisible(x: RuleInput) -> Optional[Violation]:
    """[5] --global-batch-size % (--micro-batch-size * DP) == 0 (num_microbatches_calculator)."""
    r = x.recipe
    if x.world_size % (r.tp * r.pp * r.cp):
        return None  # world_divisible reports it
    dp = r.dp(x.world_size)
    gbs = x.job.global_batch_size
    if gbs % (r.mbs * dp) == 0:
        return None
    mbs = nearest([d for d in divisors(gbs // dp)] if gbs % dp == 0 else [], r.mbs)
    fix = (f"use --micro-batch-size {mbs}" if mbs else
           f"use --global-batch-size {max(r.mbs * dp, gbs // (r.mbs * dp) * r.mbs * dp)}")
    return _v("global_batch_divisible", f"global batch {gbs} is not divisible by MBS*DP = {r.mbs}*{dp} = {r.mbs * dp}", fix)


def check_rules(x: RuleInput) -> list[Violation]:
    """Every rule's verdict on one input (feature rules included), in registration order."""
    import constraints.rules_features  # noqa: F401  (registers the feature rules)

    return [v for v in (fn(x) for fn in RULES) if v is not None]


def __getattr__(name: str):
    """Rules that moved to rules_pipeline / rules_attention keep their old import path."""
    for module in (sys.modules.get("constraints.rules_pipeline"), sys.modules.get("constraints.rules_attention")):
        if module is not None and not name.startswith("__") and name in vars(module):
            return vars(module)[name]
    raise AttributeError(f"module 'constraints.rules' has no attribute {name!r}")


import constraints.rules_pipeline  # noqa: E402, F401  (registers the pipeline rules, which import rules_attention)
