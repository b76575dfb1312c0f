"""Split launch-script text into statements and words the way bash does, without expanding anything.

Why its own module: every later step (expansion, the interpreter, the launcher parser) works on these
pieces, and the quote/nesting rules are the part easiest to get subtly wrong, so they live in one place.
Handled: '...' and "..." quoting, `<<<` here-strings, backslash escapes (`\\ ` at a line's end is a word of one blank, as in bash),
backquotes, `# comments`, `\\<newline>` continuations,
nesting of `( )` / `$( )` / `${ }` (also inside double quotes, as bash does: `"$(dirname "$X")"` is one word),
`;;` / `;&` / `;;&` case terminators, and here-documents (`<<EOF` / `<<-'EOF'`): the body is taken out of the text, so it is
never read as statements (bash never runs it as the script's own lines), and kept for the command it feeds.
Each statement remembers the line it starts on, so warnings can name it. The scan is linear in the text.
"""
from __future__ import annotations

import re
from typing import Optional

from boundary.errors import ShardplanError

HEREDOC_MARK = "\x00<<{}\x00"  # replaces `<<WORD` in a statement; the index names its body in Stmt.heredocs

class LaunchScriptError(ShardplanError):
    """A launch script shardplan cannot turn into an argument list; the message is one line (script text quoted in it
    has its newlines and tabs shown as spaces)."""

    def __init__(self, message: str = "") -> None:
        super().__init__(" ".join(str(message).replace("\x00", "").split()))

class HeredocBody(tuple):
    """(body, delimiter_was_quoted) of one here-document; `line` is the script line its body starts on."""

    line: int = 0

    def __new__(cls, body: str, quoted: bool, line: int):
        t = super().__new__(cls, (body, quoted))
        t.line = line
        return t

class Stmt(str):
    """One statement's raw text, with the line it starts on and the script's here-document bodies."""

    line: int = 0
    heredocs: list = []  # (body, delimiter_was_quoted) per HEREDOC_MARK index, shared by the statements of one text

    def __new__(cls, text: str, line: int = 0, heredocs: Optional[list] = None):
        s = super().__new__(cls, text)
        s.line, s.heredocs = line, heredocs if heredocs is not None else []
        return s

def scan(text: str, split_on: str, heredocs: Optional[list] = None) -> list[str]:
    """Split `text` at unquoted, un-nested chars in `split_on`, dropping `# comments` and `\\<newline>`.

    With `heredocs` (a list to fill), here-document bodies are cut out and `;;` becomes its own part; parts
    are then `Stmt`s carrying their first line."""
    parts: list = []
    cur: list[str] = []
    stack: list[str] = []  # open contexts: ' " ` ( {
    i, n, line, part_line, started = 0, len(text), 1, 1, False
    pending: list[tuple[str, bool, bool]] = []  # here-docs opened on this line: (delimiter, quoted, strip tabs)

    def emit() -> None:
        nonlocal started
        started = False
        while cur and (not cur[-1] or cur[-1].isspace()):  # trailing blanks; an escaped blank is one piece, kept
            cur.pop()
        s = "".join(cur).lstrip()
        if s:
            parts.append(Stmt(s, part_line, heredocs) if heredocs is not None else s)
        cur.clear()

    while i < n:
        c = text[i]
        top = stack[-1] if stack else ""
        if not started and c not in " \t\n#":
            started, part_line = True, line
        if top == "'":
            cur.append(c)
            if c == "'":
                stack.pop()
        elif c == "\\" and i + 1 < n:
            if text[i + 1] == "\n":
                line += 1
            else:
                cur.append(text[i:i + 2])
            i += 1
        elif top == "`":
            cur.append(c)
            if c == "`":
                stack.pop()
        elif top == '"':
            cur.append(c)
            if c == '"':
                stack.pop()
            elif c == "`":
                stack.append("`")
            elif c == "$" and text.startswith(("$(", "${"), i):
                cur.append(text[i + 1])
                stack.append(text[i + 1])
                i += 1
        elif c == "'":
            stack.append("'")
            cur.append(c)
        elif c in '"`':
            stack.append(c)
            cur.append(c)
        elif c == "#" and top != "{" and (i == 0 or text[i - 1] in " \t\n;(|&"):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif c == "(":
            stack.append("(")
            cur.append(c)
        elif c == "{" and cur and cur[-1] == "$":
            stack.append("{")
            cur.append(c)
        elif c == ")" and top == "(" or c == "}" and top == "{":
            stack.pop()
            cur.append(c)
        elif heredocs is not None and c == "<" and text.startswith("<<<", i):
            cur.append("<<<")  # a here-string: its word follows on the line, no body below
            i += 3
            continue
        elif heredocs is not None and c == "<" and text.startswith("<<", i):
            i = _heredoc_op(text, i, pending, cur, len(heredocs) + len(pending))
            continue
        elif c == "\n" and pending:
            cur.append(" " if stack else "")
            if not stack:
                emit()
            i = _heredoc_bodies(text, i + 1, pending, heredocs, line + 1)
            line += 1 + sum(b[0].count("\n") + 1 for b in heredocs[-len(pending):])
            pending.clear()
            continue
        elif not stack and heredocs is not None and c == ";" and text.startswith((";;", ";&"), i):
            # a case arm's end: `;;`, `;&` (run the next arm's commands too) or `;;&` (test the next patterns)
            op = ";;&" if text.startswith(";;&", i) else text[i:i + 2]
            emit()
            cur.append(op)
            started, part_line = True, line
            emit()
            i += len(op)
            continue
        elif not stack and c in split_on:
            emit()
        else:
            cur.append(" " if stack and c == "\n" else c)
        if c == "\n":
            line += 1
        i += 1
    if stack and stack[-1] in "'\"`":
        what = {"'": "'", '"': '"', "`": "`"}[stack[-1]]
        raise LaunchScriptError(f"unterminated quote in launch script; close the {what} it opens")
    if pending:
        raise LaunchScriptError(f"here-document <<{pending[0][0]} has no body; end it with a line `{pending[0][0]}`")
    emit()
    return parts

