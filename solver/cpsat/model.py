"""Build the CP-SAT model of record over the factor tables (solving lives in solver/cpsat/solve.py).

Encoding (see solver/tables/build.py for the tables). Measured first: element constraints indexed by a
12k-value row variable took 11.6 s to prove a 2k-row explanation instance infeasible; this one-hot
table encoding took 1.4 s (and the optimisation region 1.3 s -> well under 1 s).
- `pick[i]` (bool): candidate i of `cands` is the recipe; exactly one is true. A candidate is one legal
  (activation row, DP sharding) pair: activation rows are legal (TP, PP, VPP, CP, EP, ETP, schedule,
  split, MBS, SP, recompute) by construction and the sharding is one the structural rules accept, so
  every rule judged on the tables holds. `cands` is all of them, or a region the solve has shown holds
  the top-K (solver/cpsat/solve.py). `act` / `shard` are integer views (table indices) for hints and reading.
- axis views (`tp`, `pp`, ... ints) = sum of pick x integer code of the candidate's value; user pins and
  bounds are domain constraints on them, each enforced by its own literal (the explanation's assumptions).
- memory (exact integer bytes): per rank class c, static_c = sum pick x static bytes and act_c = sum pick x
  activation bytes (unenforced definitions), and `memory` => static_c + act_c <= usable on the two integer
  variables. Presolve could substitute the definitions into the enforced constraint, the pattern of
  OR-Tools issue #5293 (enforcement lost when boolean coefficients sum past 2^31), so the solver runs with
  presolve_inclusion_work_limit = 0 as the issue advises, and every verdict is cross-checked against the
  numpy tables (asserted in solver/cpsat/solve.py). Every value is < 2^47, far from CP-SAT's 2^62 bound.
- objective feeds: `time_us` = sum pick x ranking time (µs); `peak_bytes` = max over classes of static_c + act_c.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from solver.cpsat.backend import cp_model
from solver.tables.build import AXIS_NAMES, VARIANT_AXES, Tables

AXIS_COLUMNS = AXIS_NAMES


@dataclass
class RecipeModel:
    """The CP-SAT model and the variables that answer queries (`model.axis['tp']`)."""

    model: cp_model.CpModel
    tables: Tables
    cands: np.ndarray                          # candidate indices (into tables.cand_*) the model ranges over
    pick: list                                 # one bool per candidate
    act: cp_model.IntVar                       # global activation row of the picked candidate
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
        return int(solver.value(self.act)), int(solver.value(self.shard))


def axis_value(tables: Tables, a: int, shard: int, axis: str):
    """Value of `axis` for candidate (a, shard), in the space's own spelling."""
    return tables.axis_value(a, shard, axis)


def _ints(a) -> list[int]:
    return [int(x) for x in a]


def _dot(pick: list, coefs) -> cp_model.LinearExpr:
    return cp_model.LinearExpr.weighted_sum(pick, _ints(coefs))


def build_model(tables: Tables, pins: Optional[dict[str, Sequence]] = None, hint: Optional[tuple[int, int]] = None,
                rows: Optional[np.ndarray] = None) -> RecipeModel:
    """Model over the candidates whose activation row is in `rows` (default: all candidates); `pins` (axis ->
    allowed values) become enforced constraints with literals; `hint` (global act, shard) becomes a
    CP-SAT solution hint (the proposer's hook)."""
    m = cp_model.CpModel()
    cands = np.arange(len(tables.cand_act), dtype=np.int64)
    if rows is not None:
        cands = cands[np.isin(tables.cand_act, np.asarray(rows, dtype=np.int64))]
    a, h = tables.cand_act[cands], tables.cand_shard[cands]
    n_shard = len(tables.shardings)
    # variable family: one boolean per candidate, exactly one picked; integer views of the table indices
    pick = [m.new_bool_var(f"pick_{i}") for i in range(len(cands))]
    m.add_exactly_one(pick)
    act = m.new_int_var(0, max(len(tables.act_rows) - 1, 0), "act")
    m.add(act == _dot(pick, a))
    shard = m.new_int_var(0, max(n_shard - 1, 0), "shard")
    m.add(shard == _dot(pick, h))
    # variable family: axis views, integer-coded
    axis, codes = {}, {}
    for name in AXIS_COLUMNS:
        vocab, col = tables.axis_codes(name)
        codes[name] = vocab
        var = m.new_int_var(0, max(len(vocab) - 1, 0), name)
        m.add(var == _dot(pick, col[a]))
        axis[name] = var
    codes["dp_sharding"], axis["dp_sharding"] = list(tables.shardings), shard
    # constraint group: exact memory per rank class, enforced by one literal
    mem_lit = m.new_bool_var("memory_fits")
    rank_totals = []
    static = tables.static_bytes[tables.act_struct[a] * n_shard + h]
    for c in range(tables.act_bytes.shape[1]):
        st = m.new_int_var(0, int(static[:, c].max(initial=0)), f"static_{c}")
        ac = m.new_int_var(0, int(tables.act_bytes[a, c].max(initial=0)), f"act_{c}")
        m.add(st == _dot(pick, static[:, c]))
        m.add(ac == _dot(pick, tables.act_bytes[a, c]))
        m.add(st + ac <= tables.usable_bytes).only_enforce_if(mem_lit)
        rank_totals.append(st + ac)
    # objective feeds: ranking time, and the peak (memory-headroom objective)
    times = tables.cand_time_us[cands]
    t = m.new_int_var(int(times.min(initial=0)), int(times.max(initial=0)), "time_us")
    m.add(t == _dot(pick, times))
    peak = m.new_int_var(0, int(tables.static_bytes.max(initial=0) + tables.act_bytes.max(initial=0)), "peak_bytes")
    m.add_max_equality(peak, rank_totals)
    rm = RecipeModel(model=m, tables=tables, cands=cands, pick=pick, act=act, shard=shard, time_us=t, axis=axis,
                     codes=codes, memory_literal=mem_lit, peak_bytes=peak)
    # constraint group: user pins, one literal each (pins on the MoE variant axes act on the space, solver/variants.py)
    for name, allowed in (pins or {}).items():
        if name in VARIANT_AXES:  # chosen per candidate inside the space (solver/variants.py): pin them there
            raise ValueError(f"--{name.replace('_', '-')}: a per-candidate choice; pin it in the space (build_space pins)")
        lit = m.new_bool_var(f"pin_{name}")
        ok = [i for i, v in enumerate(codes[name]) if v in list(allowed)]
        m.add_linear_expression_in_domain(axis[name], cp_model.Domain.from_values(ok)).only_enforce_if(lit)
        rm.pin_literals[name] = lit
    if hint is not None:
        hit = np.flatnonzero((a == hint[0]) & (h == hint[1]))
        if len(hit):
            for i, p in enumerate(pick):
                m.add_hint(p, int(i == int(hit[0])))  # an int: OR-Tools < 9.12 refuses a bool hint value
    return rm
