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
_FUNC_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\s*\(\)")
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
        elif c == "'":
            sq = True
            cur.append(c)
        elif c == '"':
            dq = True
            cur.append(c)
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;("):
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
               ast.Div: lambda: _trunc_div(a, b), ast.Mod: lambda: a - b * _trunc_div(a, b)}
        if type(node.op) in ops:
            return ops[type(node.op)]()
    raise ValueError("unsupported expression")


def _trunc_div(a: int, b: int) -> int:
    """Bash integer division truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class _Interpreter:
    """Walks the statements on the taken path, recording assignments, until the launch line."""

    def __init__(self, env: dict[str, str]):
        self.sh = _Shell(env)
        self.found: Optional[tuple[list[str], dict[str, str]]] = None  # launch tokens, prefix env

    def run(self, statements: list[str]) -> None:
        ifs: list[list[bool]] = []  # per open `if`: [parent_active, branch_taken, active]
        skip_until: list[str] = []
        try:
            for stmt in statements:
                words = _scan(stmt, " \t\n")
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
            return _Condition(self.sh, words).evaluate()
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
        while k < len(words) and _ASSIGN_RE.match(words[k]):
            k += 1
        if k == len(words):
            for w in words:
                self._assign(w, export=False)
            return
        for w in words[:k]:
            name, _, raw = _ASSIGN_RE.match(w).groups()
            prefix[name] = self.sh.scalar(raw)
        cmd = words[k]
        if cmd in ("export", "declare", "typeset", "local", "readonly"):
            for w in words[k + 1:]:
                if w.startswith("-"):
                    continue
                if _ASSIGN_RE.match(w):
                    self._assign(w, export=cmd == "export")
                elif cmd == "export":
                    self.sh.exported.add(w)
            return
        if cmd == "exit":
            raise _Exit()
        tokens = [t for w in words[k:] for t in self.sh.words(w)]
        if tokens and (_LAUNCHERS.match(os.path.basename(tokens[0])) or _SCRIPT_RE.match(os.path.basename(tokens[0]))):
            if any(_SCRIPT_RE.match(os.path.basename(t)) for t in tokens):
                self.found = (tokens, prefix)

    def _assign(self, word: str, export: bool) -> None:
        name, plus, raw = _ASSIGN_RE.match(word).groups()
        if raw.startswith("(") and raw.endswith(")"):
            value: Value = [t for w in _scan(raw[1:-1], " \t\n") for t in self.sh.words(w)]
            old = self.sh.get(name)
            if plus and old is not None:
                value = (old if isinstance(old, list) else [old]) + value
        else:
            value = self.sh.scalar(raw)
            old = self.sh.get(name)
            if plus and isinstance(old, list):
                value = old + [value]
            elif plus and old is not None:
                value = old + value
        self.sh.vars[name] = value
        if export:
            self.sh.exported.add(name)


class _Condition:
    """`[[ ... ]]`, `[ ... ]`, `true`, `false`, joined by && / || and negated by !; file tests count as true."""

    def __init__(self, sh: _Shell, words: list[str]):
        self.sh, self.words, self.text = sh, words, " ".join(words)

    def fail(self) -> LaunchScriptError:
        return LaunchScriptError(f"cannot evaluate `if {self.text}`; shardplan only reads string tests [ -n/-z/==/!= ]")

    def evaluate(self) -> bool:
        result, op, i, w = None, None, 0, self.words
        while i < len(w):
            neg = w[i] == "!"
            i += neg
            if i >= len(w):
                raise self.fail()
            if w[i] in ("[[", "["):
                close = "]]" if w[i] == "[[" else "]"
                try:
                    j = w.index(close, i)
                except ValueError:
                    raise self.fail() from None
                val = self._test(w[i + 1:j])
                i = j + 1
            elif w[i] in ("true", "false", ":"):
                val, i = w[i] != "false", i + 1
            else:
                raise self.fail()
            val = val != neg
            result = val if op is None else (result and val if op == "&&" else result or val)
            if i < len(w):
                if w[i] not in ("&&", "||"):
                    raise self.fail()
                op, i = w[i], i + 1
        if result is None:
            raise self.fail()
        return result

    def _test(self, w: list[str]) -> bool:
        for k, tok in enumerate(w):  # lowest precedence first: || / -o, then && / -a
            if tok in ("||", "-o"):
                return self._test(w[:k]) or self._test(w[k + 1:])
        for k, tok in enumerate(w):
            if tok in ("&&", "-a"):
                return self._test(w[:k]) and self._test(w[k + 1:])
        if w and w[0] == "!":
            return not self._test(w[1:])
        s = [self.sh.scalar(x) for x in w]
        if len(s) == 1:
            return s[0] != ""
        if len(s) == 2 and w[0] in ("-n", "-z"):
            return (s[1] != "") == (w[0] == "-n")
        if len(s) == 2 and w[0] in ("-f", "-d", "-e", "-r", "-s", "-x", "-w"):
            return True  # assume the files a launch script checks for exist
        if len(s) == 3 and w[1] in ("==", "=", "!="):
            hit = fnmatch.fnmatchcase(s[0], s[2]) if w[1] == "==" else s[0] == s[2]
            return hit != (w[1] == "!=")
        ints = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__, "-le": int.__le__, "-gt": int.__gt__, "-ge": int.__ge__}
        if len(s) == 3 and w[1] in ints:
            try:
                return ints[w[1]](int(s[0]), int(s[2]))
            except ValueError:
                raise self.fail() from None
        raise self.fail()


def _parse_launcher(tokens: list[str], out: dict[str, Union[int, str]]) -> tuple[str, int]:
    """Read launcher options up to the pretrain script; returns (launcher name, index of the script)."""
    launcher, i = os.path.basename(tokens[0]), 0
    while i < len(tokens):
        t = tokens[i]
        base = os.path.basename(t)
        if _SCRIPT_RE.match(base):
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
                and not _SCRIPT_RE.match(os.path.basename(nxt)) and not _LAUNCHERS.match(os.path.basename(nxt))
            if takes:
                val, i = nxt, i + 1
            key = {"N": "nodes", "n": "ntasks", "np": "ntasks", "nproc-per-node": "nproc_per_node"}.get(key, key)
            if (eq or takes) and not _MARK_RE.search(val):
                out[key] = int(val) if re.fullmatch(r"[0-9]+", val) else val
        i += 1
    raise LaunchScriptError("no pretrain_*.py script after the launcher; write `torchrun ... pretrain_gpt.py ARGS`")


def _sbatch(text: str) -> dict[str, Union[int, str]]:
    out: dict[str, Union[int, str]] = {}
    for line in re.findall(r"^\s*#SBATCH\s+(.*)$", text, re.M):
        toks = shlex.split(line, comments=True)
        if toks:
            _parse_launcher(["sbatch"] + toks + ["pretrain_x.py"], out)
    return out


def _resolve_args(args: list[str]) -> tuple[list[str], list[str]]:
    """Leave unresolved variables only in no-effect flag values; elsewhere fail naming the variable."""
    out, unresolved, flag = [], [], None
    for tok in args:
        if tok.startswith("--"):
            flag = tok.split("=", 1)[0]
        m = _MARK_RE.search(tok)
        if m:
            name = m.group(1)
            info = lookup(flag) if flag else None
            if info is None or not info.no_effect or tok.split("=", 1)[0] == flag and "=" not in tok and tok.startswith("--"):
                where = f"the value of {flag}" if flag else "a script argument"
                raise LaunchScriptError(f"{where} uses {_show(name)}, which is not set; set {_show(name)} in the script or pass it in env")
            unresolved.append(name)
            tok = _MARK_RE.sub(lambda mm: "${" + mm.group(1) + "}", tok)
        out.append(tok)
    return out, unresolved


def _show(name: str) -> str:
    return name if name.startswith("$") else "$" + name


def _is_argument_file(statements: list[str]) -> bool:
    return all(_scan(s, " \t\n")[0].startswith("-") for s in statements)


def extract_argv(text: str, env: Optional[dict[str, str]] = None) -> LaunchCommand:
    """The pretrain_*.py arguments, launcher sizes and exported env of a launch script or argument file.

    `env` plays the environment the script would see (also positional parameters as "1", "2", ...)."""
    statements = _scan(text, "\n;")
    if not statements:
        raise LaunchScriptError("launch script is empty; give a script with a `torchrun ... pretrain_gpt.py` line or an argument file")
    if _is_argument_file(statements):
        sh = _Shell(env or {})
        args, unresolved = _resolve_args([t for s in statements for w in _scan(s, " \t\n") for t in sh.words(w)])
        return LaunchCommand(script_args=args, unresolved=unresolved)
    run = _Interpreter(env or {})
    run.run(statements)
    if run.found is None:
        raise LaunchScriptError("no `torchrun|python ... pretrain_*.py` command on the script's path; add one, or pass an argument file")
    tokens, prefix = run.found
    distributed = _sbatch(text)
    launcher, k = _parse_launcher(tokens, distributed)
    args, unresolved = _resolve_args(tokens[k + 1:])
    exported = {n: run.sh.get(n) for n in run.sh.exported}
    env_out = {n: v for n, v in {**exported, **prefix}.items() if isinstance(v, str) and not _MARK_RE.search(v)}
    return LaunchCommand(script_args=args, script=tokens[k], launcher=launcher, distributed=distributed,
                         env=env_out, unresolved=sorted(set(unresolved)))
