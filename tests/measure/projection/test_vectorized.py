"""measure.projection.vectorized prices a batch exactly as measure.projection.project.project(simulate_pipeline=False) does, recipe
by recipe (closed-form schedule; the simulator-vs-closed-form tolerance is tests/measure/pipeline/test_pipeline_sim.py's)."""
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from constraints.models.load import load_model
from constraints.rules.registry import RuleInput, check_rules
from constraints.spec import (
    DataParallelSharding,
    JobSpec,
    MoeDispatcher,
    PipelineSchedule,
    Placement,
    Recipe,
    Recompute,
    RecomputeGranularity,
    RecomputeMethod,
    RecomputeModule,
)
from hardware.profile import load_profile
from measure.comm import collectives as col
from measure.comm.collectives_np import all_reduce_np, one_pass_np, span_row
from measure.comm.topology import group_span
from measure.pipeline.closed_form import staged_closed_form_np
from measure.pipeline.simulator import closed_form_s
from measure.projection.project import project
from measure.projection.recipe_batch import DISPATCHERS
from measure.projection.vectorized import SCHEDULES, SHARDINGS, Evaluator, RecipeBatch

RECOMPUTES = [Recompute.none(), Recompute.selective(RecomputeModule.core_attn),
              Recompute.selective(RecomputeModule.core_attn, RecomputeModule.mlp),
              Recompute.selective(RecomputeModule.core_attn, RecomputeModule.moe_act),
              Recompute.selective(RecomputeModule.core_attn, RecomputeModule.mla_up_proj),
              Recompute.full(RecomputeMethod.uniform, 1), Recompute.full(RecomputeMethod.block, 2)]


def _legal_recipes(model, job, world, profile, n, seed, base=Recipe()):
    """n random recipes that pass every legality rule (errors only), over all batch axes."""
    rng = random.Random(seed)
    out = []
    for _ in range(20000):
        tp, pp, cp = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4])
        if world % (tp * pp * cp):
            continue
        vpp = rng.choice([1, 1, 2, 4])
        sched = rng.choice(list(PipelineSchedule))
        acc = rng.random() < 0.3
        r = base.model_copy(update={
            "tp": tp, "pp": pp, "cp": cp, "vpp": vpp, "schedule": sched, "mbs": rng.choice([1, 2, 4]),
            "ep": rng.choice([1, 2, 4, 8]) if model.is_moe else 1, "etp": rng.choice([None, 1, 2]) if model.is_moe else None,
            "sequence_parallel": tp > 1 and rng.random() < 0.7, "recompute": rng.choice(RECOMPUTES),
            "dp_sharding": rng.choice(list(DataParallelSharding)),
            "account_for_embedding_in_pipeline_split": acc, "account_for_loss_in_pipeline_split": acc})
        r = Recipe.model_validate(r.model_dump())
        if any(v.severity == "error" for v in check_rules(RuleInput(model, job, r, world, profile))):
            continue
        out.append(r)
        if len(out) == n:
            return out
    raise AssertionError(f"only {len(out)} legal recipes found")


def _assert_matches(model, job, place, profile, recipes, cost_table=None):
    got = Evaluator(model, job, place, profile, cost_table).evaluate(RecipeBatch.from_recipes(recipes))
    for i, r in enumerate(recipes):
        want = project(model, job, r, place, profile, cost_table=cost_table, simulate_pipeline=False)
        for k in ("iteration_time_s", "tokens_per_s_per_gpu", "mfu", "model_tflops_per_gpu", "bubble_fraction"):
            assert got[k][i] == pytest.approx(getattr(want, k), rel=1e-9, abs=1e-12), (k, r)


CASES = [("Llama-3.1-8B", "h100-sxm-80gb", 4, 8), ("Mixtral-8x7B-v0.1", "mi355x", 16, 8),
         ("Moonlight-16B-A3B", "gb200-nvl72", 32, 4)]


@pytest.mark.parametrize("name,hw,nodes,gpn", CASES)
def test_batch_equals_scalar_projection(name, hw, nodes, gpn):
    model, profile = load_model(name), load_profile(hw)
    job = JobSpec(seq_length=4096, global_batch_size=512)
    place = Placement(hardware=hw, num_nodes=nodes, gpus_per_node=gpn)
    _assert_matches(model, job, place, profile, _legal_recipes(model, job, place.world_size, profile, 60, seed=len(name)))


