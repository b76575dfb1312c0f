"""Inputs a new user brings that `check` refused with a misleading line (found by QA): a training script started
through a wrapper at the top of the script (Megatron-LM's DeepSeek-V3 GB200 guide runs `/path/to/bindpcie
/path/to/pretrain_gpt.py ...`; under srun it was read), a script saved with Windows line endings (every line said
"does not end in `\\`"), a recipe saved as .json, .YAML or with no extension, and `--model` given an HF model folder."""
from __future__ import annotations

import json
import shutil

import pytest
import yaml

import shardplan
from constraints.models.load import MODELS_DIR, load_model
from tests.helpers.builders import REPO

ARGS = ("--tensor-model-parallel-size 2 --pipeline-model-parallel-size 1 --num-layers 32 --hidden-size 4096 "
        "--num-attention-heads 32 --ffn-hidden-size 14336 --group-query-attention --num-query-groups 8 --seq-length 4096 "
        "--max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 64 --bf16 --swiglu --normalization RMSNorm "
        "--position-embedding-type rope --untie-embeddings-and-output-weights --disable-bias-linear --vocab-size 128256 "
        "--tokenizer-type NullTokenizer --train-iters 10 --lr 1e-4")
EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"


def _check(path, **kw):
    return shardplan.check(str(path), hardware="h100-sxm-80gb", nodes=1, gpus_per_node=8, **kw)


@pytest.mark.parametrize("wrapper", ["/path/to/bindpcie", "./bind.sh", "bindpcie"])
def test_a_wrapper_that_runs_the_training_script_is_read(tmp_path, wrapper):
    script = tmp_path / "train.sh"
    script.write_text(f"#!/bin/bash\n{wrapper} \\\n  /path/to/megatron-lm/pretrain_gpt.py \\\n  {ARGS}\n")
    res = _check(script)
    assert (res.recipe.tp, res.recipe.dp(8)) == (2, 4)


def test_a_bare_command_naming_the_script_is_not_a_launch(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text(f"#!/bin/bash\necho pretrain_gpt.py {ARGS}\n")
    with pytest.raises(shardplan.ShardplanError, match="pretrain_"):
        _check(script)


def test_windows_line_endings_are_named(tmp_path):
    script = tmp_path / "train.sh"
    script.write_bytes(f"#!/bin/bash\r\ntorchrun --nproc-per-node 8 pretrain_gpt.py \\\r\n  {ARGS}\r\n".encode())
    with pytest.raises(shardplan.ShardplanError, match=r"Windows \(CRLF\) line endings.*dos2unix"):
        _check(script)


@pytest.mark.parametrize("name", ["recipe.json", "recipe.YAML", "recipe"])
def test_a_recipe_is_read_whatever_its_file_is_named(tmp_path, name):
    data = yaml.safe_load(EXAMPLE.read_text())
    path = tmp_path / name
    path.write_text(json.dumps(data) if not name.endswith(".YAML") else EXAMPLE.read_text())
    want = shardplan.check(str(EXAMPLE))
    got = shardplan.check(str(path))
    assert got.recipe == want.recipe and got.legal == want.legal and got.memory.peak_bytes == want.memory.peak_bytes


def test_model_given_an_hf_folder_reads_its_config_json(tmp_path):
    folder = tmp_path / "Llama-3.1-8B"
    folder.mkdir()
    shutil.copy(MODELS_DIR / "Llama-3.1-8B.json", folder / "config.json")
    assert load_model(str(folder)) == load_model("Llama-3.1-8B")
