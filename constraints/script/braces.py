"""Brace expansion of one raw word, as bash does it before any other expansion: `--{save,load}` is two words,
`shard{1..3}` three, `{01..10..3}` keeps the zero padding, `{a..e}` runs over letters.

Why its own module: bash expands braces on the raw text of a word (bash manual, "Brace Expansion"), before
parameters, so it has to see quotes, `\\{` and `${...}`, none of which it touches; the rest of
constraints.script.expand works on the word after that. A word whose braces are not a list (`{a}`, `{}`, `{x..}`)
is left as it is, as bash leaves it. How many words one expansion may make is bounded
(constraints.script.budget.MAX_BRACE_WORDS).
"""
from __future__ import annotations

import re
from typing import Optional

from constraints.script.budget import MAX_BRACE_WORDS, ScriptBudgetError

_SEQUENCE_RE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$|^([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?$")


def brace_words(word: str) -> list[str]:
    """The words bash's brace expansion makes of one raw word, in bash's order (left to right, outer first)."""
    found = _first_brace(word)
    if found is None:
        return [word]
    start, end, items = found
    out: list[str] = []
    tails = brace_words(word[end + 1:])
    for item in items:
        for head_item in brace_words(item):
            for tail in tails:
                out.append(word[:start] + head_item + tail)
                if len(out) > MAX_BRACE_WORDS:
                    raise ScriptBudgetError(f"the brace expansion `{word[:40]}` makes more than {MAX_BRACE_WORDS:,} "
                                            "words; write the list out, or loop over fewer")
    return out


def _first_brace(word: str) -> Optional[tuple[int, int, list[str]]]:
    """(index of `{`, index of its `}`, the items) of the first expandable brace pair outside quotes; None if none."""
    i, n = 0, len(word)
    while i < n:
        c = word[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            i = _past_quote(word, i)
            continue
        if c == "$" and word.startswith("${", i) or c == "$" and word.startswith("$(", i):
            i = _past_group(word, i + 1)
            continue
        if c == "{":
            end = _closing(word, i)
            if end is not None:
                items = _items(word[i + 1:end])
                if items is not None:
                    return i, end, items
        i += 1
    return None


def _past_quote(word: str, i: int) -> int:
    q, j = word[i], i + 1
    while j < len(word) and word[j] != q:
        j += 2 if word[j] == "\\" and q == '"' else 1
    return j + 1


def _matching(word: str, i: int, skip_parameters: bool) -> Optional[int]:
    """Index of the `}` / `)` closing the `{` / `(` at word[i], past escapes and quotes (and, with `skip_parameters`,
    whole `${...}` expansions, whose braces are not the group's), or None when it is not closed."""
    open_, close = word[i], "}" if word[i] == "{" else ")"
    depth, j = 0, i
    while j < len(word):
        c = word[j]
        if c == "\\":
            j += 2
            continue
        if c in "'\"":
            j = _past_quote(word, j)
            continue
        if skip_parameters and c == "$" and word.startswith("${", j):
            j = _past_group(word, j + 1)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return None


def _past_group(word: str, i: int) -> int:
    """Index past the `}` / `)` closing the `{` / `(` at word[i] (parameter and command substitutions)."""
    end = _matching(word, i, skip_parameters=False)
    return len(word) if end is None else end + 1


def _closing(word: str, i: int) -> Optional[int]:
    """Index of the `}` closing the brace expansion opened at word[i], or None."""
    return _matching(word, i, skip_parameters=True)


def _items(inner: str) -> Optional[list[str]]:
    """The items of `{inner}`: a comma list at the top level, or a sequence; None when bash leaves it as text."""
    parts, cur, depth, j = [], [], 0, 0
    while j < len(inner):
        c = inner[j]
        if c == "\\":
            cur.append(inner[j:j + 2])
            j += 2
            continue
        if c in "'\"":
            k = _past_quote(inner, j)
            cur.append(inner[j:k])
            j = k
            continue
        if c == "$" and inner.startswith("${", j):
            k = _past_group(inner, j + 1)
            cur.append(inner[j:k])
            j = k
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        j += 1
    parts.append("".join(cur))
    if len(parts) > 1:
        return parts
    return _sequence(inner)


def _sequence(inner: str) -> Optional[list[str]]:
    m = _SEQUENCE_RE.match(inner)
    if not m:
        return None
    if m.group(1) is not None:
        first, last = int(m.group(1)), int(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        if abs(last - first) // step + 1 > MAX_BRACE_WORDS:
            raise ScriptBudgetError(f"the brace expansion {{{inner}}} makes more than {MAX_BRACE_WORDS:,} words; "
                                    "write the list out, or loop over fewer")
        numbers = range(first, last + 1, step) if first <= last else range(first, last - 1, -step)
        # a bound written with a leading zero pads every number to the wider bound's width (bash)
        padded = any(re.fullmatch(r"-?0\d+", g) for g in (m.group(1), m.group(2)))
        width = max(len(m.group(1)), len(m.group(2))) if padded else 0
        return [f"{k:0{width}d}" if padded else str(k) for k in numbers]
    first, last = ord(m.group(4)), ord(m.group(5))
    step = abs(int(m.group(6) or 1)) or 1
    codes = range(first, last + 1, step) if first <= last else range(first, last - 1, -step)
    return [chr(k) for k in codes]


__all__ = ["brace_words"]
