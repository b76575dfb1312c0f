"""Build the CP-SAT model of record over the factor tables (solving lives in solver/cpsat_solve.py).

Encoding (see solver/tables.py for the tables):
- `act` (int): index of an activation row, i.e. one legal (TP, PP, VPP, CP, EP, ETP, schedule, split, MBS,
  SP, recompute); its domain is exactly the legal rows, so every rule checked on that table holds.
- `shard` (int): DP sharding index; `struct_shard = struct(act) * n_shard + shard` indexes the static
  table, and an element constraint keeps only (structural row, sharding) pairs the rules allow.
- axis views (`tp`, `pp`, ... ints): element constraints act -> column; user pins and bounds are linear
  domain constraints on them, each enforced by its own literal (the explanation's assumptions).
- memory (exact integer bytes): per pipeline rank r, static_r = static[struct_shard, r] and
  act_r = act_bytes[act, r] by element constraints, and `memory` => static_r + act_r <= usable. Two
  integer variables per rank, no boolean x bytes sums (OR-Tools issue #5293 cannot arise); every value
  is < 2^47, far from CP-SAT's 2^62 bound.
- objective: `lb_us` = lb[act], the integer-microsecond lower bound on the projected step time; the exact
  projection re-ranks the candidates within a threshold of the optimum (solver/cpsat_solve.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from ortools.sat.python import cp_model

from solver.tables import Tables

AXIS_COLUMNS = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sp", "recompute", "schedule", "acc_split")


@dataclass
class RecipeModel:
    """The CP-SAT model and the variables that answer queries (`model.axis['tp']`)."""

    model: cp_model.CpModel
    tables: Tables
    act: cp_model.IntVar
    shard: cp_model.IntVar
    lb_us: cp_model.IntVar
    axis: dict[str, cp_model.IntVar]
    codes: dict[str, list]                      # axis -> value per integer code
    memory_literal: cp_model.IntVar
    pin_literals: dict[str, cp_model.IntVar] = field(default_factory=dict)

    def assumptions(self) -> list:
        return [self.memory_literal, *self.pin_literals.values()]


def axis_value(tables: Tables, a: int, shard: int, axis: str):
    """Value of `axis` for candidate (a, shard), in the space's own spelling."""
    s, mbs, sp, rc = tables.act_rows[a]
    tp, pp, vpp, cp, ep, etp, sched, acc = tables.struct[s]
    from solver.space import recompute_name

    return {"tp": tp, "pp": pp, "vpp": vpp, "cp": cp, "ep": ep, "etp": etp, "mbs": mbs, "sp": sp and tp > 1,
            "recompute": recompute_name(tables.rc_choices[rc]), "schedule": sched, "acc_split": acc,
            "dp_sharding": tables.shardings[shard]}[axis]


def build_model(tables: Tables, pins: Optional[dict[str, Sequence]] = None, hint: Optional[tuple[int, int]] = None,
                extra_lb_limit: Optional[int] = None) -> RecipeModel:
    """Model over `tables`; `pins` (axis -> allowed values) become enforced constraints with literals;
    `hint` (act, shard) becomes a CP-SAT solution hint (the proposer's hook); `extra_lb_limit` caps lb_us."""
    m = cp_model.CpModel()
    n_act, n_shard = len(tables.act_rows), len(tables.shardings)
    # variable family: the two table indices
    act = m.new_int_var_from_domain(cp_model.Domain.from_values(list(range(n_act))), "act")
    shard = m.new_int_var(0, max(n_shard - 1, 0), "shard")
    struct = m.new_int_var(0, max(len(tables.struct) - 1, 0), "struct")
    m.add_element(act, [int(x) for x in tables.act_struct], struct)
    ss = m.new_int_var(0, len(tables.struct) * n_shard - 1, "struct_shard")
    m.add(ss == struct * n_shard + shard)
    # constraint group: (structural row, sharding) legal under the structural rules
    m.add_element(ss, [int(x) for x in tables.static_ok.reshape(-1)], 1)
    # variable family: axis views, integer-coded
    axis, codes = {}, {}
    for name in AXIS_COLUMNS + ("dp_sharding",):
        values = [axis_value(tables, a, 0, name) for a in range(n_act)] if name != "dp_sharding" else list(tables.shardings)
        vocab = sorted(set(values), key=lambda v: (str(type(v)), v if not isinstance(v, type(None)) else 0))
        codes[name] = vocab
        var = m.new_int_var(0, max(len(vocab) - 1, 0), name)
        if name == "dp_sharding":
            m.add(var == shard)
        else:
            m.add_element(act, [vocab.index(v) for v in values], var)
        axis[name] = var
    # constraint group: exact memory per pipeline rank, enforced by one literal
    mem_lit = m.new_bool_var("memory_fits")
    for r in range(tables.act_bytes.shape[1]):
        col_s = [int(x) for x in tables.static_bytes[:, r]]
        col_a = [int(x) for x in tables.act_bytes[:, r]]
        st = m.new_int_var(0, max(col_s), f"static_{r}")
        ac = m.new_int_var(0, max(col_a), f"act_{r}")
        m.add_element(ss, col_s, st)
        m.add_element(act, col_a, ac)
        m.add(st + ac <= tables.usable_bytes).only_enforce_if(mem_lit)
    # objective feed: the lower bound table
    lb_vals = [int(x) for x in tables.lb_us]
    lb = m.new_int_var(min(lb_vals, default=0), max(lb_vals, default=0), "lb_us")
    m.add_element(act, lb_vals, lb)
    if extra_lb_limit is not None:
        m.add(lb <= extra_lb_limit)
    rm = RecipeModel(model=m, tables=tables, act=act, shard=shard, lb_us=lb, axis=axis, codes=codes, memory_literal=mem_lit)
    # constraint group: user pins, one literal each
    for name, allowed in (pins or {}).items():
        lit = m.new_bool_var(f"pin_{name}")
        ok = [i for i, v in enumerate(codes[name]) if v in list(allowed)]
        m.add_linear_expression_in_domain(axis[name], cp_model.Domain.from_values(ok)).only_enforce_if(lit)
        rm.pin_literals[name] = lit
    if hint is not None:
        m.add_hint(act, hint[0])
        m.add_hint(shard, hint[1])
    return rm
