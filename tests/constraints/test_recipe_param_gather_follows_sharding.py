"""A recipe YAML with `dp_sharding: torch_fsdp2` (or none) and no word on --overlap-param-gather was judged illegal
("--overlap-param-gather needs --use-distributed-optimizer"): the Recipe default turned on a flag its author never
wrote. Unsaid, the overlap now follows the sharding; said, it is kept and judged."""
import yaml

from constraints.case import case_from_mapping
from constraints.check import check_case
from hardware.profile import load_profile


def judged(recipe: dict):
    data = {"model": "Llama-3.1-8B", "hardware": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8,
            "job": {"seq_length": 4096, "global_batch_size": 64}, "recipe": recipe}
    case = case_from_mapping(yaml.safe_load(yaml.safe_dump(data)))
    return case.recipe, {v.rule for v in check_case(case, load_profile("h100-sxm-80gb")).violations}


def test_unsharded_recipes_do_not_get_the_param_gather_overlap():
    for sharding in ("torch_fsdp2", "none"):
        recipe, rules = judged({"tp": 1, "dp_sharding": sharding})
        assert recipe.overlap_param_gather is False and "overlap_param_gather" not in rules, sharding


def test_sharded_recipes_keep_it_and_a_stated_overlap_is_still_judged():
    recipe, rules = judged({"tp": 1})
    assert recipe.overlap_param_gather is True and "overlap_param_gather" not in rules
    recipe, rules = judged({"tp": 1, "dp_sharding": "none", "overlap_param_gather": True})
    assert "overlap_param_gather" in rules
