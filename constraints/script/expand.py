"""Shell variables and the expansion of one word, bash-style, without running anything.

Covers `$NAME`, `${NAME}`, `${NAME[@]}` / `${NAME[i]}`, `${#NAME}`, `${VAR:-d}` / `${VAR-d}` / `${VAR:=d}` /
`${VAR:+a}` / `${VAR:?m}`, positional `$1`, and `$((...))` (shell_arith). Words are split and unquoted by
`shlex` after expansion; each expanded value is re-quoted first so that bash's word-splitting rules hold.
What cannot be known without running the script (an unset variable, `$(command)`, backticks, `${X%suffix}`)
becomes a *mark*: the name between two NUL characters, which no bash string can hold, so a mark can never
be forged by the script's own text. Callers decide where a mark is acceptable (launch_script._resolve_args).
"""
from __future__ import annotations

import fnmatch
import os
import re
import shlex
from typing import Optional, Union

from constraints.script.arith import eval_int
from constraints.script.braces import brace_words
from constraints.script.budget import MAX_EXPANDED_BYTES, Budget, value_bytes
from constraints.script.lex import LaunchScriptError, match
from constraints.script.lex import words as split_words
from constraints.script.unquote import posix_split

MARK = "\x00"  # brackets an unresolved variable's name inside a word
MARK_RE = re.compile("\x00([^\x00]*)\x00")
_PARAM_RE = re.compile(r"^(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!])(?:\[(@|\*|[0-9]+)\])?(:?[-=+?])?(.*)$", re.S)

# ${X^^} ${X,,} ${X^} ${X,} and ${X:offset[:length]} (bash parameter expansion); `${X:-w}` is a default, not an offset,
# so a negative offset must follow a space or be parenthesised, as in bash
_CASE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\^\^|,,|\^|,)$")
_SUBSTRING_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):((?:\s+-?|\(-?)?\d+\)?)(?::(-?\d+))?$")

Value = Union[str, list]


def mark(name: str) -> str:
    return f"{MARK}{name}{MARK}"


DEFAULT_IFS = " \t\n"


def split_fields(value: str, ifs: str = DEFAULT_IFS) -> list[str]:
    """Bash word splitting of an unquoted expansion by IFS, keeping each mark whole (bash manual, "Word Splitting"):
    runs of IFS white space (space, tab, newline) delimit and are trimmed at both ends; each other IFS character
    delimits on its own, with the IFS white space around it, so `a,,b` under IFS=, is three fields, the middle one
    empty, and a trailing `,` ends the last field without adding an empty one. An empty IFS splits nothing."""
    if not ifs:
        return [value] if value else []
    white = {c for c in ifs if c in " \t\n"}
    fields: list[str] = []
    cur: list[str] = []
    i, n = 0, len(value)
    while i < n and value[i] in white:
        i += 1
    while i < n:
        c = value[i]
        if c == MARK:
            j = value.find(MARK, i + 1) + 1 or n
            cur.append(value[i:j])
            i = j
            continue
        if c not in ifs:
            cur.append(c)
            i += 1
            continue
        while i < n and value[i] in white:
            i += 1
        if i < n and value[i] in ifs and value[i] not in white:
            i += 1
            while i < n and value[i] in white:
                i += 1
        fields.append("".join(cur))
        cur = []
    if cur:
        fields.append("".join(cur))
    return fields


def _closing_backquote(w: str, i: int) -> int:
    """Index just past the backquote closing the one at w[i] (backslash escapes inside)."""
    j = i + 1
    while j < len(w):
        if w[j] == "\\":
            j += 2
            continue
        if w[j] == "`":
            return j + 1
        j += 1
    raise LaunchScriptError(f"unterminated backquote in `{w[:60]}`; close the ` it opens")


def _shlex_split(text: str, word: str) -> list[str]:
    try:
        return posix_split(text)
    except ValueError as exc:
        raise LaunchScriptError(f"cannot split `{word[:60]}` into words ({exc}); quote it plainly") from None


def unmark(word: str) -> str:
    """Show marks as `${NAME}` again (for values left unresolved on purpose)."""
    return MARK_RE.sub(lambda m: "${" + m.group(1) + "}", word)


# a value left unresolved, as the flag readers later meet it: `${NAME}` as `unmark` shows it (or `$NAME`, `${1}`);
# group 1 is the name or the positional parameter's number
UNRESOLVED_RE = re.compile(r"\$\{?([A-Za-z_0-9]+)")


