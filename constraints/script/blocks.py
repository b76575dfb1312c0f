"""The compound commands of a launch script, walked as bash would: if/elif/else, case, for, while/until,
functions, `{ ... }` groups, and what happens to a construct check cannot follow.

Why its own module: constraints.script.interpreter runs simple commands (assignments, the launch line, sourced and
child scripts); this mixin holds the block structure, which is where bash semantics are easiest to get wrong.
Followed for values the script can know: `if` tests (constraints.script.conditions), `case` glob patterns, `for`
over words, `while`/`until` whose test can be evaluated (bounded by MAX_STEPS), functions with `$1...`,
`return`, `break N`/`continue N`. Not followed (a test on a command's result, `for ((...))`, a loop over
unknown values, `select`): a warning naming the line, and each variable the skipped statements could set
becomes unknown; a launch line inside such a construct is an error naming the line.
"""
from __future__ import annotations

import fnmatch
import functools
import os
import re
from typing import Optional

from constraints.script.budget import ScriptBudgetError
from constraints.script.conditions import Condition
from constraints.script.expand import MARK_RE, mark
from constraints.script.lex import LaunchScriptError, Stmt
from constraints.script.lex import words as split_words

ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$", re.S)
SCRIPT_RE = re.compile(r"^(pretrain|finetune)_[A-Za-z0-9_]*\.py$")
FUNC_RE = re.compile(r"^(?:function\s+([A-Za-z_][A-Za-z0-9_-]*)(?:\s*\(\))?|([A-Za-z_][A-Za-z0-9_-]*)\s*\(\))\s*(\{)?")
KEYWORD_RE = re.compile(r"^(then|do|else)\s+(.*)$", re.S)
OPENERS = {"if": "fi", "for": "done", "while": "done", "until": "done", "select": "done", "case": "esac", "{": "}"}
CASE_ENDS = (";;", ";&", ";;&")  # what ends a case arm (constraints.script.lex keeps each as its own statement)
MAX_STEPS = 20_000  # statements run, all loops and calls together: bounds `while true` and recursion (~1 s)


@functools.lru_cache(maxsize=8192)
def _words_of(text: str) -> tuple[str, ...]:
    return tuple(split_words(text))


def stmt_words(s: str) -> list[str]:
    """The raw words of a statement, memoised by its text: loops re-read the same statements."""
    return list(_words_of(str(s)))


class ScriptExit(Exception):
    """The script reached `exit` on its taken path."""


class ScriptReturn(Exception):
    """`return` in a function (or a sourced file)."""


class LoopBreak(Exception):
    """`break N`."""

    def __init__(self, n: int = 1):
        self.n = n


class LoopContinue(LoopBreak):
    """`continue N`."""


