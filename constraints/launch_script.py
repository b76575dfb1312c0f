"""Read a hand-written Megatron-LM launch (bash script or argument file) into the argument list it would run.

Why not run it: a launch script starts a multi-node job. We interpret, without executing, the small bash
subset that Megatron-LM's own `examples/` scripts use: `NAME=value`, `NAME=( ... )` / `NAME+=( ... )` arrays
with comments and continuations, `${NAME[@]}`, `${VAR:-d}` / `${VAR-d}` / `${VAR:=d}` / `${VAR:+a}`, `$1`,
`export`, `$((...))` integer arithmetic, quoting, `if [[ ... ]]; then / elif / else / fi` over string tests,
and the `torchrun | python [-m torch.distributed.run] | srun ... pretrain_*.py ARGS` line (plus `#SBATCH`).
Words are split and unquoted by `shlex` after expansion (each expanded value is re-quoted first so that
bash's word-splitting rules hold). Loops, functions and `case` blocks are skipped; `source` is not followed.

A variable that cannot be resolved (unset, `$1` without a value, `$(command)`) is allowed only inside the
value of a flag that has no effect on shardplan (e.g. `--save $CHECKPOINT_PATH`); anywhere else it is a
one-line `LaunchScriptError` naming the variable.
"""
from __future__ import annotations

import ast
import fnmatch
import os
import re
import shlex
from typing import Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from constraints.megatron_flags import lookup

_MARK_OPEN, _MARK_CLOSE = "\x01", "\x02"  # brackets an unresolved variable's name inside a word
_MARK_RE = re.compile("\x01([^\x02]*)\x02")
_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$", re.S)
_PARAM_RE = re.compile(r"^(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!])(?:\[(@|\*|[0-9]+)\])?(:?[-=+?])?(.*)$", re.S)
_SCRIPT_RE = re.compile(r"^pretrain_[A-Za-z0-9_]*\.py$")
_LAUNCHERS = re.compile(r"^(torchrun|python[0-9.]*|srun|mpirun|mpiexec|uv|deepspeed|numactl|nsys|env|exec)$")
_TORCHRUN_SWITCHES = {"standalone", "no_python", "module", "run_path", "virtual_local_rank", "m"}
_SKIP_BLOCKS = {"for": "done", "while": "done", "until": "done", "case": "esac"}

Value = Union[str, list]


class LaunchScriptError(ValueError):
    """A launch script shardplan cannot turn into an argument list; the message is one line."""


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

    @property
    def num_nodes(self) -> Optional[int]:
        for key in ("nnodes", "nodes"):
            if isinstance(self.distributed.get(key), int):
                return self.distributed[key]
        return None

    @property
    def gpus_per_node(self) -> Optional[int]:
        for key in ("nproc_per_node", "ntasks_per_node", "gpus_per_node"):
            if isinstance(self.distributed.get(key), int):
                return self.distributed[key]
        return None


class _Exit(Exception):
    """The script reached `exit` on its taken path."""


def _scan(text: str, split_on: str) -> list[str]:
    """Split `text` at unquoted, un-nested chars in `split_on`, dropping `# comments` and `\\<newline>`."""
    parts, cur, i, sq, dq, depth = [], [], 0, False, False, 0
    n = len(text)
    while i < n:
        c = text[i]
        if sq:
            cur.append(c)
            sq = c != "'"
        elif c == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                cur.append(text[i:i + 2])
            i += 1
        elif dq:
            cur.append(c)
            dq = c != '"'
            if c == "$" and i + 1 < n and text[i + 1] in "({":
                depth += 0  # nesting inside double quotes does not split anything
        elif c == "'":
            sq = True
            cur.append(c)
        elif c == '"':
            dq = True
            cur.append(c)
        elif c == "#" and (not cur or cur[-1] in " \t\n;(") and (i == 0 or text[i - 1] in " \t\n;("):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif c in "({":
            depth += 1 if (c == "(" or (cur and cur[-1] == "$")) else 0
            cur.append(c)
        elif c in ")}" and depth > 0:
            depth -= 1 if (c == ")" or _open_brace(cur)) else 0
            cur.append(c)
        elif depth == 0 and c in split_on:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c if not (depth and c == "\n") else " ")
        i += 1
    if sq or dq:
        raise LaunchScriptError("unterminated quote in launch script; close the ' or \" it opens")
    parts.append("".join(cur))
    return [p for p in (x.strip() for x in parts) if p]


def _open_brace(cur: list[str]) -> bool:
    """True if the `}` closes a `${` we counted (a bare `{ }` group was not counted)."""
    s = "".join(cur)
    return s.count("${") > s.count("}")


def _match(text: str, i: int, open_: str, close: str) -> int:
    """Index just past the `close` that balances the `open_` at text[i] (quote-aware)."""
    depth, j, q = 0, i, None
    while j < len(text):
        c = text[j]
        if q:
            q = None if c == q else q
        elif c in "'\"":
            q = c
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise LaunchScriptError(f"unbalanced '{open_}' in `{text[:60]}`; close it")


def _mark(name: str) -> str:
    return f"{_MARK_OPEN}{name}{_MARK_CLOSE}"


