"""`check`'s file, YAML-key and launch-script messages: one line naming the file, key or variable, environment values
read with a warning (secrets never printed), sourced files named."""
from __future__ import annotations

import json

import pytest

from tests.helpers.builders import A5_ARGS, run_cli

# --- finding 12: check's file, YAML key and launch-script messages ---------------------------------------

@pytest.mark.parametrize("name", ["bad2.yaml", "bad2.sh", "args.txt"])
def test_non_utf8_file_names_the_file_and_what_was_expected(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"\x00\x01\xff\xfe garbage")
    rc, out, err = run_cli("check", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8")
    assert rc == 2 and out == ""
    assert err == f"error: {path}: not UTF-8 text (byte 0xff at offset 2); give a YAML recipe, a Megatron launch script or an argument file\n"


def test_binary_utf8_file_names_the_file(tmp_path):
    from constraints.read import InputError, load_check_input

    path = tmp_path / "r.yaml"
    path.write_bytes(b"\x00\x01 garbage")
    with pytest.raises(InputError, match=r"r.yaml: a binary file \(NUL byte at offset 0\); give a YAML recipe"):
        load_check_input(str(path), None, None, None)


def test_yaml_nodes_zero_is_reported_under_the_key_written(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("model: Llama-3.1-8B\nhardware: h100-sxm-80gb\nnodes: 0\ngpus_per_node: 8\n"
                    "job: {seq_length: 4096, global_batch_size: 64}\nrecipe: {tp: 1}\n")
    rc, _, err = run_cli("check", str(path))
    assert rc == 2 and err == "error: nodes: Input should be greater than 0 (got 0)\n"


def test_a_plain_value_where_the_recipe_takes_a_mapping_gets_an_example_of_one(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("model: Llama-3.1-8B\nhardware: h100-sxm-80gb\nnodes: 1\ngpus_per_node: 8\n"
                    "job: {seq_length: 4096, global_batch_size: 64}\nrecipe: {tp: 1, recompute: partial}\n")
    rc, _, err = run_cli("check", str(path))
    assert rc == 2 and err.startswith("error: recipe.recompute: ") and "(got 'partial')" in err
    assert err.rstrip().endswith("give a mapping, e.g. {granularity: selective} or {granularity: full, method: uniform, num_layers: 1}")
    fixed = tmp_path / "ok.yaml"
    fixed.write_text(path.read_text().replace("recompute: partial", "recompute: {granularity: full, method: uniform, num_layers: 1}"))
    assert run_cli("check", str(fixed))[0] == 0


UNSET_TP_SCRIPT = """#!/bin/bash
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py \\
  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention --num-query-groups 8 \\
  --seq-length 4096 --max-position-embeddings 131072 --swiglu --normalization RMSNorm --untie-embeddings-and-output-weights \\
  --position-embedding-type rope --vocab-size 128256 --disable-bias-linear \\
  --micro-batch-size 1 --global-batch-size 64 --bf16 --tensor-model-parallel-size $TP_SIZE
"""


def test_launch_script_variable_set_in_the_environment_is_read_and_warned(tmp_path, monkeypatch):
    from constraints.read import load_check_input

    script = tmp_path / "s.sh"
    script.write_text(UNSET_TP_SCRIPT)
    monkeypatch.setenv("TP_SIZE", "2")
    loaded = load_check_input(str(script), "h100-sxm-80gb", None, None)
    assert loaded.case.recipe.tp == 2
    assert [(w.rule, w.severity) for w in loaded.warnings] == [("env_variable", "warning")]
    assert "took TP_SIZE=2 from the environment" in loaded.warnings[0].message


def test_launch_script_variable_from_the_environment_through_the_cli(tmp_path):
    script = tmp_path / "s.sh"
    script.write_text(UNSET_TP_SCRIPT)
    rc, out, err = run_cli("check", str(script), "--hardware", "h100-sxm-80gb", "--json", "--no-projection",
                           env={"TP_SIZE": "4"})
    assert rc in (0, 1), err
    assert json.loads(out)["recipe"]["tp"] == 4


def test_launch_script_variable_unset_everywhere_says_how_to_set_it(tmp_path, monkeypatch):
    from constraints.read import InputError, load_check_input

    script = tmp_path / "s.sh"
    script.write_text(UNSET_TP_SCRIPT)
    monkeypatch.delenv("TP_SIZE", raising=False)
    with pytest.raises(InputError, match=r"uses \$TP_SIZE, which is not set; set TP_SIZE in the script or in the "
                                         r"environment \(TP_SIZE=VALUE shardplan check \.\.\.\)"):
        load_check_input(str(script), "h100-sxm-80gb", None, None)


def test_variable_the_script_sets_is_not_taken_from_the_environment(tmp_path, monkeypatch):
    from constraints.read import load_check_input

    script = tmp_path / "s.sh"
    script.write_text(UNSET_TP_SCRIPT.replace("#!/bin/bash\n", "#!/bin/bash\nTP_SIZE=8\n"))
    monkeypatch.setenv("TP_SIZE", "2")
    loaded = load_check_input(str(script), "h100-sxm-80gb", None, None)
    assert loaded.case.recipe.tp == 8 and loaded.warnings == []


def test_secret_environment_values_are_not_printed(tmp_path, monkeypatch):
    """check output lands in CI logs; a variable named like a credential is reported by name only."""
    from constraints.read import load_check_input

    monkeypatch.setenv("WANDB_API_KEY", "wb_SECRET456")
    monkeypatch.setenv("TP_SIZE", "2")
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\nexport WANDB_API_KEY\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
                      + A5_ARGS.strip().replace("--tensor-model-parallel-size 2", "--tensor-model-parallel-size $TP_SIZE")
                      + " --max-position-embeddings 131072 --wandb-exp-name x --wandb-api-key $WANDB_API_KEY\n")
    loaded = load_check_input(str(script), "h100-sxm-80gb", 1, 8)
    text = " ".join(w.message for w in loaded.warnings)
    assert "wb_SECRET456" not in text and "WANDB_API_KEY=<redacted>" in text and "TP_SIZE=2" in text
    assert loaded.case.recipe.tp == 2


def test_a_sourced_file_is_named_not_ignored(tmp_path):
    """`source ./cluster_env.sh` may set what the verdict depends on; check says it did not read it."""
    from constraints.read import load_check_input

    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\nsource ./cluster_env.sh\n. /etc/profile.d/nccl.sh\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
                      + A5_ARGS.strip() + " --max-position-embeddings 131072\n")
    loaded = load_check_input(str(script), "h100-sxm-80gb", 1, 8)
    sourced = [w for w in loaded.warnings if w.rule == "sourced_file"]
    assert [("./cluster_env.sh" in w.message, "/etc/profile.d/nccl.sh" in w.message) for w in sourced] == [(True, False), (False, True)]
