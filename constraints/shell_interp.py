"""Walk a launch script's statements on the path it would take, recording variables, until the launch line.

Why an interpreter and not a regex: Megatron-LM's example scripts build the argument list in arrays
(`NAME=( ... )`, `NAME+=( ... )`), pick settings in `if / elif / else / fi`, and export environment
variables; the launch line only makes sense after all of that. Loops, functions and `case` blocks are
skipped; `source` is not followed; `exit` on the taken path ends the walk.
"""
from __future__ import annotations

import os
import re
from typing import Optional

from constraints.shell_cond import Condition
from constraints.shell_expand import Shell, Value
from constraints.shell_lex import LaunchScriptError, scan, words as split_words

ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$", re.S)
SCRIPT_RE = re.compile(r"^pretrain_[A-Za-z0-9_]*\.py$")
LAUNCHERS = re.compile(r"^(torchrun|python[0-9.]*|srun|mpirun|mpiexec|uv|deepspeed|numactl|nsys|env|exec)$")
_FUNC_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\s*\(\)")
_SKIP_BLOCKS = {"for": "done", "while": "done", "until": "done", "case": "esac"}


class _Exit(Exception):
    """The script reached `exit` on its taken path."""


class Interpreter:
    """Runs `statements` symbolically; `found` is (launch tokens, command-prefix env) once the launch line runs."""

    def __init__(self, env: dict[str, str]):
        self.sh = Shell(env)
        self.found: Optional[tuple[list[str], dict[str, str]]] = None
        self.sourced: list[str] = []  # files `source` / `.` would read on the taken path (not followed)

    def run(self, statements: list[str]) -> None:
        ifs: list[list[bool]] = []  # per open `if`: [parent_active, branch_taken, active]
        skip_until: list[str] = []
        try:
            for stmt in statements:
                words = split_words(stmt)
                if skip_until:
                    if words[0] in _SKIP_BLOCKS or (words[-1] == "{" and skip_until[-1] == "}"):
                        skip_until.append(_SKIP_BLOCKS.get(words[0], "}"))
                    elif words[0] == skip_until[-1]:
                        skip_until.pop()
                    continue
                active = not ifs or ifs[-1][2]
                head = words[0]
                if head == "if":
                    ok = active and self._cond(words[1:])
                    ifs.append([active, ok, ok])
                elif head == "elif":
                    top = ifs[-1]
                    top[2] = top[0] and not top[1] and self._cond(words[1:])
                    top[1] = top[1] or top[2]
                elif head == "else":
                    top = ifs[-1]
                    top[2], top[1] = top[0] and not top[1], True
                    if top[2] and words[1:]:
                        self._simple(words[1:])
                elif head == "fi":
                    ifs.pop()
                elif head in _SKIP_BLOCKS or head == "function" or _FUNC_RE.match(" ".join(words[:2])):
                    skip_until.append(_SKIP_BLOCKS.get(head, "}"))
                    if head not in _SKIP_BLOCKS and "}" in words[1:]:
                        skip_until.pop()  # one-line function
                elif active:
                    rest = words[1:] if head in ("then", "do") else words
                    if rest:
                        self._simple(rest)
                if self.found:
                    return
        except _Exit:
            return
        except IndexError:
            raise LaunchScriptError("unbalanced if/elif/else/fi in launch script; close each `if` with `fi`") from None

    def _cond(self, words: list[str]) -> bool:
        if words and words[-1] == "then":
            words = words[:-1]
        self.sh.cond_mode = True
        try:
            return Condition(self.sh, words).evaluate()
        finally:
            self.sh.cond_mode = False

    def _simple(self, words: list[str]) -> None:
        part: list[str] = []
        for w in words + ["&&"]:
            if w in ("&&", "||", "|", "&"):
                if part:
                    self._command(part)
                    if self.found:
                        return
                part = []
            else:
                part.append(w)

    def _command(self, words: list[str]) -> None:
        prefix: dict[str, str] = {}
        k = 0
        while k < len(words) and ASSIGN_RE.match(words[k]):
            k += 1
        if k == len(words):
            for w in words:
                self._assign(w, export=False)
            return
        for w in words[:k]:
            name, _, raw = ASSIGN_RE.match(w).groups()
            prefix[name] = self.sh.scalar(raw)
        cmd = words[k]
        if cmd in ("export", "declare", "typeset", "local", "readonly"):
            for w in words[k + 1:]:
                if w.startswith("-"):
                    continue
                if ASSIGN_RE.match(w):
                    self._assign(w, export=cmd == "export")
                elif cmd == "export":
                    self.sh.exported.add(w)
            return
        if cmd == "exit":
            raise _Exit()
        if cmd in ("source", "."):
            self.sourced.append(" ".join(words[k + 1:k + 2]) or "?")
            return
        tokens = [t for w in words[k:] for t in self.sh.words(w)]
        if tokens and (LAUNCHERS.match(os.path.basename(tokens[0])) or SCRIPT_RE.match(os.path.basename(tokens[0]))):
            if any(SCRIPT_RE.match(os.path.basename(t)) for t in tokens):
                self.found = (tokens, prefix)

    def _assign(self, word: str, export: bool) -> None:
        """`NAME=value`, `NAME+=value`, `NAME=( ... )` (array; comments and continuations inside), `NAME+=( ... )`."""
        name, plus, raw = ASSIGN_RE.match(word).groups()
        if raw.startswith("(") and raw.endswith(")"):
            value: Value = [t for w in scan(raw[1:-1], " \t\n") for t in self.sh.words(w)]
            old = self.sh.get(name) if plus else None  # a plain `=` does not read the old value (or the env)
            if plus and old is not None:
                value = (old if isinstance(old, list) else [old]) + value
        else:
            value = self.sh.scalar(raw)
            old = self.sh.get(name) if plus else None  # a plain `=` does not read the old value (or the env)
            if plus and isinstance(old, list):
                value = old + [value]
            elif plus and old is not None:
                value = old + value
        self.sh.vars[name] = value
        if export:
            self.sh.exported.add(name)
