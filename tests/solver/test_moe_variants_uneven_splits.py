"""Review of the solver's new axes (MoE variants, uneven first/last stages): candidates are priced as shown, the
variant is the fastest legal one, CP-SAT and exhaustive agree, pins reach the answers, and JSON stays plain."""
from __future__ import annotations

import json

import numpy as np
import pytest

from constraints.case import Case
from constraints.check import check_case
from constraints.models.load import load_model
from constraints.rules.registry import RuleInput, check_rules
from constraints.spec import JobSpec, MoeDispatcher, Placement
from hardware.profile import load_profile
from measure.projection.project import project
from solver.cpsat.solve import solve_cpsat
from solver.exhaustive import solve_exhaustive
from solver.space import build_space
from solver.tables.build import build_tables

JOB = JobSpec(seq_length=4096, global_batch_size=64)
# Moonlight: 27 layers (odd: even splits fail at PP 2/4, uneven pairs exist), first layer dense, MLA
MOON_PINS = {"tp": [1, 2], "pp": [1, 2, 4], "cp": [1], "ep": [2, 8], "etp": [1], "mbs": [1],
             "recompute": ["none", "selective:core_attn", "full:uniform:1"], "dp_sharding": ["distributed_optimizer"]}


def _moonlight(pins=None, hw="h100-sxm-80gb", mtp=0):
    model = load_model("Moonlight-16B-A3B")
    if mtp:
        model = model.model_copy(update={"mtp_num_layers": mtp})
    pl, prof = Placement(hardware=hw, num_nodes=2, gpus_per_node=8), load_profile(hw)
    return model, pl, prof, build_tables(build_space(model, JOB, pl, pins={**MOON_PINS, **(pins or {})}), prof)


def _errors(model, pl, prof, r):
    return [v.rule for v in check_rules(RuleInput(model, JOB, r, pl.world_size, prof)) if v.severity == "error"]


@pytest.mark.parametrize("mtp", [0, 1])
def test_candidates_priced_as_their_recipe_with_fastest_legal_variant(mtp):
    """First-k-dense + MLA (+ MTP): each fitting candidate's ranking time is project() of Tables.recipe, that recipe is
    legal, and no other legal MoE variant of it is faster; uneven pairs occur among the candidates."""
    model, pl, prof, t = _moonlight(mtp=mtp)
    fit = np.flatnonzero(t.cand_peak <= t.usable_bytes)
    assert len(fit) > 20
    uneven = [i for i in fit if isinstance(t.struct[t.act_struct[t.cand_act[i]]][7], tuple)]
    assert uneven, "no uneven split among fitting candidates"
    rng = np.random.default_rng(11)
    picks = list(rng.choice(fit, size=min(15, len(fit)), replace=False)) + uneven[:5]
    for i in picks:
        a, h = int(t.cand_act[i]), int(t.cand_shard[i])
        r = t.recipe(a, h)
        assert not _errors(model, pl, prof, r), r
        own = project(model, JOB, r, pl, prof, simulate_pipeline=False).iteration_time_s
        assert abs(own * 1e6 - t.cand_time_us[i]) <= 1.0
        for d, o in t.variants:
            alt = r.model_copy(update={"moe_dispatcher": MoeDispatcher(d), "overlap_moe_expert_parallel_comm": o})
            if not _errors(model, pl, prof, alt):
                assert project(model, JOB, alt, pl, prof, simulate_pipeline=False).iteration_time_s >= own - 1e-12


def test_cpsat_and_exhaustive_agree_with_variants_and_uneven_splits():
    _, _, _, t = _moonlight()
    c, e = solve_cpsat(t, 6), solve_exhaustive(t, 6)
    assert [(r.act, r.shard) for r in c.ranked] == [(r.act, r.shard) for r in e.ranked]
    assert [r.recipe for r in c.ranked] == [r.recipe for r in e.ranked]
    assert c.proven_optimal


