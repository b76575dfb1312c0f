"""Which factor-table rows are legal: the rule functions of constraints/rules/*.py, called on recipes.

Why factor the calls: a rule reads few axes, so judging every full recipe repeats work millions of
times. Rules are split by what they read (the sets below; tests/solver/tables/test_solver_rules_factored.py checks
factorised verdicts against check_rules on every full recipe of a space): structural rules once per (TP,
PP, VPP, CP, EP, ETP, schedule, split, DP sharding), activation rules once per structural row x (SP,
recompute, TP comm overlap), batch rules once per structural row x MBS. Recipes here are built without
pydantic validation per row (every value comes from a validated domain).

Within a group, each rule's verdict is memoised by the values of the solver axes it reads (its declared
`reads`, constraints.rules.registry.rule, mapped to axes by FIELD_AXES; tests/constraints/rules/test_rule_reads_cover_verdicts.py holds
the declarations), so a rule runs once per distinct value of what it reads and a recipe is only built on a
miss: `layers_split` runs once per (PP, VPP, split), not once per row. The structural loop checks each rule
at the loop level where the last axis it reads is bound, so a failing (TP, PP, CP) prunes its whole subtree.
"""
from __future__ import annotations

import itertools
from functools import lru_cache
from operator import itemgetter

from constraints.rules.registry import RULES, RuleInput
from constraints.spec import Recipe
from solver.space import SearchSpace, recipe_fields
from solver.splits import is_uneven, split_choices

BATCH_RULES = {"global_batch_divisible", "interleaved_microbatches"}
ACTIVATION_RULES = {"sequence_parallel_needs_tp", "sequence_parallel_divides_seq", "tp_comm_overlap_needs_sp",
                    "tp_comm_overlap_within_nvlink",
                    "moe_sequence_parallel", "full_recompute_args", "selective_recompute_args", "fp8_delayed_recompute",
                    "distribute_saved_activations", "cpu_offloading", "zero_bubble_no_recompute",
                    "moe_act_needs_grouped_gemm", "ep_comm_overlap"}
_BASE = Recipe()
_BASE_FIELDS = dict(_BASE.__dict__)


@lru_cache(maxsize=None)
def rules_in(group: str) -> tuple:
    """The rule functions of one group: 'structural', 'activation' or 'batch'."""
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
    return unvalidated_recipe({**_BASE_FIELDS, **recipe_fields(tp, pp, vpp, cp, ep, etp, mbs, sp, recompute, schedule,
                                                                dp_sharding, acc, tpo)})


def unvalidated_recipe(fields: dict) -> Recipe:
    """A Recipe holding `fields` (every field, values from validated domains) without pydantic validation: what
    model_copy does, minus its deep-copy bookkeeping (3x faster; the rows number ~1e5)."""
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


# The axes of an assignment, in fast_recipe's argument order ("rc" is an index into Judge.rcs).
AXES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sp", "rc", "sched", "sh", "acc", "tpo")
# Which axes set each Recipe field (solver.space.recipe_fields; "acc" is the split value); every other field
# keeps Recipe()'s default in every solver recipe (tests/solver/tables/test_table_rules_memo.py holds this table).
FIELD_AXES = {"tp": ("tp",), "pp": ("pp",), "vpp": ("vpp",), "cp": ("cp",), "ep": ("ep",), "etp": ("etp",), "mbs": ("mbs",),
              "sequence_parallel": ("sp", "tp"), "recompute": ("rc",), "schedule": ("sched",), "dp_sharding": ("sh",),
              "overlap_param_gather": ("sh",), "account_for_embedding_in_pipeline_split": ("acc",),
              "account_for_loss_in_pipeline_split": ("acc",), "first_stage_layers": ("acc",), "last_stage_layers": ("acc",),
              "pipeline_layout": ("acc",),
              "tp_comm_overlap": ("tpo",)}
# The structural loop binds axes level by level; unbound axes hold placeholders no checked rule reads.
STRUCT_LEVELS = (("tp", "pp", "cp", "mbs", "sp", "rc", "tpo"), ("sched", "vpp", "acc"), ("ep", "etp"), ("sh",))


def axes_read(fn) -> frozenset:
    """The assignment axes a rule's verdict depends on (all of them when it declares no reads)."""
    if getattr(fn, "reads", None) is None:
        return frozenset(AXES)
    return frozenset(a for f in fn.reads for a in FIELD_AXES.get(f, ()))


