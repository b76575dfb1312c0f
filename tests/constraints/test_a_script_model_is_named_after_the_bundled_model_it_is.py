"""A model read from a script's Megatron flags shows under the bundled model's name when it is that model to the last
field, so a user sees the script was read as meant; any other shape is named after the file (issue 31: it showed as
'megatron-args', the SLURM job name too)."""
from __future__ import annotations

from constraints.read import load_check_input
from shardplan import api


def test_a_rendered_llama_script_reads_back_as_llama(tmp_path):
    script = tmp_path / "train.sh"
    api.render("constraints/examples/llama3-70b-h100.yaml", output=str(script))
    assert load_check_input(str(script), "h100-sxm-80gb", None, None).case.model.name == "Llama-3.1-70B"


def test_a_shape_no_bundled_model_has_is_named_after_its_file(tmp_path):
    args = tmp_path / "tiny-gpt.args"
    args.write_text("--num-layers 3 --hidden-size 512 --num-attention-heads 8 --vocab-size 32000 --seq-length 1024 "
                    "--max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 8 --bf16\n")
    assert load_check_input(str(args), "h100-sxm-80gb", 1, 8).case.model.name == "tiny-gpt"
