"""MoE communication variants (dispatcher, EP comm overlap) chosen per candidate: legal by check_rules, fastest
among the legal ones under the projection, narrowed by pins, and flex only where its backends run."""
from __future__ import annotations

import numpy as np

from constraints.models.load import load_model
from constraints.rules.registry import RuleInput, check_rules
from constraints.spec import JobSpec, MoeDispatcher, Placement
from hardware.profile import load_profile
from measure.projection.project import project
from solver.space import build_space
from solver.tables.build import build_tables

PINS = {"tp": [1, 2], "pp": [1, 2, 4], "cp": [1], "ep": [1, 2, 8], "etp": [1], "mbs": [1, 2],
        "recompute": ["none", "selective:core_attn+moe_act", "full:uniform:1"], "dp_sharding": ["distributed_optimizer"]}
JOB = JobSpec(seq_length=4096, global_batch_size=32)


def _tables(hw="h100-sxm-80gb", nodes=2, pins=None):
    model, pl = load_model("Mixtral-8x7B-v0.1"), Placement(hardware=hw, num_nodes=nodes, gpus_per_node=8)
    prof = load_profile(hw)
    return model, pl, prof, build_tables(build_space(model, JOB, pl, pins={**PINS, **(pins or {})}), prof)


def _errors(model, pl, prof, r):
    return [v.rule for v in check_rules(RuleInput(model, JOB, r, pl.world_size, prof)) if v.severity == "error"]


def test_each_candidate_carries_its_fastest_legal_variant():
    model, pl, prof, t = _tables()
    assert set(t.variants) == {(d, o) for d in ("alltoall", "flex") for o in (False, True)}
    fit = np.flatnonzero(t.cand_peak <= t.usable_bytes)
    rng = np.random.default_rng(5)
    chosen = set()
    for i in rng.choice(fit, size=min(40, len(fit)), replace=False):
        a, h = int(t.cand_act[i]), int(t.cand_shard[i])
        r = t.recipe(a, h)
        assert not _errors(model, pl, prof, r), r
        chosen.add(t.variant(a, h))
        own = project(model, JOB, r, pl, prof, simulate_pipeline=False).iteration_time_s
        assert abs(own * 1e6 - t.cand_time_us[i]) <= 1.0
        for d, o in t.variants:  # no legal variant of the same row is faster
            alt = r.model_copy(update={"moe_dispatcher": MoeDispatcher(d), "overlap_moe_expert_parallel_comm": o})
            if not _errors(model, pl, prof, alt):
                assert project(model, JOB, alt, pl, prof, simulate_pipeline=False).iteration_time_s >= own - 1e-12
    assert len(chosen) >= 2  # the choice is not constant over this space


