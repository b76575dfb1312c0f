"""What the tables allow, per axis: the values hints are validated against, and hint -> table index.

Why from the tables and not from the space's candidate domains: a candidate value no legal row uses
(TP=16 with 8 KV heads) is as useless in a hint as TP=3, so a hint is checked against the values that
occur in at least one legal activation row (and the shardings the structural rules allow), restricted
by the user's pins. Each axis is stored as distinct values plus an int code per row, so a mask over a
million rows is one Python check per distinct value and a numpy gather.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from solver.space import AXES

VARIANT_AXES = ("moe_dispatcher", "ep_comm_overlap")  # per candidate (solver/variants.py), pinned in the space


class _Coded:
    """One axis as distinct values plus an int code per activation row (Tables.axis_codes): a membership test is
    then one Python check per distinct value and one numpy gather, not one Python call per row."""

    def __init__(self, values: list, codes: np.ndarray) -> None:
        self.values, self.codes = values, codes

    def allowed(self, values: Sequence) -> np.ndarray:
        """Per distinct value, whether it is in `values` (membership as `_member`)."""
        return np.array([_member(v, values) for v in self.values], dtype=bool)

    def value_at(self, i: int):
        return self.values[int(self.codes[i])]


class AxisColumns:
    """Per activation row, the value of every axis except dp_sharding (which is the candidate's 2nd index)."""

    def __init__(self, tables) -> None:
        self.tables = tables
        self.axes = {axis: _Coded(*tables.axis_codes(axis)) for axis in AXES
                     if axis != "dp_sharding" and axis not in VARIANT_AXES}
        self.shardings = list(tables.shardings)

    def row_mask(self, allowed: Mapping[str, Sequence]) -> np.ndarray:
        """Activation rows whose axis values all lie in `allowed` (dp_sharding is ignored here)."""
        n = len(self.tables.act_rows)
        mask = np.ones(n, dtype=bool)
        for axis, values in allowed.items():
            if axis == "dp_sharding" or axis in VARIANT_AXES or not n:
                continue
            col = self.axes[axis]
            mask &= col.allowed(values)[col.codes]
        return mask

    def legal_values(self, pins: Optional[Mapping[str, Sequence]] = None) -> dict[str, list]:
        """Axis -> values present in some legal row that also satisfies the user's pins."""
        t = self.tables
        pins = dict(pins or {})
        mask = self.row_mask(pins)
        ok_struct = t.static_ok.any(axis=1) if t.static_ok.size else np.zeros(0, dtype=bool)
        if len(mask):
            mask &= ok_struct[np.asarray(t.act_struct, dtype=np.int64)]
        out: dict[str, list] = {}
        for axis in AXES:
            if axis == "dp_sharding":
                used = t.static_ok[np.unique(np.asarray(t.act_struct)[mask])].any(axis=0) if mask.any() else []
                vals = [s for s, u in zip(self.shardings, used) if u]
                out[axis] = [v for v in vals if "dp_sharding" not in pins or _member(v, pins["dp_sharding"])]
                continue
            if axis in VARIANT_AXES:
                j = VARIANT_AXES.index(axis)
                out[axis] = sorted({v[j] for v in t.variants}, key=_sort_key) if mask.any() else []
                continue
            col = self.axes[axis]
            vals = [col.values[c] for c in np.flatnonzero(np.bincount(col.codes[mask], minlength=len(col.values)))]
            out[axis] = sorted(vals, key=_sort_key)
        return out

    def best_row_for(self, values: Mapping[str, Sequence], pins: Optional[Mapping[str, Sequence]] = None) -> Optional[tuple[int, int]]:
        """(act, shard) of the fitting candidate with the best table time that matches `values` and the pins:
        the CP-SAT solution hint for a preference. None when nothing matches or fits."""
        t = self.tables
        allowed = dict(pins or {})
        for axis, vals in values.items():  # a preference counts only inside the pins
            allowed[axis] = [v for v in vals if axis not in allowed or _member(v, allowed[axis])]
        row_ok = self.row_mask(allowed)
        shard_ok = np.array([("dp_sharding" not in allowed or _member(s, allowed["dp_sharding"])) for s in self.shardings], dtype=bool)
        # candidate arrays: legal (row, sharding) pairs with their ranking time
        a, s = np.asarray(t.cand_act), np.asarray(t.cand_shard)
        keep = row_ok[a] & shard_ok[s] & (np.asarray(t.cand_peak) <= t.usable_bytes) if len(a) else np.zeros(0, dtype=bool)
        time_us = np.asarray(t.cand_time_us)[keep]
        a, s = a[keep], s[keep]
        if not len(a):
            return None
        j = int(np.lexsort((s, a, time_us))[0])
        return int(a[j]), int(s[j])

    def values_of(self, a: int, shard: int) -> dict:
        """Axis -> value of candidate (act row a, sharding index shard), spelled as in solver.space."""
        out = {axis: _plain(col.value_at(a)) for axis, col in self.axes.items()}
        out["dp_sharding"] = self.shardings[shard]
        out["moe_dispatcher"], out["ep_comm_overlap"] = self.tables.variant(a, shard)
        return {axis: out[axis] for axis in AXES}


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


def _member(value, allowed: Sequence) -> bool:
    """Membership without Python's True == 1 (a pin sp=[1] must not match, nor tp=[True])."""
    return any(type(value) is type(v) and value == v for v in allowed if v is not None) or (value is None and None in allowed)


def _sort_key(v):
    return (0, v) if isinstance(v, bool) else (1, v) if isinstance(v, (int, np.integer)) else (2, str(v))
