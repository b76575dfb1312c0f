"""The argument list `check` reads from a launch script equals the one real bash launches.

Each script of the shape corpus (tests/data/scripts/shapes, written for these tests in the shapes of
Megatron-LM's examples/) runs under real bash with stub launchers first on PATH: `torchrun`, `python`,
`python3`, `srun` and `sbatch` record their argv as JSON; `srun` then runs the program it launches and
`sbatch` the job script it submits (a file or the here-document on its stdin), as the real tools do. The
pretrain_*.py arguments bash passed are compared with constraints.megatron.launch_script.extract_argv's, where a value
check marks unknown (`${...}`: a command's output, a variable set under a test it does not follow) matches
whatever bash produced for it (zero or more words, as an unquoted expansion may give).
Also asserted: the world size, files read and warnings check reports for the shapes where they matter.
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from constraints.megatron.launch_script import extract_argv
from tests.helpers.builders import TESTS

SHAPES = TESTS / "data" / "scripts" / "shapes"
OLDER = TESTS / "data" / "scripts"  # the first corpus (gpt3 / mixtral / llama fp8 / srun shapes)
SCRIPTS = sorted(p.name for p in SHAPES.glob("*.sh")) + sorted(f"../{p.name}" for p in OLDER.glob("*.sh"))
BASH = shutil.which("bash")

STUB = """#!{python}
import json, os, sys
name = os.path.basename(sys.argv[0])
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps([name] + sys.argv[1:]) + "\\n")
args = sys.argv[1:]
TAKES = {{"-N", "-n", "-p", "-A", "-t", "-J", "-o", "-e", "-c", "--nodes", "--ntasks", "--ntasks-per-node",
         "--gpus-per-node", "--partition", "--account", "--time", "--job-name", "--output", "--container-image",
         "--container-mounts", "--export"}}
i = 0
if name in ("srun", "sbatch"):
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in TAKES else 1
    if name == "srun" and i < len(args):
        os.execvp(args[i], args[i:])
    if name == "sbatch":
        os.execvp("bash", ["bash"] + args[i:])
