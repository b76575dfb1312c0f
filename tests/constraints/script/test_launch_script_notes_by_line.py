"""extract_argv's `misread` notes: each carries its line as a number (constraints.script.notes.LineNote) and they are
listed in line order without reading the line back out of their text; the #SBATCH reader takes the statements
extract_argv already lexed, so a script is lexed once."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

import constraints.script.lex as shell_lex
from constraints.megatron.launch_script import extract_argv
from constraints.script.continuation import broken_continuations
from constraints.script.notes import LineNote
from constraints.script.sbatch import sbatch_directives
from tests.helpers.builders import TESTS

# notes on lines 4 (#SBATCH below `set -e`), 9 (a flag after a commented-out continuation) and 11 (#SBATCH again):
# in line order 4, 9, 11, which sorting the shown text ("line 11" < "line 4" < "line 9") would not give
SCRIPT = """#!/bin/bash
#SBATCH --nodes=1
set -e
#SBATCH --nodes=4
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --num-layers 24 --hidden-size 2048 \\
    # --sequence-parallel \\
    --num-attention-heads 16 --seq-length 2048
echo done
#SBATCH --ntasks-per-node=4
"""


def test_notes_of_both_readers_are_listed_by_line_number():
    cmd = extract_argv(SCRIPT, env={})
    assert [m.split(":")[0] for m in cmd.misread] == ["line 4", "line 9", "line 11"]
    assert cmd.misread[0] == ("line 4: `#SBATCH --nodes=4` is ignored by sbatch: it comes after the first command (line 3), "
                              "where sbatch stops reading #SBATCH lines; move it above line 3")
    assert cmd.misread[1].startswith("line 9: bash runs `--num-attention-heads` as a command of its own (command not found)")
    assert "the comment on line 8 ends that command" in cmd.misread[1]
    assert cmd.misread[2].startswith("line 11: `#SBATCH --ntasks-per-node=4` is ignored by sbatch")
    assert cmd.num_nodes == 1


def test_readers_return_notes_with_the_line_as_a_number():
    stmts = shell_lex.statements(SCRIPT)
    _, ignored = sbatch_directives(SCRIPT, stmts)
    broken = broken_continuations(SCRIPT, stmts)
    assert [(n.line, n.where) for n in ignored] == [(4, ""), (11, "")]
    assert [n.line for n in broken] == [9] and not broken[0].message.startswith("line")
    _, child = sbatch_directives(SCRIPT, stmts, where="conf/job.sh:")
    assert str(child[0]).startswith("conf/job.sh:line 4: `#SBATCH --nodes=4` is ignored")


def test_a_line_note_is_strict():
    assert str(LineNote(line=12, message="m")) == "line 12: m"
    with pytest.raises(ValidationError):
        LineNote(line=0, message="m")
    with pytest.raises(ValidationError):
        LineNote(line=1, message="m", column=3)


def test_the_script_is_lexed_once(monkeypatch):
    """The #SBATCH reader used to lex the whole script again to find its here-documents."""
    text = (TESTS / "data" / "scripts" / "sbatch_late_directives.sh").read_text()
    lexed: list[str] = []
    scan = shell_lex.scan

    def counting_scan(source, split_on, heredocs=None):
        if heredocs is not None and source == text:
            lexed.append(source)
        return scan(source, split_on, heredocs)

    monkeypatch.setattr(shell_lex, "scan", counting_scan)
    cmd = extract_argv(text)
    assert [m.split(":")[0] for m in cmd.misread] == ["line 7", "line 9", "line 14"]  # line 12: the here-document's
    assert len(lexed) == 1
