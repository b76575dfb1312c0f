"""`render` of a launch script writes the recipe, not the script: it keeps the script's own data path and HF tokenizer
unless given others, and lists the script's flags it leaves out or sets otherwise (`RenderResult.not_carried`, a
`note:` line each on stderr) instead of dropping them silently."""
from click.testing import CliRunner

import shardplan
from shardplan.cli.main import cli

SCRIPT = """#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py \\
  --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \\
  --micro-batch-size 1 --global-batch-size 32 --bf16 --tensor-model-parallel-size 2 --use-distributed-optimizer \\
  --train-iters 1000 --lr 0.0001 --data-path /data/my_text_document \\
  --tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-3.1-8B --vocab-size 128256
"""


def _script(tmp_path):
    p = tmp_path / "train.sh"
    p.write_text(SCRIPT)
    return str(p)


def test_the_scripts_site_paths_are_kept_and_the_rest_is_listed(tmp_path):
    res = shardplan.render(_script(tmp_path), hardware="h100-sxm-80gb")
    assert "--data-path /data/my_text_document" in res.script
    assert "--tokenizer-model meta-llama/Llama-3.1-8B" in res.script
    assert "--train-iters 1000: rendered as 500000" in res.not_carried
    assert not [n for n in res.not_carried if n.startswith(("--lr ", "--data-path", "--tokenizer", "--tensor-model"))]


def test_paths_given_win_and_the_cli_prints_a_note_per_flag(tmp_path):
    res = shardplan.render(_script(tmp_path), hardware="h100-sxm-80gb", data_path="/scratch/other_text_document")
    assert "--data-path /scratch/other_text_document" in res.script
    assert "--data-path /data/my_text_document: rendered as /scratch/other_text_document" in res.not_carried
    out = CliRunner().invoke(cli, ["render", _script(tmp_path), "--hardware", "h100-sxm-80gb"])
    assert out.exit_code == 0 and "note: from the script, --train-iters 1000: rendered as 500000" in out.stderr


def test_a_recipe_yaml_has_nothing_to_carry():
    res = shardplan.render("constraints/examples/llama3-70b-h100.yaml")
    assert res.not_carried == []