def test_variant_legality_equals_check_rules_on_every_row():
    """A row is a candidate iff some variant is legal, and the variants the tables call legal are exactly those
    check_rules accepts (EP overlap needs EP > 1, a virtual pipeline at PP > 1, no full / 'moe' recompute)."""
    model, pl, prof, t = _tables(pins={"moe_dispatcher": ["alltoall"]})
    from solver.tables.build import row_recipe, row_variants
    from solver.tables.time import row_columns

    split_keys = sorted({(r[1], r[2], r[7]) for r in t.struct}, key=str)  # any distinct id per (PP, VPP, split) will do
    variants, legal = row_variants(t.space, prof, row_recipe(t.space, t.struct, t.act_rows, t.rc_choices, t.shardings, t.static_ok),
                                row_columns(t.space, t.struct, t.act_rows, split_keys))
    seen = set()
    for a in range(0, len(t.act_rows), max(len(t.act_rows) // 300, 1)):
        h = int(np.argmax(t.static_ok[t.act_struct[a]]))
        base = t.recipe(a, h)
        for j, (d, o) in enumerate(variants):
            r = base.model_copy(update={"moe_dispatcher": MoeDispatcher(d), "overlap_moe_expert_parallel_comm": o})
            assert legal[a, j] == (not _errors(model, pl, prof, r)), r
            seen.add(bool(legal[a, j]))
    assert seen == {True, False}


def test_pins_narrow_the_variants_and_flex_needs_hopper():
    _, _, _, t = _tables(pins={"moe_dispatcher": ["alltoall"], "ep_comm_overlap": [False]})
    assert t.variants == [("alltoall", False)]
    fit = np.flatnonzero(t.cand_peak <= t.usable_bytes)[:50]
    assert all(t.recipe(int(t.cand_act[i]), int(t.cand_shard[i])).moe_dispatcher == MoeDispatcher.alltoall for i in fit)
    _, _, _, amd = _tables(hw="mi300x")
    assert {d for d, _ in amd.variants} == {"alltoall"}  # DeepEP / HybridEP backends are CUDA Hopper+ only


def test_allgather_pin_is_honoured_and_dense_models_ignore_variant_pins():
    model, pl, prof, t = _tables(pins={"moe_dispatcher": ["allgather"]})
    assert t.variants == [("allgather", False), ("allgather", True)]
    fit = np.flatnonzero(t.cand_peak <= t.usable_bytes)
    assert len(fit)
    for i in fit[:: max(len(fit) // 20, 1)]:  # EP overlap needs an alltoall/flex dispatcher: never chosen here
        r = t.recipe(int(t.cand_act[i]), int(t.cand_shard[i]))
        assert r.moe_dispatcher == MoeDispatcher.allgather and not r.overlap_moe_expert_parallel_comm
    dense = load_model("Llama-3.1-8B")
    pl1 = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    dt = build_tables(build_space(dense, JOB, pl1, pins={"tp": [1, 2], "pp": [1, 2], "cp": [1], "mbs": [1],
                                                         "moe_dispatcher": ["flex"]}), prof)
    assert dt.variants == [("alltoall", False)] and len(dt.cand_act)


def test_a_single_non_default_variant_is_priced_as_itself():
    """Review finding: with one variant left (pins, or flex dropped on MI300X) it was priced as alltoall/no-overlap."""
    for hw, pins in (("h100-sxm-80gb", {"moe_dispatcher": ["alltoall"], "ep_comm_overlap": [True]}),
                     ("mi300x", {"ep_comm_overlap": [True]})):
        model, pl, prof, t = _tables(hw=hw, pins=pins)
        assert len(t.variants) == 1 and t.variants[0][1] is True
        for i in np.flatnonzero(t.cand_peak <= t.usable_bytes)[:6]:
            r = t.recipe(int(t.cand_act[i]), int(t.cand_shard[i]))
            assert r.overlap_moe_expert_parallel_comm
            own_us = project(model, JOB, r, pl, prof, simulate_pipeline=False).iteration_time_s * 1e6
            assert abs(own_us - t.cand_time_us[i]) <= 1.0


def test_explanations_name_variant_pins_and_hints_cannot_narrow_variants():
    from solver.explain import explain_infeasible
    from solver.proposer.hints import validate_one

    model, pl, prof = load_model("Mixtral-8x7B-v0.1"), Placement(hardware="mi300x", num_nodes=1, gpus_per_node=8), load_profile("mi300x")
    bounds = {"pp": (1, 2), "tp": (1, 2), "cp": (1, 1)}
    out = explain_infeasible(model, JOB, pl, prof, {"moe_dispatcher": ["flex"]}, bounds, 0.0, remedies=False)
    assert "--moe-dispatcher" in out["conflict"]  # flex does not run on MI300X
    pl16 = Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8)
    out = explain_infeasible(model, JOB, pl16, load_profile("h100-sxm-80gb"), {"ep": [1], "ep_comm_overlap": [True]}, bounds, 0.0,
                             remedies=False)
    assert {"--ep", "--ep-comm-overlap"} <= set(out["conflict"])  # EP overlap needs EP > 1
    hint, why = validate_one({"action": "pin", "axes": {"moe_dispatcher": "flex"}, "rationale": "x"}, {"moe_dispatcher": ["flex"]}, "t")
    assert hint is None and "per candidate" in why