@pytest.mark.parametrize("pins,field,want", [
    ({"ep_comm_overlap": [False]}, "overlap_moe_expert_parallel_comm", False),
    ({"ep_comm_overlap": [True]}, "overlap_moe_expert_parallel_comm", True),
    ({"moe_dispatcher": ["allgather"]}, "moe_dispatcher", MoeDispatcher.allgather),
    ({"moe_dispatcher": ["flex"]}, "moe_dispatcher", MoeDispatcher.flex),
])
def test_variant_pins_reach_every_candidate_and_answers_pass_check(pins, field, want):
    model, pl, prof, t = _moonlight(pins)
    fit = np.flatnonzero(t.cand_peak <= t.usable_bytes)
    assert len(fit)
    for i in fit[:: max(len(fit) // 40, 1)]:
        assert getattr(t.recipe(int(t.cand_act[i]), int(t.cand_shard[i])), field) == want
    res = solve_cpsat(t, 2)
    assert res.ranked
    for r in res.ranked:
        assert getattr(r.recipe, field) == want
        assert check_case(Case(model=model, job=JOB, recipe=r.recipe, placement=pl), prof).ok


def test_uneven_pin_gives_only_uneven_answers_and_off_gives_none():
    _, _, _, on = _moonlight({"uneven_stages": [True], "pp": [2, 4]})
    _, _, _, off = _moonlight({"uneven_stages": [False]})
    assert on.struct and all(isinstance(s[7], tuple) for s in on.struct)
    assert not any(isinstance(s[7], tuple) for s in off.struct)
    r = solve_cpsat(on, 1).ranked[0].recipe
    assert r.first_stage_layers and r.last_stage_layers


def test_dense_model_and_pp1_space_build():
    """Dense model, 1 GPU: no MoE variants, no uneven pairs, a recipe still comes back."""
    model, pl = load_model("Llama-3.1-8B"), Placement(hardware="h200-sxm-141gb", num_nodes=1, gpus_per_node=1)
    prof = load_profile("h200-sxm-141gb")
    t = build_tables(build_space(model, JobSpec(seq_length=2048, global_batch_size=8), pl), prof)
    assert t.variants == [("alltoall", False)]
    assert all(s[1] == 1 and not isinstance(s[7], tuple) for s in t.struct)
    assert solve_cpsat(t, 1).ranked


def test_solve_json_is_plain_json_with_uneven_answers():
    from click.testing import CliRunner

    from shardplan.cli.main import cli

    out = CliRunner().invoke(cli, ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1",
                                    "--seq-length", "4096", "--global-batch-size", "32", "--top", "2", "--pp", "4",
                                    "--uneven-stages", "--proposer", "none", "--json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    for r in d["recipes"]:
        p = r["parallel"]
        assert type(p["first_stage_layers"]) is int and type(p["last_stage_layers"]) is int
        assert p["first_stage_layers"] + p["last_stage_layers"] + 2 * 9 == 32  # (7, 7): the middle ranks hold 9 each
        assert "--decoder-first-pipeline-num-layers" in r["megatron_args"]


def test_uneven_pairs_are_exactly_the_rule_11_pairs_within_the_trim():
    """Brute force over (layers, PP, VPP): every (first, last) that Megatron rule 11 accepts (each > 0 and a multiple of
    VPP, the middle split evenly over PP - 2 ranks in multiples of VPP) with both ends lighter than the middle by
    0..max_trim_chunks(VPP) steps of VPP layers (not both 0; at PP 2 any end, the two differing by up to twice that)
    is returned, and nothing else."""
    from solver.splits import max_trim_chunks, uneven_pairs

    for layers in range(2, 70):
        for pp in range(2, 11):
            for vpp in range(1, 5):
                steps, want = max_trim_chunks(vpp), set()
                for first in range(vpp, layers, vpp):
                    for last in range(vpp, layers - first + 1, vpp):
                        rest = layers - first - last
                        if pp == 2:
                            if rest == 0 and first != last and abs(first - last) <= 2 * steps * vpp:
                                want.add((first, last))
                            continue
                        if rest <= 0 or rest % (pp - 2) or (rest // (pp - 2)) % vpp:
                            continue
                        tf, tl = rest // (pp - 2) - first, rest // (pp - 2) - last
                        if 0 <= tf <= steps * vpp and 0 <= tl <= steps * vpp and tf % vpp == tl % vpp == 0 and (tf or tl):
                            want.add((first, last))
                assert set(uneven_pairs(layers, pp, vpp)) == want, (layers, pp, vpp)