def _no_axes(vals: tuple) -> tuple:
    """The key of rules that read no assignment axis (a function, not a lambda, so a Judge pickles)."""
    return ()


class _Memo:
    """The error verdict of some rules that read the same axes, cached by those axes' values."""

    __slots__ = ("fns", "axes", "key", "cache")

    def __init__(self, fns: tuple, axes: frozenset) -> None:
        self.fns, self.axes, self.cache = fns, axes, {}
        positions = [i for i, a in enumerate(AXES) if a in axes]
        self.key = itemgetter(*positions) if positions else _no_axes


class Judge:
    """Rule verdicts for one (model, job, world size, profile), memoised per rule by the axes it reads.

    An assignment is a tuple in AXES order; `ok(memos, vals)` is True when no rule of `memos` errs on the
    recipe of `vals`. Recompute choices are keyed by an index (`rc_index`), not hashed per call."""

    def __init__(self, model, job, world_size: int, profile) -> None:
        self.model, self.job, self.world, self.profile = model, job, world_size, profile
        self.rcs: list = []
        self._rc_ids: dict[int, int] = {}
        self._alive: list = []
        self._memos: dict = {}

    def rc_index(self, rc) -> int:
        i = self._rc_ids.get(id(rc))
        if i is None:
            i = next((j for j, r in enumerate(self.rcs) if r == rc), len(self.rcs))
            if i == len(self.rcs):
                self.rcs.append(rc)
            self._rc_ids[id(rc)] = i
            self._alive.append(rc)  # an id is only reused once its object is gone: keep every keyed object
        return i

    def memos(self, group: str, fns: tuple = None) -> list[_Memo]:
        """Memos over a group's rules ('structural', 'activation', 'batch'; or over `fns`, cached by `group`):
        one per axis set, a rule whose axes lie within another set's joining that memo (same misses, fewer
        lookups)."""
        if group not in self._memos:
            by_axes: dict = {}
            for fn in rules_in(group) if fns is None else fns:
                by_axes.setdefault(axes_read(fn), []).append(fn)
            merged: dict = {}
            for axes in sorted(by_axes, key=len, reverse=True):
                home = next((a for a in merged if axes <= a), axes)
                merged.setdefault(home, []).extend(by_axes[axes])
            self._memos[group] = [_Memo(tuple(fns), axes) for axes, fns in merged.items()]
        return self._memos[group]

    def ok(self, memos: list[_Memo], vals: tuple) -> bool:
        for m in memos:
            v = m.cache.get(m.key(vals))
            if v is None:
                v = self._judge(m, vals)
            if not v:
                return False
        return True

    def _judge(self, m: _Memo, vals: tuple) -> bool:
        """A memo miss: the rules run on the assignment's recipe, and the verdict is kept under its key."""
        tp, pp, vpp, cp, ep, etp, mbs, sp, rc, sched, sh, acc, tpo = vals
        r = fast_recipe(tp, pp, vpp, cp, ep, etp, mbs, sp, self.rcs[rc], sched, sh, acc, tpo)
        v = m.cache[m.key(vals)] = not has_error(m.fns, RuleInput(self.model, self.job, r, self.world, self.profile))
        return v


def judge_for(space: SearchSpace, profile) -> Judge:
    """The space's Judge for this profile (kept on the space: verdicts depend on model, job, world size and
    profile only, which a space fixes)."""
    j = space.__dict__.get("_judge")
    if j is None or j.profile is not profile or j.model is not space.model or j.job is not space.job \
            or j.world != space.world_size:
        j = space.__dict__["_judge"] = Judge(space.model, space.job, space.world_size, profile)
    return j


def level_memos(judge: Judge) -> list[list[_Memo]]:
    """Structural memos by the first loop level whose bound axes cover what they read (fixed axes count as
    bound at level 0: MBS 1, SP = TP > 1, the base recompute, no TP comm overlap; a rule reading none of the
    axes is checked there too)."""
    bounds = list(itertools.accumulate((frozenset(level) for level in STRUCT_LEVELS), frozenset.union))
    level_of = {fn: next(i for i, b in enumerate(bounds) if axes_read(fn) <= b) for fn in rules_in("structural")}
    return [judge.memos(f"structural level {i}", tuple(fn for fn in level_of if level_of[fn] == i)) for i in range(len(bounds))]