class Blocks:
    """Mixin: the block walker. The class using it provides `sh`, `found`, `warnings`, `functions`, `steps`,
    `where` and `_simple(words, stmt)` (constraints.script.interpreter.Interpreter)."""

    def run(self, stmts: list[Stmt]) -> None:
        try:
            self.block(stmts)
        except ScriptExit as e:
            self.exited = str(e)
            return
        except (LoopBreak, ScriptReturn):
            return

    def block(self, stmts: list[Stmt]) -> None:
        i = 0
        while i < len(stmts) and self.found is None:
            i = self.statement(stmts, i)

    def statement(self, stmts: list[Stmt], i: int) -> int:
        """Run stmts[i] (and the block it opens); the index of the next statement. A budget spent anywhere inside
        (constraints.script.budget) is refused naming the innermost line, where the cost was met."""
        try:
            return self._statement(stmts, i)
        except ScriptBudgetError as exc:
            if exc.located:
                raise
            located = ScriptBudgetError(f"{self.where}line {stmts[i].line}: {exc}")
            located.located = True
            raise located from None

    def _statement(self, stmts: list[Stmt], i: int) -> int:
        self._tick(1)
        s = stmts[i]
        self.sh.heredocs = s.heredocs
        m = KEYWORD_RE.match(s)
        if m:  # `then CMD`, `do CMD`, `else CMD` left at block level: the command part
            return self.statement(stmts[:i] + [Stmt(m.group(2), s.line, s.heredocs)] + stmts[i + 1:], i)
        words = stmt_words(s)
        head = words[0]
        fm = FUNC_RE.match(s)
        if fm and (head == "function" or "(" in words[0] or len(words) > 1 and words[1].startswith("(")):
            return self._define(stmts, i, fm)
        if len(words) > 2 and words[-1] == "{" and words[-2] in ("||", "&&"):
            end = self._end(stmts, i)
            self._simple(words[:-2], s)
            if words[-2] == "&&" and self.found is None:  # `cmd || { ...; }` runs only if cmd fails: taken to succeed
                self.block(stmts[i + 1:end])
            return end + 1
        if head in OPENERS:
            end = self._end(stmts, i)
            body = stmts[i:end + 1]
            {"if": self._if, "for": self._for, "while": self._while, "until": self._while, "select": self._skip,
             "case": self._case, "{": self._group}[head](body)
            return end + 1
        if head.startswith("(") and not ASSIGN_RE.match(head):
            self._not_followed(s, "a subshell `( ... )`", [s])
            return i + 1
        if head in ("fi", "done", "esac", "}", "elif", "then", "do") + CASE_ENDS:
            raise LaunchScriptError(f"line {s.line}: `{head}` without its opening statement; fix the script's "
                                    "if/fi, do/done, case/esac nesting")
        self._simple(words, s)
        return i + 1

    def _tick(self, n: int) -> None:
        """Count `n` statements visited (run or scanned) against MAX_STEPS, which bounds the whole walk's time."""
        self.steps += n
        if self.steps > MAX_STEPS:
            raise ScriptBudgetError(f"the script runs more than {MAX_STEPS} statements (a loop that does not end?); "
                                    "simplify the loop")

    def _end(self, stmts: list[Stmt], i: int) -> int:
        """Index of the statement closing the block opened at stmts[i]."""
        depth = 0
        for j in range(i, len(stmts)):
            self._tick(1)
            head = opener_head(stmts[j])
            if head in OPENERS or opens_body(stmts[j]):
                depth += 1
            elif head in ("fi", "done", "esac", "}"):
                depth -= 1
                if depth == 0:
                    return j
        what = stmt_head(stmts[i])
        raise LaunchScriptError(f"line {stmts[i].line}: `{what}` is never closed; add its `{OPENERS.get(what, '}')}`")

    def _define(self, stmts: list[Stmt], i: int, fm: re.Match) -> int:
        name = fm.group(1) or fm.group(2)
        if fm.group(3):  # `f() {` / `function f {` on this line
            end, first = self._end_brace(stmts, i), stmts[i]
            rest = first[fm.end():].strip()
            body = ([Stmt(rest, first.line, first.heredocs)] if rest else []) + stmts[i + 1:end]
        else:  # the `{` opens on the next statement
            if i + 1 >= len(stmts) or stmt_head(stmts[i + 1]) != "{":
                raise LaunchScriptError(f"line {stmts[i].line}: function {name} has no `{{ ... }}` body; write {name}() {{ ...; }}")
            end = self._end(stmts, i + 1)
            nxt = stmts[i + 1]
            rest = nxt[1:].strip()
            body = ([Stmt(rest, nxt.line, nxt.heredocs)] if rest else []) + stmts[i + 2:end]
        self.functions[name] = body
        return end + 1

    def _end_brace(self, stmts: list[Stmt], i: int) -> int:
        depth = 0
        for j in range(i, len(stmts)):
            head = opener_head(stmts[j])
            if j == i or head in OPENERS or opens_body(stmts[j]):
                depth += 1
            elif head in ("fi", "done", "esac", "}"):
                depth -= 1
                if depth == 0:
                    return j
        raise LaunchScriptError(f"line {stmts[i].line}: the function body is never closed; add its `}}`")

    def _arms(self, body: list[Stmt], splitters: tuple) -> list[tuple[Stmt, list[Stmt]]]:
        """Split a block's inner statements at depth-0 statements whose head is in `splitters`."""
        arms: list[tuple[Stmt, list[Stmt]]] = [(body[0], [])]
        self._tick(len(body))
        depth = 0
        for s in body[1:-1]:
            head = stmt_head(s)
            if depth == 0 and head in splitters:
                arms.append((s, []))
                continue
            head = opener_head(s)
            if head in OPENERS or opens_body(s):
                depth += 1
            elif head in ("fi", "done", "esac", "}"):
                depth -= 1
            arms[-1][1].append(s)
        return arms

    def _if(self, body: list[Stmt]) -> None:
        for head_stmt, stmts in self._arms(body, ("elif", "else")):
            words = stmt_words(head_stmt)
            if words[0] == "else":
                self.block(strip_keyword([head_stmt] + stmts, None, "else"))  # `else CMD`: CMD runs too
                return
            cond = self._cond(words[1:], head_stmt)
            if cond is None:
                self._not_followed(head_stmt, f"`{words[0]} {' '.join(words[1:])[:50]}` (a test check cannot evaluate)",
                                   body, launch_inside_is_error=True)
                return
            if cond:
                self.block(strip_keyword(stmts, None, "then"))
                return

    def _for(self, body: list[Stmt]) -> None:
        head = body[0]
        words = stmt_words(head)
        if len(words) < 2 or words[1].startswith("(("):
            self._not_followed(head, "a C-style `for ((...))` loop", body, launch_inside_is_error=True)
            return
        var = words[1]
        if len(words) > 2 and words[2] == "in":
            items = [t for w in words[3:] for t in self.sh.words(w)]
        else:
            items = self.sh.get("@") or []
        inner = strip_keyword(body[1:-1], None, "do")
        if any(MARK_RE.search(t) for t in items):
            self._not_followed(head, "a `for` loop over values check cannot know", body, launch_inside_is_error=True)
            return
        for item in items:
            self.sh.set(var, item)
            if self._loop_pass(inner):
                return

    def _loop_pass(self, inner: list[Stmt]) -> bool:
        """One pass of a loop body, as bash runs it: `continue N` / `break N` with N > 1 leave this loop and go on to
        the enclosing one. True when the loop ends here (a `break`, or the launch line found)."""
        self.sh.budget.loop_pass()
        try:
            self.block(inner)
        except LoopContinue as c:
            if c.n > 1:
                raise LoopContinue(c.n - 1) from None
        except LoopBreak as b:
            if b.n > 1:
                raise LoopBreak(b.n - 1) from None
            return True
        return self.found

    def _while(self, body: list[Stmt]) -> None:
        head = body[0]
        words = stmt_words(head)
        until = words[0] == "until"
        inner = strip_keyword(body[1:-1], None, "do")
        while True:
            cond = self._cond(words[1:], head)
            if cond is None:
                self._not_followed(head, f"`{words[0]} {' '.join(words[1:])[:50]}` (a loop test check cannot evaluate)",
                                   body, launch_inside_is_error=True)
                return
            if cond == until or self._loop_pass(inner):
                return

    def _case(self, body: list[Stmt]) -> None:
        head = body[0]
        self._tick(len(body))
        words = stmt_words(head)
        if len(words) < 3 or words[2] != "in":
            raise LaunchScriptError(f"line {head.line}: `case` needs `case WORD in`; fix the statement")
        subject = self.sh.scalar(words[1])
        if MARK_RE.search(subject):
            self._not_followed(head, f"`case {words[1]}` on a value check cannot know", body, launch_inside_is_error=True)
            return
        arms: list[list] = []  # [patterns, statements, terminator or "" while the arm is open]
        rest = [Stmt(" ".join(words[3:]), head.line, head.heredocs)] if len(words) > 3 else []
        depth = 0
        for s in rest + body[1:-1]:
            if not arms or arms[-1][2]:
                pat, cmd = case_pattern(s)
                if pat is None:
                    if stmt_head(s) in CASE_ENDS:
                        continue
                    raise LaunchScriptError(f"line {s.line}: expected a `PATTERN)` case arm; fix the case block")
                arms.append([pat, [], ""])
                if cmd:
                    arms[-1][1].append(Stmt(cmd, s.line, s.heredocs))
                    depth += _depth_change(cmd)
                continue
            if depth == 0 and stmt_head(s) in CASE_ENDS:
                arms[-1][2] = stmt_head(s)
                continue
            depth += _depth_change(s)
            arms[-1][1].append(s)
        self._case_arms(head, body, subject, arms)

    def _case_arms(self, head: Stmt, body: list[Stmt], subject: str, arms: list[list]) -> None:
        """Run the arm whose pattern matches first, as bash does: after it, `;;` ends the case, `;&` runs the next
        arm's commands without testing its patterns, `;;&` goes on testing the patterns of the arms below."""
        k, fall_through = 0, False
        while k < len(arms):
            pats, stmts, term = arms[k]
            if not fall_through:
                for p in pats:
                    pattern = self.sh.scalar(p)
                    if MARK_RE.search(pattern):
                        self._not_followed(head, f"a case pattern {p} check cannot know", body,
                                           launch_inside_is_error=True)
                        return
                    if fnmatch.fnmatchcase(subject, pattern):
                        break
                else:
                    k += 1
                    continue
            self.block(stmts)
            if self.found is not None or term in (";;", ""):
                return
            fall_through = term == ";&"
            k += 1

    def _group(self, body: list[Stmt]) -> None:
        first = body[0]
        rest = first[1:].strip()
        self.block(([Stmt(rest, first.line, first.heredocs)] if rest else []) + body[1:-1])

    def _skip(self, body: list[Stmt]) -> None:
        self._not_followed(body[0], f"`{stmt_head(body[0])}`", body, launch_inside_is_error=True)

    def _cond(self, words: list[str], stmt: Stmt) -> Optional[bool]:
        """The test's value, or None when it depends on something check cannot know (a command's result)."""
        if words and words[-1] in ("then", "do"):
            words = words[:-1]
        self.sh.cond_mode = True
        try:
            return Condition(self.sh, words).evaluate()
        except LaunchScriptError:
            return None
        finally:
            self.sh.cond_mode = False

    def _not_followed(self, at: Stmt, what: str, body: list[Stmt], launch_inside_is_error: bool = False) -> None:
        """Warn naming the line; every variable the skipped statements could set becomes unknown."""
        names = sorted({n for s in body for n in assigned_names(s)})
        if launch_inside_is_error and any(launches(s) for s in body):
            raise LaunchScriptError(f"{self.where}line {at.line}: the launch command is under {what}, which check does not "
                                    "follow; write the launch line outside it, or set the values it tests")
        for n in names:
            self.sh.set(n, mark(f"{n} (set at {self.where}line {at.line}, not followed)"))
        made = f"; now unknown: {', '.join(names)}" if names else ""
        self.warnings.append(f"{self.where}line {at.line}: {what} not followed{made}")