def test_other_flags_and_a_cost_table_follow_the_base_recipe():
    """Overlap flags flipped, fp8, and measured entries that replace some kernels' roofline times."""

    class Table:
        def fingerprints(self):
            return ["dev"]

        def lookup(self, fingerprint, op_key):
            return 1e-3 if op_key.startswith("fwd/gemm") or op_key.startswith("optimizer/") else None

    model, profile = load_model("Mixtral-8x7B-v0.1"), load_profile("h100-sxm-80gb")
    job = JobSpec(seq_length=2048, global_batch_size=256, precision="fp8-tensorwise")
    place = Placement(hardware="h100-sxm-80gb", num_nodes=8, gpus_per_node=8)
    base = Recipe(overlap_grad_reduce=False, overlap_param_gather=False, overlap_p2p_comm=False,
                  overlap_moe_expert_parallel_comm=True)
    recipes = _legal_recipes(model, job, 64, profile, 30, seed=7, base=base)
    _assert_matches(model, job, place, profile, recipes, cost_table=Table())


def test_collective_arrays_equal_scalar_collectives():
    profile = load_profile("mi355x")  # 64-GPU pods: spans cross pods
    place = Placement(hardware="mi355x", num_nodes=32, gpus_per_node=8)
    rows, sizes, want_ar, want_rs = [], [], [], []
    for size, stride in [(1, 1), (2, 1), (8, 1), (4, 4), (16, 8), (32, 2), (64, 4), (256, 1)]:
        span = group_span(size, stride, profile, place)
        for n in (0.0, 1e3, 3.7e8):
            rows.append(span_row(size, stride, profile, place))
            sizes.append(n)
            want_ar.append(col.all_reduce_s(n, span, profile))
            want_rs.append(col.reduce_scatter_s(n, span, profile))
    s = np.array(rows).T
    np.testing.assert_allclose(all_reduce_np(np.array(sizes), s), want_ar, rtol=1e-12)
    np.testing.assert_allclose(one_pass_np(np.array(sizes), s), want_rs, rtol=1e-12)


def test_closed_form_arrays_equal_scalar_closed_form():
    # the array form the Evaluator runs, on p equal stages (one rank profile shared by p ranks), against the
    # published equal-stage formulas
    cases = [(s, f, b, w, p, v, m) for s in PipelineSchedule for (f, b, w) in [(1.0, 2.0, 1.0), (1.0, 1.0, 3.0)]
             for p, v, m in [(1, 1, 4), (4, 1, 8), (4, 2, 16), (8, 4, 3)]]
    col = lambda i: np.array([c[i] for c in cases])  # noqa: E731
    got = staged_closed_form_np(np.array([SCHEDULES.index(c[0]) for c in cases]), col(1)[:, None], col(2)[:, None],
                                col(3)[:, None], col(4)[:, None].astype(float), col(5), col(6))
    np.testing.assert_allclose(got, [closed_form_s(*c) for c in cases], rtol=1e-15)


def test_tables_fill_once_and_recipe_round_trips():
    model, profile = load_model("Llama-3.1-8B"), load_profile("h100-sxm-80gb")
    job = JobSpec(seq_length=4096, global_batch_size=64)
    place = Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8)
    recipes = _legal_recipes(model, job, 16, profile, 20, seed=3)
    batch = RecipeBatch.from_recipes(recipes)
    assert [batch.recipe(i) for i in range(len(batch))] == recipes
    ev = Evaluator(model, job, place, profile)
    first = ev.evaluate(batch)["iteration_time_s"]
    rows = len(ev.layers.rows), len(ev.stages.rows)
    again = ev.evaluate(batch)["iteration_time_s"]
    assert (len(ev.layers.rows), len(ev.stages.rows)) == rows
    np.testing.assert_array_equal(first, again)


def test_impossible_split_is_nan_and_mixed_bases_are_refused():
    model, profile = load_model("Llama-3.1-8B"), load_profile("h100-sxm-80gb")  # 32 layers
    job = JobSpec(seq_length=4096, global_batch_size=64)
    place = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    out = Evaluator(model, job, place, profile).evaluate(RecipeBatch.from_recipes([Recipe(pp=4), Recipe(pp=8, vpp=8)]))
    assert np.isfinite(out["iteration_time_s"][0]) and np.isnan(out["iteration_time_s"][1])
    with pytest.raises(ValueError, match="overlap_grad_reduce"):
        RecipeBatch.from_recipes([Recipe(), Recipe(overlap_grad_reduce=False)])


