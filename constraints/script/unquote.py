"""Split re-quoted text into words and remove the quotes: what `shlex.split(text)` (POSIX mode) returns, in linear time.

Why not shlex itself: constraints.script.expand re-quotes every expanded value and then splits the word, and
shlex builds each token by `self.token = self.token + ch`, which is quadratic in a token's length: a 400 KiB value
took 4 s, an 800 KiB one 16 s (issue 33: a script that doubles a string never finished). The rules are shlex's
POSIX ones (Lib/shlex.py, `read_token`): blanks (space, tab, CR, LF) end a word; a backslash outside quotes takes
the next character as it is; inside '...' nothing is special; inside "..." a backslash quotes only `"` and `\\`
(before any other character both stay); a word of only quotes (`''`) is an empty word; an open quote or a
trailing backslash is an error (ValueError, as shlex raises). tests/constraints/script/test_unquote_agrees_with_shlex.py
compares the two on generated text.
"""
from __future__ import annotations

BLANKS = " \t\r\n"


def posix_split(text: str) -> list[str]:
    """The words of `text` with quotes removed, as shlex.split(text) gives them."""
    words: list[str] = []
    cur: list[str] = []
    started = False  # a word is open (it may be empty: `''`)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in BLANKS:
            if started:
                words.append("".join(cur))
                cur, started = [], False
            i += 1
            continue
        started = True
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("No escaped character")
            cur.append(text[i + 1])
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ValueError("No closing quotation")
            cur.append(text[i + 1:end])
            i = end + 1
        elif c == '"':
            i = _double_quoted(text, i + 1, cur)
        else:
            j = i + 1
            while j < n and text[j] not in BLANKS and text[j] not in "\\'\"":
                j += 1
            cur.append(text[i:j])
            i = j
    if started:
        words.append("".join(cur))
    return words


def _double_quoted(text: str, i: int, cur: list[str]) -> int:
    """Append the inside of a "..." opened before text[i]; the index past its closing quote."""
    n = len(text)
    while True:
        j = i
        while j < n and text[j] not in '"\\':
            j += 1
        cur.append(text[i:j])
        if j >= n:
            raise ValueError("No closing quotation")
        if text[j] == '"':
            return j + 1
        if j + 1 >= n:
            raise ValueError("No escaped character")
        nxt = text[j + 1]
        cur.append(nxt if nxt in '"\\' else "\\" + nxt)
        i = j + 2


__all__ = ["posix_split"]