def _depth_change(s: str) -> int:
    """+1 for a statement opening a block, -1 for one closing it: a `;;` inside a nested case is not this arm's end."""
    head = opener_head(s)
    if head in OPENERS or opens_body(s):
        return 1
    return -1 if head in ("fi", "done", "esac", "}") else 0


def stmt_head(s: str) -> str:
    w = stmt_words(s)
    return w[0] if w else ""


def opener_head(s: str) -> str:
    """The statement's head past a leading `then` / `do` / `else`: `do if [ ... ]` (from a one-line
    `for ...; do if ...; fi; done`) opens an `if` that its `fi` closes, not the loop's body."""
    w = stmt_words(s)
    k = 0
    while k + 1 < len(w) and w[k] in ("then", "do", "else"):
        k += 1
    return w[k] if w else ""


def opens_body(s: str) -> bool:
    """A statement opening a `{ ... }` body that is not headed by a keyword: `f() {`, `cmd || {`, `cmd && {`."""
    fm = FUNC_RE.match(s)
    if fm and fm.group(3):
        return True
    w = str(s).split()
    return len(w) > 1 and w[-1] == "{" and w[-2] in ("||", "&&")


def strip_keyword(stmts: list[Stmt], _head_stmt: Optional[Stmt], keyword: str) -> list[Stmt]:
    """The block's statements without its leading `then` / `do` / `else` keyword (a command after it stays)."""
    out = []
    for k, s in enumerate(stmts):
        if k == 0 or not out and stmt_head(s) == keyword:
            w = s.split(None, 1)
            if w and w[0] == keyword:
                if len(w) > 1:
                    out.append(Stmt(w[1], s.line, s.heredocs))
                continue
        out.append(s)
    return out