def test_tp_comm_overlap_axis_equals_scalar_per_row():
    """--tp-comm-overlap is a batch axis (the solver searches it): each row is priced as project() prices
    that recipe, and overlap lowers the time only where TP > 1, and not where the pass waits on the host anyway (the TP
    traffic was filling that wait: layer_cost.comm_filled_host_wait_s; Mixtral at TP 4, EP 1 here)."""
    model, profile = load_model("Mixtral-8x7B-v0.1"), load_profile("h100-sxm-80gb")
    job = JobSpec(seq_length=4096, global_batch_size=64)
    place = Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8)
    rc = Recompute(granularity=RecomputeGranularity.selective, modules=[RecomputeModule.moe_act])
    recipes = [Recipe(tp=tp, ep=ep, pp=2, sequence_parallel=tp > 1, tp_comm_overlap=o, recompute=r)
               for tp in (1, 2, 4) for ep in (1, 4) for o in (False, True) for r in (Recompute(), rc)]
    _assert_matches(model, job, place, profile, recipes)
    t = Evaluator(model, job, place, profile).evaluate(RecipeBatch.from_recipes(recipes))["iteration_time_s"]
    gains = []
    for i in range(0, len(recipes), 4):
        off, on = t[i], t[i + 2]
        assert (on <= off) if recipes[i].tp > 1 else (on == off)
        gains.append(off - on)
    assert sum(g > 0 for g in gains) >= 3  # TP 2 (EP 1 and 4) and TP 4 EP 4


def test_dispatcher_ep_overlap_and_uneven_stage_axes_equal_scalar_per_row():
    """The MoE dispatcher, --overlap-moe-expert-parallel-comm and --decoder-first/last-pipeline-num-layers are
    batch axes (the solver searches them): each row is priced as project() prices that recipe."""
    model, profile = load_model("Mixtral-8x7B-v0.1"), load_profile("h100-sxm-80gb")  # 32 layers, 8 experts
    job = JobSpec(seq_length=4096, global_batch_size=64)
    place = Placement(hardware="h100-sxm-80gb", num_nodes=4, gpus_per_node=8)
    recipes = [Recipe(tp=2, ep=ep, pp=4, vpp=vpp, sequence_parallel=True, moe_dispatcher=d, overlap_moe_expert_parallel_comm=o,
                      first_stage_layers=f, last_stage_layers=f, schedule=PipelineSchedule.interleaved if vpp > 1 else PipelineSchedule.one_f_one_b)
               for ep in (2, 8) for d in MoeDispatcher for o in (False, True) for vpp, f in ((1, None), (1, 7), (1, 6), (2, 6))]
    _assert_matches(model, job, place, profile, recipes)
    t = Evaluator(model, job, place, profile).evaluate(RecipeBatch.from_recipes(recipes))["iteration_time_s"]
    by = {(r.ep, r.moe_dispatcher, r.overlap_moe_expert_parallel_comm, r.vpp, r.first_stage_layers): x for r, x in zip(recipes, t)}
    # cross-node EP (8 ranks over 4 nodes of 8 at TP 2): hiding EP traffic helps; uneven splits change the time
    assert by[(8, MoeDispatcher.alltoall, True, 1, None)] < by[(8, MoeDispatcher.alltoall, False, 1, None)]
    assert by[(8, MoeDispatcher.alltoall, False, 1, 7)] != by[(8, MoeDispatcher.alltoall, False, 1, None)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1e-2, allow_nan=False), min_size=7, max_size=7),
       st.lists(st.floats(0.0, 5e-2, allow_nan=False), min_size=3, max_size=3),
       st.lists(st.floats(0.0, 1e-3, allow_nan=False), min_size=3, max_size=3),
       st.sampled_from(list(MoeDispatcher)), st.booleans(), st.booleans(), st.sampled_from(list(RecomputeModule)),
       st.floats(0.0, 1.0), st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=3, max_size=3),
       st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2, max_size=2))
def test_numpy_finish_equals_finish_parts(base, ep_raw, mods, dispatcher, tpo, epo, module, paired, expert_share, host_share):
    """The vectorised finish (recompute modules, TP/EP overlap, dispatcher, communication filling the host-issue wait)
    is layer_cost.finish_parts on arrays, including EP traffic far larger than the compute that overlap can hide it behind."""
    from measure.projection.layer_columns import KIND_COLS, RECOMPUTE_MODULE_COLS, finish_columns, raw_cols
    from measure.projection.layer_cost import LayerParts, finish_parts, recomputed_modules

    parts = LayerParts(fwd_s=base[0], dgrad_s=base[1], wgrad_s=base[2], tp_raw_s=base[3], cp_s=base[4],
                       fwd_by_module_s={"core_attn": mods[0], "moe_act": mods[1], "mlp": mods[2], "qkv": base[5]},
                       ep_raw_by_dispatcher_s=dict(zip(MoeDispatcher, ep_raw)), dense_params=7, expert_params=11,
                       alltoall_sort_fwd_s=base[6], alltoall_sort_bwd_s=2 * base[6], expert_fwd_s=expert_share[0] * base[0],
                       expert_dgrad_s=expert_share[1] * base[1], expert_wgrad_s=expert_share[2] * base[2],
                       host_wait_fwd_s=host_share[0] * base[0], host_wait_bwd_s=host_share[1] * base[1])
    cal = load_profile("h100-sxm-80gb").calibration
    recomputed = recomputed_modules([module, RecomputeModule.core_attn])
    want = finish_parts(parts, recomputed, tpo, dispatcher, epo, cal, paired)
    mask = np.array([[m in recomputed for m in RECOMPUTE_MODULE_COLS]], dtype=float)
    got = finish_columns(np.array([raw_cols(parts)]), mask, np.array([tpo]), np.array([DISPATCHERS.index(dispatcher)]),
                         np.array([epo]), cal, np.array([paired]))
    expect = {"F": want.fwd + want.tp_fwd + want.ep_fwd + want.cp_fwd, "B": want.dgrad + want.tp_bwd + want.ep_bwd + want.cp_bwd,
              "W": want.wgrad, "R": want.fwd + want.tp_fwd + want.ep_fwd, "S": want.recompute_selective,
              "P": want.dense_params, "E": want.expert_params}
    for c in KIND_COLS:
        assert got[c][0, 0] == pytest.approx(expect[c], rel=1e-12, abs=1e-15), c


