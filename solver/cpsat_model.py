"""Build the CP-SAT model of record over the factor tables (solving lives in solver/cpsat_solve.py).

Encoding (see solver/tables.py for the tables):
- `act` (int): local index into `rows`, a set of activation rows (all of them, or a region the solve has
  shown holds the top-K: solver/cpsat_solve.py); each row is one legal (TP, PP, VPP, CP, EP, ETP, schedule,
  split, MBS, SP, recompute), so every rule judged on that table holds by construction.
- `shard` (int): DP sharding index; `struct_shard = struct(act) * n_shard + shard` indexes the static
  table, and an element constraint keeps only (structural row, sharding) pairs the rules allow.
- axis views (`tp`, `pp`, ... ints): element constraints act -> integer code of the value; user pins and
  bounds are domain constraints on them, each enforced by its own literal (the explanation's assumptions).
- memory (exact integer bytes): per rank class c, static_c = static[struct_shard, c] and
  act_c = act_bytes[act, c] by element constraints, and `memory` => static_c + act_c <= usable. Two integer
  variables per class, no boolean x bytes sums (OR-Tools issue #5293 cannot arise); every value is
  < 2^47, far from CP-SAT's 2^62 bound.
- objective feed: `time_us` = time[act * n_shard + shard], the ranking projection in whole microseconds
  (solver/table_time.py); pairs the rules forbid carry a sentinel and are excluded by the static element.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
from ortools.sat.python import cp_model

from solver.table_time import UNPRICEABLE_US
from solver.tables import AXIS_NAMES, Tables

AXIS_COLUMNS = AXIS_NAMES


@dataclass
class RecipeModel:
    """The CP-SAT model and the variables that answer queries (`model.axis['tp']`)."""

    model: cp_model.CpModel
    tables: Tables
    rows: np.ndarray                           # local act index -> global activation row
    act: cp_model.IntVar
    shard: cp_model.IntVar
    time_us: cp_model.IntVar
    axis: dict[str, cp_model.IntVar]
    codes: dict[str, list]                     # axis -> value per integer code
    memory_literal: cp_model.IntVar
    peak_bytes: cp_model.IntVar = None
    pin_literals: dict[str, cp_model.IntVar] = field(default_factory=dict)

    def assumptions(self) -> list:
        return [self.memory_literal, *self.pin_literals.values()]

    def candidate(self, solver) -> tuple[int, int]:
        """(global activation row, sharding) of the solver's current solution."""
        return int(self.rows[solver.value(self.act)]), int(solver.value(self.shard))


def axis_value(tables: Tables, a: int, shard: int, axis: str):
    """Value of `axis` for candidate (a, shard), in the space's own spelling."""
    return tables.axis_value(a, shard, axis)


def pair_times(tables: Tables) -> np.ndarray:
    """[act, shard] ranking time in µs; the sentinel where the rules forbid the pair."""
    out = np.full((len(tables.act_rows), len(tables.shardings)), UNPRICEABLE_US, dtype=np.int64)
    out[tables.cand_act, tables.cand_shard] = tables.cand_time_us
    return out


def _ints(a) -> list[int]:
    return [int(x) for x in a]


def build_model(tables: Tables, pins: Optional[dict[str, Sequence]] = None, hint: Optional[tuple[int, int]] = None,
                rows: Optional[np.ndarray] = None) -> RecipeModel:
    """Model over `rows` of `tables` (default: all); `pins` (axis -> allowed values) become enforced
    constraints with literals; `hint` (global act, shard) becomes a CP-SAT solution hint (the proposer's hook)."""
    m = cp_model.CpModel()
    rows = np.arange(len(tables.act_rows), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    structs, local_struct = np.unique(tables.act_struct[rows], return_inverse=True)  # structural rows in use
    n_rows, n_shard, n_struct = len(rows), len(tables.shardings), len(structs)
    static_rows = (structs[:, None] * n_shard + np.arange(n_shard)[None, :]).reshape(-1)
    # variable family: the two table indices (and the structural row they imply, locally numbered)
    act = m.new_int_var(0, max(n_rows - 1, 0), "act")
    shard = m.new_int_var(0, max(n_shard - 1, 0), "shard")
    struct = m.new_int_var(0, max(n_struct - 1, 0), "struct")
    m.add_element(act, _ints(local_struct.reshape(-1)), struct)
    ss = m.new_int_var(0, max(n_struct * n_shard - 1, 0), "struct_shard")
    m.add(ss == struct * n_shard + shard)
    # constraint group: (structural row, sharding) legal under the structural rules
    m.add_element(ss, _ints(tables.static_ok[structs].reshape(-1)), 1)
    # variable family: axis views, integer-coded
    axis, codes = {}, {}
    for name in AXIS_COLUMNS:
        vocab, col = tables.axis_codes(name)
        codes[name] = vocab
        var = m.new_int_var(0, max(len(vocab) - 1, 0), name)
        m.add_element(act, _ints(col[rows]), var)
        axis[name] = var
    codes["dp_sharding"], axis["dp_sharding"] = list(tables.shardings), shard
    # constraint group: exact memory per rank class, enforced by one literal
    mem_lit = m.new_bool_var("memory_fits")
    rank_totals = []
    for c in range(tables.act_bytes.shape[1]):
        col_s, col_a = _ints(tables.static_bytes[static_rows, c]), _ints(tables.act_bytes[rows, c])
        st = m.new_int_var(0, max(col_s, default=0), f"static_{c}")
        ac = m.new_int_var(0, max(col_a, default=0), f"act_{c}")
        m.add_element(ss, col_s, st)
        m.add_element(act, col_a, ac)
        m.add(st + ac <= tables.usable_bytes).only_enforce_if(mem_lit)
        rank_totals.append(st + ac)
    # the peak (the memory-headroom objective): max over rank classes of static + activation bytes
    peak = m.new_int_var(0, int(tables.static_bytes.max(initial=0) + tables.act_bytes.max(initial=0)), "peak_bytes")
    m.add_max_equality(peak, rank_totals)
    # objective feed: the ranking time of the (row, sharding) pair
    times = _ints(pair_times(tables)[rows].reshape(-1))
    pair = m.new_int_var(0, max(n_rows * n_shard - 1, 0), "pair")
    m.add(pair == act * n_shard + shard)
    t = m.new_int_var(min(times, default=0), max(times, default=0), "time_us")
    m.add_element(pair, times, t)
    rm = RecipeModel(model=m, tables=tables, rows=rows, act=act, shard=shard, time_us=t, axis=axis, codes=codes,
                     memory_literal=mem_lit, peak_bytes=peak)
    # constraint group: user pins, one literal each
    for name, allowed in (pins or {}).items():
        lit = m.new_bool_var(f"pin_{name}")
        ok = [i for i, v in enumerate(codes[name]) if v in list(allowed)]
        m.add_linear_expression_in_domain(axis[name], cp_model.Domain.from_values(ok)).only_enforce_if(lit)
        rm.pin_literals[name] = lit
    if hint is not None:
        local = np.flatnonzero(rows == hint[0])
        if len(local):
            m.add_hint(act, int(local[0]))
            m.add_hint(shard, int(hint[1]))
    return rm
