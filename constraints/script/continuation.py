"""Name the line where a backslash continuation broke, when a script line begins with a `--flag`.

Why: a launch command written over many lines ends at the first line that does not end in `\\` + newline.
Two easy mistakes end it early, and bash then runs the following lines as a command of their own (`--num-layers:
command not found`), so Megatron starts with only the flags above the break:
- a commented-out flag inside the command (`#  --sequence-parallel \\`): the `#` comments out the rest of the
  line, its backslash included (bash manual, "Comments"), so the command ends on that line;
- a blank after the trailing backslash (`... $PP \\ `): the backslash escapes the blank, which becomes an argument
  of one space, and the newline ends the command (bash manual, "Escape Character").
check reads the script as bash does (constraints.script.lex); these warnings say why the later flags are missing,
where Megatron would otherwise only say that a required flag is.
"""
from __future__ import annotations

import re

from constraints.script.lex import Stmt
from constraints.script.lex import words as split_words
from constraints.script.notes import LineNote

_FLAG_RE = re.compile(r"^--[A-Za-z0-9][A-Za-z0-9_.-]*(=.*)?$", re.S)  # a `case` pattern `--tp)` is not one


def broken_continuations(text: str, stmts: list[Stmt]) -> list[LineNote]:
    """A note on each statement of `text` (its top-level `stmts`) that begins with a `--flag`, naming what ended the
    command above it."""
    lines = text.split("\n")
    out = []
    for s in stmts:
        first = split_words(s)[0] if s.strip() else ""
        if not _FLAG_RE.match(first) or s.line < 2:
            continue
        prev_no = s.line - 1
        prev = lines[prev_no - 1] if prev_no - 1 < len(lines) else ""
        head = f"bash runs `{first.split('=')[0]}` as a command of its own (command not found), so the flags from there " \
               "on never reach the command above"
        if prev.lstrip().startswith("#") or re.search(r"\s#.*\\\s*$", prev):
            k = prev_no  # the first of a run of comment lines is the one that ended the command
            while k > 1 and lines[k - 2].lstrip().startswith("#"):
                k -= 1
            why = (f"the comment on line {k} ends that command (a `\\` inside a comment continues nothing); "
                   "delete the comment or move it below the command")
        elif re.search(r"\\[ \t]+$", prev):
            why = (f"line {prev_no} ends in `\\` and a blank, which passes an argument of one space and ends the "
                   f"command; delete the blank after the `\\` on line {prev_no}")
        elif not prev.strip():
            why = f"the blank line {prev_no} ends the command; delete it"
        else:
            why = f"line {prev_no} does not end in `\\`; end it with `\\` to continue the command"
        out.append(LineNote(line=s.line, message=f"{head}: {why}"))
    return out


__all__ = ["broken_continuations"]
