"""Read a hand-written Megatron-LM launch (bash script or argument file) into the argument list it would run.

Why not run it: a launch script starts a multi-node job. We interpret, without executing, the small bash
subset that Megatron-LM's own `examples/` scripts use: `NAME=value`, `NAME=( ... )` / `NAME+=( ... )` arrays
with comments and continuations, `${NAME[@]}`, `${VAR:-d}` / `${VAR-d}` / `${VAR:=d}` / `${VAR:+a}`, `$1`,
`export`, `$((...))` integer arithmetic, quoting, `if [[ ... ]]; then / elif / else / fi` over string tests,
and the `torchrun | python [-m torch.distributed.run] | srun ... pretrain_*.py ARGS` line (plus `#SBATCH`).
The pieces, one idea each: constraints.script.lex (statements and words), shell_expand (variables and
expansion), shell_arith (`$((...))`), shell_cond (`if` tests), shell_interp (walking the taken path);
this module reads the launcher's options and extracts the training script's argv.

A variable that cannot be resolved (unset, `$1` without a value, `$(command)`) is allowed only inside the
value of a flag that has no effect on shardplan (e.g. `--save $CHECKPOINT_PATH`); anywhere else it is a
one-line `LaunchScriptError` naming the variable.
"""
from __future__ import annotations

import os
import re
import shlex
import stat
from typing import Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from boundary.read import note_read
from constraints.megatron.flags import lookup
from constraints.megatron.refusals import MODELOPT_FLAGS
from constraints.script.continuation import broken_continuations
from constraints.script.expand import MARK, MARK_RE, Shell, unmark
from constraints.script.interpreter import LAUNCHERS, SCRIPT_RE, Interpreter
from constraints.script.lex import LaunchScriptError, Stmt
from constraints.script.lex import statements as split_statements
from constraints.script.lex import words as split_words
from constraints.script.notes import LineNote
from constraints.script.sbatch import sbatch_directives, slurm_output_env

__all__ = ["LaunchCommand", "LaunchScriptError", "extract_argv"]

_TORCHRUN_SWITCHES = {"standalone", "no_python", "module", "run_path", "virtual_local_rank", "m"}
_SHORT_OPTIONS = {"N": "nodes", "n": "ntasks", "np": "ntasks", "nproc-per-node": "nproc_per_node"}


class LaunchCommand(BaseModel):
    """What a launch script runs: the training script's arguments, the launcher's sizes, the exported env."""

    model_config = ConfigDict(extra="forbid")
    script_args: list[str] = Field(description="arguments after pretrain_*.py (or the whole argument file)")
    script: Optional[str] = Field(None, description="the pretrain_*.py path; None for an argument file")
    launcher: Optional[str] = Field(None, description="torchrun, python, srun, ...; None for an argument file")
    distributed: dict[str, Union[int, str]] = Field(
        default_factory=dict, description="literal launcher values: torchrun nproc_per_node/nnodes/..., srun/#SBATCH nodes/ntasks_per_node/...")
    env: dict[str, str] = Field(default_factory=dict, description="exported or command-prefix variables, e.g. CUDA_DEVICE_MAX_CONNECTIONS")
    unresolved: list[str] = Field(default_factory=list, description="unset variables left as ${NAME} in no-effect flag values")
    env_taken: dict[str, str] = Field(
        default_factory=dict, description="variables the script read from the given env without setting them first")
    sourced: list[str] = Field(default_factory=list, description="files read on the script's path: sourced, or run as "
                               "child scripts (`bash f`, `sbatch f`), in the order read")
    warnings: list[str] = Field(default_factory=list, description="`line N: ...` for each construct not followed")
    allocation: list[str] = Field(default_factory=list, description="a Slurm allocation variable of this environment "
                                  "that the job's #SBATCH lines set otherwise (the job's value is read)")
    misread: list[str] = Field(default_factory=list, description="`line N: ...` where bash or sbatch reads a line "
                               "otherwise than it looks: an ignored #SBATCH line, a command a broken continuation ended")
    missing: list[str] = Field(default_factory=list, description="files sourced or run that check could not read")

    @property
    def num_nodes(self) -> Optional[int]:
        """Nodes the launch runs on: torchrun --nnodes (default 1), else srun/sbatch -N/--nodes (a range: unknown)."""
        for key in ("nnodes", "nodes"):
            if isinstance(self.distributed.get(key), int):
                return self.distributed[key]
        if self.launcher == "torchrun" and "nnodes" not in self.distributed and "nodes" not in self.distributed:
            return 1  # torchrun's --nnodes defaults to 1 (torch/distributed/run.py: default="1:1")
        return None

    @property
    def gpus_per_node(self) -> Optional[int]:
        """Ranks per node: torchrun --nproc_per_node, else --ntasks-per-node (one rank per task), else
        --gpus-per-node; else total --ntasks divided by the nodes when it divides evenly; else, for a torchrun that
        states none of them, its default of 1 (torch/distributed/run.py: --nproc-per-node default "1")."""
        for key in ("nproc_per_node", "ntasks_per_node", "gpus_per_node"):
            if isinstance(self.distributed.get(key), int):
                return self.distributed[key]
        tasks, nodes = self.distributed.get("ntasks"), self.num_nodes
        if isinstance(tasks, int) and nodes and tasks % nodes == 0:
            return tasks // nodes
        return 1 if self.ranks_per_node_by_default else None

    @property
    def ranks_per_node_by_default(self) -> bool:
        """A torchrun launch that states no ranks per node (nor a task count), so torch's default of 1 applies."""
        return self.launcher == "torchrun" and not any(
            k in self.distributed for k in ("nproc_per_node", "ntasks_per_node", "gpus_per_node", "ntasks"))