# Slurm's output environment variables for the allocation's size (sbatch / srun manuals, "OUTPUT ENVIRONMENT
# VARIABLES"): set for every job step, so a script's default for them applies only outside Slurm
SLURM_ALLOCATION_VARS = frozenset({"SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_NTASKS", "SLURM_NPROCS"})

def read_fields(line: str, ifs: str, names: int) -> list[str]:
    """What `read NAME1 ... NAMEn` assigns from one line (bash manual, "read"; POSIX): the first n-1 names take one field
    each, split as `split_fields` splits; the last takes the rest of the line, IFS white space trimmed at both ends, and
    a rest that is one field ended by a single delimiter loses that delimiter (`a:b:` -> `a`, `b`; `b::` stays)."""
    white = "".join(c for c in ifs if c in " \t\n")
    i, n = 0, len(line)
    while i < n and line[i] in white:
        i += 1
    out: list[str] = []
    for _ in range(names - 1):
        j = i
        while j < n and line[j] not in ifs:
            j += 1
        out.append(line[i:j])
        i = j
        while i < n and line[i] in white:  # the delimiter: white space, at most one other IFS character, white space
            i += 1
        if i < n and line[i] in ifs and line[i] not in white:
            i += 1
            while i < n and line[i] in white:
                i += 1
    rest = line[i:].rstrip(white) if white else line[i:]
    if rest and rest[-1] in ifs and rest[-1] not in white and len(split_fields(rest, ifs)) == 1:
        rest = rest[:-1].rstrip(white) if white else rest[:-1]
    return out + [rest] + [""] * max(0, names - len(out) - 1)


