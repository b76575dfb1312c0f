"""Built-in rule proposer on real bundled models and H100 nodes: which named rules fire, with what values,
and that the loop they drive returns the plain solve's (proven) answer, every recipe legal."""
from __future__ import annotations

import pytest

from solver.proposer.hints import validate_hints
from solver.proposer.ledger import LedgerEntry, ProposerContext
from solver.proposer.legal import AxisColumns
from solver.proposer.loop import ProposerConfig, solve_with_proposer
from solver.proposer.rules import RuleProposer, fp8_suggestion
from tests.helpers.proposer import TINY, assert_all_legal, tables_for

MOE = {"tp": [1, 2], "pp": [2, 4], "vpp": [1, 2], "cp": [1], "mbs": [1], "dp_sharding": ["distributed_optimizer"],
       "recompute": ["none", "selective:core_attn", "selective:core_attn+moe_act", "full:uniform:1"], "acc_split": [False],
       "schedule": ["1f1b", "interleaved"]}


def _ctx(tables, **kw) -> ProposerContext:
    sp = tables.space
    return ProposerContext(model=sp.model, job=sp.job, placement=sp.placement, profile=tables.profile,
                           legal=AxisColumns(tables).legal_values(), **kw)


def _fired(ctx) -> dict[str, list]:
    return {source.removeprefix("rule:"): hints for source, hints in RuleProposer().propose(ctx)}


@pytest.fixture(scope="module")
def dense():
    return tables_for(pins=TINY)


@pytest.fixture(scope="module")
def moe():
    return tables_for("Mixtral-8x7B-v0.1", nodes=2, gbs=32, pins=MOE)


def _entry(**kw) -> LedgerEntry:
    base = dict(axes={"tp": 2, "pp": 4, "vpp": 1, "cp": 1, "ep": 8, "etp": 1, "mbs": 1, "sp": True, "recompute": "none",
                      "schedule": "1f1b", "dp_sharding": "distributed_optimizer", "acc_split": False}, dp=2, time_us=2_000_000,
                tokens_per_s_per_gpu=4000.0, mfu=0.4, bubble_fraction=0.02, time_shares={"ep_comm": 0.02}, peak_bytes=60 * 2**30,
                usable_bytes=80 * 2**30, act=0, shard=0, origin="test")
    base.update(kw)
    return LedgerEntry(**base)


def test_dense_model_fires_sp_and_selective_rules_only(dense):
    fired = _fired(_ctx(dense))
    assert set(fired) == {"sp_with_tp", "selective_before_full", "distributed_optimizer_with_dp"}
    assert fired["sp_with_tp"][0]["axes"] == {"tp": [2, 4], "sp": [True]}
    assert fired["selective_before_full"][0]["axes"] == {"recompute": ["none", "selective:core_attn"]}


def test_moe_model_fires_ep_and_moe_recompute_rules(moe):
    ctx = _ctx(moe)
    assert ctx.legal["ep"] == [1, 2, 4, 8] and ctx.legal["pp"] == [2, 4]
    fired = _fired(ctx)
    assert {"ep_within_scale_up", "moe_only_recompute", "interleave_large_bubble"} <= set(fired)
    assert "moe_cross_axis" not in fired  # needs a pipelined MoE recipe in the ledger first
    assert fired["ep_within_scale_up"][0]["axes"] == {"ep": [2, 4, 8]}
    assert fired["moe_only_recompute"][0]["axes"] == {"recompute": ["selective:core_attn+moe_act"]}
    # every rule hint is legal by construction: validation keeps them all
    for source, raw in RuleProposer().propose(ctx):
        kept, rejected = validate_hints(raw, ctx.legal, source)
        assert not rejected and len(kept) == len(raw)


def test_moe_loop_tries_the_cross_axis_combination_and_keeps_the_exact_answer(moe):
    result, report = solve_with_proposer(moe, k=3, config=ProposerConfig(subsearch_k=1, max_rounds=3, patience=2))
    plain, _ = solve_with_proposer(moe, k=3, config=ProposerConfig(kind="none"))
    assert_all_legal(moe, result)
    assert [r.key for r in result.ranked] == [r.key for r in plain.ranked] and result.proven_optimal
    combo = [u for u in report.used if u.hint.source == "rule:moe_cross_axis"]
    assert combo and combo[0].status == "searched"
    best_pp = report.rounds[0].best_axes["pp"]
    assert combo[0].hint.axes == {"ep": [8], "recompute": ["selective:core_attn+moe_act"], "pp": [best_pp],
                                  "schedule": ["interleaved"], "vpp": [2]}
    assert not report.changed_result and report.unhinted_compared_by == "proof"
    assert report.final_top_axes == report.unhinted_top_axes


