""""Nothing fits" explanations are readable and actionable: why in plain lines, the fewest node count that fits,
remedies in solve's own options; the proposer does not search when the tables already say nothing fits (its cost on
a large infeasible space is measured by bench/speed/nothing_fits.py)."""
from __future__ import annotations


def _llama8b_one_node():
    from constraints.models.load import load_model
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
    from constraints.models.load import load_model
    from constraints.spec import JobSpec, Placement
    from hardware.profile import load_profile

    pl = Placement(hardware="h800-sxm-80gb", num_nodes=8, gpus_per_node=8)
    return load_model("DeepSeek-V3"), JobSpec(**DSV3), pl, load_profile(pl.hardware)


def test_dsv3_on_8_h800_nodes_gets_the_fewest_node_count_that_fits():
    # 671B parameters x ~18 B/param (bf16 weights, fp32 grads + Adam state) is ~12 TB: far more than 64 x 80 GB, and more
    # than 2 x 64 GPUs hold (the old remedy only tried 2x nodes and gave none)
    from solver.explain import any_fit, explain_infeasible, format_explanation

    model, job, pl, prof = _dsv3_eight_h800_nodes()
    expl = explain_infeasible(model, job, pl, prof, {}, {}, 0.0)
    assert expl["conflict"] == ["memory_fits"]
    node_remedies = [r for r in expl["remedies"] if r.startswith("use ") and " nodes" in r]
    assert len(node_remedies) == 1
    nodes = int(node_remedies[0].split()[1])
    assert 2 * pl.num_nodes < nodes <= 4 * pl.num_nodes  # the job needs more than 2x, and 4x fits
    assert any_fit(model, job, pl.model_copy(update={"num_nodes": nodes}), prof, {}, {}, 0.0)
    assert not any_fit(model, job, pl.model_copy(update={"num_nodes": nodes - 1}), prof, {}, {}, 0.0)  # the fewest
    assert any("at least" in w and "GiB per GPU" in w for w in expl["why"])  # the memory lower bound is named
    assert any(f"use {nodes} nodes" in ln for ln in format_explanation(expl))


def test_proposer_skips_its_sub_searches_when_nothing_fits():
    # the rules proposer used to run 4 sub-searches and a final CP-SAT infeasibility proof over ~1.1M candidates
    # (~180 s on 2 cores); the tables already say nothing fits (no rounds run; its time: bench/speed/nothing_fits.py)
    from solver.proposer.loop import ProposerConfig, solve_with_proposer
    from solver.space import build_space
    from solver.tables.build import build_tables

    model, job, pl, prof = _dsv3_eight_h800_nodes()
    tables = build_tables(build_space(model, job, pl), prof, 0.0)
    result, report = solve_with_proposer(tables, 8, config=ProposerConfig(kind="rules", max_rounds=1, max_subsearches_per_round=1))
    assert result.ranked == [] and result.proven_optimal
    assert report.stopped == "nothing_fits" and report.rounds == []
    assert report.suggestions  # the proposer's advice (e.g. FP8 on H800) is still shown


def test_precision_blockers_speak_solve_options_and_offer_a_precision_remedy():
    """`solve` takes --precision, not Megatron's --fp8-recipe / --bf16; FP8 on a part without it is fixed
    by training in bf16, which the remedies now try (each verified on a legal recipe)."""
    from constraints.models.load import load_model
    from constraints.spec import JobSpec, Placement, Precision
    from hardware.profile import load_profile
    from solver.explain import explain_infeasible

    job = JobSpec(seq_length=2048, global_batch_size=16, precision=Precision.fp8_tensorwise)
    pl = Placement(hardware="a100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    pins = {"pp": [1], "vpp": [1], "cp": [1], "mbs": [1]}
    expl = explain_infeasible(load_model("Llama-3.1-8B"), job, pl, load_profile("a100-sxm-80gb"), pins, {}, 0.0)
    assert any("--precision bf16" in c and "--bf16" not in c.replace("--precision bf16", "") for c in expl["conflict"])
    assert "--precision bf16" in expl["remedies"]
