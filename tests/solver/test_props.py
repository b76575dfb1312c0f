"""Property, explanation and CLI tests for solve (small spaces, few examples)."""
from __future__ import annotations

import json

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constraints.case import Case
from constraints.check import check_case
from constraints.spec import JobSpec, ModelSpec, Placement
from hardware.profile import load_profile
from solver.cpsat.model import axis_value
from solver.cpsat.solve import solve_cpsat
from solver.explain import explain_infeasible
from solver.space import build_space
from solver.tables.build import build_tables

SMALL = {"vpp": [1, 2], "mbs": [1, 2], "cp": [1, 2], "recompute": ["none", "selective:core_attn", "full:uniform:1"]}


@st.composite
def problems(draw):
    heads = draw(st.sampled_from([8, 16, 32]))
    h = heads * 128
    model = ModelSpec(name="rand", num_layers=draw(st.sampled_from([4, 6, 8, 12])), hidden_size=h, ffn_hidden_size=4 * h,
                      num_attention_heads=heads, num_query_groups=draw(st.sampled_from([heads, 8])), kv_channels=128,
                      vocab_size=32000, max_position_embeddings=8192)
    job = JobSpec(seq_length=draw(st.sampled_from([1024, 2048, 4096])), global_batch_size=draw(st.sampled_from([8, 16, 32])))
    pl = Placement(hardware=draw(st.sampled_from(["h100-sxm-80gb", "mi300x"])), num_nodes=1, gpus_per_node=draw(st.sampled_from([4, 8])))
    return model, job, pl


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_answers_pass_check_and_pinning_optimum_keeps_it(problem):
    model, job, pl = problem
    prof = load_profile(pl.hardware)
    t = build_tables(build_space(model, job, pl, pins=SMALL), prof)
    res = solve_cpsat(t, k=3)
    for r in res.ranked:
        assert check_case(Case(model=model, job=job, recipe=r.recipe, placement=pl), prof).ok
    if res.ranked:
        top = res.ranked[0]
        pins = {ax: [axis_value(t, top.act, top.shard, ax)] for ax in ("tp", "pp", "cp", "mbs", "schedule", "dp_sharding")}
        again = solve_cpsat(build_tables(build_space(model, job, pl, pins={**SMALL, **pins}), prof), k=1)
        assert again.ranked[0].recipe == top.recipe and again.ranked[0].time_us == top.time_us


def test_explanation_names_conflicting_pins():
    from constraints.models.load import load_model

    # 8B params x 18 B (bf16 weight, fp32 grad, Adam state) = 144 GB > 80 GB unless sharded or split
    model = load_model("Llama-3.1-8B")
    job = JobSpec(seq_length=4096, global_batch_size=16)
    pl = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    pins = {"tp": [1], "pp": [1], "dp_sharding": ["none"], "schedule": ["1f1b"], "mbs": [1], "vpp": [1]}
    out = explain_infeasible(model, job, pl, load_profile(pl.hardware), pins, {}, 0.0, remedies=False)
    assert {"memory_fits", "--tp", "--pp", "--dp-sharding"} <= set(out["conflict"])
    assert "--schedule" not in out["conflict"] and "--mbs" not in out["conflict"]


