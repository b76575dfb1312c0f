"""solve on hybrid Mamba-2 / attention models (Nemotron-H, Nemotron 3 Nano): the factor tables price the four layer
kinds (M, *, -, E) exactly as `check` does, virtual stages come only as `|` segments of the pattern, and every
answer `solve` gives is one `check` judges legal on the same cluster with the same peak bytes and the same projected
step. CP-SAT and the exhaustive scan return the same top-K."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constraints.case import Case
from constraints.check import check_case
from constraints.memory.per_rank import memory_report
from constraints.models.load import load_model
from constraints.models.mamba import layout_as_segments
from constraints.read import LoadedCase
from constraints.spec import JobSpec, ModelSpec, Placement
from hardware.profile import load_profile
from measure.projection.project import project
from shardplan.verdict import check_and_project
from solver.cpsat.solve import solve_cpsat
from solver.exhaustive import solve_exhaustive
from solver.space import build_space
from solver.splits import PipeSegments, split_choices
from solver.tables.build import build_tables
from solver.workflow import solve_case

NH8, NH47, NH56, NANO = "Nemotron-H-8B-Base-8K", "Nemotron-H-47B-Base-8K", "Nemotron-H-56B-Base-8K", "Nemotron-3-Nano-30B-A3B"
SUPER = "Nemotron-3-Super-120B-A12B"  # hybrid with latent MoE
TOP_K = 5
US_PER_S = 1_000_000
# (model, hardware, nodes, seq, GBS): the 8B case and the larger models on more GPUs
SCENARIOS = [(NH8, "h100-sxm-80gb", 1, 8192, 256), (NH47, "h100-sxm-80gb", 4, 8192, 768),
             (NH56, "h100-sxm-80gb", 8, 8192, 768), (NANO, "h100-sxm-80gb", 2, 8192, 768), (SUPER, "b200", 8, 8192, 512)]


@functools.lru_cache(maxsize=None)
def _solved(name: str, hw: str, nodes: int, seq: int, gbs: int):
    model, job = load_model(name), JobSpec(seq_length=seq, global_batch_size=gbs)
    placement = Placement(hardware=hw, num_nodes=nodes, gpus_per_node=8)
    result, tables = solve_case(model, job, placement, load_profile(hw), {}, {}, TOP_K, 0.0, "cpsat", 60.0)
    return result, tables, model, job, placement


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_every_answer_is_what_check_says_on_the_same_cluster(scenario):
    """The top-K, proven optimal, each legal and fitting under `check` with the peak bytes and the projected
    (simulated) step solve reports, and the closed-form ranking time rounded up to whole microseconds."""
    result, _, model, job, placement = _solved(*scenario)
    assert len(result.ranked) == TOP_K and result.proven_optimal and result.rejected == []
    for r in result.ranked:
        case = Case(model=model, job=job, recipe=r.recipe, placement=placement)
        got = check_and_project(LoadedCase(case=case))["json"]
        assert got["legal"] and got["fits"], r.recipe
        assert got["memory"]["peak_bytes"] == r.check.memory.peak_bytes
        assert round(got["projection"]["iteration_time_s"] * US_PER_S) == r.time_us
        closed = project(model, job, r.recipe, placement, load_profile(placement.hardware), simulate_pipeline=False)
        assert r.rank_time_us == math.ceil(closed.iteration_time_s * US_PER_S)
    times = [r.rank_time_us for r in result.ranked]
    assert times == sorted(times)


def _tables(name: str, nodes: int, pins: dict, seq: int = 4096, gbs: int = 64, hw: str = "h100-sxm-80gb"):
    space = build_space(load_model(name), JobSpec(seq_length=seq, global_batch_size=gbs),
                        Placement(hardware=hw, num_nodes=nodes, gpus_per_node=8), pins=pins)
    return build_tables(space, load_profile(hw))


@pytest.mark.parametrize("name,nodes,pins", [
    (NH8, 1, {"pp": [1, 2, 4], "vpp": [1, 2], "mbs": [1, 2]}),
    (NANO, 2, {"pp": [1, 2], "vpp": [1, 2], "mbs": [1], "tp": [1, 2], "ep": [4, 8]}),
], ids=["Nemotron-H-8B", "Nemotron-3-Nano"])
def test_cpsat_and_exhaustive_return_the_same_top_k(name, nodes, pins):
    t = _tables(name, nodes, pins)
    ex = solve_exhaustive(t, k=TOP_K)
    cp = solve_cpsat(t, k=TOP_K, cpsat_enumeration=True)
    assert len(ex.ranked) == TOP_K and cp.proven_optimal
    assert [r.key for r in ex.ranked] == [r.key for r in cp.ranked]
    assert [r.rank_time_us for r in ex.ranked] == [r.rank_time_us for r in cp.ranked]


@pytest.mark.parametrize("name,nodes", [(NH8, 1), (NH56, 2), (NANO, 2), (SUPER, 4)])
def test_table_peaks_and_ranking_times_equal_memory_report_and_the_closed_form(name, nodes):
    """Every kind of candidate, fitting or not: even and uneven `|` segments at VPP 1 and above, full recompute groups
    mixing Mamba, attention and MLP layers."""
    t = _tables(name, nodes, {"pp": [1, 2, 4], "vpp": [1, 2, 3], "mbs": [1], "cp": [1, 2]})
    prof = t.profile
    assert any(isinstance(s[7], PipeSegments) and s[2] > 1 for s in t.struct)
    picks = np.linspace(0, len(t.cand_act) - 1, 40).astype(int)
    seg_rows = [i for i in range(len(t.cand_act)) if isinstance(t.struct[t.act_struct[t.cand_act[i]]][7], PipeSegments)]
    for i in list(picks) + seg_rows[:: max(len(seg_rows) // 10, 1)]:
        r = t.recipe(int(t.cand_act[i]), int(t.cand_shard[i]))
        rep = memory_report(t.space.model, t.space.job, r, t.space.world_size, prof.hbm_capacity_bytes,
                            prof.calibration.framework_overhead_bytes, prof.calibration.activation_fragmentation_fraction,
                            compute_capability=prof.compute_capability)
        assert rep.peak_bytes == int(t.cand_peak[i]), r
        if t.cand_peak[i] <= t.usable_bytes:
            p = project(t.space.model, t.space.job, r, t.space.placement, prof, simulate_pipeline=False)
            assert abs(int(t.cand_time_us[i]) - math.ceil(p.iteration_time_s * US_PER_S)) <= 1, r
            assert check_case(Case(model=t.space.model, job=t.space.job, recipe=r, placement=t.space.placement), prof).ok


def test_pipeline_stages_of_a_hybrid_model_are_pipe_segments_and_account_for_is_never_tried():
    """Megatron refuses the VPP flags and --account-for-* with --hybrid-layer-pattern and deprecates a pattern without
    pipes at PP > 1 (select_pipeline_segment): every split of more than one stage is written as `|` segments (a
    pipeline_layout standing for them) holding the even or first / last counts the transformer splits would."""
    m = load_model(NH56)  # 118 layers: even only at PP x VPP = 2; uneven ends elsewhere
    assert split_choices(m, 1, 1, [False, True], True) == [False]
    four = split_choices(m, 4, 1, [False, True], True)  # the even split does not exist; no account-for
    assert [(s.first, s.last) for s in four] == [(30, 28), (29, 29), (28, 30)]
    assert [layout_as_segments(s.layout) for s in four] == [[30, 30, 30, 28], [29, 30, 30, 29], [28, 30, 30, 30]]
    segs = split_choices(m, 2, 2, [False, True], True)
    assert segs and all(isinstance(s, PipeSegments) for s in segs)
    for s in segs:
        counts = layout_as_segments(s.layout)
        assert len(counts) == 4 and sum(counts) == 118
        assert s.first == counts[0] + counts[2] and s.last == counts[1] + counts[3]
    assert split_choices(load_model("Llama-3.1-8B"), 2, 2, [False, True], True)[0] is False  # transformers unchanged


def test_pipe_segment_answers_render_as_pipes():
    from templates.recipe_args import recipe_to_megatron_args

    t = _tables(NH8, 1, {"pp": [2], "vpp": [2], "mbs": [1], "schedule": ["interleaved"]})
    ex = solve_exhaustive(t, k=1)
    r = ex.ranked[0].recipe
    assert r.vpp == 2 and r.pipeline_layout
    argv = recipe_to_megatron_args(t.space.model, t.space.job, r)
    assert argv[argv.index("--hybrid-layer-pattern") + 1].count("|") == 3 and "--num-layers" not in argv


@st.composite
def hybrid_problems(draw):
    """Small random hybrid models: a pattern over M, *, - (and E with experts), Mamba sizes Megatron accepts, an MTP
    depth now and then, on one or two nodes; and the PP values to search."""
    heads = draw(st.sampled_from([8, 16]))
    h = heads * 128
    moe = draw(st.booleans())
    symbols = "M*-E" if moe else "M*-"
    pattern = draw(st.text(alphabet=symbols, min_size=4, max_size=10).filter(lambda p: "M" in p))
    mtp = draw(st.sampled_from([None, "*-", "M"]))
    fields = dict(name="rand-hybrid", num_layers=len(pattern), hidden_size=h, ffn_hidden_size=4 * h, num_attention_heads=heads,
                  num_query_groups=8, kv_channels=128, vocab_size=32000, max_position_embeddings=8192,
                  activation="squared_relu", normalization="RMSNorm", hybrid_layer_pattern=pattern,
                  mamba_num_heads=2 * h // 64, mamba_head_dim=64, mamba_state_dim=draw(st.sampled_from([64, 128])),
                  mamba_num_groups=draw(st.sampled_from([4, 8])), mtp_hybrid_pattern=mtp, mtp_num_layers=1 if mtp else 0)
    if "E" in pattern:
        fields.update(num_experts=draw(st.sampled_from([4, 8])), moe_router_topk=2, moe_ffn_hidden_size=h,
                      layer_is_moe=tuple(ch == "E" for ch in pattern))
    job = JobSpec(seq_length=draw(st.sampled_from([2048, 4096])), global_batch_size=draw(st.sampled_from([16, 32])))
    pl = Placement(hardware=draw(st.sampled_from(["h100-sxm-80gb", "mi300x"])), num_nodes=draw(st.sampled_from([1, 2])),
                   gpus_per_node=8)
    return ModelSpec(**fields), job, pl, draw(st.sampled_from([[1, 2, 4], [2], [2, 4]]))


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(hybrid_problems())
def test_random_hybrid_spaces_pruned_cpsat_and_exhaustive_agree_and_check_confirms(problem):
    """On random hybrid problems: the pruned CP-SAT top-K equals the exhaustive one (recipes and ranking times), and
    every answer is legal under check with the table's exact peak and the closed-form ranking time."""
    model, job, pl, pp = problem  # PP pinned above 1 at times: every split is then '|' segments
    prof = load_profile(pl.hardware)
    pins = {"pp": pp, "vpp": [1, 2], "mbs": [1, 2], "cp": [1, 2], "recompute": ["none", "selective:core_attn",
                                                                                      "full:uniform:1", "full:block:1"]}
    ex = solve_exhaustive(build_tables(build_space(model, job, pl, pins=pins), prof), k=3)
    cp = solve_cpsat(build_tables(build_space(model, job, pl, pins=pins), prof, prune_k=3), k=3)
    assert len(ex.ranked) == 3 and cp.proven_optimal
    assert [(r.rank_time_us, r.recipe) for r in cp.ranked] == [(r.rank_time_us, r.recipe) for r in ex.ranked]
    for r in cp.ranked:
        assert check_case(Case(model=model, job=job, recipe=r.recipe, placement=pl), prof).ok
        rep = memory_report(model, job, r.recipe, pl.world_size, prof.hbm_capacity_bytes,
                            prof.calibration.framework_overhead_bytes, prof.calibration.activation_fragmentation_fraction,
                            compute_capability=prof.compute_capability)
        assert rep.peak_bytes == r.check.memory.peak_bytes
        closed = project(model, job, r.recipe, pl, prof, simulate_pipeline=False)
        assert r.rank_time_us == math.ceil(closed.iteration_time_s * US_PER_S)