class _Shell:
    """Variables and the expansion of words, bash-style, without running anything."""

    def __init__(self, env: dict[str, str]):
        self.env_in = dict(env)
        self.vars: dict[str, Value] = {}
        self.exported: set[str] = set()
        self.cond_mode = False  # in `if` tests an unset variable is "" (bash), elsewhere it stays unresolved

    def get(self, name: str) -> Optional[Value]:
        return self.vars[name] if name in self.vars else self.env_in.get(name)

    # --- expansion -------------------------------------------------------------------------
    def words(self, word: str) -> list[str]:
        """Expand one raw word with word splitting (command arguments, array elements)."""
        return [w for w in shlex.split(self._expand(word, split=True))]

    def scalar(self, word: str) -> str:
        """Expand one raw word without splitting (assignment values, `[[ ]]` operands, defaults)."""
        return " ".join(shlex.split(self._expand(word, split=False)))

    def _expand(self, w: str, split: bool) -> str:
        out, i, dq = [], 0, False
        while i < len(w):
            c = w[i]
            if c == "\\" and i + 1 < len(w):
                out.append(w[i:i + 2])
                i += 2
                continue
            if c == "'" and not dq:
                j = w.index("'", i + 1) + 1
                out.append(w[i:j])
                i = j
                continue
            if c == '"':
                dq = not dq
            if c == "`":
                j = w.index("`", i + 1) + 1
                out.append(self._insert(_mark(w[i:j][:40]), dq, split))
                i = j
                continue
            if c == "$" and i + 1 < len(w):
                value, i = self._dollar(w, i)
                out.append(self._insert(value, dq, split))
                continue
            out.append(c)
            i += 1
        return "".join(out)

    @staticmethod
    def _insert(value: Value, dq: bool, split: bool) -> str:
        """Re-quote an expanded value so shlex reproduces bash's splitting of it."""
        if isinstance(value, list):
            if dq:
                return '"' + " ".join(shlex.quote(e) for e in value) + '"' if value else ""
            return " ".join(shlex.quote(p) for e in value for p in e.split())
        if dq:
            return value.replace("\\", "\\\\").replace('"', '\\"')
        if split:
            return " ".join(shlex.quote(p) for p in value.split())
        return shlex.quote(value) if value else ""

    def _dollar(self, w: str, i: int) -> tuple[Value, int]:
        if w.startswith("$((", i):
            j = _match(w, i + 1, "(", ")")
            return self._arith(w[i + 3:j - 2]), j
        if w.startswith("$(", i):
            j = _match(w, i + 1, "(", ")")
            return _mark(w[i:j][:40]), j
        if w.startswith("${", i):
            j = _match(w, i + 1, "{", "}")
            return self._param(w[i + 2:j - 1]), j
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!]", w[i + 1:])
        if not m:
            return "$", i + 1
        return self._param(m.group(0)), i + 1 + m.end()

    def _param(self, body: str) -> Value:
        m = _PARAM_RE.match(body)
        if not m or (m.group(5) and not m.group(4)):
            return _mark("${" + body + "}")  # ${X%suffix}, ${X/a/b}, ...: not modelled
        length, name, index, op, word = m.groups()
        value = self.get(name)
        if isinstance(value, list) and index not in ("@", "*"):
            value = value[int(index or 0)] if int(index or 0) < len(value) else None
        elif isinstance(value, str) and index in ("@", "*"):
            value = [value] if index == "@" else value
        if length:
            return str(len(value) if isinstance(value, list) else len(value or ""))
        empty = value is None or (op or "").startswith(":") and value in ("", [])
        if op in (":-", "-") and (value is None if op == "-" else empty):
            return self.scalar(word)
        if op in (":=", "=") and (value is None if op == "=" else empty):
            self.vars[name] = self.scalar(word)
            return self.vars[name]
        if op in (":+", "+"):
            return "" if (value is None if op == "+" else empty) else self.scalar(word)
        if op in (":?", "?") and (value is None if op == "?" else empty):
            raise LaunchScriptError(f"${{{name}}} is not set ({self.scalar(word) or 'required'}); pass {name} in the environment")
        if value is None:
            return "" if self.cond_mode else _mark(name)
        return value

    def _arith(self, expr: str) -> str:
        """Bash `$((...))` over integers: + - * / % ** and parentheses; bare names are variables."""
        text = self.scalar('"' + expr + '"')
        for name in sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)), key=len, reverse=True):
            v = self.get(name)
            text = re.sub(rf"\b{name}\b", v if isinstance(v, str) and v.strip() else _mark(name), text)
        bad = _MARK_RE.search(text)
        if bad:
            return _mark(bad.group(1))
        try:
            return str(_eval_int(ast.parse(text.strip(), mode="eval").body))
        except (SyntaxError, ValueError, ZeroDivisionError) as e:
            raise LaunchScriptError(f"cannot evaluate $(({expr})): {e}; use integer arithmetic only") from None


def _eval_int(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval_int(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval_int(node.left), _eval_int(node.right)
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Pow: lambda: a ** b,
               ast.Div: lambda: int(a / b) if abs(a) < 2**53 else a // b, ast.Mod: lambda: a % b}
        if type(node.op) in ops:
            return ops[type(node.op)]()
    raise ValueError("unsupported expression")
