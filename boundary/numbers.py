"""Bounded numbers at library entry points (time limits, targets, budgets): finite and inside a stated range.

Why not only click's FloatRange: `float("nan")` compares False with every bound, so `--time-limit nan` passed
click and reached CP-SAT ("CP-SAT rejected the model"), and `inf` passed every `min=` check (issue 17). The
library checks again, so the API holds the same bounds as the command line.
"""
from __future__ import annotations

import math

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