def _parse_launcher(tokens: list[str], out: dict[str, Union[int, str]]) -> tuple[str, int]:
    """Read launcher options up to the pretrain script; returns (launcher name, index of the script)."""
    launcher, i = os.path.basename(tokens[0]), 0
    if MARK_RE.fullmatch(tokens[0]):  # a launcher held in a variable check cannot know: its options are unknown too
        launcher, i = unmark(tokens[0]), 1
    while i < len(tokens):
        t = tokens[i]
        base = os.path.basename(t)
        if SCRIPT_RE.match(base):
            return launcher, i
        if base in ("torchrun", "srun", "mpirun", "mpiexec") or base.startswith("python"):
            if not base.startswith("python") or launcher not in ("torchrun", "srun", "mpirun", "mpiexec"):
                launcher = base  # keep the outermost distributed launcher over the python it runs
            i += 1
            continue
        if t == "-m" and i + 1 < len(tokens):
            if tokens[i + 1] in ("torch.distributed.run", "torch.distributed.launch"):
                launcher = "torchrun"
            i += 2
            continue
        if t.startswith("-"):
            key, eq, val = t.lstrip("-").partition("=")
            key = key.replace("-", "_")
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
            takes = not eq and key not in _TORCHRUN_SWITCHES and nxt and not nxt.startswith("-") \
                and not SCRIPT_RE.match(os.path.basename(nxt)) and not LAUNCHERS.match(os.path.basename(nxt))
            if takes:
                val, i = nxt, i + 1
            key = _SHORT_OPTIONS.get(key, key)
            if (eq or takes) and MARK_RE.search(val):
                # a size held in a variable check cannot know (`--nnodes $NODES`): kept as text, so the size reads as
                # unknown rather than as the launcher's default (torchrun's --nnodes 1)
                out[key] = unmark(val)
            elif eq or takes:
                out[key] = int(val) if re.fullmatch(r"[0-9]+", val) else val
        i += 1
    raise LaunchScriptError("no pretrain_*.py script after the launcher; write `torchrun ... pretrain_gpt.py ARGS`")


def _sbatch_lines(text: str, stmts: list[Stmt], notes: list[LineNote]) -> list[list[str]]:
    """The options of the `#SBATCH` lines of the script that sbatch reads (those above its first command:
    constraints.script.sbatch, given the script's statements; a note for each it ignores), split into words."""
    lines = []
    directives, ignored = sbatch_directives(text, stmts)
    notes.extend(ignored)
    for line in directives:
        try:
            lines.append(shlex.split(line, comments=True))
        except ValueError:
            raise LaunchScriptError(f"#SBATCH {line[:60]}: unbalanced quote; fix the line") from None
    return lines