def struct_rows(space: SearchSpace, profile, base_rc) -> list[tuple[tuple, list[bool]]]:
    """Structural rows (TP, PP, VPP, CP, EP, ETP, schedule, split) that the structural rules accept under at
    least one DP sharding, each with its verdict per sharding (in the domain's order)."""
    d, model, world = space.domains, space.model, space.world_size
    judge = judge_for(space, profile)
    rc = judge.rc_index(base_rc)
    at = level_memos(judge)
    sched0, sh0, etp0 = d["schedule"][0], d["dp_sharding"][0], d["etp"][0]
    rows = []
    splits: dict = {}  # (PP, VPP) -> split values tried (solver/splits.py: even, account-for, uneven first/last)
    uneven = True in d.get("uneven_stages", [False])
    for tp, pp, cp in itertools.product(d["tp"], d["pp"], d["cp"]):
        if world % (tp * pp * cp) or not judge.ok(at[0], (tp, pp, 1, cp, 1, etp0, 1, tp > 1, rc, sched0, sh0, False, False)):
            continue
        for sched, vpp in schedule_vpp_pairs(space, pp):
            if (pp, vpp) not in splits:
                if False not in d.get("uneven_stages", [False]):  # --uneven-stages: only the uneven splits, so none is
                    # dropped as a duplicate of account-for's layout (which the pin excludes)
                    splits[(pp, vpp)] = [s for s in split_choices(model, pp, vpp, [False], True) if is_uneven(s)]
                else:
                    splits[(pp, vpp)] = split_choices(model, pp, vpp, d["acc_split"], uneven)
            for acc in splits[(pp, vpp)]:
                if not judge.ok(at[1], (tp, pp, vpp, cp, 1, etp0, 1, tp > 1, rc, sched, sh0, acc, False)):
                    continue
                for ep, etp in itertools.product(d["ep"], d["etp"]):
                    if not judge.ok(at[2], (tp, pp, vpp, cp, ep, etp, 1, tp > 1, rc, sched, sh0, acc, False)):
                        continue
                    ok = [judge.ok(at[3], (tp, pp, vpp, cp, ep, etp, 1, tp > 1, rc, sched, sh, acc, False)) for sh in d["dp_sharding"]]
                    ok = one_sharding_when_nothing_shards(d["dp_sharding"], ok, world // (tp * pp),
                                                          world // ((etp or 1) * ep * pp) if model.is_moe else 1)
                    if any(ok):
                        rows.append(((tp, pp, vpp, cp, ep, etp, sched, acc), ok))
    return rows


def one_sharding_when_nothing_shards(shardings: list[str], ok: list[bool], dp_cp: int, expert_dp: int) -> list[bool]:
    """With one rank in the data-parallel x context-parallel group and in the expert-DP group, the distributed optimizer
    and Megatron-FSDP shard over a group of one: the run is plain DDP's (same step; FSDP only adds its buffers), so
    `solve` listed the same recipe two or three times at DP 1. Only the distributed optimizer's row is kept (the first
    sharding of the default domain); a domain pinned to one sharding keeps it."""
    if dp_cp != 1 or expert_dp != 1 or "distributed_optimizer" not in shardings:
        return ok
    keep = shardings.index("distributed_optimizer")
    return [v and (i == keep or not ok[keep]) for i, v in enumerate(ok)]


def activation_ok(space: SearchSpace, profile, row: tuple, sp: bool, rc, sharding: str, tpo: bool = False) -> bool:
    tp, pp, vpp, cp, ep, etp, sched, acc = row
    judge = judge_for(space, profile)
    return judge.ok(judge.memos("activation"), (tp, pp, vpp, cp, ep, etp, 1, sp, judge.rc_index(rc), sched, sharding, acc, tpo))


def batch_ok(space: SearchSpace, profile, row: tuple, mbs: int, rc, sharding: str) -> bool:
    tp, pp, vpp, cp, ep, etp, sched, acc = row
    judge = judge_for(space, profile)
    return judge.ok(judge.memos("batch"), (tp, pp, vpp, cp, ep, etp, mbs, tp > 1, judge.rc_index(rc), sched, sharding, acc, False))
