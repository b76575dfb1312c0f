"""A model file is shown under the name its user knows (issue 31: an HF folder's model showed as `config`): the
download folder, huggingface_hub's cache entry, the config's `_name_or_path`, or the file's stem."""
from __future__ import annotations

import json

from constraints.models.load import load_model
from tests.helpers.builders import LLAMA_8B_HF

SHA = "0e9e39f249a16976918f6564b8830bc894c89659"  # a snapshot folder of huggingface_hub's cache is a commit hash


def _write(path, **extra):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**LLAMA_8B_HF, **extra}))
    return str(path)


def test_a_download_folder_names_its_config(tmp_path):
    assert load_model(_write(tmp_path / "Llama-3.1-8B-Instruct" / "config.json")).name == "Llama-3.1-8B-Instruct"


def test_the_hub_cache_entry_names_a_snapshot(tmp_path):
    path = tmp_path / "hub" / "models--meta-llama--Llama-3.1-8B" / "snapshots" / SHA / "config.json"
    assert load_model(_write(path)).name == "Llama-3.1-8B"


def test_name_or_path_names_a_hash_folder_outside_the_cache(tmp_path):
    path = tmp_path / "copies" / SHA / "config.json"
    assert load_model(_write(path, _name_or_path="/data/ckpt/my-llama-8b-sft/")).name == "my-llama-8b-sft"


def test_any_other_file_is_named_by_its_stem(tmp_path):
    assert load_model(_write(tmp_path / "llama8b-variant.json")).name == "llama8b-variant"
