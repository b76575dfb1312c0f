"""fewest-gpus: the screened scan gives the plain scan's answer, and its bounds hold against the exact tables."""
from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.cpsat.solve import SolveResult
from solver.fewest_gpus import CountScreen, fewest_gpus
from solver.tables.time import US
from solver.workflow import solve_case

HW = "h100-sxm-80gb"
BOUNDS = {"vpp": (1, 2), "mbs": (1, 2), "cp": (1, 2), "pp": (1, 4)}
PINS = {"recompute": ["none", "full:uniform:1"], "dp_sharding": ["distributed_optimizer", "megatron_fsdp"]}
# (model, global batch, PP at most): a dense model that fits one node, one that needs two (memory screen), a batch
# of 16 whose 3-node world (24 GPUs: DP | 16 leaves a factor 3 for PP <= 2) has no recipe (empty screen), and
# two MoE models (expert parameters sharded over expert-DP), the larger one needing two nodes
CASES = [("Llama-3.1-8B", 48, 4), ("Llama-3.1-70B", 64, 4), ("Llama-3.1-8B", 16, 2), ("Qwen3-30B-A3B", 64, 4),
         ("Mixtral-8x7B-v0.1", 32, 4)]
MAX_NODES = 3


def _bounds(pp_hi: int) -> dict:
    return {**BOUNDS, "pp": (1, pp_hi)}


@lru_cache(maxsize=None)
def _solve(model_name: str, gbs: int, nodes: int, pp_hi: int = 4):
    model = load_model(model_name)
    job = JobSpec(seq_length=4096, global_batch_size=gbs)
    pl = Placement(hardware=HW, num_nodes=nodes, gpus_per_node=8)
    return solve_case(model, job, pl, load_profile(HW), dict(PINS), _bounds(pp_hi), 1, 0.0, "cpsat", 30.0)


def _screen(model_name: str, gbs: int, pp_hi: int = 4) -> CountScreen:
    return CountScreen(load_model(model_name), JobSpec(seq_length=4096, global_batch_size=gbs), load_profile(HW), 0.0,
                       PINS, _bounds(pp_hi))


def _scan(model_name: str, gbs: int, target: float, prune: bool, pp_hi: int = 4):
    screen = _screen(model_name, gbs, pp_hi)
    calls = []

    def solve_at(pl):
        calls.append(pl.num_nodes)
        res, tab = _solve(model_name, gbs, pl.num_nodes, pp_hi)
        return _copy(res), tab  # fewest_gpus empties the last result's .ranked when nothing reaches: keep the cache whole

    pl = Placement(hardware=HW, num_nodes=MAX_NODES, gpus_per_node=8)
    return fewest_gpus(pl, target, solve_at, screen, prune=prune), calls


def _copy(res):
    from dataclasses import replace

    return replace(res, ranked=list(res.ranked))


def _best(model_name: str, gbs: int, nodes: int, pp_hi: int = 4) -> float:
    res, _ = _solve(model_name, gbs, nodes, pp_hi)
    return res.ranked[0].projection.tokens_per_s_per_gpu * nodes * 8 if res.ranked else 0.0


def _assert_same_answer(model_name: str, gbs: int, pp_hi: int, target: float) -> None:
    (res_p, _, pl_p, tried_p), calls = _scan(model_name, gbs, target, True, pp_hi)
    (res_f, _, pl_f, tried_f), _ = _scan(model_name, gbs, target, False, pp_hi)
    assert pl_p.num_nodes == pl_f.num_nodes
    assert [r.key for r in res_p.ranked] == [r.key for r in res_f.ranked]
    plain = {t["nodes"]: t["tokens_per_s"] for t in tried_f}
    for t in tried_p:
        if "skipped" in t:  # a skipped count provably falls short, and the plain scan agrees
            assert plain[t["nodes"]] < target, (t, plain)
            assert t["tokens_per_s"] in (None, 0.0) and (t["tokens_per_s"] is None or plain[t["nodes"]] == 0.0)
        else:
            assert t["tokens_per_s"] == plain[t["nodes"]]
    assert [t["nodes"] for t in tried_p] == [t["nodes"] for t in tried_f]
    assert all("skipped" not in t for t in tried_p if t["nodes"] in calls)


