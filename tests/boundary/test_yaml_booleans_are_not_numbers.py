"""YAML reads `true`, `yes` and `on` as booleans, and pydantic's lax mode read a boolean given for a number as 1: a
recipe's `tp: true` was judged (and found not to fit) as TP 1, `nodes: yes` as one node, a profile's `nics_per_gpu:
yes` as one NIC (found by QA). A boolean for a number field is now refused in one line naming the field."""
from __future__ import annotations

import pytest
import yaml

import shardplan
from hardware.profile import PROFILES_DIR, ProfileError, load_profile


def _recipe(**changes) -> dict:
    data = {"model": "Llama-3.1-8B", "hardware": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8,
            "job": {"seq_length": 4096, "global_batch_size": 64}, "recipe": {"tp": 2, "pp": 1}}
    for key, value in changes.items():
        if key in ("tp", "pp"):
            data["recipe"][key] = value
        else:
            data[key] = value
    return data


@pytest.mark.parametrize("changes, field", [({"tp": True}, "recipe.tp"), ({"pp": False}, "recipe.pp"),
                                            ({"nodes": True}, "nodes")])
def test_a_boolean_for_a_recipe_number_is_refused_naming_the_field(changes, field):
    with pytest.raises(shardplan.ShardplanError, match=rf"^{field}: give a number, not (true|false)"):
        shardplan.check(_recipe(**changes))


def test_the_same_recipe_with_numbers_is_judged():
    assert shardplan.check(_recipe()).legal


def test_a_profile_boolean_for_a_number_is_refused(tmp_path):
    raw = yaml.safe_load((PROFILES_DIR / "h100-sxm-80gb.yaml").read_text())
    raw["gpus_per_node"] = True
    path = tmp_path / "part.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ProfileError, match="gpus_per_node: give a number, not true"):
        load_profile(str(path))


def test_boolean_fields_still_take_booleans():
    assert shardplan.check({**_recipe(), "recipe": {"tp": 2, "pp": 1, "sequence_parallel": True}}).legal
