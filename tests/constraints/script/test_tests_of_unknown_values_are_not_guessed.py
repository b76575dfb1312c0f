"""A list or an `if` whose test reads a value check cannot know (a command's output, `$(nvidia-smi ...)`) is not
followed: what it sets becomes unknown and the launch line that uses it is refused naming it, never read as if the test
had failed (found on public scripts: `if [[ "$(nvidia-smi ... | head -1)" == *H100* ]]; then ...fp8...; else ...bf16`
was always read as the bf16 branch). A test of a known value runs as bash runs it: tests/data/scripts/shapes/
and_or_lists.sh is compared with real bash by tests/constraints/script/test_scripts_match_bash.py."""
from __future__ import annotations

import pytest

from constraints.megatron.launch_script import extract_argv
from constraints.script.lex import LaunchScriptError

HEAD = "#!/bin/bash\nOPTS=\"--num-layers 2\"\n"
LAUNCH = "torchrun --nproc_per_node 8 pretrain_gpt.py $OPTS\n"


@pytest.mark.parametrize("test", [
    '[[ "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" == *H100* ]]',
    'X=$(cat /etc/precision); [ "$X" != bf16 ]',
    '[ -n "`hostname`" ]',
])
@pytest.mark.parametrize("form", ["if", "and"])
def test_a_test_of_a_command_output_is_not_taken_either_way(test, form):
    setup, _, cond = test.rpartition("; ")
    setup = setup + "\n" if setup else ""
    body = (f"if {cond}; then OPTS+=\" --fp16\"; else OPTS+=\" --bf16\"; fi\n" if form == "if"
            else f"{cond} && OPTS+=\" --fp16\" || OPTS+=\" --bf16\"\n")
    with pytest.raises(LaunchScriptError, match=r"\$OPTS \(set at line [0-9]+, not followed\)"):
        extract_argv(HEAD + setup + body + LAUNCH, env={})


def test_a_launch_line_behind_an_unknown_test_is_refused_not_run():
    text = HEAD + '[ -n "$(hostname)" ] && ' + LAUNCH
    with pytest.raises(LaunchScriptError, match="launch command is under"):
        extract_argv(text, env={})


def test_file_tests_still_count_as_true():
    argv = extract_argv(HEAD + '[ -f "$(pwd)/data.bin" ] && OPTS+=" --bf16"\n' + LAUNCH, env={"PWD": "/w"})
    assert "--bf16" in argv.script_args
