"""Launcher command lines inside a launch script: where srun/sbatch options end and what they run.

Why its own module: `srun ... bash -c "$CMD"`, `sbatch [opts] FILE` and `sbatch <<EOF` hand the launch line to
another shell; constraints.script.interpreter needs to know where the launcher's own options stop (the program it
runs starts there) and to pass unknown values into the child script without splitting them.
"""
from __future__ import annotations

import os
import re

from constraints.script.blocks import SCRIPT_RE
from constraints.script.expand import MARK_RE

# programs that run the launch line (or a shell that does) after options of their own; nohup / time / nice / stdbuf /
# timeout / taskset only wrap the command they are given
LAUNCHERS = re.compile(r"^(torchrun|python[0-9.]*|srun|mpirun|mpiexec|uv|deepspeed|numactl|nsys|env|exec"
                       r"|nohup|time|nice|stdbuf|timeout|taskset)$")
SHELLS = ("bash", "sh", "zsh", "dash")
# wrappers that exec the program they are given, named as launch guides name them: Megatron-LM's DeepSeek-V3 GB200
# guide (docs/discussions/deepseek-v3-gb200-optimization, dev branch) runs `/path/to/bindpcie /path/to/pretrain_gpt.py`
WRAPPERS = ("bindpcie",)


def runs_its_argument(tokens: list[str]) -> bool:
    """`WRAPPER pretrain_*.py ...` at the top of a script: a known wrapper, or any program named by its path
    (`./bind.sh`, `/opt/tools/wrap`), directly followed by the training script. Accepted under srun already; at the top
    level the line was refused as "no pretrain_*.py command". A command named bare (`echo pretrain_gpt.py`) is not."""
    if len(tokens) < 2 or not SCRIPT_RE.match(os.path.basename(tokens[1])):
        return False
    first = tokens[0]
    return os.path.basename(first) in WRAPPERS or "/" in first


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


_NAME_VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


def launcher_env(tokens: list[str], lookup) -> dict[str, str]:
    """Environment a launch line's own launchers give the program, from the words before it:
    `env NAME=VALUE ...` (coreutils env), `srun --export=ALL,NAME=VALUE` (Slurm: a comma list, ALL / NONE / names to
    pass as they are), `mpirun -x NAME=VALUE` / `-x NAME` (Open MPI: a value, or the launcher's own), and
    `mpirun -genv NAME VALUE` / `-env NAME VALUE` (MPICH, Intel MPI). `lookup(name)` gives the script's value of a
    name passed without one (None when unknown)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        t, base = tokens[i], os.path.basename(tokens[i])
        if base == "env":
            i += 1
            while i < len(tokens) and (tokens[i].startswith("-") or _NAME_VALUE.match(tokens[i])):
                m = _NAME_VALUE.match(tokens[i])
                if m:
                    out[m.group(1)] = m.group(2)
                i += 1
            continue
        if t.startswith("--export=") or (t == "--export" and i + 1 < len(tokens)):
            value = t.partition("=")[2] if "=" in t else tokens[i + 1]
            for item in value.split(","):
                m = _NAME_VALUE.match(item)
                if m:
                    out[m.group(1)] = m.group(2)
            i += 1 if "=" in t else 2
            continue
        if t == "-x" and i + 1 < len(tokens):
            m = _NAME_VALUE.match(tokens[i + 1])
            if m:
                out[m.group(1)] = m.group(2)
            elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tokens[i + 1]) and isinstance(lookup(tokens[i + 1]), str):
                out[tokens[i + 1]] = lookup(tokens[i + 1])
            i += 2
            continue
        if t in ("-genv", "-env") and i + 2 < len(tokens):
            out[tokens[i + 1]] = tokens[i + 2]
            i += 3
            continue
        i += 1
    return out


# Megatron-Bridge's performance entry points (NVIDIA-NeMo/Megatron-Bridge scripts/performance/, README "setup_experiment.py
# launches bootstrap.py on each rank ... either run_script.py for flat performance recipes or run_recipe.py for model
# recipes"): they build the training config in Python from a named recipe, so no pretrain_*.py argument list exists
BRIDGE_ENTRY_SCRIPTS = ("setup_experiment.py", "bootstrap.py", "run_recipe.py", "run_script.py")
# their argument_parser.py flags naming the model family and the recipe
_BRIDGE_RECIPE_FLAGS = {"-m": "family", "--model_family_name": "family", "-mr": "recipe", "--model_recipe_name": "recipe"}


def bridge_entry(tokens: list[str]) -> str:
    """'' unless the command runs a Megatron-Bridge performance entry point; else what it runs, with the recipe and
    family it names (`run_recipe.py (recipe llama3_8b, family llama)`)."""
    at = next((i for i, t in enumerate(tokens) if os.path.basename(t) in BRIDGE_ENTRY_SCRIPTS), None)
    if at is None:
        return ""
    script, args = os.path.basename(tokens[at]), tokens[at + 1:]  # its own flags: python's or srun's `-m` come before it
    if "performance/" not in tokens[at] and not any(t.partition("=")[0] in _BRIDGE_RECIPE_FLAGS for t in args):
        return ""  # a file of that name elsewhere (tools/bootstrap.py) is not Bridge's entry point
    named: dict[str, str] = {}
    for i, t in enumerate(args):
        flag, eq, value = t.partition("=")
        if flag in _BRIDGE_RECIPE_FLAGS:
            value = value if eq else (args[i + 1] if i + 1 < len(args) else "")
            if value and not MARK_RE.search(value):
                named[_BRIDGE_RECIPE_FLAGS[flag]] = value  # argparse keeps the last
    said = ", ".join(f"{k} {named[k]}" for k in ("recipe", "family") if k in named)
    return f"Megatron-Bridge's {script}" + (f" ({said})" if said else "")
