"""QA4 findings 9, 10, 11: `check --suggest` text output, readable and actionable "nothing fits" explanations, and
their speed on a large infeasible space."""
from __future__ import annotations

from click.testing import CliRunner

from shardplan.cli import cli

LLAMA8B_MBS3 = """model: Llama-3.1-8B
hardware: h100-sxm-80gb
nodes: 1
gpus_per_node: 8
job: {seq_length: 4096, global_batch_size: 32, precision: bf16}
recipe: {tp: 2, pp: 1, mbs: 3, sequence_parallel: true}
"""


def test_check_suggest_prints_the_nearest_recipe_in_text_mode(tmp_path):
    # GBS 32 over DP 4 needs MBS | 8: MBS 3 is illegal (global_batch_divisible); the nearest legal recipe moves MBS only
    path = tmp_path / "r.yaml"
    path.write_text(LLAMA8B_MBS3)
    res = CliRunner().invoke(cli, ["check", str(path), "--suggest"])
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    head = [ln for ln in lines if ln.startswith("suggestion:")]
    assert head and "changes 1 axis" in head[0] and "GiB" in head[0] and "s/iteration" in head[0]
    mbs = [ln for ln in lines if ln.strip().startswith("mbs (--micro-batch-size): 3 -> ")]
    assert len(mbs) == 1 and int(mbs[0].rsplit(" ", 1)[1]) in (1, 2, 4, 8)


def _llama8b_one_node():
    from constraints.models import load_model
    from constraints.spec import JobSpec, Placement
    from hardware.profile import load_profile

    pl = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    return load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=64), pl, load_profile(pl.hardware)


def test_pinned_tp3_explanation_says_why_in_readable_lines():
    # Llama-3.1-8B: 32 attention heads, 8 query groups (meta-llama/Llama-3.1-8B config.json); 8 GPUs; 3 divides neither
    from solver.explain import explain_infeasible, format_explanation

    model, job, pl, prof = _llama8b_one_node()
    expl = explain_infeasible(model, job, pl, prof, {"tp": [3]}, {}, 0.0, remedies=False)
    assert expl["conflict"] == ["--tp"]
    why = " | ".join(expl["why"])
    assert "32 attention heads" in why and "world size 8" in why
    lines = format_explanation(expl)
    assert lines[0] == "nothing fits: --tp"
    assert not any("{" in ln or "[" in ln for ln in lines)  # no raw JSON dict or list
    assert any("--tp 3" in ln and "heads" in ln for ln in lines[1:])


DSV3 = dict(seq_length=4096, global_batch_size=512)


def _dsv3_eight_h800_nodes():
    from constraints.models import load_model
    from constraints.spec import JobSpec, Placement
    from hardware.profile import load_profile

    pl = Placement(hardware="h800-sxm-80gb", num_nodes=8, gpus_per_node=8)
    return load_model("DeepSeek-V3"), JobSpec(**DSV3), pl, load_profile(pl.hardware)


def test_dsv3_on_8_h800_nodes_gets_the_fewest_node_count_that_fits():
    # 671B parameters x ~18 B/param (bf16 weights, fp32 grads + Adam state) is ~12 TB: far more than 64 x 80 GB, and more
    # than 2 x 64 GPUs hold (the old remedy only tried 2x nodes and gave none)
    from solver.explain import _any_fit, explain_infeasible, format_explanation

    model, job, pl, prof = _dsv3_eight_h800_nodes()
    expl = explain_infeasible(model, job, pl, prof, {}, {}, 0.0)
    assert expl["conflict"] == ["memory_fits"]
    node_remedies = [r for r in expl["remedies"] if r.startswith("use ") and " nodes" in r]
    assert len(node_remedies) == 1
    nodes = int(node_remedies[0].split()[1])
    assert 2 * pl.num_nodes < nodes <= 4 * pl.num_nodes  # QA4: the job needs more than 2x, and 4x fits
    assert _any_fit(model, job, pl.model_copy(update={"num_nodes": nodes}), prof, {}, {}, 0.0)
    assert not _any_fit(model, job, pl.model_copy(update={"num_nodes": nodes - 1}), prof, {}, {}, 0.0)  # the fewest
    assert any("at least" in w and "GiB per GPU" in w for w in expl["why"])  # the memory lower bound is named
    assert any(f"use {nodes} nodes" in ln for ln in format_explanation(expl))