def test_evaluate_shardings_equals_evaluate_per_sharding():
    """Pricing every DP sharding from one pass of the pipeline arithmetic gives what evaluate gives per sharding."""
    model, profile = load_model("Mixtral-8x7B-v0.1"), load_profile("h100-sxm-80gb")
    job = JobSpec(seq_length=4096, global_batch_size=64)
    place = Placement(hardware="h100-sxm-80gb", num_nodes=4, gpus_per_node=8)
    recipes = _legal_recipes(model, job, place.world_size, profile, 40, seed=11)
    batch = RecipeBatch.from_recipes(recipes)
    codes = [SHARDINGS.index(s) for s in (DataParallelSharding.none, DataParallelSharding.distributed_optimizer,
                                          DataParallelSharding.megatron_fsdp)]
    ev = Evaluator(model, job, place, profile)
    got = ev.evaluate_shardings(batch, codes)
    for k, code in enumerate(codes):
        batch.dp_sharding = np.full(len(batch), code, dtype=np.int64)
        want = Evaluator(model, job, place, profile).evaluate(batch)["iteration_time_s"]
        np.testing.assert_allclose(got[:, k], want, rtol=1e-12)


def test_ep_overlap_pairs_only_passes_with_a_partner():
    """Review finding: with one micro-batch nothing overlaps (Megatron pairs micro-batch i's forward with i-1's
    backward); at PP 1 M-1 of M passes pair; with PP > 1 the interleaved warm-up forwards stay alone."""
    from measure.projection.layer_cost import ep_paired_fraction

    assert ep_paired_fraction(1, 1, 1) == 0.0 and ep_paired_fraction(1, 1, 4) == 0.75
    assert ep_paired_fraction(4, 2, 1) < ep_paired_fraction(4, 2, 8) < ep_paired_fraction(4, 2, 64) < 1.0
    np.testing.assert_allclose(ep_paired_fraction(np.array([1, 4]), np.array([1, 2]), np.array([4, 8])),
                               [ep_paired_fraction(1, 1, 4), ep_paired_fraction(4, 2, 8)])
    model, prof = load_model("Moonlight-16B-A3B"), load_profile("h100-sxm-80gb")
    pl = Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8)
    job = JobSpec(seq_length=4096, global_batch_size=16)  # DP 16, MBS 1: M = 1
    base = Recipe(tp=1, pp=1, ep=8, mbs=1)
    on = project(model, job, base.model_copy(update={"overlap_moe_expert_parallel_comm": True}), pl, prof)
    off = project(model, job, base, pl, prof)
    assert on.breakdown.ep_comm == pytest.approx(off.breakdown.ep_comm)
    _assert_matches(model, job, pl, prof, [base.model_copy(update={"overlap_moe_expert_parallel_comm": True}),
                                           Recipe(tp=1, pp=2, ep=8, first_stage_layers=13, last_stage_layers=14,
                                                  overlap_moe_expert_parallel_comm=True)])


@pytest.mark.parametrize("name,hw", [("gpt-oss-20b", "h100-sxm-80gb"), ("Nemotron-H-8B-Base-8K", "b200")])
def test_windowed_attention_and_the_ssd_scan_bandwidth_price_alike_in_batch_and_scalar(name, hw):
    """gpt-oss's 128-token windows (tile steps, measure/kernels/attention_tiles.py) and a hybrid's scan kernels at their own
    bandwidth (ssd_scan_memory_efficiency set) reach the batch through the same layer ops: both paths agree."""
    model, base = load_model(name), load_profile(hw)
    profile = base.model_copy(update={"calibration": base.calibration.model_copy(update={"ssd_scan_memory_efficiency": 0.25})})
    job = JobSpec(seq_length=2048, global_batch_size=256)
    place = Placement(hardware=hw, num_nodes=2, gpus_per_node=8)
    _assert_matches(model, job, place, profile, _legal_recipes(model, job, place.world_size, profile, 20, seed=7))
