"""Bounded expansion of the repeat notations inside flag values (`(tt|)*30` in pipeline layouts, `x*N`), so
the size of a result is known and refused before it is built.

Why: `(tttt)*1000000000` was expanded to a 4 GB string before any length check, hanging `check` for minutes
(issue 17). Every repeat here computes its output size first; past `limit` characters, in one substitution or
summed over a pass, it raises instead of allocating. `${NAME}` references in stack configs are substituted the same
way: sized from their pieces and charged to the input's budget (boundary.budget) before the string is built.
"""
from __future__ import annotations

import re
from typing import Callable, Optional

from boundary.budget import InputBudget
from boundary.errors import InputRefused
from boundary.limits import MAX_STRING_CHARS

MAX_EXPANDED_CHARS = 1 << 20  # a layout of MAX_NUM_LAYERS layers over any stage count needs far less
MAX_COUNT_DIGITS = 9


def repeat_count(text: str, label: str, error: Callable[[str], Exception] = InputRefused) -> int:
    """A repeat count of at most MAX_COUNT_DIGITS digits (int() of 10^5 digits is itself slow and refused)."""
    if len(text) > MAX_COUNT_DIGITS:
        raise error(f"{label}: repeat count {text[:20]}... has more than {MAX_COUNT_DIGITS} digits; no layout repeats that often")
    return int(text)


def expand_groups(pattern: re.Pattern, text: str, label: str, error: Callable[[str], Exception] = InputRefused,
                  limit: int = MAX_EXPANDED_CHARS) -> str:
    """Replace `pattern` matches (group 1 = body, group 2 = count) by body * count until none is left,
    refusing before the text would pass `limit` characters."""
    while True:
        grown = [len(text)]

        def repeat(m: re.Match, grown: list = grown) -> str:  # bound now: sub() calls it within this pass
            count = repeat_count(m.group(2), label, error)
            grown[0] += len(m.group(1)) * count - len(m.group(0))
            if grown[0] > limit:
                raise error(f"{label}: expands past {limit:,} characters (a repeat of {count:,}); check its repeat counts")
            return m.group(1) * count

        new = pattern.sub(repeat, text)
        if new == text:
            return text
        text = new


# `${NAME}` and Primus's `${NAME:default}` (AMD-AGI/Primus primus/core/config/yaml_loader.py ENV_PATTERN; Megatron-LM's
# --yaml-cfg reads `${NAME}`, megatron/training/yaml_arguments.py env_pattern)
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")


def substitute_references(text: str, lookup: Callable[[str, Optional[str]], str], label: str,
                          budget: InputBudget) -> str:
    """`text` with each `${NAME}` / `${NAME:default}` replaced by `lookup(name, default)`, its size summed from the
    pieces and charged to `budget` before the string is joined: a result over one string's limit (MAX_STRING_CHARS)
    or an input's substitutions over MAX_EXPANDED_CHARS in all are refused without being built."""
    pieces: list[str] = []
    size, last = 0, 0
    for m in ENV_REFERENCE.finditer(text):
        value = lookup(m.group(1), m.group(2))
        pieces += [text[last:m.start()], value]
        size += m.start() - last + len(value)
        last = m.end()
        if size > MAX_STRING_CHARS:
            raise InputRefused(f"{label}: ${{{m.group(1)}}} makes the value over {MAX_STRING_CHARS:,} characters, the "
                               "limit for one value; shorten the environment value or the default")
    if not pieces:
        return text
    pieces.append(text[last:])
    size += len(text) - last
    if size > MAX_STRING_CHARS:
        raise InputRefused(f"{label}: once its ${{NAME}} references are substituted, the value is over "
                           f"{MAX_STRING_CHARS:,} characters, the limit for one value; shorten it")
    budget.charge_expansion(size, label)
    return "".join(pieces)