def _sbatch_sizes(lines: list[list[str]]) -> dict[str, Union[int, str]]:
    """The sizes sbatch options give, in order (later ones override, as sbatch's command line overrides #SBATCH):
    the script's own `#SBATCH` lines (`_sbatch_lines`), then those of the files it submits or runs and the options
    of its `sbatch` commands."""
    out: dict[str, Union[int, str]] = {}
    for toks in lines:
        toks = [t for t in toks if not MARK_RE.search(t)]
        if toks:
            _parse_launcher(["sbatch"] + toks + ["pretrain_x.py"], out)
    return out


MAX_FILE_BYTES = 1 << 20  # a launch script or a file it sources: 1 MiB is far past any real one


def file_reader(script_path: Optional[str], cwd: str):
    """Resolve and read a file the script sources or runs, as bash would find it (relative to the working
    directory), else beside the script; never runs it. Returns (path shown, text) or None."""
    script_dir = os.path.dirname(os.path.abspath(script_path)) if script_path else cwd

    def read(path: str, _line: int) -> Optional[tuple[str, str]]:
        if MARK_RE.search(path):  # `${UNKNOWN}/x.sh`: the known tail, beside the script or in the CWD
            tail = MARK_RE.split(path)[-1].lstrip("/")
            cands = [os.path.join(script_dir, tail), os.path.join(cwd, tail)] if tail else []
        elif os.path.isabs(path):
            cands = [path]
            if path.startswith(cwd.rstrip("/") + "/"):
                cands.append(os.path.join(script_dir, path[len(cwd.rstrip("/")) + 1:]))
        else:
            cands = [os.path.join(cwd, path), os.path.join(script_dir, path)]
        for cand in cands:
            text = _read_regular(cand)
            if text is not None:
                inside = os.path.abspath(cand).startswith(os.path.abspath(cwd).rstrip("/") + "/")
                return (os.path.relpath(cand, cwd) if inside else cand), text
        return None

    return read


def _read_regular(path: str) -> Optional[str]:
    """Text of a regular, readable UTF-8 file under MAX_FILE_BYTES without NUL; None otherwise."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        note_read(path, st)  # so no output of this command replaces a file the script sources (boundary/write.py)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return None if "\x00" in text else text


def _resolve_args(args: list[str]) -> tuple[list[str], list[str]]:
    """Leave unresolved variables only in no-effect flag values; elsewhere fail naming the variable.

    Empty words stay: bash passes `''` and `"$EMPTY"` as empty arguments, which Megatron's argparse rejects."""
    out, unresolved, flag = [], [], None
    prev = None
    for tok in args:
        after, prev = prev, tok
        if tok.startswith("--"):
            flag = tok.split("=", 1)[0]
        m = MARK_RE.search(tok)
        if m:
            name = m.group(1)
            info = lookup(flag) if flag else None
            # the value of a flag Megatron-LM does not define (a fork's `--train-weighted-split-paths $DATA`): argparse
            # refuses the flag whatever the value, so the value stays text and the refusal names the flag
            foreign = flag is not None and info is None and after == flag and not tok.startswith("--") \
                and flag not in MODELOPT_FLAGS
            if not foreign and (info is None or not info.no_effect
                                or tok.split("=", 1)[0] == flag and "=" not in tok and tok.startswith("--")):
                # the value of a flag only where it is one: `--flag=$X`, or right after a flag that takes a value
                valued = info is not None and info.takes_value and (tok.startswith(flag + "=") or after == flag)
                where = f"the value of {flag}" if valued else "a script argument"
                raise LaunchScriptError(f"{where} uses {_show(name)}, {_unset_fix(name)}")
            unresolved.append(name)
            tok = unmark(tok)
        out.append(tok)
    return out, unresolved