def case_pattern(s: Stmt) -> tuple[Optional[list[str]], str]:
    """`pat1|pat2) [command]` -> (["pat1", "pat2"], "command"); (None, "") if s is not an arm."""
    text = str(s).lstrip("(").lstrip()
    depth, q, k = 0, None, 0
    while k < len(text):
        c = text[k]
        if q:
            q = None if c == q else q
        elif c in "'\"":
            q = c
        elif c == "\\":
            k += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                pats = [p.strip() for p in split_bars(text[:k])]
                return (pats if all(pats) else None), text[k + 1:].strip()
            depth -= 1
        k += 1
    return None, ""


def split_bars(text: str) -> list[str]:
    out, cur, q = [], [], None
    for c in text:
        if q:
            q = None if c == q else q
        elif c in "'\"":
            q = c
        elif c == "|":
            out.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    out.append("".join(cur))
    return out


def assigned_names(s: str) -> list[str]:
    """Names a statement could set: assignments, export/declare/local/read/unset targets, for variables."""
    try:
        words = stmt_words(s)
    except LaunchScriptError:
        return []
    names = [ASSIGN_RE.match(w).group(1) for w in words if ASSIGN_RE.match(w)]
    if words and words[0] in ("read", "unset", "for", "getopts", "mapfile", "readarray"):
        names += [w for w in words[1:] if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w) and w != "in"][:4]
    return names


def launches(s: str) -> bool:
    return any(SCRIPT_RE.match(os.path.basename(w.strip("\"'"))) or re.search(r"/(pretrain|finetune)_[A-Za-z0-9_]*\.py", w)
               for w in str(s).split()) or bool(re.search(r"\b(sbatch|bash|sh)\b", str(s)) and ".sh" in str(s))