class Shell:
    """Variables (scalars and arrays), exports, and word expansion against them."""

    def __init__(self, env: dict[str, str], script_path: Optional[str] = None):
        self.env_in = {k: v for k, v in env.items() if not k.isdigit()}
        top = max((int(k) for k in env if k.isdigit() and 0 < int(k) < 10_000), default=0)
        self.positional: list = [env.get(str(k)) for k in range(1, top + 1)]  # $1 $2 ...: env "1", "2", ...
        # whether $1 $2 ... are still the script's own arguments (from the environment), not a function's or `set --`'s:
        # only those are reported as taken from the environment
        self.positional_from_env = True
        self.vars: dict[str, Value] = {}
        self.unset: set[str] = set()  # names `unset` removed: no longer read from the environment
        self.exported: set[str] = set()
        self.env_taken: dict[str, str] = {}  # variables read from env_in because the script had not set them
        self.cond_mode = False  # in `if` tests an unset variable is "" (bash), elsewhere it stays unresolved
        self.script_path = script_path
        self.heredocs: list = []  # the here-document bodies of the text being run (shell_lex.Stmt.heredocs)
        self.budget = Budget()  # shared with the files it sources and the child scripts it runs (script.budget)
        self.held_bytes = 0  # what this shell's own variables hold, counted in budget.held_bytes too

    def get(self, name: str) -> Optional[Value]:
        if name.isdigit() and name != "0":
            k = int(name)
            value = self.positional[k - 1] if k <= len(self.positional) else None
            if value is not None and self.positional_from_env:
                self.env_taken.setdefault(name, value)
            return value
        if name == "#":
            return str(len(self.positional))
        if name in ("@", "*"):
            return [p for p in self.positional if p is not None] if None not in self.positional else \
                [p if p is not None else mark(str(k + 1)) for k, p in enumerate(self.positional)]
        if name in self.vars:
            return self.vars[name]
        if name in ("0", "BASH_SOURCE") and self.script_path:
            return self.script_path if name == "0" else [self.script_path]
        if name in self.unset:
            return None
        value = self.env_in.get(name)
        if value is not None:
            self.env_taken.setdefault(name, value)
        return value

    def set(self, name: str, value: Value) -> None:
        self._hold(value_bytes(value) - value_bytes(self.vars.get(name)))
        self.vars[name] = value
        self.unset.discard(name)

    def _hold(self, delta_bytes: int) -> None:
        self.held_bytes += delta_bytes
        self.budget.hold(delta_bytes)

    def remove(self, name: str) -> None:
        """`unset NAME`: gone from the script and, for the rest of the run, from the environment too."""
        self._hold(-value_bytes(self.vars.pop(name, None)))
        self.exported.discard(name)
        self.unset.add(name)

    def saved(self, name: str) -> tuple:
        """What `restore` needs to put NAME back as it was (a function's `local NAME` is undone on return)."""
        return name in self.vars, self.vars.get(name), name in self.unset, name in self.exported

    def restore(self, name: str, state: tuple) -> None:
        had, value, was_unset, was_exported = state
        if had:
            self.set(name, value)
        else:
            self._hold(-value_bytes(self.vars.pop(name, None)))
        (self.unset.add if was_unset else self.unset.discard)(name)
        (self.exported.add if was_exported else self.exported.discard)(name)

    def shift(self, n: int) -> None:
        self.positional = self.positional[n:]

    def words(self, word: str) -> list[str]:
        """Expand one raw word with brace expansion and word splitting (command arguments, array elements)."""
        if "{" not in word:
            return _shlex_split(self._expand(word, split=True), word)
        return [t for part in brace_words(word) for t in _shlex_split(self._expand(part, split=True), word)]

    def scalar(self, word: str) -> str:
        """Expand one raw word without splitting (assignment values, `[[ ]]` operands, defaults)."""
        return " ".join(_shlex_split(self._expand(word, split=False), word))

    def _expand(self, w: str, split: bool) -> str:
        """The word with its expansions done and re-quoted for shlex; every byte an expansion builds counts against
        the reading's budget (constraints.script.budget) before it is joined."""
        out, i, dq, built = [], 0, False, 0
        while i < len(w):
            c = w[i]
            if c == "\\" and i + 1 < len(w):
                # in double quotes a backslash quotes only $ ` " \ and newline, and is then removed (bash manual,
                # "Double Quotes"); shlex would keep it before $ and `, so it is removed here
                out.append(w[i + 1] if dq and w[i + 1] in "$`" else w[i:i + 2])
                i += 2
                continue
            if c == "'" and not dq:
                j = w.find("'", i + 1) + 1
                if j == 0:
                    raise LaunchScriptError(f"unterminated quote in `{w[:60]}`; close the ' it opens")
                out.append(w[i:j])
                i = j
                continue
            if c == '"':
                dq = not dq
            if c == "`":
                j = _closing_backquote(w, i)
                out.append(self._insert(self.command_output(w[i + 1:j - 1].replace("\\`", "`")), dq, split))
                i = j
                continue
            if c == "$" and i + 1 < len(w):
                value, i = self._dollar(w, i)
                out.append(self._insert(value, dq, split))
                built += len(out[-1])
                if self.budget.expanded_bytes + built > MAX_EXPANDED_BYTES:
                    self.budget.expand(built)  # refused before a word of gigabytes is joined
                continue
            out.append(c)
            i += 1
        text = "".join(out)
        self.budget.expand(len(text))
        return text

    def ifs(self) -> str:
        """The IFS word splitting uses: the script's own, else bash's default (bash does not take IFS from the
        environment it starts in; an unset IFS splits as the default does)."""
        value = self.vars.get("IFS")
        return value if isinstance(value, str) and not MARK_RE.search(value) else DEFAULT_IFS

    def _insert(self, value: Value, dq: bool, split: bool) -> str:
        """Re-quote an expanded value so shlex reproduces bash's splitting of it. A mark (an unknown value) is
        one word whatever it holds: `$(pick_dir --num-layers 400)` must not become flags."""
        if isinstance(value, list):
            if dq:
                return '"' + " ".join(shlex.quote(e) for e in value) + '"' if value else ""
            return " ".join(shlex.quote(p) for e in value for p in split_fields(e, self.ifs()))
        if dq:
            return value.replace("\\", "\\\\").replace('"', '\\"')
        if split:
            return " ".join(shlex.quote(p) for p in split_fields(value, self.ifs()))
        return shlex.quote(value) if value else ""

    def _dollar(self, w: str, i: int) -> tuple[Value, int]:
        if w.startswith("$((", i):
            j = match(w, i + 1, "(", ")")
            return self._arith(w[i + 3:j - 2]), j
        if w.startswith("$(", i):
            j = match(w, i + 1, "(", ")")
            return self.command_output(w[i + 2:j - 1]), j
        if w.startswith("${", i):
            j = match(w, i + 1, "{", "}")
            return self._param(w[i + 2:j - 1]), j
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!]", w[i + 1:])
        if not m:
            return "$", i + 1
        return self._param(m.group(0)), i + 1 + m.end()

    def command_output(self, command: str) -> Value:
        """What `$(command)` gives, for the few commands whose output follows from the script's own text
        (`pwd`, `dirname`, `basename`, `echo`, `cd DIR && pwd`, `readlink -f` / `realpath` without symlinks, `cat <<EOF`
        here-documents); a mark otherwise.
        Nothing is run."""
        cmd = command.strip()
        shown = "$(" + re.sub(r"\x00<<[0-9]+\x00", "<<EOF", " ".join(cmd.split()))[:60] + ")"
        m = re.fullmatch(r"cat\s*(?:-\s*)?\x00<<([0-9]+)\x00\s*", cmd)
        if m and int(m.group(1)) < len(self.heredocs):
            body, quoted = self.heredocs[int(m.group(1))]
            return (body if quoted else self.heredoc_text(body)).rstrip("\n")
        if cmd in ("pwd", "pwd -L", "pwd -P"):
            here = self.get("PWD")
            return here if isinstance(here, str) else mark("PWD")

        parts = split_words(cmd) if "\x00" not in cmd else []
        m = re.fullmatch(r"cd\s+(.+?)\s*&&\s*pwd(?:\s+-[LP])?", cmd)
        if m:
            where = self.scalar(m.group(1))
            here = self.get("PWD")
            if MARK_RE.search(where) or not isinstance(here, str) and not where.startswith("/"):
                return mark(shown)
            return os.path.normpath(os.path.join(here if isinstance(here, str) else "/", where))
        if len(parts) == 3 and parts[0] in ("readlink", "realpath") and parts[1] in ("-f", "-m", "-e") or \
                len(parts) == 2 and parts[0] == "realpath":
            arg, here = self.scalar(parts[-1]), self.get("PWD")  # the logical path: symlinks are not resolved
            if MARK_RE.search(arg) or not arg.startswith("/") and not isinstance(here, str):
                return mark(shown)
            return os.path.normpath(os.path.join(here if isinstance(here, str) else "/", arg))
        if len(parts) == 2 and parts[0] in ("dirname", "basename"):
            arg = self.scalar(parts[1])
            if MARK_RE.search(arg):
                return mark(shown)
            fn = os.path.dirname if parts[0] == "dirname" else os.path.basename
            return fn(arg.rstrip("/") or "/") or "."
        if parts and parts[0] == "echo" and not any(p.startswith("-") for p in parts[1:2]) and \
                not any(t in ("|", "&&", "||", ">", ">>") for t in parts):
            return " ".join(t for p in parts[1:] for t in self.words(p))
        return mark(shown)

    def heredoc_text(self, body: str) -> str:
        """An unquoted here-document: `$` expansions and `\\$` escapes apply, quotes stay literal (bash)."""
        out, i = [], 0
        while i < len(body):
            c = body[i]
            if c == "\\" and i + 1 < len(body) and body[i + 1] in "$`\\\n":
                out.append("" if body[i + 1] == "\n" else body[i + 1])
                i += 2
            elif c == "$" and i + 1 < len(body):
                value, i = self._dollar(body, i)
                out.append(" ".join(value) if isinstance(value, list) else value)
            elif c == "`":
                j = _closing_backquote(body, i)
                value = self.command_output(body[i + 1:j - 1])
                out.append(" ".join(value) if isinstance(value, list) else value)
                i = j
            else:
                out.append(c)
                i += 1
        return "".join(out)

    def _param(self, body: str) -> Value:
        reshaped = self._case_or_substring(body)
        if reshaped is not None:
            return reshaped
        m = _PARAM_RE.match(body)
        if m and m.group(5) and not m.group(4) and not m.group(1):
            trimmed = self._trim(m.group(2), m.group(3), m.group(5))
            if trimmed is not None:
                return trimmed
        if not m or (m.group(5) and not m.group(4)):
            return mark("${" + body + "}")  # ${X:1:2}, ${X^^}, ...: not modelled
        length, name, index, op, word = m.groups()
        if name in ("@", "*") and index is None:
            index = name  # $@ / $* are the positional parameters as a list
        value = self.get(name)
        if isinstance(value, list) and index not in ("@", "*"):
            value = value[int(index or 0)] if int(index or 0) < len(value) else None
        elif isinstance(value, str) and index in ("@", "*"):
            value = [value] if index == "@" else value
        if length:
            return str(len(value) if isinstance(value, list) else len(value or ""))
        if index == "*" and isinstance(value, list) and not op:
            return self.ifs()[:1].join(value)  # "$*" / "${A[*]}": one word joined by IFS's first character
        empty = value is None or (op or "").startswith(":") and value in ("", [])
        if op in (":-", "-") and value is None and name in SLURM_ALLOCATION_VARS:
            # `${SLURM_NNODES:-1}`: under sbatch / srun Slurm sets it to the allocation, which the default (for a run
            # outside Slurm) is not; unknown here, so the #SBATCH lines or --nodes decide the size, not the fallback
            return mark(name)
        if op in (":-", "-") and (value is None if op == "-" else empty):
            return self.scalar(word)
        if op in (":=", "=") and (value is None if op == "=" else empty):
            self.set(name, self.scalar(word))
            return self.vars[name]
        if op in (":+", "+"):
            return "" if (value is None if op == "+" else empty) else self.scalar(word)
        if op in (":?", "?") and (value is None if op == "?" else empty):
            raise LaunchScriptError(f"${{{name}}} is not set ({self.scalar(word) or 'required'}); pass {name} in the environment")
        if value is None:
            return "" if self.cond_mode else mark(name)
        return value

    def _case_or_substring(self, body: str) -> Optional[Value]:
        """`${X,,}` `${X^^}` `${X,}` `${X^}` (case) and `${X:offset}` `${X:offset:length}` (substring, bash's
        negative offset written after a space or in parentheses) of a known scalar; a mark when X is unknown; None
        when the form is another."""
        m = _CASE_RE.match(body) or _SUBSTRING_RE.match(body)
        if not m:
            return None
        value = self.get(m.group(1))
        if value is None and self.cond_mode:
            return ""  # an unset variable in a test is "" (bash), as `Shell.cond_mode` reads it
        if not isinstance(value, str) or MARK_RE.search(value):
            return mark("${" + body + "}")
        if m.re is _CASE_RE:
            op = m.group(2)
            if op in ("^^", ",,"):
                return value.upper() if op == "^^" else value.lower()
            return (value[:1].upper() if op == "^" else value[:1].lower()) + value[1:]
        offset = int(m.group(2).replace(" ", "").strip("()"))
        start = max(len(value) + offset, 0) if offset < 0 else offset
        if m.group(3) is None:
            return value[start:]
        length = int(m.group(3))
        return value[start:start + length] if length >= 0 else value[start:len(value) + length]

    def _trim(self, name: str, index: Optional[str], rest: str) -> Optional[Value]:
        """`${X%pat}` `${X%%pat}` `${X#pat}` `${X##pat}` `${X/pat/s}` `${X//pat/s}` and the anchored `${X/#pat/s}`
        (a match at the start) and `${X/%pat/s}` (at the end) over a known scalar (glob patterns as bash's, the
        longest match); None when the form or the value is not one of those."""
        op = re.match(r"(%%|%|##|#|//|/)(.*)$", rest, re.S)
        value = self.get(name)
        if not op or index is not None or not isinstance(value, str):
            return None if not op or index is not None else (mark(name) if value is None else None)
        kind, arg = op.groups()
        anchor = ""
        if kind == "/" and arg[:1] in ("#", "%"):
            anchor, arg = arg[0], arg[1:]
        if kind in ("/", "//"):
            cut = re.search(r"(?<!\\)/", arg)
            pat_raw, repl_raw = (arg[:cut.start()], arg[cut.end():]) if cut else (arg, "")
            pat, repl = self.scalar(pat_raw), self.scalar(repl_raw)
        else:
            pat, repl = self.scalar(arg), ""
        if MARK_RE.search(pat) or MARK_RE.search(repl) or MARK_RE.search(value):
            return None
        rx = fnmatch.translate(pat)[4:-3]  # the glob as a regex body, without (?s: ... )\Z
        if kind == "%":
            cands = [k for k in range(len(value), -1, -1) if re.fullmatch(f"(?s:{rx})", value[k:])]
            return value[:cands[0]] if cands else value
        if kind == "%%":
            cands = [k for k in range(len(value) + 1) if re.fullmatch(f"(?s:{rx})", value[k:])]
            return value[:cands[0]] if cands else value
        if kind in ("#", "##"):
            ks = range(len(value) + 1) if kind == "#" else range(len(value), -1, -1)
            cands = [k for k in ks if re.fullmatch(f"(?s:{rx})", value[:k])]
            return value[cands[0]:] if cands else value
        if anchor == "#":  # the longest prefix the pattern matches (bash); an empty pattern inserts at the start
            cands = [k for k in range(len(value), -1, -1) if re.fullmatch(f"(?s:{rx})", value[:k])]
            return repl + value[cands[0]:] if cands else value
        if anchor == "%":
            cands = [k for k in range(len(value) + 1) if re.fullmatch(f"(?s:{rx})", value[k:])]
            return value[:cands[0]] + repl if cands else value
        return re.sub(f"(?s:{rx})", lambda _m: repl, value, count=0 if kind == "//" else 1) if pat else value

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
            shown = expr if len(expr) <= 60 else expr[:60] + "..."
            raise LaunchScriptError(f"cannot evaluate $(({shown})): {e}; use integer arithmetic only") from None
