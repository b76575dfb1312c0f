"""Launcher command lines inside a launch script: where srun/sbatch options end and what they run.

Why its own module: `srun ... bash -c "$CMD"`, `sbatch [opts] FILE` and `sbatch <<EOF` hand the launch line to
another shell; constraints.shell_interp needs to know where the launcher's own options stop (the program it
runs starts there) and to pass unknown values into the child script without splitting them.
"""
from __future__ import annotations

import os
import re

from constraints.shell_expand import MARK_RE

LAUNCHERS = re.compile(r"^(torchrun|python[0-9.]*|srun|mpirun|mpiexec|uv|deepspeed|numactl|nsys|env|exec)$")
SHELLS = ("bash", "sh", "zsh", "dash")


def protect_marks(text: str) -> tuple[str, dict[str, str]]:
    """Script text that holds unknown values (marks) of the parent: each becomes `${__shardplan_unknown_K}` bound to
    the mark, so re-reading the text keeps it one unknown word (its name may hold spaces)."""
    marks: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        name = f"__shardplan_unknown_{len(marks)}"
        marks[name] = m.group(0)
        return "${" + name + "}"

    return MARK_RE.sub(sub, text), marks


def sbatch_options(tokens: list[str]) -> tuple[list[str], int]:
    """sbatch's own options (up to the submitted file) and the index of that file."""
    j = 1
    takes = {"-p", "-A", "-N", "-n", "-t", "-J", "-o", "-e", "-c", "-G", "--partition", "--account", "--nodes", "--ntasks",
             "--time", "--job-name", "--output", "--error", "--gpus", "--gpus-per-node", "--ntasks-per-node",
             "--dependency", "--export", "--mem", "--qos", "--reservation", "--constraint", "--exclude", "--nodelist"}
    while j < len(tokens) and tokens[j].startswith("-"):
        j += 2 if tokens[j] in takes and "=" not in tokens[j] else 1
    return tokens[1:j], j


def launcher_end(tokens: list[str]) -> int:
    """Index of the first token after a launcher's (srun/mpirun/...) own options: the program it runs."""
    j = 1
    while j < len(tokens):
        t = tokens[j]
        if not t.startswith("-"):
            return j
        if "=" in t or j + 1 >= len(tokens):
            j += 1
            continue
        nxt = tokens[j + 1]
        # an option's value unless the next word is the program: a shell or a launcher
        j += 1 if os.path.basename(nxt) in SHELLS or LAUNCHERS.match(os.path.basename(nxt)) or t in (
            "-l", "--exclusive", "--overcommit", "--label", "-u", "--unbuffered", "--no-kill", "--mpi=pmix") else 2
    return j
