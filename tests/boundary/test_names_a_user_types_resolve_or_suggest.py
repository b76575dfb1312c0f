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


@pytest.mark.parametrize("typed, meant", [("meta-llama/Llama-3.1-70B", "Llama-3.1-70B"), ("Qwen/Qwen3-8B", "Qwen3-8B"),
                                          ("deepseek-ai/DeepSeek-V3", "DeepSeek-V3"),
                                          ("meta-llama/Meta-Llama-3.1-8B", "Llama-3.1-8B")])
def test_a_hub_id_of_a_bundled_model_is_that_model(typed, meant):
    assert load_model(typed).name == load_model(meant).name


def test_a_hub_id_of_another_model_says_how_to_get_its_config():
    with pytest.raises(ModelError, match=r"no bundled model 'Llama-3.3-70B-Instruct'; did you mean .*huggingface-cli download"):
        load_model("meta-llama/Llama-3.3-70B-Instruct")


def test_a_hub_id_shaped_path_that_exists_is_read_as_the_path(tmp_path, monkeypatch):
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "Qwen3-8B.yaml").write_text(
        "num_layers: 2\nhidden_size: 256\nffn_hidden_size: 512\nnum_attention_heads: 4\nvocab_size: 1000\n")
    monkeypatch.chdir(tmp_path)
    assert load_model("org/Qwen3-8B.yaml").num_layers == 2


@pytest.mark.parametrize("typed, meant", [("h100-80gb", "h100-sxm-80gb"), ("DGX-B200", "b200"), ("mi300", "mi300x"),
                                          ("H100-SXM5", "h100-sxm-80gb"), ("a100-80gb", "a100-sxm-80gb")])
def test_a_product_name_of_a_bundled_part_is_that_profile(typed, meant):
    assert load_profile(typed).name == meant


@pytest.mark.parametrize("typed", ["a100-40gb", "H100-PCIe", "h100-nvl"])
def test_another_part_is_refused_with_why_not_guessed(typed):
    with pytest.raises(ProfileError, match=r"is not a bundled profile: .*write a profile YAML"):
        load_profile(typed)


def test_an_unknown_profile_names_the_listing_command_not_every_profile():
    with pytest.raises(ProfileError) as info:
        load_profile("h900")
    assert "shardplan hardware" in str(info.value) and "mi355x" not in str(info.value)


def test_the_cli_takes_names_as_people_write_them():
    """As a user types it: a product name of the part, a hub id of the model; a part that is not bundled is refused."""
    from tests.helpers.builders import REPO, run_cli

    example = str(REPO / "constraints" / "examples" / "llama3-70b-h100.yaml")
    code, out, err = run_cli("check", example, "--hardware", "H100-80GB", "--model", "meta-llama/Llama-3.1-70B")
    assert code == 0, err
    assert out.startswith("Llama-3.1-70B (70.6 B parameters) on 64 x h100-sxm-80gb")
    code, _, err = run_cli("check", example, "--hardware", "a100-40gb")
    assert code == 2 and err.startswith("error: --hardware: 'a100-40gb' is not a bundled profile: the A100 40GB")
