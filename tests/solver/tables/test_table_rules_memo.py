"""The solver's memoised rule verdicts (solver/tables/rules.py Judge) equal the plain rule calls.

Two facts make the memo exact: FIELD_AXES says which assignment axes set each Recipe field (checked here
against solver.space.recipe_fields by moving one axis at a time), and each rule's `reads` covers what it
looks at (tests/constraints/rules/test_rule_reads_cover_verdicts.py). This also checks the whole: random assignments, judged in
random order through one Judge, against has_error on the freshly built recipe.
"""
from __future__ import annotations

import random

import pytest

from constraints.models.load import load_model
from constraints.rules.registry import RuleInput, check_rules
from constraints.spec import JobSpec, Placement, Recipe
from hardware.profile import load_profile
from solver.space import build_space, make_recipe, recompute_choices
from solver.tables.rules import AXES, FIELD_AXES, Judge, fast_recipe, has_error, level_memos, rules_in, struct_rows

MODEL = load_model("Mixtral-8x7B-v0.1")
POOLS = {"tp": [1, 2, 4, 8], "pp": [1, 2, 4], "vpp": [1, 2, 3], "cp": [1, 2], "ep": [1, 2, 8], "etp": [None, 1, 2],
         "mbs": [1, 2, 4], "sp": [False, True], "rc": recompute_choices(MODEL), "sched": ["1f1b", "interleaved", "zb-h1", "zbv"],
         "sh": ["none", "distributed_optimizer", "megatron_fsdp", "torch_fsdp2"], "acc": [False, True], "tpo": [False, True]}


def _fields(vals: dict) -> dict:
    return dict(fast_recipe(*(vals[a] for a in AXES)).__dict__)


def test_field_axes_name_every_field_an_axis_moves():
    rng = random.Random(0)
    default = dict(Recipe().__dict__)
    for _ in range(200):
        vals = {a: rng.choice(p) for a, p in POOLS.items()}
        base = _fields(vals)
        for f, v in base.items():
            if f not in FIELD_AXES:
                assert v == default[f], f  # a field no axis sets keeps Recipe()'s default
        for axis, pool in POOLS.items():
            moved = _fields({**vals, axis: rng.choice(pool)})
            changed = {f for f in base if base[f] != moved[f]}
            assert all(axis in FIELD_AXES[f] for f in changed), (axis, changed)


@pytest.mark.parametrize("group", ["structural", "activation", "batch"])
def test_judge_agrees_with_plain_rule_calls(group):
    rng = random.Random(group)
    job = JobSpec(seq_length=4096, global_batch_size=32)
    profile = load_profile("h100-sxm-80gb")
    judge = Judge(MODEL, job, 16, profile)
    memos = judge.memos(group)
    verdicts = set()
    for _ in range(3000):
        vals = {a: rng.choice(p) for a, p in POOLS.items()}
        recipe = fast_recipe(*(vals[a] for a in AXES))
        want = not has_error(rules_in(group), RuleInput(MODEL, job, recipe, 16, profile))
        key = tuple(judge.rc_index(vals[a]) if a == "rc" else vals[a] for a in AXES)
        assert judge.ok(memos, key) == want, vals
        verdicts.add(want)
    assert verdicts == {True, False}
    assert sum(len(m.cache) for m in memos) < 3000 * len(memos)  # the memo really shares verdicts


def test_every_structural_rule_is_checked_at_exactly_one_loop_level():
    judge = Judge(MODEL, JobSpec(seq_length=4096, global_batch_size=32), 16, None)
    placed = [fn for level in level_memos(judge) for m in level for fn in m.fns]
    assert sorted(f.__name__ for f in placed) == sorted(f.__name__ for f in rules_in("structural"))


@pytest.mark.parametrize("model, hw, precision, seq, rule", [
    ("GPT-3-175B", "h100-sxm-80gb", "bf16", 4096, "position_embeddings_cover_seq"),  # reads no recipe field
    ("Llama-3.1-8B", "a100-sxm-80gb", "fp8-tensorwise", 4096, "precision_supported"),
])
def test_rules_reading_no_axis_still_reject_the_space(model, hw, precision, seq, rule):
    m, job = load_model(model), JobSpec(seq_length=seq, global_batch_size=64, precision=precision)
    pl = Placement(hardware=hw, num_nodes=1, gpus_per_node=8)
    profile = load_profile(hw)
    r = make_recipe(8, 1, 1, 1, 1, None, 1, True, recompute_choices(m)[0], "1f1b", "distributed_optimizer", False)
    assert rule in {v.rule for v in check_rules(RuleInput(m, job, r, 8, profile))}
    assert struct_rows(build_space(m, job, pl, pins={"tp": [8], "pp": [1], "cp": [1]}), profile, recompute_choices(m)[0]) == []
