"""Solver: exact table memory equals memory_report, CP-SAT equals exhaustive, answers pass check."""
from __future__ import annotations

import numpy as np
import pytest

from constraints.case import Case
from constraints.check import check_case
from constraints.memory.per_rank import memory_report
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.cpsat.solve import fitting_index, solve_cpsat
from solver.exhaustive import fitting_candidates, solve_exhaustive
from solver.space import build_space
from solver.tables.build import build_tables

SMALL = {"vpp": [1, 2], "mbs": [1, 2], "cp": [1, 2]}


def _tables(model="Llama-3.1-8B", nodes=1, seq=4096, gbs=16, hw="h100-sxm-80gb", pins=None, margin=0.0):
    m = load_model(model)
    job = JobSpec(seq_length=seq, global_batch_size=gbs)
    pl = Placement(hardware=hw, num_nodes=nodes, gpus_per_node=8)
    space = build_space(m, job, pl, pins={**SMALL, **(pins or {})})
    return build_tables(space, load_profile(hw), margin)


@pytest.mark.parametrize("model", ["Llama-3.1-8B", "Qwen3-30B-A3B", "Moonlight-16B-A3B"])
def test_table_peak_equals_memory_report(model):
    t = _tables(model, pins={"pp": [1, 2, 4]})
    a, s = fitting_candidates(t)
    assert len(a) > 0
    peaks = t.peak_bytes(a, s)
    prof = t.profile
    for j in np.linspace(0, len(a) - 1, 25).astype(int):
        r = t.recipe(int(a[j]), int(s[j]))
        rep = memory_report(t.space.model, t.space.job, r, 8, prof.hbm_capacity_bytes, prof.calibration.framework_overhead_bytes,
                            prof.calibration.activation_fragmentation_fraction, compute_capability=prof.compute_capability)
        assert rep.peak_bytes == int(peaks[j])


@pytest.mark.parametrize("model", ["DeepSeek-V3", "Mixtral-8x7B-v0.1"])
def test_candidate_peaks_equal_memory_report_fitting_or_not(model):
    """Every candidate's peak (not only fitting ones): MTP, first-k-dense and uneven splits included."""
    t = _tables(model, pins={"pp": [1, 2, 4, 8], "vpp": [1, 2, 3]})
    prof = t.profile
    for i in np.linspace(0, len(t.cand_act) - 1, 30).astype(int):
        r = t.recipe(int(t.cand_act[i]), int(t.cand_shard[i]))
        rep = memory_report(t.space.model, t.space.job, r, 8, prof.hbm_capacity_bytes, prof.calibration.framework_overhead_bytes,
                            prof.calibration.activation_fragmentation_fraction, compute_capability=prof.compute_capability)
        assert rep.peak_bytes == int(t.cand_peak[i])


def test_cpsat_and_exhaustive_agree_and_verify():
    t = _tables(pins={"pp": [1, 2], "recompute": ["none", "selective:core_attn", "full:uniform:1"]})
    ex = solve_exhaustive(t, k=5)
    cp = solve_cpsat(t, k=5, cpsat_enumeration=True)
    fast = solve_cpsat(t, k=5)
    assert [r.key for r in ex.ranked] == [r.key for r in cp.ranked] == [r.key for r in fast.ranked]
    assert len(ex.ranked) == 5 and cp.proven_optimal
    for r in cp.ranked:
        case = Case(model=t.space.model, job=t.space.job, recipe=r.recipe, placement=t.space.placement)
        assert check_case(case, t.profile).ok


def test_ranking_time_is_the_closed_form_projection():
    """The table's ranking time is project(simulate_pipeline=False), rounded up to whole microseconds."""
    import math

    from measure.projection.project import project

    t = _tables(pins={"pp": [1, 2, 4]})
    idx = fitting_index(t)
    for j in np.linspace(0, len(idx) - 1, 12).astype(int):
        i = idx[j]
        r = t.recipe(int(t.cand_act[i]), int(t.cand_shard[i]))
        p = project(t.space.model, t.space.job, r, t.space.placement, t.profile, simulate_pipeline=False)
        assert abs(int(t.cand_time_us[i]) - math.ceil(p.iteration_time_s * 1e6)) <= 1


def test_margin_tightens_memory():
    loose = _tables(pins={"pp": [1, 2]})
    tight = _tables(pins={"pp": [1, 2]}, margin=0.5)
    assert len(fitting_candidates(tight)[0]) < len(fitting_candidates(loose)[0])


def test_minimise_path_for_large_regions_agrees_with_exhaustive(monkeypatch):
    """Regions above MAX_CPSAT_ENUMERATION are proven by minimisation instead of listing: same answer."""
    import solver.cpsat.solve as cs

    t = _tables(pins={"pp": [1, 2], "recompute": ["none", "selective:core_attn", "full:uniform:1"]})
    listed = solve_cpsat(t, k=5)
    monkeypatch.setattr(cs, "MAX_CPSAT_ENUMERATION", 0)
    minimised = solve_cpsat(t, k=5)
    ex = solve_exhaustive(t, k=5)
    assert [r.key for r in listed.ranked] == [r.key for r in minimised.ranked] == [r.key for r in ex.ranked]
    assert listed.proven_optimal and minimised.proven_optimal and listed.bound == minimised.bound == ex.bound