def test_proposer_skips_its_sub_searches_when_nothing_fits():
    # the rules proposer used to run 4 sub-searches and a final CP-SAT infeasibility proof over ~1.1M candidates
    # (~180 s on 2 cores); the tables already say nothing fits
    import time

    from solver.proposer.loop import ProposerConfig, solve_with_proposer
    from solver.space import build_space
    from solver.tables import build_tables

    model, job, pl, prof = _dsv3_eight_h800_nodes()
    tables = build_tables(build_space(model, job, pl), prof, 0.0)
    t0 = time.perf_counter()
    result, report = solve_with_proposer(tables, 8, config=ProposerConfig(kind="rules", max_rounds=1, max_subsearches_per_round=1))
    assert result.ranked == [] and result.proven_optimal
    assert report.stopped == "nothing_fits" and report.rounds == []
    assert report.suggestions  # the proposer's advice (e.g. FP8 on H800) is still shown
    assert time.perf_counter() - t0 < 10.0


def test_violations_found_while_reading_the_input_make_the_verdict_illegal(tmp_path):
    # QA4 finding 13a: the reader (solver/inputs.py) hands such violations over as LoadedCase.preflight_violations
    from constraints.rules import Violation
    from solver.inputs import load_check_input
    from solver.report import check_and_project

    path = tmp_path / "ok.yaml"
    path.write_text(LLAMA8B_MBS3.replace("mbs: 3", "mbs: 1"))
    loaded = load_check_input(str(path), None, None, None)
    assert check_and_project(loaded, project=False)["ok"]
    loaded.preflight_violations = [Violation(rule="vpp_layers_divisible", message="4 layers per virtual stage do not divide 80/3",
                                             fix="use --num-layers-per-virtual-pipeline-stage dividing the layers per stage")]
    out = check_and_project(loaded, project=False)
    assert not out["ok"] and out["json"]["legal"] is False
    assert [v["rule"] for v in out["json"]["violations"]][:1] == ["vpp_layers_divisible"]


def test_vpp_flag_megatron_refuses_is_a_violation_not_bad_input(tmp_path):
    """QA finding 13a: --num-layers-per-virtual-pipeline-stage 4 with 80 layers on PP 3 is an illegal recipe (validate_args
    refuses it): check reports a layers_split violation in its JSON and exits 1 instead of an input error (exit 2)."""
    import json as _json

    from click.testing import CliRunner

    from shardplan.cli import cli

    args = ("--num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64 --group-query-attention "
            "--num-query-groups 8 --vocab-size 128256 --max-position-embeddings 8192 --swiglu --seq-length 8192 "
            "--micro-batch-size 1 --global-batch-size 128 --bf16 --tensor-model-parallel-size 8 "
            "--pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 4 --sequence-parallel")
    path = tmp_path / "args.txt"
    path.write_text(args + "\n")
    res = CliRunner().invoke(cli, ["check", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "8", "--gpus-per-node", "8",
                                   "--json"])
    assert res.exit_code == 1, res.output
    data = _json.loads(res.output)
    first = data["violations"][0]
    assert not data["legal"] and first["rule"] == "layers_split" and "--num-layers-per-virtual-pipeline-stage 4" in first["message"]
    assert "dividing 80" in first["fix"]


def test_precision_blockers_speak_solve_options_and_offer_a_precision_remedy():
    """QA finding 11: `solve` takes --precision, not Megatron's --fp8-recipe / --bf16; FP8 on a part without it is fixed
    by training in bf16, which the remedies now try (each verified on a legal recipe)."""
    from constraints.models import load_model
    from constraints.spec import JobSpec, Placement, Precision
    from hardware.profile import load_profile
    from solver.explain import explain_infeasible

    job = JobSpec(seq_length=2048, global_batch_size=16, precision=Precision.fp8_tensorwise)
    pl = Placement(hardware="a100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    pins = {"pp": [1], "vpp": [1], "cp": [1], "mbs": [1]}
    expl = explain_infeasible(load_model("Llama-3.1-8B"), job, pl, load_profile("a100-sxm-80gb"), pins, {}, 0.0)
    assert any("--precision bf16" in c and "--bf16" not in c.replace("--precision bf16", "") for c in expl["conflict"])
    assert "--precision bf16" in expl["remedies"]


def test_suggestion_lists_flags_it_does_not_carry():
    """Review 4: --suggest searches the parallel axes only; a non-axis flag the user set (here --grad-reduce-in-bf16) is
    listed as a change the suggestion does not carry, not dropped silently."""
    from constraints.case import Case
    from constraints.models import load_model
    from constraints.spec import JobSpec, Placement, Recipe
    from solver.suggest import suggest_fix

    case = Case(model=load_model("Llama-3.1-8B"), job=JobSpec(seq_length=4096, global_batch_size=64),
                recipe=Recipe(tp=3, grad_reduce_in_bf16=True),
                placement=Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8))
    sug = suggest_fix(case)
    assert sug["found"] and sug["changes"]["grad_reduce_in_bf16"] == {"from": True, "to": False, "note": "not searched"}
    assert "tp" in sug["changes"]
