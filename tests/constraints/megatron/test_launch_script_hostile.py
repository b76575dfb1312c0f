"""Hostile bash in a launch script (issue 17's bash items): each is answered as bash would, or refused in one line,
never with a traceback, a hang or a different value in silence."""
from __future__ import annotations

import pytest

from constraints.megatron.launch_script import LaunchScriptError, extract_argv

ARGS = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
        "--vocab-size 32000 --micro-batch-size 1 --global-batch-size 16 --bf16")


def test_power_tower_wraps_like_bash_instead_of_growing():
    got = extract_argv(f"N=$((9**9**9))\npython pretrain_gpt.py {ARGS} --seed $N\n").script_args
    assert got[-1] == "-2123029214124047543"  # bash 5: echo $((9**9**9))


def test_deeply_nested_arithmetic_is_refused_in_one_line():
    with pytest.raises(LaunchScriptError, match="nested deeper") as e:
        extract_argv("N=$((" + "-" * 2000 + "1))\npython pretrain_gpt.py --seed $N\n")
    assert "\n" not in str(e.value) and len(str(e.value)) < 200
    with pytest.raises(LaunchScriptError, match="longer than"):
        extract_argv("N=$((" + "1+" * 5000 + "1))\npython pretrain_gpt.py --seed $N\n")


def test_many_closing_braces_inside_command_substitution_are_linear():
    text = "X=$(echo " + "}" * 200_000 + ")\npython pretrain_gpt.py " + ARGS + "\n"
    assert extract_argv(text).script_args[:2] == ["--num-layers", "8"]


def test_backquoted_value_of_a_no_effect_flag_is_unknown_not_an_internal_error():
    got = extract_argv(f"python pretrain_gpt.py {ARGS} --tensorboard-dir `pick_dir arg`\n").script_args
    assert got[-2:] == ["--tensorboard-dir", "${$(pick_dir arg)}"]
    with pytest.raises(LaunchScriptError, match="unterminated"):
        extract_argv("python pretrain_gpt.py --save `date\n")


def test_text_inside_command_substitution_is_never_read_as_flags():
    got = extract_argv(f"python pretrain_gpt.py {ARGS} --tensorboard-dir $(pick_dir --num-layers 400)\n").script_args
    assert got.count("--num-layers") == 1 and "400" not in got


def test_a_heredoc_body_is_not_the_launch_line():
    text = f"cat <<EOF > notes.txt\ntorchrun pretrain_gpt.py --num-layers 400\nEOF\npython pretrain_gpt.py {ARGS}\n"
    assert extract_argv(text).script_args[:2] == ["--num-layers", "8"]


def test_a_loop_that_never_ends_is_refused_in_bounded_work():
    with pytest.raises(LaunchScriptError, match="more than"):
        extract_argv("while true; do\n  A=1\ndone\npython pretrain_gpt.py\n")
    with pytest.raises(LaunchScriptError, match="more than"):
        extract_argv("f() { f; }\nf\npython pretrain_gpt.py\n")
