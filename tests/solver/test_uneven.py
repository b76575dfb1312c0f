"""Uneven first/last pipeline stages (--decoder-first/last-pipeline-num-layers) in the solver: the pairs tried follow
Megatron's rule 11, the tables' bytes and times equal memory_report and project for them, and a model whose layers
do not divide over PP (DeepSeek-V3: 61) gets legal uneven answers at PP 8 that check accepts."""
from __future__ import annotations

import numpy as np
import pytest

from constraints.case import Case
from constraints.check import check_case
from constraints.memory.per_rank import memory_report
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Recipe
from constraints.stages import virtual_stage_layer_counts
from hardware.profile import load_profile
from measure.projection.project import project
from solver.cpsat.solve import solve_cpsat
from solver.space import build_space
from solver.splits import split_choices, uneven_pairs
from solver.tables.build import build_tables


@pytest.mark.parametrize("layers,pp,vpp", [(32, 4, 1), (61, 8, 1), (60, 4, 2), (126, 16, 1), (30, 2, 1), (48, 2, 3)])
def test_uneven_pairs_obey_megatron_rule_11(layers, pp, vpp):
    """Each > 0 and divisible by VPP, the middle splits evenly over PP-2 ranks and VPP, ends no heavier than the middle."""
    pairs = uneven_pairs(layers, pp, vpp)
    assert pairs
    for first, last in pairs:
        assert first > 0 and last > 0 and first % vpp == 0 and last % vpp == 0
        if pp > 2:
            mid, rest = divmod(layers - first - last, pp - 2)
            assert rest == 0 and mid % vpp == 0 and first <= mid and last <= mid and (first, last) != (mid, mid)
        else:
            assert first + last == layers and first != last


def test_split_choices_skip_duplicates_of_even_and_account_for():
    model = load_model("Llama-3.1-405B")  # 126 layers: 128 with account-for splits over 16 as 7 / 8 x 14 / 7
    choices = split_choices(model, 16, 1, [False, True], True)
    counts = [tuple(virtual_stage_layer_counts(model, Recipe(pp=16, **_fields(c)))) for c in choices if c is not False]
    assert True in choices and (7, 7) not in choices  # (7, 7) is account-for's layout under other flags
    assert len(counts) == len(set(counts))


def _fields(split):
    from solver.splits import split_fields
    return split_fields(split)


def test_uneven_rows_bytes_and_times_equal_memory_report_and_project():
    model, hw = load_model("Llama-3.1-8B"), "h100-sxm-80gb"
    job = JobSpec(seq_length=4096, global_batch_size=64)
    pl = Placement(hardware=hw, num_nodes=2, gpus_per_node=8)
    prof = load_profile(hw)
    t = build_tables(build_space(model, job, pl, pins={"pp": [2, 4], "tp": [1, 2], "cp": [1], "mbs": [1, 2],
                                                       "uneven_stages": [True]}), prof)
    assert len(t.cand_act) and all(isinstance(t.struct[t.act_struct[a]][7], tuple) for a in t.cand_act[:200])
    for i in np.linspace(0, len(t.cand_act) - 1, 25).astype(int):
        a, h = int(t.cand_act[i]), int(t.cand_shard[i])
        r = t.recipe(a, h)
        assert r.first_stage_layers and r.last_stage_layers
        rep = memory_report(model, job, r, pl.world_size, prof.hbm_capacity_bytes, prof.calibration.framework_overhead_bytes,
                            prof.calibration.activation_fragmentation_fraction, compute_capability=prof.compute_capability)
        assert rep.peak_bytes == int(t.cand_peak[i])
        if t.cand_peak[i] <= t.usable_bytes:
            want_us = project(model, job, r, pl, prof, simulate_pipeline=False).iteration_time_s * 1e6
            assert abs(want_us - t.cand_time_us[i]) <= 1.0


def test_deepseek_v3_at_pp8_gets_uneven_answers_that_check_accepts():
    model, hw = load_model("DeepSeek-V3"), "h800-sxm-80gb"
    job = JobSpec(seq_length=4096, global_batch_size=1024)
    pl = Placement(hardware=hw, num_nodes=64, gpus_per_node=8)
    prof = load_profile(hw)
    space = build_space(model, job, pl, pins={"pp": [8], "tp": [1, 2], "cp": [1], "ep": [8, 16, 32, 64], "etp": [1],
                                              "mbs": [1], "recompute": ["none", "full:uniform:1"]})
    res = solve_cpsat(build_tables(space, prof), k=3)
    assert res.ranked and res.proven_optimal
    for r in res.ranked:
        assert r.recipe.first_stage_layers or r.recipe.account_for_embedding_in_pipeline_split
        rep = check_case(Case(model=model, job=job, recipe=r.recipe, placement=pl), prof)
        assert rep.legal and rep.fits


def test_uneven_pin_keeps_the_pair_that_equals_account_for():
    """Review finding: under --uneven-stages the pair with account-for's layout was dropped as its duplicate although
    the pin drops account-for itself (Llama-3.1-405B at PP 16: (7, 7))."""
    from constraints.spec import Recompute
    from solver.tables.rules import struct_rows

    model = load_model("Llama-3.1-405B")
    pl, prof = Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8), load_profile("h100-sxm-80gb")
    space = build_space(model, JobSpec(seq_length=4096, global_batch_size=64), pl,
                        pins={"uneven_stages": [True], "pp": [16], "tp": [1], "cp": [1], "mbs": [1], "recompute": ["full:uniform:1"]})
    splits = {row[7] for row, _ in struct_rows(space, prof, Recompute.none()) if row[2] == 1}
    assert (7, 7) in splits and all(isinstance(s, tuple) for s in splits)