def _heredoc_op(text: str, i: int, pending: list, cur: list, index: int) -> int:
    """Read `<<[-] WORD` at text[i]; record it as pending and put its mark in the statement; index past it."""
    j = i + 2
    strip = j < len(text) and text[j] == "-"
    j += strip
    while j < len(text) and text[j] in " \t":
        j += 1
    k, word, quoted = j, [], False
    while k < len(text) and text[k] not in " \t\n;|&<>()":
        ch = text[k]
        if ch in "'\"":
            end = text.find(ch, k + 1)
            if end < 0:
                raise LaunchScriptError("unterminated quote in a here-document delimiter; close it")
            word.append(text[k + 1:end])
            quoted, k = True, end + 1
            continue
        if ch == "\\":
            quoted = True
            k += 1
            if k < len(text):
                word.append(text[k])
            k += 1
            continue
        word.append(ch)
        k += 1
    if not word:
        raise LaunchScriptError("`<<` without a here-document delimiter; write <<EOF")
    pending.append(("".join(word), quoted, strip))
    cur.append(HEREDOC_MARK.format(index))
    return k

def _heredoc_bodies(text: str, i: int, pending: list, out: list, line: int) -> int:
    """Consume the bodies of the pending here-documents, in order, starting at text[i] (script line `line`);
    index past them."""
    for delim, quoted, strip in pending:
        lines = []
        while True:
            if i >= len(text):
                raise LaunchScriptError(f"here-document <<{delim} is not closed; end it with a line `{delim}`")
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            ln = text[i:end]
            i = end + 1
            if (ln.lstrip("\t") if strip else ln) == delim:
                break
            lines.append(ln.lstrip("\t") if strip else ln)
        out.append(HeredocBody("\n".join(lines) + ("\n" if lines else ""), quoted, line))
        line += len(lines) + 1
    return i

def statements(text: str) -> list[Stmt]:
    """The script's statements: split at unquoted newlines, `;` and `;;` (kept as its own statement)."""
    return scan(text, "\n;", heredocs=[])

def words(statement: str) -> list[str]:
    """The raw (still quoted, unexpanded) words of one statement."""
    return scan(statement, " \t\n")


# An unquoted redirection word: an optional fd number or `&`, the operator, and its target when written in the same
# word (`2>&1`, `>log`, `&>>log`, `2>/dev/null`); `<(...)` / `>(...)` are process substitutions, arguments, not this
REDIRECTION_RE = re.compile(r"^(?:[0-9]+|&)?(?:>>|>\||>&|<&|<<<|<>|>|<)(?!\()(.*)$", re.S)


def without_redirections(raw: list[str]) -> list[str]:
    """A simple command's raw words less its redirections and their targets: bash performs them and never passes them
    to the program (bash manual, "Redirections"), so `torchrun ... pretrain_gpt.py ARGS 2>&1` does not give
    pretrain_gpt.py an argument `2>&1`. Here-document marks (HEREDOC_MARK) are kept for the command they feed."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        m = REDIRECTION_RE.match(raw[i])
        if m is None:
            out.append(raw[i])
            i += 1
        else:
            i += 1 if m.group(1) else 2  # `> log`: the target is the next word
    return out

def match(text: str, i: int, open_: str, close: str) -> int:
    """Index just past the `close` that balances the `open_` at text[i] (quote-aware)."""
    depth, j, q = 0, i, None
    while j < len(text):
        c = text[j]
        if q:
            if c == "\\" and q != "'":
                j += 1
            q = None if c == q else q
        elif c == "\\":
            j += 1
        elif c in "'\"`":
            q = c
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise LaunchScriptError(f"unbalanced '{open_}' in `{text[:60]}`; close it")
