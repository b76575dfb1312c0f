"""extract_argv on launch scripts shaped like Megatron-LM's examples/ (gpt3, mixtral, llama fp8), an
argument file, srun/#SBATCH, env defaults and the bash corner cases those scripts rely on."""

import pytest

from constraints.megatron.launch_script import LaunchScriptError, extract_argv
from tests.helpers.builders import TESTS

SCRIPTS = TESTS / "data" / "scripts"


def read(name: str) -> str:
    return (SCRIPTS / name).read_text()


def flag_value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_gpt3_shape_arrays_arithmetic_and_positional_paths():
    cmd = extract_argv(read("gpt_dense_distributed.sh"))
    assert cmd.launcher == "torchrun" and cmd.script == "pretrain_gpt.py"
    assert cmd.distributed["nproc_per_node"] == 8 and cmd.distributed["nnodes"] == 4
    assert (cmd.num_nodes, cmd.gpus_per_node) == (4, 8)
    assert cmd.env == {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    a = cmd.script_args
    assert a[:2] == ["--num-layers", "48"]  # the array's comment did not leak in
    assert "#" not in " ".join(a) and "head" not in a
    assert flag_value(a, "--lr") == "1.0e-4" and flag_value(a, "--min-lr") == "1.0e-5"
    assert flag_value(a, "--num-layers-per-virtual-pipeline-stage") == "3"
    # $1/$2 are unset: allowed only as values of no-effect flags, shown as ${1}
    assert flag_value(a, "--save") == "${1}" and flag_value(a, "--data-path") == "${2}"
    assert cmd.unresolved == ["1", "2"]


def test_gpt3_shape_positional_values_from_env():
    cmd = extract_argv(read("gpt_dense_distributed.sh"), env={"1": "/ckpt", "2": "/data/prefix"})
    assert flag_value(cmd.script_args, "--save") == "/ckpt" and cmd.unresolved == []


def test_mixtral_shape_defaults_env_override_and_if_branch():
    cmd = extract_argv(read("moe_distributed.sh"))
    # NNODES=${SLURM_NNODES:-"2"}: Slurm sets SLURM_NNODES to the allocation; the fallback is not it, so it stays unknown
    assert cmd.distributed["nnodes"] == "${SLURM_NNODES}" and cmd.distributed["master_port"] == 6000
    assert flag_value(cmd.script_args, "--moe-layer-freq") == "([0]*2+[1]*14)"  # quoted array element kept whole
    assert "--wandb-project" not in cmd.script_args  # [ -n "${WANDB_API_KEY}" ] is false when unset
    assert flag_value(cmd.script_args, "--tensorboard-dir") == "${1}/tensorboard"
    cmd = extract_argv(read("moe_distributed.sh"), env={"SLURM_NNODES": "8", "WANDB_API_KEY": "k"})
    assert cmd.distributed["nnodes"] == 8
    assert flag_value(cmd.script_args, "--wandb-project") == "moe"


def test_llama_fp8_shape_conditionals_and_quoted_elements():
    cmd = extract_argv(read("llama_fp8.sh"))
    a = cmd.script_args
    # "--fp8-format hybrid" is one array element; unquoted ${DTYPE_ARGS[@]} word-splits it, as bash does
    assert flag_value(a, "--fp8-format") == "hybrid" and "--fp8-param-gather" in a
    assert flag_value(a, "--global-batch-size") == "128"  # $((4*32))
    assert flag_value(a, "--tensor-model-parallel-size") == "2"
    assert "--mock-data" in a and flag_value(a, "--tokenizer-type") == "NullTokenizer"
    assert "--use-distributed-optimizer" in a  # TRAINING_ARGS+=("${DDP_ARGS[@]}")
    assert flag_value(a, "--lr") == "0.00015" and "peak" not in a
    assert flag_value(a, "--save") == "checkpoints/llama_fp8"  # ${1:-"..."} default
    assert cmd.env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"


def test_llama_fp8_shape_env_selects_other_branches():
    cmd = extract_argv(read("llama_fp8.sh"), env={"DTYPE": "mxfp8", "TP_SIZE": "4", "CUDA_DEVICE_MAX_CONNECTIONS": "8", "2": "/d"})
    a = cmd.script_args
    assert flag_value(a, "--fp8-recipe") == "mxfp8" and "--fp8-param-gather" not in a
    assert flag_value(a, "--tensor-model-parallel-size") == "4"
    assert flag_value(a, "--data-path") == "/d" and "--mock-data" not in a
    assert cmd.env["CUDA_DEVICE_MAX_CONNECTIONS"] == "8"


def test_argument_file_many_flags_per_line_with_comments():
    cmd = extract_argv(read("qwen_moe.args"))
    assert cmd.launcher is None and cmd.script is None
    a = cmd.script_args
    assert a[:6] == ["--num-layers", "24", "--hidden-size", "2048", "--num-attention-heads", "32"]
    assert "Argument" not in " ".join(a)
    assert a[a.index("--recompute-modules") + 1: a.index("--recompute-modules") + 3] == ["moe_act", "layernorm"]


def test_srun_and_sbatch_values_and_string_variable_splitting():
    cmd = extract_argv(read("srun_layout.sh"))
    assert cmd.launcher == "srun" and cmd.script == "pretrain_gpt.py"
    assert cmd.distributed["nodes"] == 16 and cmd.distributed["ntasks_per_node"] == 8
    assert (cmd.num_nodes, cmd.gpus_per_node) == (16, 8)
    a = cmd.script_args
    assert a[:2] == ["--num-layers", "61"] and flag_value(a, "--vocab-size") == "129280"
    assert flag_value(a, "--pipeline-model-parallel-layout") == "Et|(tt|)*29,tt|L"


def test_python_module_launcher_prefix_env_and_equals_form():
    text = 'NP=4\nCUDA_DEVICE_MAX_CONNECTIONS=1 python -m torch.distributed.run --nproc-per-node=$NP --nnodes=1 ' \
           'pretrain_gpt.py --tensor-model-parallel-size=$NP --bf16; echo done\n'
    cmd = extract_argv(text)
    assert cmd.launcher == "torchrun" and cmd.distributed == {"nproc_per_node": 4, "nnodes": 1}
    assert cmd.env == {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    assert cmd.script_args == ["--tensor-model-parallel-size=4", "--bf16"]


def test_assign_default_and_alternate_expansions():
    text = 'A=${X:=3}\nB=${X}\nC=${Y:+yes}\nD=${Z-"a b"}\npython pretrain_gpt.py --num-layers $((A * B - 1)) --seq-length "$D" --x $((7/2))'
    a = extract_argv(text).script_args
    assert a == ["--num-layers", "8", "--seq-length", "a b", "--x", "3"]


def test_unset_variable_in_a_modelled_flag_is_a_one_line_error_naming_it():
    with pytest.raises(LaunchScriptError, match=r"--tensor-model-parallel-size uses \$TP_SIZE") as e:
        extract_argv("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP_SIZE\n")
    assert "\n" not in str(e.value)
    with pytest.raises(LaunchScriptError, match=r"\$\(nproc\)"):
        extract_argv("python pretrain_gpt.py --micro-batch-size $(nproc)\n")


@pytest.mark.parametrize("text, match", [
    ("echo hello\nmkdir -p x\n", "no `torchrun"),
    ("", "empty"),
    ('python pretrain_gpt.py --lr "0.1\n', "unterminated quote"),
    ("if [[ $(hostname) =~ gpu ]]; then\nA=1\nfi\npython pretrain_gpt.py --micro-batch-size $A\n", "line 1"),
    ("A=1\nfi\npython pretrain_gpt.py\n", "fi"),
    ("python pretrain_gpt.py --num-layers ${N:?set N}\n", "N"),
])
def test_bad_scripts(text, match):
    with pytest.raises(LaunchScriptError, match=match):
        extract_argv(text)


def test_loops_and_functions_are_skipped_not_run():
    text = "f() {\n  python pretrain_gpt.py --bad\n}\nfor i in 1 2; do\n  A=$i\ndone\nexit_early=0\n" \
           "python pretrain_gpt.py --num-layers 2\n"
    assert extract_argv(text).script_args == ["--num-layers", "2"]


def test_star_and_at_expansions_split_as_bash_does():
    text = 'A=(--lr "1e-4 x")\npython pretrain_gpt.py --data-path "$*" --split "${A[*]}" "${A[@]}"\n'
    got = extract_argv(text, env={"1": "a", "2": "b c"}).script_args
    assert got == ["--data-path", "a b c", "--split", "--lr 1e-4 x", "--lr", "1e-4 x"]  # bash 5 gives the same


def test_a_functions_arguments_are_not_reported_as_taken_from_the_environment():
    # `launch 2 2` sets $1 $2 inside the function: the script's own arguments ($1 at the top, read with a default) are
    # the only positional values the environment could have given
    text = ("#!/bin/bash\nSIZE=${1:-8B}\nlaunch() {\n  local tp=$1 pp=$2\n"
            "  torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $tp --pipeline-model-parallel-size $pp\n"
            "}\nlaunch 2 4\nset -- 8\necho $1\n")
    cmd = extract_argv(text)
    assert cmd.script_args[-4:] == ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "4"]
    assert cmd.env_taken == {}
    given = extract_argv(text, env={"1": "70B"})
    assert given.env_taken == {"1": "70B"}
