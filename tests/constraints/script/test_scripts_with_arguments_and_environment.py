"""Scripts as bash runs them (issue 31): `check SCRIPT -- ARG...` gives the script its positional arguments,
`--env NAME=VALUE` states the launch environment, $PWD follows bash's start-up rule, and an argument file's launch
environment is unknown (a warning naming what to set), never judged as empty. Each runs the CLI as a user types it."""
from __future__ import annotations

import json
import os
import shutil

from tests.helpers.builders import TESTS, run_cli

MIXTRAL = TESTS / "data" / "scripts" / "megatron_examples" / "train_mixtral_8x7b_distributed.sh"  # Megatron-LM's own
SP_MODEL = TESTS / "data" / "tokenizers" / "tiny_sp.model"  # 250 pieces (tests/data/tokenizers/build_fixtures.py)
H100 = ("--hardware", "h100-sxm-80gb")
ARGS = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
        "--vocab-size 32000 --micro-batch-size 1 --global-batch-size 32 --bf16 --tensor-model-parallel-size 2\n")


def _json(out: str) -> dict:
    return json.loads(out)


def test_megatron_mixtral_example_reads_its_tokenizer_from_its_second_argument(tmp_path):
    code, out, err = run_cli("check", str(MIXTRAL), *H100, "--nodes", "4", "--no-projection", "--json",
                             "--", "/ckpt/mixtral", str(SP_MODEL), "/data/mixtral_text_document")
    assert code == 0, err
    data = _json(out)
    notes = [w["message"] for w in data["warnings"]]
    assert any(n.startswith(f"vocabulary 250 from the SentencePiece model {SP_MODEL}") for n in notes), notes
    assert data["model_params"]["total"] > 0


def test_without_its_arguments_the_refusal_says_to_pass_them():
    code, _, err = run_cli("check", str(MIXTRAL), *H100, "--nodes", "4", "--no-projection")
    assert code == 2 and err.count("\n") == 1, err
    assert "--tokenizer-model $2" in err and "after --" in err, err


def test_positional_parameters_count_and_list(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text("export CUDA_DEVICE_MAX_CONNECTIONS=1\nPP=$1\nshift\nTP=$#\n"
                      "torchrun --nproc_per_node 8 pretrain_gpt.py " + ARGS.replace(
                          "--tensor-model-parallel-size 2", '--tensor-model-parallel-size $TP '
                          '--pipeline-model-parallel-size $PP "$@"'))
    code, out, err = run_cli("check", str(script), *H100, "--no-projection", "--json", "--", "2",
                             "--micro-batch-size", "2")
    assert code == 0, err
    data = _json(out)
    recipe = data["recipe"]
    # PP=$1; after `shift`, $# = 2 (TP) and "$@" = --micro-batch-size 2 (argparse: the last one wins)
    assert (recipe["tp"], recipe["pp"], recipe["mbs"]) == (2, 2, 2)
    assert not [w for w in data["warnings"] if w["rule"] == "env_variable"]  # arguments given are no surprise


def test_an_argument_file_leaves_the_environment_unknown_unless_env_states_it(tmp_path):
    flags = tmp_path / "a.args"
    flags.write_text(ARGS)
    common = ("check", str(flags), *H100, "--nodes", "1", "--gpus-per-node", "8", "--no-projection", "--json")
    # the shell's variable is not the launch's: an argument file carries no environment
    code, out, err = run_cli(*common, env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"})
    assert code == 0, err
    data = _json(out)
    assert data["legal"] and not data["violations"]
    unknown = [w for w in data["warnings"] if w["rule"] == "launch_environment_unknown"]
    assert len(unknown) == 1 and "--env CUDA_DEVICE_MAX_CONNECTIONS=1" in unknown[0]["fix"], data["warnings"]
    code, out, _ = run_cli(*common, "--env", "CUDA_DEVICE_MAX_CONNECTIONS=1")
    data = _json(out)
    assert code == 0 and not [w for w in data["warnings"] if w["rule"] == "launch_environment_unknown"]
    code, out, _ = run_cli(*common, "--env", "CUDA_DEVICE_MAX_CONNECTIONS=8")
    assert code == 1
    assert [v["rule"] for v in _json(out)["violations"]] == ["cuda_device_max_connections"]


def test_env_is_the_environment_a_script_inherits(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py " + ARGS.replace("--micro-batch-size 1",
                                                                                    "--micro-batch-size $MBS"))
    code, out, err = run_cli("check", str(script), *H100, "--no-projection", "--json", "--env", "MBS=2",
                             "--env", "CUDA_DEVICE_MAX_CONNECTIONS=1")
    assert code == 0, err
    data = _json(out)
    assert data["recipe"]["mbs"] == 2
    assert not [w for w in data["warnings"] if w["rule"] == "env_variable"]  # stated with --env: no surprise
    code, _, err = run_cli("check", str(script), *H100, "--env", "MBS")
    assert code == 2 and "NAME=VALUE" in err and err.count("\n") == 1, err


def test_a_stale_pwd_is_reset_to_the_working_directory_as_bash_does(tmp_path):
    here, stale = tmp_path / "run", tmp_path / "elsewhere"
    here.mkdir()
    stale.mkdir()
    (here / "conf.sh").write_text("MBS=2\n")
    (stale / "conf.sh").write_text("MBS=4\n")
    script = here / "train.sh"
    script.write_text('source "$PWD/conf.sh"\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nproc_per_node 8 '
                      'pretrain_gpt.py ' + ARGS.replace("--micro-batch-size 1", "--micro-batch-size $MBS"))
    code, out, err = run_cli("check", str(script), *H100, "--no-projection", "--json", cwd=str(here),
                             env={"PWD": str(stale)})
    assert code == 0, err
    assert _json(out)["recipe"]["mbs"] == 2, out  # bash: PWD=/run (the stale /elsewhere is not kept)
    link = tmp_path / "link"
    os.symlink(here, link)
    code, out, err = run_cli("check", str(script), *H100, "--no-projection", "--json", cwd=str(here),
                             env={"PWD": str(link)})
    assert code == 0 and _json(out)["recipe"]["mbs"] == 2, err  # a PWD naming the same directory stays


def test_arguments_after_double_dash_are_refused_for_a_recipe(tmp_path):
    recipe = tmp_path / "r.yaml"
    shutil.copy(TESTS.parent / "constraints" / "examples" / "llama3-70b-h100.yaml", recipe)
    code, _, err = run_cli("check", str(recipe), "--", "x")
    assert code == 2 and err.count("\n") == 1 and "takes no positional arguments" in err, err