def test_cli_solve_json():
    from shardplan.cli.main import cli

    res = CliRunner().invoke(cli, ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1",
                                   "--seq-length", "4096", "--global-batch-size", "16", "--top", "3", "--vpp", "1..2",
                                   "--mbs", "1..2", "--cp", "1..2", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert len(data["recipes"]) == 3 and data["proven_optimal"] is True
    r = data["recipes"][0]
    assert {"tp", "pp", "vpp", "cp", "ep", "etp", "dp", "mbs", "sequence_parallel", "recompute", "distributed_optimizer",
            "schedule"} <= set(r["parallel"])
    assert r["memory"]["peak_bytes"] <= r["memory"]["usable_bytes"] and r["projection"]["iteration_time_s"] > 0
    assert "--tensor-model-parallel-size" in r["megatron_args"]
    times = [x["ranking_time_us"] for x in data["recipes"]]
    assert times == sorted(times)


@st.composite
def moe_problems(draw):
    heads = draw(st.sampled_from([8, 16]))
    h = heads * 128
    layers = draw(st.sampled_from([5, 6, 7, 8, 10]))  # odd counts: only uneven / account-for splits work at PP > 1
    first_dense = draw(st.sampled_from([0, 1]))
    model = ModelSpec(name="rand-moe", num_layers=layers, hidden_size=h, ffn_hidden_size=4 * h, num_attention_heads=heads,
                      num_query_groups=8, kv_channels=128, vocab_size=32000, max_position_embeddings=8192,
                      num_experts=draw(st.sampled_from([4, 8])), moe_router_topk=2, moe_ffn_hidden_size=2 * h,
                      layer_is_moe=tuple(i >= first_dense for i in range(layers)))
    job = JobSpec(seq_length=2048, global_batch_size=draw(st.sampled_from([16, 32])))
    pl = Placement(hardware=draw(st.sampled_from(["h100-sxm-80gb", "mi300x"])), num_nodes=draw(st.sampled_from([1, 2])), gpus_per_node=8)
    return model, job, pl


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moe_problems())
def test_moe_answers_pass_check_and_pinning_every_axis_of_the_optimum_keeps_it(problem):
    """MoE spaces with uneven splits and per-candidate dispatcher / EP-overlap variants: answers pass check, and
    pinning every axis (the variants and the split included) to the optimum's values gives the optimum back."""
    model, job, pl = problem
    prof = load_profile(pl.hardware)
    small = {**SMALL, "tp": [1, 2], "pp": [1, 2, 4], "etp": [1], "recompute": ["none", "full:uniform:1"]}
    res = solve_cpsat(build_tables(build_space(model, job, pl, pins=small), prof), k=3)
    for r in res.ranked:
        assert check_case(Case(model=model, job=job, recipe=r.recipe, placement=pl), prof).ok
    if res.ranked:
        top = res.ranked[0].recipe
        pins = {"tp": [top.tp], "pp": [top.pp], "vpp": [top.vpp], "cp": [top.cp], "ep": [top.ep], "mbs": [top.mbs],
                "schedule": [top.schedule.value], "dp_sharding": [top.dp_sharding.value], "sp": [top.sequence_parallel],
                "tp_comm_overlap": [top.tp_comm_overlap], "acc_split": [top.account_for_embedding_in_pipeline_split],
                "uneven_stages": [top.first_stage_layers is not None], "moe_dispatcher": [top.moe_dispatcher.value],
                "ep_comm_overlap": [top.overlap_moe_expert_parallel_comm]}
        again = solve_cpsat(build_tables(build_space(model, job, pl, pins={**small, **pins}), prof), k=1)
        assert again.ranked[0].recipe == top and again.ranked[0].time_us == res.ranked[0].time_us


def test_table_core_equals_cpsat_core():
    """The numpy explanation core (used above CPSAT_EXPLAIN_MAX_CANDIDATES) names what CP-SAT's assumption core names."""
    from constraints.models.load import load_model
    from solver.cpsat.model import build_model
    from solver.explain import minimal_core, minimal_core_tables

    model = load_model("Llama-3.1-8B")
    job = JobSpec(seq_length=4096, global_batch_size=16)
    pl = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    for pins in ({"tp": [1], "pp": [1], "dp_sharding": ["none"], "mbs": [1], "vpp": [1]}, {"tp": [1], "pp": [1], "cp": [1]},
                 {"tp": [8], "mbs": [1]}):
        space = build_space(model, job, pl)
        for axis, values in pins.items():
            space.domains[axis] = sorted(set(space.domains[axis]) | set(values), key=str)
        t = build_tables(space, load_profile(pl.hardware))
        assert set(minimal_core_tables(t, pins)) == set(minimal_core(build_model(t, pins)))


def test_empty_space_names_the_recipe_free_rule_that_rejects_everything():
    from constraints.models.load import load_model
    from solver.explain import recipe_free_blockers

    pl = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    gpt3 = load_model("GPT-3-175B")  # learned position table of 2048
    out = explain_infeasible(gpt3, JobSpec(seq_length=4096, global_batch_size=16), pl, load_profile(pl.hardware), {}, {}, 0.0,
                             remedies=False)
    assert len(out["conflict"]) == 1 and "position_embeddings_cover_seq" in out["conflict"][0]
    a100 = Placement(hardware="a100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    fp8 = JobSpec(seq_length=4096, global_batch_size=16, precision="fp8-tensorwise")
    assert any("precision_supported" in c for c in recipe_free_blockers(load_model("Llama-3.1-8B"), fp8, a100, load_profile(a100.hardware)))
    assert recipe_free_blockers(load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=16), pl,
                                load_profile(pl.hardware)) == []