"""


@pytest.fixture(scope="module")
def stub_bin(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("stubs")
    for name in ("torchrun", "python", "python3", "srun", "sbatch"):
        p = d / name
        p.write_text(STUB.format(python=sys.executable))
        p.chmod(0o755)
    return d


def _bash_launch(script: str, work: Path, stub_bin: Path) -> list[str] | None:
    """The pretrain_*.py arguments real bash passes when it runs `script` in `work`; None if it launches none."""
    log = work / "stub.log"
    env = {"PATH": f"{stub_bin}:/usr/bin:/bin", "HOME": str(work), "STUB_LOG": str(log)}
    subprocess.run([BASH, script], cwd=work, env=env, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    if not log.exists():
        return None
    for line in log.read_text().splitlines():
        argv = json.loads(line)
        for k, a in enumerate(argv):
            if fnmatch.fnmatch(os.path.basename(a), "pretrain_*.py"):
                return argv[k + 1:]
    return None


def _matches(check: list[str], bash: list[str]) -> bool:
    """check's words against bash's: a word holding `${...}` (unknown to check) matches any words bash made of it."""
    if not check:
        return not bash
    head, rest = check[0], check[1:]
    if "${" in head:
        pattern = head.replace("*", "[*]")
        pattern = re.sub(r"\$\{[^}]*\}", "*", pattern)
        if pattern == "*":
            return any(_matches(rest, bash[k:]) for k in range(len(bash) + 1))
        return bool(bash) and fnmatch.fnmatchcase(bash[0], pattern) and _matches(rest, bash[1:])
    return bool(bash) and bash[0] == head and _matches(rest, bash[1:])


def _check_launch(script: str, work: Path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "PWD": str(work)}
    return extract_argv((work / script).read_text(), env=env, script_path=str(work / script), cwd=str(work))


@pytest.fixture
def work(tmp_path) -> Path:
    shutil.copytree(OLDER, tmp_path, dirs_exist_ok=True)  # shapes/ inside, the older corpus beside it
    (tmp_path / "shapes" / "pretrain_gpt.py").write_text("")  # as in a Megatron-LM checkout (scripts test -f it)
    return tmp_path / "shapes"


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize("script", SCRIPTS)
def test_check_reads_the_argument_list_bash_launches(script, work, stub_bin):
    launched = _bash_launch(script, work, stub_bin)
    assert launched is not None, f"bash launched no pretrain script for {script}"
    clean = work.parent / "clean"
    shutil.copytree(OLDER, clean)  # a clean copy: bash's run wrote files (notes.txt, run_inner.sh)
    got = _check_launch(script, clean / "shapes").script_args
    assert _matches(got, launched), f"{script}:\n check {got}\n bash  {launched}"


def test_world_size_from_each_launcher_shape(work):
    def world(name):
        c = _check_launch(name, work)
        return c.num_nodes, c.gpus_per_node

    assert world("backquote_stamp.sh") == (2, 8)  # torchrun --nnodes $NUM_NODES --nproc_per_node $GPUS_PER_NODE
    assert world("heredoc_cmd_srun.sh") == (2, 8)  # #SBATCH --nodes / --ntasks-per-node
    assert world("sbatch_chain.sh") == (2, 8)  # sbatch --nodes=${NNODES} overrides the job file's #SBATCH --nodes=1
    assert world("arithmetic_world.sh") == (3, 8)  # srun -N $((2**3**0 + 1)) = 2**1 + 1, --ntasks-per-node 8
    assert world("sbatch_heredoc.sh") == (2, 8)  # sbatch <<EOF with #SBATCH lines in the here-document


def test_files_read_and_constructs_not_followed_are_named(work):
    chain = _check_launch("sbatch_chain.sh", work)
    assert [os.path.basename(f) for f in chain.sourced] == ["chain_config.sh", "chain_job.sh"]
    c = _check_launch("not_followed_if.sh", work)
    assert c.warnings == ["line 4: `if nvidia-smi | grep -q H100` (a test check cannot evaluate) not followed; "
                          "now unknown: LOG"]
    assert c.script_args[-1].startswith("${LOG")
    heredoc = _check_launch("heredoc_cmd_srun.sh", work)
    assert "400" not in heredoc.script_args  # the documenting here-document is never the launch line


def test_values_bash_would_produce(work):
    def flag(name, f):
        a = _check_launch(name, work).script_args
        return a[a.index(f) + 1]

    assert flag("arithmetic_world.sh", "--num-layers") == "8"  # $(( -2**2 * 2 )): unary minus binds first
    assert flag("arithmetic_world.sh", "--global-batch-size") == "48"  # (7/2) truncates to 3
    assert flag("trim_and_defaults.sh", "--tensor-model-parallel-size") == "2"  # ${TAG%%_*} then ${X#tp}
    assert flag("trim_and_defaults.sh", "--save") == "/runs/gpt/tp2_pp1"
    assert flag("for_function_unset.sh", "--micro-batch-size") == "2"  # unset DEBUG hides it; elif taken
    assert flag("case_options.sh", "--tensor-model-parallel-size") == "2"  # no options: the while loop never runs
    tp8 = extract_argv((work / "case_options.sh").read_text(), env={"1": "--tp", "2": "8", "3": "--fp8"})
    assert tp8.script_args[tp8.script_args.index("--tensor-model-parallel-size") + 1] == "8"
    assert "--fp8-format" in tp8.script_args
    assert flag("cmdsubst_not_flags.sh", "--num-layers") == "8"  # `$(pick_dir --num-layers 400)` is one unknown


def test_six_forms_bash_reads_its_own_way(work):
    """Issue 33's six scripts read otherwise than bash: each value below is what bash passes (the parametrised test
    above compares the whole list with real bash)."""
    def args(name):
        return _check_launch(name, work).script_args

    def flag(name, f):
        a = args(name)
        return a[a.index(f) + 1]

    assert flag("escaped_dollar_in_quotes.sh", "--wandb-exp-name") == "exp$1-$HOME"  # "\$" is a literal $
    assert flag("escaped_dollar_in_quotes.sh", "--wandb-project") == "`date`"
    assert flag("anchored_substitution.sh", "--save") == "/scratch/runs/data/gpt"  # ${X/#p/r}: only at the start
    assert flag("anchored_substitution.sh", "--load") == "/data/runs/data/base"  # ${X/%p/r}: only at the end
    assert flag("anchored_substitution.sh", "--tensorboard-dir") == "/data/runs/data/gpt"  # no match at the start
    assert flag("local_scope.sh", "--tensor-model-parallel-size") == "1"  # the caller's TP comes back
    assert flag("local_scope.sh", "--pipeline-model-parallel-size") == "1"  # `local PP` then PP=2 stays local
    assert flag("local_scope.sh", "--expert-model-parallel-size") == "4"  # a callee sees the local
    assert flag("case_fall_through.sh", "--pipeline-model-parallel-size") == "2"  # ;& ran medium's PP=2
    assert flag("case_fall_through.sh", "--global-batch-size") == "64"  # ;;& tested *all, then large (no match)
    a = args("brace_expansion_array.sh")
    assert a[a.index("--data-path"):a.index("--data-path") + 5] == [
        "--data-path", "0.5", "/data/shard_00_text_document", "/data/shard_01_text_document", "/data/shard_02_text_document"]
    assert a[a.index("--save") - 1:] == ["/data/shard_02_text_document", "--save", "--load", "/ckpt", "--split", "99,1,0", "9,1,0"]
    a = args("ifs_split.sh")
    assert a[a.index("--data-path") + 1:a.index("--data-path") + 6] == ["0.3", "/data/a", "", "0.7", "/data/b"]
    assert flag("ifs_split.sh", "--tensorboard-dir") == "5::0.7"  # `a,,b` under IFS=, is three fields
    assert flag("ifs_split.sh", "--wandb-project") == "tp2:pp1"  # read's last name keeps the rest of the line
    assert flag("one_line_loop_if.sh", "--tensor-model-parallel-size") == "4"  # for ...; do if ...; fi; done
    assert flag("one_line_loop_if.sh", "--pipeline-model-parallel-size") == "1"  # `else PP=$n` ran for n=1
