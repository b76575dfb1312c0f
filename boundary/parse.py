"""Bounded YAML and JSON parsers: one per format, each refusing what would cost unbounded time or memory.

- YAML: a SafeLoader whose composer counts nesting depth and alias uses while it builds the node graph,
  so a 1 KiB `[[[[...` file or a "billion laughs" alias bomb is refused before anything is constructed
  (PyYAML's composer recurses once per level, and aliases share objects that pydantic and error messages
  later expand).
- JSON: the C decoder, with its RecursionError on deep nesting turned into a refusal.
- Both: a walk of the parsed value that counts containers and scalars with aliases expanded, the depth,
  the length of every string and list, and the characters of all strings together, stopping at the first limit it
  meets (`boundary.limits`).
- A file that is one of several read for one input (a Primus `extends` tree) also charges its YAML values to that
  input's `boundary.budget.InputBudget`, so the tree as a whole stays within one bound.
"""
from __future__ import annotations

import json
import math
from typing import Any

import yaml

from boundary.budget import InputBudget
from boundary.errors import InputRefused
from boundary.limits import (
    MAX_ALIASES,
    MAX_DEPTH,
    MAX_LIST_ITEMS,
    MAX_STRING_CHARS,
    MAX_YAML_NODES,
    human_bytes,
    max_bytes,
    max_nodes,
)


class NotYaml(InputRefused):
    """The text is not valid YAML (as opposed to YAML past a limit): a caller that may take the text as a plain string
    instead (a `${NAME}` value) catches this one and nothing else."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader with a depth and an alias-use bound in the composer (the only recursive stage)."""

    def __init__(self, stream, label: str, budget: InputBudget | None = None):
        super().__init__(stream)
        self._label = label
        self._depth = 0
        self._aliases = 0
        self._nodes = 0
        self._budget = budget
        self._budget_left = budget.values_left() if budget is not None else MAX_YAML_NODES

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise InputRefused(f"{self._label}: more than {MAX_ALIASES} YAML alias uses (*name) at line "
                                   f"{mark.line + 1}; write the values out instead of aliasing them")
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            mark = self.peek_event().start_mark
            raise InputRefused(f"{self._label}: more than {MAX_YAML_NODES:,} YAML values (at line {mark.line + 1}); "
                               "a shardplan input holds far fewer, give the file itself, not generated data")
        if self._nodes > self._budget_left:  # the input's other files hold the rest of its budget
            mark = self.peek_event().start_mark
            self._budget.charge_values(self._nodes, f"{self._label} (line {mark.line + 1})")
        self._depth += 1
        if self._depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise InputRefused(f"{self._label}: nested more than {MAX_DEPTH} levels deep at line {mark.line + 1}; "
                               "a shardplan input nests a few levels at most")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        """As SafeLoader's, refusing a key written twice in one mapping: YAML keeps the last silently, so
        `micro_batch_size` given twice would judge a recipe the file's reader may not mean. Keys a `<<` merge brings
        in may be overridden, as YAML intends."""
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    if key_node.value in seen:
                        raise InputRefused(f"{self._label}: key {key_node.value!r} is given twice in one mapping (line "
                                           f"{key_node.start_mark.line + 1}); keep one")
                    seen.add(key_node.value)
        return super().construct_mapping(node, deep)


def load_yaml(text: str, kind: str, label: str | None = None, budget: InputBudget | None = None) -> Any:
    """The value of one YAML document under the boundary's limits; YAML errors become one-line refusals. With a
    `budget`, its values are also charged to the input the document is part of."""
    label = label or kind
    loader = _BoundedLoader(text, label, budget)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise NotYaml(f"{label}: not valid YAML ({_first_line(exc)}); fix the file's syntax") from None
    except InputRefused:
        raise
    except ValueError as exc:  # e.g. an integer of more digits than Python converts (sys.int_info)
        raise InputRefused(f"{label}: unusable value ({str(exc).splitlines()[0][:120]}); fix the file") from None
    except RecursionError:  # belt and braces: the composer bound should stop it first
        raise InputRefused(f"{label}: nested too deeply; a shardplan input nests a few levels at most") from None
    finally:
        loader.dispose()
    if budget is not None:
        budget.charge_values(loader._nodes, label)
    check_shape(data, kind, label)
    return data