def test_ledger_drives_ep_and_interleave_rules(moe):
    quiet = _ctx(moe)
    quiet.ledger.add(_entry(time_shares={"ep_comm": 0.02}, bubble_fraction=0.02))
    fired = _fired(quiet)
    assert "ep_within_scale_up" not in fired and "interleave_large_bubble" not in fired
    assert "moe_only_recompute" not in fired  # 20 GiB of 80 free and no full recompute: memory is not tight
    busy = _ctx(moe)
    busy.ledger.add(_entry(time_shares={"ep_comm": 0.3}, bubble_fraction=0.3, peak_bytes=75 * 2**30))
    fired = _fired(busy)
    assert "30 %" in fired["ep_within_scale_up"][0]["rationale"]
    assert fired["interleave_large_bubble"][0]["axes"] == {"pp": [4], "schedule": ["interleaved"], "vpp": [2]}
    assert "moe_only_recompute" in fired and "moe_cross_axis" in fired


def test_cp_rule_fires_only_for_long_sequences():
    pins = {"tp": [1, 2], "pp": [1], "vpp": [1], "cp": [1, 2, 4], "mbs": [1], "recompute": ["selective:core_attn"],
            "schedule": ["1f1b"], "dp_sharding": ["distributed_optimizer"], "acc_split": [False]}
    long_ctx = _ctx(tables_for(seq=65536, gbs=8, pins=pins))
    assert _fired(long_ctx)["cp_for_long_sequences"][0]["axes"] == {"cp": [2, 4]}
    assert "cp_for_long_sequences" not in _fired(_ctx(tables_for(seq=8192, gbs=8, pins=pins)))


def test_tp_beyond_the_scale_up_domain_is_forbidden():
    # GPT-3 175B has 96 heads, so TP=16 is legal on 2 nodes once the range allows it; H100 NVLink spans 8 GPUs
    pins = {"pp": [1], "vpp": [1], "cp": [1], "mbs": [1], "recompute": ["full:uniform:1"], "schedule": ["1f1b"],
            "dp_sharding": ["distributed_optimizer"], "acc_split": [False], "sp": [True]}
    ctx = _ctx(tables_for("GPT-3-175B", nodes=2, seq=2048, gbs=16, pins=pins, ranges={"tp": (1, 16)}))
    assert 16 in ctx.legal["tp"] and ctx.scale_up_gpus == 8
    hint = _fired(ctx)["tp_within_scale_up"][0]
    assert hint["action"] == "forbid" and hint["axes"] == {"tp": [16]}


def test_fp8_is_a_suggestion_where_the_hardware_has_it(dense):
    text = fp8_suggestion(_ctx(dense))[0].text
    assert "2.0x bf16 peak" in text  # H100 SXM: 1978.9 / 989.4 TFLOP/s dense (NVIDIA H100 datasheet)
    a100 = tables_for(hw="a100-sxm-80gb", pins=TINY)
    assert fp8_suggestion(_ctx(a100)) == []


def test_rule_proposer_is_deterministic(moe):
    assert RuleProposer().propose(_ctx(moe)) == RuleProposer().propose(_ctx(moe))


def test_large_bubble_also_tries_zero_bubble_schedules():
    # zero-bubble schedules are opt-in (Megatron-LM's pretrain_gpt.py has none): put them in the space
    pins = {"tp": [1, 2], "pp": [4], "vpp": [1, 2], "cp": [1], "mbs": [1], "recompute": ["none"], "dp_sharding": ["distributed_optimizer"],
            "acc_split": [False], "schedule": ["1f1b", "interleaved", "zb-h1", "zbv"]}
    ctx = _ctx(tables_for(gbs=8, pins=pins))
    assert "zero_bubble_large_bubble" not in _fired(ctx)  # nothing evaluated yet
    ctx.ledger.add(_entry(axes={"tp": 1, "pp": 4, "vpp": 1, "cp": 1, "ep": 1, "mbs": 1, "recompute": "none", "schedule": "1f1b"},
                          bubble_fraction=0.3))
    assert _fired(ctx)["zero_bubble_large_bubble"][0]["axes"] == {"pp": [4], "schedule": ["zb-h1", "zbv"]}


def test_headroom_tries_a_larger_microbatch_on_the_best_layout():
    pins = {"tp": [1, 2], "pp": [1, 2], "vpp": [1], "cp": [1], "mbs": [1, 2, 4], "recompute": ["none"], "schedule": ["1f1b"],
            "dp_sharding": ["distributed_optimizer"], "acc_split": [False]}
    ctx = _ctx(tables_for(gbs=32, pins=pins))
    axes = {"tp": 2, "pp": 1, "vpp": 1, "cp": 1, "ep": 1, "mbs": 1, "recompute": "none", "schedule": "1f1b"}
    ctx.ledger.add(_entry(axes=axes, peak_bytes=70 * 2**30))   # 10 of 80 GiB free: not enough
    assert "larger_microbatch_with_headroom" not in _fired(ctx)
    roomy = _ctx(tables_for(gbs=32, pins=pins))
    roomy.ledger.add(_entry(axes=axes, peak_bytes=40 * 2**30))  # half of HBM free
    assert _fired(roomy)["larger_microbatch_with_headroom"][0]["axes"] == {"tp": [2], "pp": [1], "cp": [1], "ep": [1], "mbs": [2, 4]}