def _unset_fix(name: str) -> str:
    """Why the value is unknown and how to give it: a variable can come from the environment `check` runs in."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return f"which is not set; set {name} in the script or in the environment ({name}=VALUE shardplan check ...)"
    if name.isdigit():
        return (f"a positional parameter not given; pass the script's arguments after -- (shardplan check SCRIPT -- ARG1 "
                f"...: ${name} is the {name}th), or write the value in the script")
    if " (" in name:
        return "which shardplan could not follow (see the warning for that line); write the value in the script"
    return "which shardplan does not run; write the value in the script"


def _show(name: str) -> str:
    return name if name.startswith("$") else "$" + name.split(" (")[0] + (" (" + name.split(" (", 1)[1] if " (" in name else "")


def _is_argument_file(statements: list[str]) -> bool:
    return all(split_words(s)[0].startswith("-") for s in statements)


def extract_argv(text: str, env: Optional[dict[str, str]] = None, script_path: Optional[str] = None,
                 cwd: Optional[str] = None) -> LaunchCommand:
    """The pretrain_*.py arguments, launcher sizes and exported env of a launch script or argument file.

    `env` plays the environment the script would see (also positional parameters as "1", "2", ...);
    `script_path` is $0 and the folder sourced files are also looked for in; `cwd` the working directory
    (default: this process's)."""
    if MARK in text:
        raise LaunchScriptError("launch script holds a NUL character, which bash cannot read; remove it")
    statements = split_statements(text)
    if not statements:
        raise LaunchScriptError("launch script is empty; give a script with a `torchrun ... pretrain_gpt.py` line or an argument file")
    if _is_argument_file(statements):
        sh = Shell(env or {})
        args, unresolved = _resolve_args([t for s in statements for w in split_words(s) for t in sh.words(w)])
        return LaunchCommand(script_args=args, unresolved=unresolved, env_taken=_plain(sh.env_taken))
    here = cwd or os.getcwd()
    env = bash_start_env(env or {}, here)
    notes: list[LineNote] = []
    own = _sbatch_lines(text, statements, notes)
    # what sbatch sets in the job from the script's own #SBATCH lines
    run = Interpreter(env or {}, script_path, file_reader(script_path, here), slurm_output_env(_sbatch_sizes(own)))
    run.run(statements)
    if run.found is None and run.bridge_launch:
        raise LaunchScriptError(f"the script runs {run.bridge_launch}, which builds its training config in Python from "
                                "the recipe, not from pretrain_*.py arguments; check the config YAML that run saves "
                                "(Megatron-Bridge ConfigContainer, `save_config_filepath`) or the recipe's key=value overrides")
    if run.found is None:
        said = f" ({'; '.join(run.warnings[:3])})" if run.warnings else ""
        if run.exited:
            said = f" (the script reaches {run.exited} first{'; ' + '; '.join(run.warnings[:2]) if run.warnings else ''})"
        raise LaunchScriptError("no `torchrun|python ... pretrain_*.py` command on the script's path; add one, or pass an "
                                f"argument file{said}")
    tokens, prefix = run.found
    notes += broken_continuations(text, statements)
    distributed = _sbatch_sizes(own + run.sbatch)
    misread = [str(note) for note in sorted(notes, key=lambda note: note.line) + run.misread]  # child scripts' last
    launcher, k = _parse_launcher(tokens, distributed)
    args, unresolved = _resolve_args(tokens[k + 1:])
    exported = {n: run.sh.get(n) for n in run.sh.exported}
    env_out = {n: v for n, v in {**exported, **prefix}.items() if isinstance(v, str) and not MARK_RE.search(v)}
    return LaunchCommand(script_args=args, script=unmark(tokens[k]), launcher=launcher, distributed=distributed,
                         env=env_out, unresolved=sorted(set(unresolved)), env_taken=_plain(run.sh.env_taken),
                         sourced=list(run.sourced), warnings=list(run.warnings), missing=list(run.missing),
                         allocation=list(run.allocation),
                         misread=misread)


def bash_start_env(env: dict[str, str], cwd: str) -> dict[str, str]:
    """The environment as bash has it once started in `cwd`: bash keeps an inherited PWD only when it is an absolute
    path naming the working directory itself (same device and inode: a symlink to it counts), and otherwise sets PWD to
    the working directory (bash 5.2 variables.c set_pwd: `temp_string[0] == '/' && same_file (temp_string, ".", ...)`,
    else `get_working_directory ("shell-init")`; bash 5.2.15 keeps `/a/./b` as written). So a script run by an
    orchestrator that changed directory without updating PWD reads the directory it runs in, not the stale one."""
    inherited = env.get("PWD")
    if inherited and inherited.startswith("/") and _same_dir(inherited, cwd):
        return env
    return {**env, "PWD": os.path.abspath(cwd)}


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _plain(taken: dict) -> dict[str, str]:
    """Environment values as read (sorted by name); a positional parameter is reported like a variable."""
    return {n: v for n, v in sorted(taken.items()) if isinstance(v, str)}
