"""A launch command whose backslash continuation breaks early (a commented-out flag inside it, a blank after the
trailing `\\`) is read as bash runs it, and check names the line that broke it (constraints.script.continuation).
What bash launches for these scripts is asserted by tests/constraints/script/test_scripts_match_bash.py, which runs them."""

import pytest

from constraints.megatron.launch_script import extract_argv
from tests.helpers.builders import TESTS

SCRIPTS = TESTS / "data" / "scripts"


def _read(name: str):
    return extract_argv((SCRIPTS / name).read_text(), env={})


def test_a_comment_inside_the_continuation_ends_the_command_and_is_named():
    cmd = _read("continuation_comment.sh")
    assert cmd.script_args == ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2"]
    assert len(cmd.misread) == 1
    assert cmd.misread[0].startswith("line 10: bash runs `--num-layers` as a command of its own")
    assert "the comment on line 9 ends that command" in cmd.misread[0]


def test_a_blank_after_the_trailing_backslash_is_an_argument_of_one_space_and_is_named():
    cmd = _read("continuation_blank_after_backslash.sh")
    assert cmd.script_args[-3:] == ["256", "--bf16", " "]  # bash passes the escaped blank, then ends the command
    assert "--tensor-model-parallel-size" not in cmd.script_args
    assert len(cmd.misread) == 1
    assert cmd.misread[0].startswith("line 9: bash runs `--tensor-model-parallel-size` as a command of its own")
    assert "line 8 ends in `\\` and a blank" in cmd.misread[0]


def test_the_required_flag_error_says_which_line_broke_the_command():
    from constraints.read import InputError, load_check_input

    with pytest.raises(InputError) as err:
        load_check_input(str(SCRIPTS / "continuation_comment.sh"), "h100-sxm-80gb", None, None)
    assert str(err.value).startswith("--micro-batch-size is required by Megatron")
    assert "(line 10: bash runs `--num-layers`" in str(err.value) and "\n" not in str(err.value)


def test_a_warning_when_the_check_goes_on():
    from constraints.read import load_check_input

    loaded = load_check_input(str(SCRIPTS / "continuation_blank_after_backslash.sh"), "h100-sxm-80gb", None, None)
    assert [w.message[:8] for w in loaded.warnings if w.rule == "script_layout"] == ["line 9: "]
    assert any(v.rule == "megatron_argparse" for v in loaded.preflight_violations)  # the " " argparse refuses


@pytest.mark.parametrize("text", [
    "case $1 in\n  --tp) TP=$2; shift 2;;\n  --fp8|--bf16) P=$1;;\nesac\ntorchrun pretrain_gpt.py --num-layers 2\n",
    "torchrun pretrain_gpt.py \\\n  --num-layers 2 \\\n  --hidden-size 64\n",
    "ARGS=(\n  --num-layers 2\n  # --sequence-parallel\n  --hidden-size 64\n)\ntorchrun pretrain_gpt.py \"${ARGS[@]}\"\n",
])
def test_no_warning_where_no_command_begins_with_a_flag(text):
    assert extract_argv(text, env={}).misread == []


def test_no_script_of_the_corpus_reads_otherwise_than_it_looks():
    odd = {"continuation_comment.sh", "continuation_blank_after_backslash.sh", "sbatch_late_directives.sh"}
    for path in sorted(SCRIPTS.glob("*.sh")) + sorted((SCRIPTS / "shapes").glob("*.sh")):
        if path.name not in odd:
            assert extract_argv(path.read_text(), env={}, script_path=str(path)).misread == [], path.name
