"""Bounded numbers at library entry points (time limits, targets, budgets): finite and inside a stated range.

Why not only click's FloatRange: `float("nan")` compares False with every bound, so `--time-limit nan` passed
click and reached CP-SAT ("CP-SAT rejected the model"), and `inf` passed every `min=` check (issue 17). The
library checks again, so the API holds the same bounds as the command line.
"""
from __future__ import annotations

import math
import typing

from pydantic import BaseModel, field_validator

from boundary.errors import InputRefused


def bounded_float(value, name: str, lo: float, hi: float, why: str, lo_open: bool = False) -> float:
    """`value` as a float in [lo, hi] (or (lo, hi] with `lo_open`); otherwise one line naming `name`,
    the value, the range and `why`."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputRefused(f"{name}: not a number ({str(value)[:40]!r}); give a number in [{lo:g}, {hi:g}]") from None
    below = x <= lo if lo_open else x < lo
    if not math.isfinite(x) or below or x > hi:
        bracket = "(" if lo_open else "["
        raise InputRefused(f"{name}: {x:g} is outside {bracket}{lo:g}, {hi:g}]; {why}")
    return x


def bounded_int(value, name: str, lo: int, hi: int, why: str) -> int:
    """`value` as an int in [lo, hi]; otherwise one line naming `name`, the value, the range and `why`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputRefused(f"{name}: not an integer ({str(value)[:40]!r}); give an integer in [{lo}, {hi}]")
    if not lo <= value <= hi:
        raise InputRefused(f"{name}: {value} is outside [{lo}, {hi}]; {why}")
    return value


def is_number_annotation(annotation) -> bool:
    """True for a pydantic field typed int or float (also Optional / Annotated), never for one that admits bool."""
    if annotation in (int, float):
        return True
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        return is_number_annotation(args[0])
    return bool(args) and bool not in args and any(is_number_annotation(a) for a in args if a is not type(None))


def refuse_bool_number(value, annotation):
    """`value` unchanged, unless it is a bool given for a number field: pydantic's lax mode reads True as 1, so a YAML
    `tp: true` (or `yes`, `on`) was judged as TP 1 and `nodes: yes` as one node. A before-validator of the strict
    bases (NumbersAreNotBooleans) calls this for every field."""
    if isinstance(value, bool) and is_number_annotation(annotation):
        raise ValueError(f"give a number, not {str(value).lower()} (YAML reads true / false, yes / no, on / off as "
                         "booleans)")
    return value


class NumbersAreNotBooleans(BaseModel):
    """The base of the strict input models (constraints.spec.Strict, hardware.profile's): a boolean given for an int
    or float field is refused (`refuse_bool_number`), one validator for every field of every subclass."""

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_not_booleans(cls, value, info):
        return refuse_bool_number(value, cls.model_fields[info.field_name].annotation)
