"""The launch line as bash runs it: redirections are not arguments, wrappers (nohup, time, ...) run the command they
are given, the launcher's own environment options reach the program, and a Slurm allocation variable's fallback
default is not the allocation. Each was misread before (a helper's QA pass over ~400 real scripts)."""
from __future__ import annotations

import pytest

from constraints.megatron.launch_script import extract_argv
from constraints.read import InputError, load_check_input
from constraints.script.lex import LaunchScriptError

ARGS = ("pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel --num-layers 32 --hidden-size 4096 "
        "--ffn-hidden-size 14336 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 "
        "--micro-batch-size 1 --global-batch-size 64 --bf16 --vocab-size 32000 --tokenizer-type NullTokenizer")
PLAIN = extract_argv(f"torchrun --nproc_per_node 8 {ARGS}\n", env={}).script_args


@pytest.mark.parametrize("tail", ["2>&1 | tee log.txt", "> log 2>&1", "|& tee log", "&> log", "2>err", ">>log",
                                  "2> err.txt > out.txt", "&"])
def test_redirections_and_pipes_are_not_arguments(tail):
    assert extract_argv(f"torchrun --nproc_per_node 8 {ARGS} {tail}\n", env={}).script_args == PLAIN


def test_eval_of_a_command_with_a_redirection():
    text = f"CMD=\"torchrun --nproc_per_node 8 {ARGS}\"\neval $CMD 2>&1 | tee log\n"
    assert extract_argv(text, env={}).script_args == PLAIN


@pytest.mark.parametrize("wrapper", ["nohup", "time", "time -p", "nice -n 5", "stdbuf -oL", "timeout 10h"])
def test_wrappers_run_the_launch_line(wrapper):
    assert extract_argv(f"{wrapper} torchrun --nproc_per_node 8 {ARGS}\n", env={}).script_args == PLAIN


def test_a_heredoc_written_with_cat_keeps_its_target():
    text = f"cat > args.txt <<EOF\n--lr 1\nEOF\ntorchrun --nproc_per_node 8 {ARGS} > log\n"
    assert extract_argv(text, env={}).script_args == PLAIN


@pytest.mark.parametrize("launcher", ["env CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node 8",
                                      "srun --export=ALL,CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node 8",
                                      "mpirun -np 8 -x CUDA_DEVICE_MAX_CONNECTIONS=1 python",
                                      "mpirun -np 8 -genv CUDA_DEVICE_MAX_CONNECTIONS 1 python"])
def test_the_launchers_environment_options_reach_the_program(launcher):
    assert extract_argv(f"{launcher} {ARGS}\n", env={}).env.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1"


def test_mpirun_x_without_a_value_passes_the_scripts_own():
    text = f"CUDA_DEVICE_MAX_CONNECTIONS=1\nmpirun -np 8 -x CUDA_DEVICE_MAX_CONNECTIONS python {ARGS}\n"
    assert extract_argv(text, env={}).env.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1"


SLURM = f"srun torchrun --nnodes ${{SLURM_NNODES:-1}} --nproc_per_node 8 {ARGS}\n"


def world(text: str, tmp_path, monkeypatch, env: dict) -> int:
    for name in ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "job.sh"
    path.write_text(text)
    return load_check_input(str(path), "h100-sxm-80gb", None, None).case.placement.world_size


def test_a_slurm_node_count_default_is_not_the_allocation(tmp_path, monkeypatch):
    # #SBATCH --nodes=2: under sbatch SLURM_NNODES is 2, not the script's fallback 1
    assert world("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n" + SLURM, tmp_path, monkeypatch, {}) == 16
    assert world(SLURM, tmp_path, monkeypatch, {"SLURM_NNODES": "4"}) == 32
    with pytest.raises(InputError, match=r"--nnodes \$\{SLURM_NNODES\}"):  # nothing says the size: asked, not guessed
        world(SLURM, tmp_path, monkeypatch, {})


def test_the_job_script_reads_the_allocation_sbatch_sets_from_its_sbatch_lines(tmp_path, monkeypatch):
    """sbatch sets SLURM_NNODES / SLURM_JOB_NUM_NODES, SLURM_NTASKS, SLURM_NTASKS_PER_NODE and SLURM_GPUS_PER_NODE
    from the job's options (sbatch man page, OUTPUT ENVIRONMENT VARIABLES), so a script that computes from them reads
    its own #SBATCH lines, whatever this process's environment holds."""
    job = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
           "GBS=$(( ${SLURM_NNODES:-1} * 16 ))\n"
           "srun torchrun --nnodes $SLURM_JOB_NUM_NODES --nproc_per_node $SLURM_GPUS_PER_NODE pretrain_gpt.py "
           "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
           "--micro-batch-size 1 --global-batch-size $GBS --vocab-size 1000 --bf16 "
           "--tensor-model-parallel-size $SLURM_GPUS_PER_NODE\n")
    argv = extract_argv(job, env={})
    assert argv.script_args[argv.script_args.index("--global-batch-size") + 1] == "32"
    assert argv.script_args[argv.script_args.index("--tensor-model-parallel-size") + 1] == "4"
    assert world(job, tmp_path, monkeypatch, {}) == 8
    other = extract_argv(job, env={"SLURM_NNODES": "4"})  # check run inside another allocation
    assert other.script_args[other.script_args.index("--global-batch-size") + 1] == "32"
    assert any("SLURM_NNODES=4 in this environment is not the job's" in w for w in other.allocation)


def test_a_bare_torchrun_starts_one_process_per_node(tmp_path, monkeypatch):
    """torch/distributed/run.py: --nproc-per-node defaults to "1" and --nnodes to "1:1"; said in a warning."""
    path = tmp_path / "job.sh"
    path.write_text(f"torchrun {ARGS}\n")
    loaded = load_check_input(str(path), "h100-sxm-80gb", None, None)
    assert loaded.case.placement.world_size == 1
    assert any("1 process per node" in w.message for w in loaded.warnings)
    assert load_check_input(str(path), "h100-sxm-80gb", 1, 8).case.placement.world_size == 8


def test_eval_of_a_launch_line_with_an_unknown_argument_names_it():
    """Pai-Megatron-Patch run scripts build `run_cmd="torchrun ... ${load_options} ... ${current_time}"` and
    `eval ${run_cmd}`: the command is known, so the eval is followed and the unknown argument is named (it was refused as
    an `eval` not followed); an eval whose command itself is unknown is still not followed."""
    launch = ARGS.replace("pretrain_gpt.py", "pretrain_gpt.py ${load_options}")
    text = ('current_time=$(date "+%Y.%m.%d")\n'
            f'run_cmd="torchrun --nproc_per_node 8 {launch} --tensorboard-dir /out/${{current_time}}"\n'
            "eval ${run_cmd}\n")
    with pytest.raises(LaunchScriptError, match=r"\$load_options, which is not set"):
        extract_argv(text, env={})
    assert "--tensorboard-dir" in extract_argv(text, env={"load_options": "--seed 1"}).script_args
    with pytest.raises(LaunchScriptError, match=r"`eval` of a command check cannot know not followed"):
        extract_argv(f"eval $(build_cmd) {ARGS}\n", env={})