def test_each_screen_skips_a_count_the_plain_scan_finds_empty():
    """Llama-3.1-70B on one node: 70.6e9 params x 18 B / 8 GPUs > 80 GB (memory); Llama-3.1-8B with GBS 16 on
    3 nodes and PP <= 2: DP | 16 leaves a factor 3 nothing can take (empty); a target above 8 x H100 peak /
    Megatron FLOPs per token on one node (throughput). Each is also what the plain solve finds."""
    (_, _, _, tried), calls = _scan("Llama-3.1-70B", 64, 1.0, prune=True)
    assert tried[0]["skipped"] == "memory" and 1 not in calls and _solve("Llama-3.1-70B", 64, 1)[1].counts["fitting"] == 0
    assert tried[0]["min_peak_bytes"] > 80e9
    screen = _screen("Llama-3.1-8B", 16, 2)
    pl3 = Placement(hardware=HW, num_nodes=3, gpus_per_node=8)
    assert screen.space_is_empty(pl3) and _solve("Llama-3.1-8B", 16, 3, 2)[1].counts["candidates"] == 0
    # with PP 3 allowed, 32 layers split 3 ways (uneven first/last stages, or account-for where the space has them)
    assert not _screen("Llama-3.1-8B", 16, 4).space_is_empty(pl3)
    calls = []
    (_, _, _, tried) = fewest_gpus(pl3.model_copy(update={"num_nodes": 4}), 1e12,
                                   lambda pl: calls.append(pl.num_nodes) or (SolveResult([], True, None, "cpsat"), None), screen)
    assert tried[2] == {"nodes": 3, "gpus": 24, "tokens_per_s": 0.0, "skipped": "empty_space"} and calls == [4]
    assert [t["skipped"] for t in tried[:2]] == ["throughput_bound"] * 2  # 1e12 tokens/s: beyond any count's MFU 1
    # 8 x 989.4 TFLOP/s (H100 SXM bf16 dense, NVIDIA datasheet) x the curve's top efficiency over Megatron's
    # FLOPs per token: 6 x 7.5e9 matmul params (8.03e9 less the 0.53e9 embedding) + 6 x 4096 x 4096 x 32 attention
    bound = screen.max_tokens_per_s(8)
    top = max(y for _, y in load_profile(HW).calibration.gemm_efficiency)
    assert 4.7e10 < 8 * 989.4e12 * top / bound < 4.95e10 and _best("Llama-3.1-8B", 16, 1, 2) < bound
    (_, _, _, tried), calls = _scan("Llama-3.1-8B", 48, 1.01 * bound, prune=True)
    assert tried[0]["skipped"] == "throughput_bound" and tried[0]["tokens_per_s"] is None and 1 not in calls


def test_bounds_hold_against_every_candidate_of_the_exact_tables():
    """Every candidate's exact peak >= the memory bound; every fitting candidate's ranking projection and the
    answer's simulated projection <= the throughput bound; an empty verdict only where the tables are empty."""
    for model_name, gbs, pp_hi in CASES:
        screen = _screen(model_name, gbs, pp_hi)
        for nodes in range(1, MAX_NODES + 1):
            res, tab = _solve(model_name, gbs, nodes, pp_hi)
            world = nodes * 8
            if len(tab.cand_peak):
                assert int(tab.cand_peak.min()) >= screen.min_peak_bytes(world)
            fit = tab.cand_peak <= tab.usable_bytes
            if fit.any():
                tokens = gbs * 4096 / (tab.cand_time_us[fit].min() / US)
                assert tokens <= screen.max_tokens_per_s(world)
                assert _best(model_name, gbs, nodes, pp_hi) <= screen.max_tokens_per_s(world)
            if screen.space_is_empty(Placement(hardware=HW, num_nodes=nodes, gpus_per_node=8)):
                assert tab.counts["candidates"] == 0


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), frac=st.floats(0.3, 1.6))
def test_screened_scan_equals_plain_scan(case, frac):
    """Targets around the throughputs the counts really reach (so the answer moves between counts, or is none)."""
    model_name, gbs, pp_hi = case
    top = max(_best(model_name, gbs, n, pp_hi) for n in range(1, MAX_NODES + 1)) or 1.0
    _assert_same_answer(model_name, gbs, pp_hi, frac * top)