def load_json(text: str, kind: str, label: str | None = None) -> Any:
    """The value of a JSON text under the boundary's limits; errors become one-line refusals."""
    label = label or kind
    try:
        data = json.loads(text, parse_constant=_refuse_constant(label), parse_float=_finite_float(label))
    except json.JSONDecodeError as exc:
        raise InputRefused(f"{label}: not valid JSON (line {exc.lineno}: {exc.msg}); fix the file's syntax") from None
    except RecursionError:
        raise InputRefused(f"{label}: nested more than {MAX_DEPTH} levels deep; a shardplan input nests a few "
                           "levels at most") from None
    check_shape(data, kind, label)
    return data


def _refuse_constant(label: str):
    """JSON has no NaN or Infinity; Python's decoder accepts them unless told otherwise."""
    def refuse(name: str):
        raise InputRefused(f"{label}: {name} is not a JSON number; write a finite number")
    return refuse


def _finite_float(label: str):
    """`1e999` decodes to infinity; no size, time or rate shardplan reads is infinite."""
    def parse(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise InputRefused(f"{label}: the number {text[:40]} is beyond the float range; write a finite number")
        return value
    return parse


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        line = f"{getattr(exc, 'problem', None) or line} at line {mark.line + 1}"
    return line[:200]


def check_shape(data: Any, kind: str, label: str) -> None:
    """Depth, expanded node count, string and list lengths of a parsed value, walked iteratively (an alias
    bomb's repeated objects are counted each time they appear, and the walk stops at the node limit).

    The characters of all strings together, counted each time an alias repeats them, stay within the bytes a file
    of `kind` may hold: written out, no file holds more text than its size, so only aliases exceed it, and a value
    printed or joined later (`str(value)`, an environment mapping) is then never larger than a file shardplan reads."""
    limit_nodes = max_nodes(kind)
    limit_chars = max_bytes(kind)
    stack = [(data, 1)]
    seen = 0
    chars = 0
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > limit_nodes:
            raise InputRefused(f"{label}: more than {limit_nodes:,} values once aliases are expanded; "
                               f"a {kind} holds far fewer (write the values out, without alias chains)")
        if depth > MAX_DEPTH:
            raise InputRefused(f"{label}: nested more than {MAX_DEPTH} levels deep; a shardplan input nests a "
                               "few levels at most")
        if isinstance(value, str):
            if len(value) > MAX_STRING_CHARS:
                raise InputRefused(f"{label}: a string of {len(value):,} characters, over the "
                                   f"{MAX_STRING_CHARS:,}-character limit for one value; shorten it")
            chars += len(value)
            if chars > limit_chars:
                raise InputRefused(f"{label}: its strings hold over {human_bytes(limit_chars)} once aliases are expanded, "
                                   f"more than a {kind} file may; write the values out, without alias chains")
        elif isinstance(value, float) and not math.isfinite(value):
            raise InputRefused(f"{label}: a non-finite number ({value}); no size, time or rate is infinite or NaN, "
                               "write a finite number")
        elif isinstance(value, dict):
            if len(value) > MAX_LIST_ITEMS:
                raise InputRefused(f"{label}: a mapping of {len(value):,} keys, over the {MAX_LIST_ITEMS:,} limit")
            for k, v in value.items():
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        elif isinstance(value, (list, tuple)):
            if len(value) > MAX_LIST_ITEMS:
                raise InputRefused(f"{label}: a list of {len(value):,} items, over the {MAX_LIST_ITEMS:,}-item "
                                   "limit; shorten it")
            stack.extend((v, depth + 1) for v in value)
