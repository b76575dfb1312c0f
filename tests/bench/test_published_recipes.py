"""Pure parts of bench/published/recipes.py, its candidate batch (bench/published/groups.py), and the runs.py
assumptions they rely on (real runs.csv rows)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from bench.published import groups as pg
from bench.published import recipes as pr
from bench.published import space as ps
from bench.runs import load_all
from constraints.case import Case
from constraints.check import check_case
from constraints.models.load import load_model
from constraints.spec import DataParallelSharding, JobSpec, Placement, Recipe
from hardware.profile import load_profile


@pytest.fixture(scope="module")
def cases():
    return {c.id: c for c in load_all()[0]}


def test_groups_join_releases_of_one_config(cases):
    # MBR-106/151/195/233: Qwen3-235B, 256 x H100, FP8, GBS 8192, one recipe re-measured across releases
    groups = pr.group_cases([cases[i] for i in ("MBR-106", "MBR-151", "MBR-195", "MBR-233", "MBR-265")])
    key = ("Qwen3-235B-A22B", "h100-sxm-80gb", 256, 4096, 8192, "fp8-tensorwise")
    assert [[c.id for c in g] for g in groups[key]] == [["MBR-106", "MBR-151", "MBR-195", "MBR-233"]]
    assert [c.id for g in groups[key[:4] + (2048, key[5])] for c in g] == ["MBR-265"]  # GBS 2048 is its own group


def test_unset_etp_equals_published_etp_equal_to_tp(cases):
    # MBCARD-499 publishes ETP1 at TP1, MBSKILL-535 leaves ETP empty: one recipe. (MBSKILL-535 ran the performance
    # recipe, whose bf16 grads bench/runs.py prices; MBCARD-499 the functional one: align that field to test ETP alone.)
    skill = cases["MBSKILL-535"]
    skill = skill.model_copy(update={"recipe": skill.recipe.model_copy(update={"grad_reduce_in_bf16": False})})
    groups = pr.group_cases([cases["MBCARD-499"], skill])
    assert [[c.id for c in g] for recipes in groups.values() for g in recipes] == [["MBCARD-499", "MBSKILL-535"]]


def test_megatron_bridge_moe_rows_get_etp1_and_are_legal(cases):
    # Megatron-Bridge qwen3_workload_base_configs.py: BASE_QWEN3_235B_A22B_CONFIG sets expert_tensor_parallel_size=1;
    # with Megatron's default ETP=TP=2 the expert grid 2*32*8 = 512 would not divide 256 GPUs.
    c = cases["MBR-106"]
    assert c.recipe.etp == 1 and "etp=1 (Megatron-Bridge preset)" in c.assumed
    rep = check_case(Case(model=c.model, job=c.job, recipe=c.recipe, placement=c.placement), load_profile(c.hardware))
    assert rep.legal and rep.expert_dp == 256 // (32 * 8)


def test_fsdp2_rows_do_not_claim_overlap_param_gather(cases):
    c = cases["AUTOMODEL-450"]  # AutoModel Qwen3-30B-A3B, FSDP2, EP8
    assert c.recipe.dp_sharding == DataParallelSharding.torch_fsdp2 and not c.recipe.overlap_param_gather
    rep = check_case(Case(model=c.model, job=c.job, recipe=c.recipe, placement=c.placement), load_profile(c.hardware))
    assert {v.rule for v in rep.violations} - {"memory_fits"} == {"torch_fsdp2"}  # Megatron [37]: FSDP2 needs EP=1


def test_oom_outcome_reads_did_not_oom_as_ran(cases):
    # MBSKILL-518 notes: "VPP=10 variant: 60.2 GB peak, did not OOM"; MBSKILL-514: "OOM (fragmentation) ..."
    assert (cases["MBSKILL-518"].outcome, cases["MBSKILL-514"].outcome) == ("ran", "oom")


def test_outside_space_names_capped_axes():
    from solver.space import build_space

    m = load_model("Llama-3.1-70B")
    job = JobSpec(seq_length=4096, global_batch_size=64)
    space = build_space(m, job, Placement(hardware="h100-sxm-80gb", num_nodes=4, gpus_per_node=8))
    r = Recipe(tp=1, pp=2, vpp=20, mbs=16, schedule="interleaved")
    out = ps.outside_space(r, space.domains)
    assert [o.split("=")[0] for o in out] == ["vpp", "mbs"]
    assert ps.outside_space(Recipe(tp=4, pp=4, vpp=5, schedule="interleaved"), space.domains) == []


def test_rank_counts_strictly_faster_and_skips_nan():
    assert ps.rank_among(100.0, [99.0, 100.0, 101.0, math.nan, 150.0]) == (2, 4)
    assert ps.rank_among(100.0, []) == (0, 0)


def test_summary_and_table():
    key = ("M", "h100-sxm-80gb", 8, 4096, 64, "bf16")
    base = {"group": key, "ids": ["A-1"], "recipe": "TP1 PP1 MBS1", "violations": [], "peak_gib": 10.0, "usable_gib": 79.6,
            "dominant": "weights", "outcome": ["ran"], "outside": []}
    rows = [dict(base, legal=True, fits=True, rank=3, gain_pct=10.0, proj_tps=1000.0),
            dict(base, ids=["A-2", "A-3"], legal=True, fits=True, rank=1, gain_pct=0.0, proj_tps=1100.0),
            dict(base, ids=["A-4"], legal=False, fits=False, violations=["expert_grid"], group=key[:4] + (128, "bf16")),
            dict(base, ids=["B-1"], legal=False, fits=False, violations=["torch_fsdp2"], source="NVIDIA-NeMo/Automodel docs")]
    rows[-1]["not_megatron"] = bool(pr.not_megatron_notes(rows[-1]))
    s = pr.summarize(rows)
    assert (s["groups"], s["published_recipes"], s["rows"], s["ranked"], s["not_megatron"]) == (2, 4, 5, 2, 1)
    assert s["legal_pct"] == 50.0 and s["legal_megatron_pct"] == pytest.approx(200 / 3)
    assert s["median_rank"] == 2 and s["median_gain_pct"] == 5.0
    lines = pr.format_table(rows).splitlines()
    assert len(lines) == 2 + len(rows) and len({line.count("|") for line in lines}) == 1
    assert "NO: expert_grid" in lines[-2] and lines[-1].endswith("| not a Megatron-LM recipe |")


def test_candidate_tps_is_the_closed_form_projection_of_the_table_recipe():
    """The ranks use the tables' own ranking times: tokens/s/GPU of tables.recipe as project(simulate_pipeline=False)
    prices it (within the ranking time's rounding up to whole microseconds), MoE variants included."""
    from measure.projection.project import project
    from solver.space import build_space
    from solver.tables.build import build_tables

    for name, nodes, pins in (("Llama-3.1-8B", 1, {"tp": [1, 2], "pp": [1, 2], "cp": [1], "mbs": [1, 2]}),
                              ("Mixtral-8x7B-v0.1", 4, {"tp": [1, 2], "pp": [2, 4], "cp": [1], "ep": [2, 8], "etp": [1], "mbs": [1]})):
        m = load_model(name)
        job = JobSpec(seq_length=4096, global_batch_size=32)
        pl = Placement(hardware="h100-sxm-80gb", num_nodes=nodes, gpus_per_node=8)
        prof = load_profile("h100-sxm-80gb")
        tables = build_tables(build_space(m, job, pl, pins=pins), prof)
        fit = np.flatnonzero(tables.cand_peak <= tables.usable_bytes)
        tps = pg.candidate_tps(tables, fit)
        for i in np.linspace(0, len(fit) - 1, 7).astype(int):
            r = tables.recipe(int(tables.cand_act[fit[i]]), int(tables.cand_shard[fit[i]]))
            want = project(m, job, r, pl, prof, simulate_pipeline=False).tokens_per_s_per_gpu
            assert tps[i] == pytest.approx(want, rel=1e-5)


