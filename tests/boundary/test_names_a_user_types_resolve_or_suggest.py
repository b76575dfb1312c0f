"""A user's spelling of a bundled profile or model: one meaning is taken, several are offered, a path is a path."""
from __future__ import annotations

import pytest

from boundary.names import close_names, did_you_mean, resolve_name
from constraints.models.load import ModelError, bundled_models, load_model
from hardware.profile import ProfileError, available_profiles, load_profile

PROFILES = available_profiles()


@pytest.mark.parametrize("typed, meant", [("H100", "h100-sxm-80gb"), ("h100", "h100-sxm-80gb"), ("A100", "a100-sxm-80gb"),
                                          ("gb200", "gb200-nvl72"), ("B200", "b200"), ("h200-SXM", "h200-sxm-141gb")])
def test_a_profile_prefix_that_one_part_has_is_that_part(typed, meant):
    assert resolve_name(typed, PROFILES) == meant
    assert load_profile(typed).name == load_profile(meant).name


def test_a_prefix_two_parts_share_is_no_name():
    assert resolve_name("mi3", PROFILES) is None  # mi300x, mi325x, mi355x
    assert resolve_name("gb", PROFILES) is None


def test_a_typo_is_answered_with_the_closest_names_not_a_dump():
    with pytest.raises(ModelError) as info:
        load_model("Llama-3.1-70X")
    message = str(info.value)
    assert "did you mean Llama-3.1-70B" in message and "\n" not in message
    assert "Mixtral" not in message  # the bundled list is not dumped; `shardplan models` is named instead
    assert "did you mean h100-sxm-80gb" in did_you_mean("h900", PROFILES)
    assert close_names("deepsek-v3", bundled_models()) == ["DeepSeek-V3"]


def test_a_mistyped_path_is_a_missing_file_not_an_unknown_model(tmp_path):
    with pytest.raises(ModelError, match=r"no file '\./qwen/config\.jsn'; check the path"):
        load_model("./qwen/config.jsn")
    with pytest.raises(ProfileError, match=r"--hardware: no file"):
        load_profile(str(tmp_path / "h100.yaml"))


def test_model_names_match_whatever_the_case():
    assert load_model("llama-3.1-70b").name == load_model("Llama-3.1-70B").name