def test_unreachable_target_gives_the_target_explanation():
    from shardplan.cli.main import cli

    args = ["solve", "--model", "Llama-3.1-70B", "--hardware", HW, "--nodes", "2", "--seq-length", "4096",
            "--global-batch-size", "64", "--top", "1", "--vpp", "1..2", "--mbs", "1..2", "--cp", "1..2", "--pp", "1..4",
            "--proposer", "none", "--json", "--objective", "fewest-gpus", "--target-tokens-per-s", "1e9",
            "--max-memory-fraction", "1.0"]  # 2 nodes fit only at 100 % of HBM with these pins: one count that fits
    res = CliRunner().invoke(cli, args)
    data = json.loads(res.output)
    assert res.exit_code == 1 and data["recipes"] == [] and data["nodes"] == 2
    tried = data["fewest_gpus"]["tried"]
    assert tried[0]["skipped"] == "memory" and tried[1]["tokens_per_s"] > 0 and "skipped" not in tried[1]
    assert data["explanation"]["conflict"] == ["--target-tokens-per-s"]
    assert f"best {tried[1]['tokens_per_s']:,.0f} tokens/s at 2 nodes" in data["explanation"]["remedies"][0]
    assert np.isfinite(tried[0]["min_peak_bytes"])


def test_target_explanation_says_when_a_skipped_count_may_have_been_best():
    from solver.fewest_gpus import target_explanation

    memory_only = [{"nodes": 1, "gpus": 8, "tokens_per_s": 0.0, "skipped": "memory"}, {"nodes": 2, "gpus": 16, "tokens_per_s": 0.0}]
    assert target_explanation(memory_only, 2) is None  # nothing fits anywhere: the memory explanation applies
    bounded = [{"nodes": 1, "gpus": 8, "tokens_per_s": None, "skipped": "throughput_bound", "max_tokens_per_s": 5e5},
               {"nodes": 2, "gpus": 16, "tokens_per_s": 1e5}]
    more = target_explanation(bounded, 2)["remedies"][0]
    assert more.startswith("more than 2 nodes (best 100,000 tokens/s at 2 nodes among the counts solved; 1 more skipped")
    bounded[0]["max_tokens_per_s"] = 5e4
    assert target_explanation(bounded, 2)["remedies"][0] == "more than 2 nodes (best 100,000 tokens/s at 2 nodes)"


def test_projection_kernels_cover_megatron_flops():
    """The throughput bound's premise: the projection's matmul and attention kernels of one iteration, summed
    over the world, hold at least Megatron's model FLOPs (dense, GQA, MoE with and without SP, MLA + MTP)."""
    from constraints.spec import Recompute
    from constraints.stages import rank_chunks
    from measure.kernels.layer_ops import LayerKind, head_ops, layer_ops
    from measure.kernels.ops import OpKind
    from measure.projection.flops import flops_per_iteration
    from solver.space import make_recipe

    kinds = (OpKind.gemm, OpKind.grouped_gemm, OpKind.attention_fwd, OpKind.attention_bwd)

    def flops(ops):
        return sum(p.flops for p in ops if p.op.kind in kinds)

    job = JobSpec(seq_length=4096, global_batch_size=64)
    for name, tp, cp, ep, sp, pp in [("Llama-3.1-8B", 8, 1, 1, False, 1), ("Llama-3.1-8B", 2, 2, 1, True, 2),
                                     ("Mixtral-8x7B-v0.1", 8, 1, 1, True, 1), ("Qwen3-30B-A3B", 2, 1, 8, True, 4),
                                     ("DeepSeek-V3", 1, 1, 8, False, 1), ("DeepSeek-V3", 8, 2, 8, True, 1)]:
        model = load_model(name)
        recipe = make_recipe(tp, pp, 1, cp, ep, 1 if model.is_moe else None, 1, sp, Recompute.none(), "1f1b",
                             "distributed_optimizer", False)
        world = tp * cp * pp * 4
        m = 64 // (world // (tp * pp * cp))
        per_kind = {False: flops(layer_ops(model, job, recipe, LayerKind.dense)),
                    True: flops(layer_ops(model, job, recipe, LayerKind.moe)) if model.is_moe else 0.0}
        total = 0.0
        for chunks in rank_chunks(model, recipe):
            for c in chunks:
                kinds_of = [model.is_moe and model.moe_layers[i] for i in c.layers] + [model.is_moe and model.moe_layers[-1]] * c.mtp
                per_gpu = sum(per_kind[k] for k in kinds_of) + (flops(head_ops(model, job, recipe)) if c.loss else 0.0)
                total += world // pp * m * per_gpu
        assert total >= flops_per_iteration(model, job, recipe), name
