"""User text (a model name, a hardware path, a data path) as data in each format shardplan writes, never as syntax.

Why one module: every writer (launch scripts, stack configs, SUMMARY.md / TRIALS.md) meets the same hostile text, and
each format has its own rule for keeping it data. The rule lives here once per format:

- a `#` comment line (bash, YAML, overrides): printable ASCII only, so no newline can end the comment;
- a Markdown line (CommonMark 0.31 sec. 2.4: any ASCII punctuation may be backslash-escaped; GFM tables, sec. 4.10:
  `\\|` is a pipe inside a cell): punctuation escaped, control characters and line breaks gone;
- a Hydra override value (Megatron-Bridge's `section.field=value` lines; Hydra's override grammar,
  https://hydra.cc/docs/advanced/override_grammar/basic/: `\\()[]{}:=, \\t` are special in an unquoted value, a quoted
  value is `'...'` and `${...}` is an interpolation even inside quotes): bare when plain, single-quoted when it holds
  brackets or `=`, refused when it holds what neither form keeps literal.
"""
from __future__ import annotations

import re
from typing import Any

import yaml

from boundary.errors import ShardplanError


class UnwritableValue(ShardplanError):
    """A value the target format cannot hold as data; one line naming the option and the fix."""


def comment_safe(text: str) -> str:
    """User text for a `#` comment: printable ASCII only, so it cannot end the comment line."""
    return re.sub(r"[^\x20-\x7e]", "?", text)


def name_safe(text: str, fallback: str = "shardplan", limit: int = 64) -> str:
    """A name no tool interprets (`#SBATCH --job-name`, a Primus `exp_name`, a file name): [A-Za-z0-9._-] only."""
    return (re.sub(r"[^A-Za-z0-9._-]", "_", text) or fallback)[:limit]


# the ASCII punctuation that is Markdown syntax inside a line (code spans, emphasis, links and images, HTML and
# entities, table cells, headings, GFM strikethrough, math on GitHub); `-`, `+`, `.`, `=` or a digit are syntax only at
# the start of a line, where no user text is put, so names like Llama-3.1-70B stay readable
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]<>|#!~&$])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def markdown_text(text: str, limit: int = 200) -> str:
    """User text inside a Markdown line or GFM table cell (never at a line's start): its inline syntax
    backslash-escaped (so no `#` heading, `|` cell, backtick span, `<` tag, `[link]`, `*emphasis*`), every control
    character and line break a space. Cut to `limit` characters before escaping, so an escape is never cut in half."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", _CONTROL.sub(" ", text[:limit]))


# Hydra: an unquoted value is an ID or path-like text; these never need quotes and YAML reads them as the same text
_HYDRA_BARE = re.compile(r"[A-Za-z_./][A-Za-z0-9_./+@%-]*")  # not a leading digit or sign: Hydra would read a number
# inside '...' Hydra keeps these literal, and YAML's single-quoted scalar reads them back unchanged: no quote, no
# backslash (Hydra's escape), no `$` (an interpolation), no whitespace or `#` (shardplan's overrides reader splits
# tokens on whitespace and drops `#` comments: constraints/stacks/bridge.py overrides_text)
_HYDRA_QUOTABLE = re.compile(r"[^\s'\"\\$#\x00-\x1f\x7f-\x9f]+")


def _reads_back_as_text(text: str) -> bool:
    if text.lower() in ("true", "false", "null", "nan", "inf"):  # Hydra's own literals, whatever YAML says
        return False
    try:
        return yaml.safe_load(text) == text
    except yaml.YAMLError:
        return False


def hydra_value(value: Any, option: str) -> str:
    """One override value: numbers and booleans as YAML writes them, a list as `[a,b]`, a string bare when Hydra and
    YAML read it back as the same text, else single-quoted; refused (UnwritableValue) when it holds a quote, a
    backslash, `$`, whitespace, `#` or a control character, which no override form keeps literal for both Hydra and
    shardplan's reader."""
    if isinstance(value, list):
        return "[" + ",".join(hydra_value(v, option) for v in value) + "]"
    if not isinstance(value, str):
        return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...").strip()
    if _HYDRA_BARE.fullmatch(value) and _reads_back_as_text(value):
        return value
    if _HYDRA_QUOTABLE.fullmatch(value):
        return f"'{value}'"
    bad = sorted({c for c in value if not _HYDRA_QUOTABLE.fullmatch(c)})
    raise UnwritableValue(f"{option}: {value[:60]!r} holds {' '.join(repr(c) for c in bad)}, which a Hydra override "
                          "line cannot carry as plain text; rename the path, or render --format bridge (a YAML file)")


def refuse_interpolation(value: Any, option: str, fmt: str) -> None:
    """Bridge (OmegaConf) and Primus resolve `${...}` in any string of their YAML (and shardplan's readers do too:
    constraints/stacks/common.py env_default), so a path holding `${` would be read as another value: refuse it."""
    values = value if isinstance(value, list) else [value]
    for v in values:
        if isinstance(v, str) and "${" in v:
            raise UnwritableValue(f"{option}: {v[:60]!r} holds '${{', which {fmt} resolves as an interpolation; "
                                  "write the path without it")
