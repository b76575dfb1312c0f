"""Inputs that were once judged legal but Megatron-LM refuses: each with a legal and an illegal case
(issue 17: an empty layout / hierarchical-CP list, offload counts at or past the layers, a PP that does not
divide the layers in a YAML recipe)."""
from __future__ import annotations

import pytest

from constraints.case import CaseError, case_from_mapping
from constraints.check import check_case
from hardware.profile import load_profile

H100 = load_profile("h100-sxm-80gb")


def _mapping(gpus_per_node=8, **recipe):
    return {"model": "Llama-3.1-8B", "hardware": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": gpus_per_node,
            "job": {"seq_length": 4096, "global_batch_size": 64}, "recipe": recipe}


def _rules(**kw) -> set[str]:
    report = check_case(case_from_mapping(_mapping(**kw)), H100)
    return {v.rule for v in report.violations}


def test_empty_pipeline_layout_is_an_input_error_and_a_real_one_is_judged():
    with pytest.raises(CaseError, match="recipe.pipeline_layout: String should have at least 1 character"):
        case_from_mapping(_mapping(tp=2, pp=2, pipeline_layout=""))
    assert "pipeline_layout" not in _rules(tp=2, pp=2, pipeline_layout="Et*16|t*16L")


def test_empty_hierarchical_cp_list_is_an_input_error_and_a_real_one_is_judged():
    with pytest.raises(CaseError, match="recipe.hierarchical_cp_sizes: Tuple should have at least 1 item"):
        case_from_mapping(_mapping(cp=2, hierarchical_cp_sizes=[]))
    assert "hierarchical_cp" not in _rules(cp=2, cp_comm_type="a2a+p2p", hierarchical_cp_sizes=[2, 1])
    assert "hierarchical_cp" in _rules(cp=2, cp_comm_type="a2a+p2p", hierarchical_cp_sizes=[4, 1])


@pytest.mark.parametrize("layers,illegal", [(31, False), (32, True), (33, True)])
def test_cpu_offloading_must_leave_a_layer_on_the_gpu(layers, illegal):
    # Llama-3.1-8B has 32 layers; Megatron's TransformerConfig accepts 0 <= N < num_layers
    assert ("cpu_offloading" in _rules(tp=8, cpu_offloading_num_layers=layers)) is illegal


@pytest.mark.parametrize("pp,extra,illegal", [(3, {}, True), (2, {}, False), (3, {"first_stage_layers": 10}, False),
                                              (3, {"first_stage_layers": 11}, True),
                                              (3, {"account_for_embedding_in_pipeline_split": True}, False)])
def test_yaml_recipe_pp_must_split_the_layers(pp, extra, illegal):
    # 32 layers: PP 3 splits only with an uneven first stage (10 + 11 + 11) or the embedding counted (33 / 3)
    assert ("layers_split" in _rules(gpus_per_node=6 if pp == 3 else 8, tp=1, pp=pp, **extra)) is illegal


def test_a_misspelt_recipe_key_names_the_nearest_field():
    """One line naming the field and the fix: `job.precison` -> job.precision, `recipe.tensor_parallel` -> recipe.tp is
    too far to guess (no hint), `recipe.pipline_layout` -> recipe.pipeline_layout."""
    bad = _mapping()
    bad["job"] = {**bad["job"], "precison": "bf16"}
    with pytest.raises(CaseError, match=r"job\.precison: Extra inputs are not permitted .*; did you mean job\.precision\?$"):
        case_from_mapping(bad)
    with pytest.raises(CaseError, match=r"did you mean recipe\.pipeline_layout\?$"):
        case_from_mapping(_mapping(pipline_layout="Et*16|t*16L"))
    with pytest.raises(CaseError) as exc:
        case_from_mapping(_mapping(tensor_parallel=2))
    assert "did you mean" not in str(exc.value)
