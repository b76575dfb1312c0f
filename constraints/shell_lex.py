"""Split launch-script text into statements and words the way bash does, without expanding anything.

Why its own module: every later step (expansion, the interpreter, the launcher parser) works on these
pieces, and the quote/nesting rules are the part easiest to get subtly wrong, so they live in one place.
Handled: '...' and "..." quoting, backslash escapes, `# comments`, `\\<newline>` continuations, and nesting
of `( )` / `$( )` / `${ }` so a separator inside them does not split.
"""
from __future__ import annotations

from boundary.errors import ShardplanError


class LaunchScriptError(ShardplanError):
    """A launch script shardplan cannot turn into an argument list; the message is one line."""


def scan(text: str, split_on: str) -> list[str]:
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


def statements(text: str) -> list[str]:
    """The script's statements: split at unquoted newlines and `;`."""
    return scan(text, "\n;")


def words(statement: str) -> list[str]:
    """The raw (still quoted, unexpanded) words of one statement."""
    return scan(statement, " \t\n")


def _open_brace(cur: list[str]) -> bool:
    """True if the `}` closes a `${` we counted (a bare `{ }` group was not counted)."""
    s = "".join(cur)
    return s.count("${") > s.count("}")


def match(text: str, i: int, open_: str, close: str) -> int:
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
