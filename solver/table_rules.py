"""Which factor-table rows are legal: the rule functions of constraints/rules*.py, called on recipes.

Why factor the calls: a rule reads few axes, so judging every full recipe repeats work millions of
times. Rules are split by what they read (the sets below; tests/test_solver_rules_factored.py checks
factorised verdicts against check_rules on every full recipe of a space): structural rules once per (TP,
PP, VPP, CP, EP, ETP, schedule, split, DP sharding), activation rules once per structural row x (SP,
recompute, TP comm overlap), batch rules once per structural row x MBS. Recipes here are built without
pydantic validation per row (every value comes from a validated domain), which is what makes this fast.
"""
from __future__ import annotations

import itertools
from functools import lru_cache

from constraints.rules import RULES, RuleInput
from constraints.spec import Recipe
from solver.space import SearchSpace, recipe_fields

BATCH_RULES = {"global_batch_divisible", "interleaved_microbatches"}
ACTIVATION_RULES = {"sequence_parallel_needs_tp", "sequence_parallel_divides_seq", "tp_comm_overlap_needs_sp",
                    "moe_sequence_parallel", "full_recompute_args", "selective_recompute_args", "fp8_delayed_recompute",
                    "distribute_saved_activations", "cpu_offloading", "zero_bubble_no_recompute",
                    "moe_act_needs_grouped_gemm", "ep_comm_overlap"}
_BASE = Recipe()
_BASE_FIELDS = dict(_BASE.__dict__)


@lru_cache(maxsize=None)
def rules_in(group: str) -> tuple:
    """The rule functions of one group: 'structural', 'activation' or 'batch'."""
    import constraints.rules_features  # noqa: F401  (registers the feature rules)

    names = {"activation": ACTIVATION_RULES, "batch": BATCH_RULES}.get(group)
    if names is None:
        return tuple(fn for fn in RULES if fn.__name__ not in BATCH_RULES | ACTIVATION_RULES)
    return tuple(fn for fn in RULES if fn.__name__ in names)


def has_error(fns, x: RuleInput) -> bool:
    for fn in fns:
        v = fn(x)
        if v is not None and v.severity == "error":
            return True
    return False


def fast_recipe(tp, pp, vpp, cp, ep, etp, mbs, sp, recompute, schedule, dp_sharding, acc, tpo=False) -> Recipe:
    """solver.space.make_recipe without per-row validation (the same recipe_fields)."""
    fields = {**_BASE_FIELDS, **recipe_fields(tp, pp, vpp, cp, ep, etp, mbs, sp, recompute, schedule, dp_sharding, acc, tpo)}
    # what pydantic's model_copy does, minus its deep-copy bookkeeping (3x faster; the rows number ~1e5)
    r = object.__new__(Recipe)
    object.__setattr__(r, "__dict__", fields)
    object.__setattr__(r, "__pydantic_fields_set__", set())
    object.__setattr__(r, "__pydantic_extra__", None)
    object.__setattr__(r, "__pydantic_private__", None)
    return r


def schedule_vpp_pairs(space: SearchSpace, pp: int) -> list[tuple[str, int]]:
    """(schedule, VPP) pairs tried at this PP: 1f1b / zb-h1 with VPP 1, interleaved with VPP >= 2, zbv with
    VPP 2 (the rule `schedule_matches_vpp` rejects every other pairing, so they are not enumerated). At PP 1
    every schedule is the same single-stage loop: only the first of the domain is kept (no duplicates)."""
    d = space.domains
    out = []
    for sched in d["schedule"]:
        if sched in ("1f1b", "zb-h1"):
            vpps = [1]
        elif sched == "interleaved":
            vpps = [v for v in d["vpp"] if v > 1]
        else:
            vpps = [2]
        out += [(sched, v) for v in vpps if v in d["vpp"]]
    if pp == 1:
        out = [p for p in out if p[1] == 1][:1]
    return out


def struct_rows(space: SearchSpace, profile, base_rc) -> list[tuple[tuple, list[bool]]]:
    """Structural rows (TP, PP, VPP, CP, EP, ETP, schedule, split) that the structural rules accept under at
    least one DP sharding, each with its verdict per sharding (in the domain's order)."""
    d, model, world = space.domains, space.model, space.world_size
    fns = rules_in("structural")
    rows = []
    for tp, pp, cp in itertools.product(d["tp"], d["pp"], d["cp"]):
        if world % (tp * pp * cp):
            continue
        for (sched, vpp), acc in itertools.product(schedule_vpp_pairs(space, pp), d["acc_split"]):
            # account-for-embedding/loss only where the layers do not split evenly (prunes duplicates)
            if acc and model.num_layers % (pp * vpp) == 0:
                continue
            for ep, etp in itertools.product(d["ep"], d["etp"]):
                ok = [not has_error(fns, RuleInput(model, space.job, fast_recipe(tp, pp, vpp, cp, ep, etp, 1, tp > 1, base_rc,
                                                                                 sched, sh, acc), world, profile))
                      for sh in d["dp_sharding"]]
                if any(ok):
                    rows.append(((tp, pp, vpp, cp, ep, etp, sched, acc), ok))
    return rows


def activation_ok(space: SearchSpace, profile, row: tuple, sp: bool, rc, sharding: str, tpo: bool = False) -> bool:
    tp, pp, vpp, cp, ep, etp, sched, acc = row
    r = fast_recipe(tp, pp, vpp, cp, ep, etp, 1, sp, rc, sched, sharding, acc, tpo)
    return not has_error(rules_in("activation"), RuleInput(space.model, space.job, r, space.world_size, profile))


def batch_ok(space: SearchSpace, profile, row: tuple, mbs: int, rc, sharding: str) -> bool:
    tp, pp, vpp, cp, ep, etp, sched, acc = row
    r = fast_recipe(tp, pp, vpp, cp, ep, etp, mbs, tp > 1, rc, sched, sharding, acc)
    return not has_error(rules_in("batch"), RuleInput(space.model, space.job, r, space.world_size, profile))
