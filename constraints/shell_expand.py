"""Shell variables and the expansion of one word, bash-style, without running anything.

Covers `$NAME`, `${NAME}`, `${NAME[@]}` / `${NAME[i]}`, `${#NAME}`, `${VAR:-d}` / `${VAR-d}` / `${VAR:=d}` /
`${VAR:+a}` / `${VAR:?m}`, positional `$1`, and `$((...))` (shell_arith). Words are split and unquoted by
`shlex` after expansion; each expanded value is re-quoted first so that bash's word-splitting rules hold.
What cannot be known without running the script (an unset variable, `$(command)`, backticks, `${X%suffix}`)
becomes a *mark*: the name between two NUL characters, which no bash string can hold, so a mark can never
be forged by the script's own text. Callers decide where a mark is acceptable (launch_script._resolve_args).
"""
from __future__ import annotations

import re
import shlex
from typing import Optional, Union

from constraints.shell_arith import eval_int
from constraints.shell_lex import LaunchScriptError, match

MARK = "\x00"  # brackets an unresolved variable's name inside a word
MARK_RE = re.compile("\x00([^\x00]*)\x00")
_PARAM_RE = re.compile(r"^(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!])(?:\[(@|\*|[0-9]+)\])?(:?[-=+?])?(.*)$", re.S)

Value = Union[str, list]


def mark(name: str) -> str:
    return f"{MARK}{name}{MARK}"


def unmark(word: str) -> str:
    """Show marks as `${NAME}` again (for values left unresolved on purpose)."""
    return MARK_RE.sub(lambda m: "${" + m.group(1) + "}", word)


class Shell:
    """Variables (scalars and arrays), exports, and word expansion against them."""

    def __init__(self, env: dict[str, str]):
        self.env_in = dict(env)
        self.vars: dict[str, Value] = {}
        self.exported: set[str] = set()
        self.env_taken: dict[str, str] = {}  # variables read from env_in because the script had not set them
        self.cond_mode = False  # in `if` tests an unset variable is "" (bash), elsewhere it stays unresolved

    def get(self, name: str) -> Optional[Value]:
        if name in self.vars:
            return self.vars[name]
        value = self.env_in.get(name)
        if value is not None:
            self.env_taken.setdefault(name, value)
        return value

    def words(self, word: str) -> list[str]:
        """Expand one raw word with word splitting (command arguments, array elements)."""
        return shlex.split(self._expand(word, split=True))

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
                out.append(self._insert(mark(w[i:j][:40]), dq, split))
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
            j = match(w, i + 1, "(", ")")
            return self._arith(w[i + 3:j - 2]), j
        if w.startswith("$(", i):
            j = match(w, i + 1, "(", ")")
            return mark(w[i:j][:40]), j
        if w.startswith("${", i):
            j = match(w, i + 1, "{", "}")
            return self._param(w[i + 2:j - 1]), j
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!]", w[i + 1:])
        if not m:
            return "$", i + 1
        return self._param(m.group(0)), i + 1 + m.end()

    def _param(self, body: str) -> Value:
        m = _PARAM_RE.match(body)
        if not m or (m.group(5) and not m.group(4)):
            return mark("${" + body + "}")  # ${X%suffix}, ${X/a/b}, ...: not modelled
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
            return "" if self.cond_mode else mark(name)
        return value

    def _arith(self, expr: str) -> str:
        """Bash `$((...))` over integers: + - * / % ** and parentheses; bare names are variables."""
        text = self.scalar('"' + expr + '"')
        for name in sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)), key=len, reverse=True):
            v = self.get(name)
            text = re.sub(rf"\b{name}\b", v if isinstance(v, str) and v.strip() else mark(name), text)
        bad = MARK_RE.search(text)
        if bad:
            return mark(bad.group(1))
        try:
            return str(eval_int(text))
        except (SyntaxError, ValueError, ZeroDivisionError) as e:
            raise LaunchScriptError(f"cannot evaluate $(({expr})): {e}; use integer arithmetic only") from None
