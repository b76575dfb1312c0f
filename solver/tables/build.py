"""Factor tables over small keys: legality from the rule functions, exact integer bytes per rank class,
and the ranking projection of every candidate in integer microseconds.

Why factor: the recipe space is a product of ~12 axes (millions of points) but every quantity depends on
few of them:
- structural rows (TP, PP, VPP, CP, EP, ETP, schedule, account-for split) x DP sharding -> static bytes
  per rank class (solver/tables/memory.py; constraints.memory.per_rank.static_from_params);
- activation rows = structural row x (MBS, SP, recompute) -> activation-side bytes per rank class;
- a candidate is (activation row, sharding) whose structural row accepts that sharding; its exact peak is
  max over rank classes of static + activation, the sum constraints.memory.per_rank.memory_report forms (a test
  holds the two equal), and, when it fits, its ranking time is measure.projection.vectorized's closed-form projection
  (= measure.projection.project.project(..., simulate_pipeline=False)), rounded up to whole microseconds.
Legality: each rule is called on the table whose axes it reads (solver/tables/rules.py). Every answer
is re-verified by check_case anyway. With `prune_k`, only the structural rows whose ranking-time bound can reach
the top K are expanded (solver/prune.py, branch and bound); the others are bounded, never enumerated.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from constraints.memory import per_rank as mem
from constraints.spec import Recipe
from constraints.stages import StageSplitError
from measure.projection.vectorized import Evaluator
from solver.prune import explore
from solver.space import SearchSpace, make_recipe, recompute_choices, recompute_name
from solver.tables.codes import unique_ints
from solver.tables.memory import MemoryTables, make_split
from solver.tables.rules import activation_ok, batch_ok, fast_recipe, struct_rows
from solver.tables.time import UNPRICEABLE_US, ranking_time_us, row_columns
from solver.variants import DEFAULT as DEFAULT_VARIANT
from solver.variants import choose, key_columns, legal_variants, space_variants

AXIS_NAMES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sp", "recompute", "schedule", "acc_split", "tp_comm_overlap",
              "uneven_stages")
VARIANT_AXES = ("moe_dispatcher", "ep_comm_overlap")  # chosen per candidate (solver/variants.py), pinned in the space


@dataclass
class Tables:
    space: SearchSpace
    profile: object
    usable_bytes: int
    rc_choices: list
    struct: list[tuple]                   # (tp, pp, vpp, cp, ep, etp, schedule, split: False | True | (first, last))
    shardings: list[str]
    static_ok: np.ndarray                 # [struct, sharding] bool: structural rules hold
    static_bytes: np.ndarray              # [struct*nshard + shard, class] int64, 0 past the split's classes
    act_rows: np.ndarray                  # [act, (struct index, mbs, sp, rc index, tp_comm_overlap)] int64
    act_struct: np.ndarray                # [act] struct index
    act_bytes: np.ndarray                 # [act, class] int64 incl. comm buffers and framework overhead
    cand_act: np.ndarray                  # [cand] activation row of each legal (row, sharding) candidate
    cand_shard: np.ndarray                # [cand] sharding index
    cand_peak: np.ndarray                 # [cand] exact peak bytes
    cand_time_us: np.ndarray              # [cand] ranking projection, integer microseconds (ceil); sentinel if not fitting
    variants: list = field(default_factory=lambda: [DEFAULT_VARIANT])  # (MoE dispatcher, EP overlap) pairs tried
    variant_at: np.ndarray = None         # [act * n_shard + shard] index into variants of the candidate's best legal one
    cols: dict = field(default_factory=dict)  # per activation row integer columns (`row_columns`)
    counts: dict = field(default_factory=dict)
    # solver/prune.py: None when every structural row is expanded; else a lower bound (µs) on the ranking time of
    # every candidate left out, all of which are slower than the K-th best kept
    pruned_lb_us: Optional[int] = None
    cand_unpriced: np.ndarray = None      # [cand] fits, but the projection could not price it (ranks last)
    _codes: dict = field(default_factory=dict)
    _memo: dict = field(default_factory=dict)  # derived orders reused by every solve over these tables

    def variant(self, a: int, shard: int) -> tuple:
        """(MoE dispatcher, EP overlap) of candidate (a, shard): its best legal variant."""
        if self.variant_at is None:
            return self.variants[0]
        return self.variants[max(int(self.variant_at[a * len(self.shardings) + shard]), 0)]

    def recipe(self, a: int, shard: int) -> Recipe:
        s, mbs, sp, rc, tpo = (int(x) for x in self.act_rows[a])
        tp, pp, vpp, cp, ep, etp, sched, acc = self.struct[s]
        return make_recipe(tp, pp, vpp, cp, ep, etp, mbs, sp, self.rc_choices[rc], sched, self.shardings[shard], acc, tpo,
                           self.variant(a, shard))

    def peak_bytes(self, a: np.ndarray, shard: np.ndarray) -> np.ndarray:
        """Exact peak bytes (max over rank classes) of candidates (a, shard)."""
        return (self.static_bytes[self.act_struct[a] * len(self.shardings) + shard] + self.act_bytes[a]).max(axis=1)

    def axis_codes(self, axis: str) -> tuple[list, np.ndarray]:
        """(vocabulary, code per activation row) of one axis, in the space's spelling; dp_sharding codes are
        the sharding indices themselves."""
        if axis == "dp_sharding":
            return list(self.shardings), np.arange(len(self.shardings))
        if axis not in self._codes:
            raw, spell = self._axis_column(axis)
            uniq, inv = unique_ints(raw)
            values = [spell(int(u)) for u in uniq]
            order = sorted(range(len(values)), key=lambda k: (str(type(values[k])), 0 if values[k] is None else values[k]))
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
            self._codes[axis] = ([values[k] for k in order], rank[inv.reshape(-1)] if len(raw) else np.zeros(0, dtype=np.int64))
        return self._codes[axis]

    def _axis_column(self, axis: str):
        """(integer column per activation row, int -> value in the space's spelling) of one axis."""
        c = self.cols
        if axis == "recompute":
            names = [recompute_name(r) for r in self.rc_choices]
            return c["rc"], lambda i: names[i]
        if axis == "schedule":
            return c["sched"], lambda i: self.space.domains["schedule"][i]
        if axis in ("sp", "tp_comm_overlap", "acc_split"):
            return c[{"sp": "sp", "tp_comm_overlap": "tpo", "acc_split": "acc"}[axis]], bool
        if axis == "uneven_stages":  # split values: False, True (account-for), (first, last)
            return (c["first"] > 0).astype(np.int64), bool
        if axis == "etp":
            return c["etp"], lambda i: i or None  # 0: expert TP follows TP (dense models)
        return c[axis], int

    def allowed(self, axis: str, values) -> np.ndarray:
        """Bool per activation row (per sharding for dp_sharding): the axis value is among `values`."""
        vocab, codes = self.axis_codes(axis)
        ok = np.array([v in list(values) for v in vocab], dtype=bool)
        return ok[codes] if len(codes) else ok[:0]

    def axis_value(self, a: int, shard: int, axis: str):
        vocab, codes = self.axis_codes(axis)
        return vocab[shard] if axis == "dp_sharding" else vocab[codes[a]]


def build_tables(space: SearchSpace, profile, margin_fraction: float = 0.0, prune_k: Optional[int] = None,
                 evaluator=None) -> Tables:
    """The exact tables of `space`. With `prune_k`, only the structural rows that can hold one of the K fastest
    fitting candidates (solver/prune.py: a lower bound per row against the K-th best time found) are expanded; the
    tables then say so (`pruned_lb_us`), and every candidate left out ranks after every one kept."""

    usable = profile.hbm_capacity_bytes * (mem.PPM - round(margin_fraction * mem.PPM)) // mem.PPM
    rcs_all = recompute_choices(space.model)
    rc_idx = [i for i, r in enumerate(rcs_all) if recompute_name(r) in space.domains["recompute"]]
    shardings = list(space.domains["dp_sharding"])
    struct, ok_rows, splits = _structural(space, profile, rcs_all)
    if evaluator is None:
        evaluator = Evaluator(space.model, space.job, space.placement, profile)

    def build(keep) -> Tables:
        rows = [struct[i] for i in keep]
        used = {(r[1], r[2], r[7]) for r in rows}
        return _build(space, profile, usable, rcs_all, rc_idx, shardings, rows, [ok_rows[i] for i in keep],
                      {k: v for k, v in splits.items() if k in used} or splits, evaluator)

    if prune_k is None:
        return build(range(len(struct)))
    return explore(space, profile, struct, ok_rows, shardings, rcs_all, list(splits), prune_k, build, evaluator)


def _structural(space, profile, rcs_all) -> tuple[list, list, dict]:
    """(structural rows whose stage split exists, their per-sharding verdicts, (pp, vpp, split) -> Split)."""
    splits, struct, ok_rows = {}, [], []
    for row, ok in struct_rows(space, profile, rcs_all[0]):
        key = (row[1], row[2], row[7])
        if key not in splits:
            try:
                splits[key] = make_split(space.model, *key)
            except StageSplitError:
                splits[key] = None
        if splits[key] is not None:
            struct.append(row)
            ok_rows.append(ok)
    return struct, ok_rows, {k: v for k, v in splits.items() if v is not None}


def _build(space, profile, usable, rcs_all, rc_idx, shardings, struct, ok_rows, splits, evaluator) -> Tables:
    cal = profile.calibration
    width = max([len(s.classes) for s in splits.values()], default=1)
    memt = MemoryTables(space, profile, rcs_all, splits, width)
    static_ok = np.array(ok_rows, dtype=bool).reshape(len(struct), len(shardings))
    static_bytes = memt.static_table(struct, static_ok, shardings)
    act_rows = _activation_rows(space, profile, struct, static_ok, shardings, rcs_all, rc_idx)
    cols = row_columns(space, struct, act_rows, memt.split_keys)
    act_bytes = memt.activation(cols, round(cal.activation_fragmentation_fraction * mem.PPM), cal.framework_overhead_bytes)
    act_struct = cols["struct"]
    n_sh = len(shardings)
    a_all = np.repeat(np.arange(len(act_rows), dtype=np.int64), n_sh)
    s_all = np.tile(np.arange(n_sh, dtype=np.int64), len(act_rows))
    keep = static_ok[act_struct[a_all], s_all] if len(act_rows) else np.zeros(0, dtype=bool)
    variants, legal_v = row_variants(space, profile, row_recipe(space, struct, act_rows, rcs_all, shardings, static_ok), cols)
    if len(act_rows):
        keep &= legal_v.any(axis=1)[a_all]  # a row no allowed variant makes legal is illegal
    cand_act, cand_shard = a_all[keep], s_all[keep]
    peak = (static_bytes[act_struct[cand_act] * n_sh + cand_shard] + act_bytes[cand_act]).max(axis=1) if len(cand_act) \
        else np.zeros(0, dtype=np.int64)
    # the ranking time only matters where a candidate can be an answer: price the fitting ones (a candidate
    # that does not fit carries the sentinel, so CP-SAT's objective never prefers it; memory still rejects it)
    fit = peak <= usable
    times = np.full(len(cand_act), UNPRICEABLE_US, dtype=np.int64)
    cand_variant = np.argmax(legal_v[cand_act], axis=1) if len(cand_act) else np.zeros(0, dtype=np.int64)
    times[fit], cand_variant[fit] = _price_variants(space, profile, cols, rcs_all, shardings, cand_act[fit], cand_shard[fit],
                                                    variants, legal_v[cand_act[fit]], evaluator)
    variant_at = np.full(len(act_rows) * n_sh, -1, dtype=np.int8)
    variant_at[cand_act * n_sh + cand_shard] = cand_variant
    # unpriced candidates rank after every priced one, with a value small enough that CP-SAT's bound on the
    # objective sum (candidates x largest time) stays far inside int64 (a 2^50 sentinel overflowed it)
    priced = times < UNPRICEABLE_US
    unpriced = fit & ~priced
    times[~priced] = int(times[priced].max()) + 1 if priced.any() else 1
    return Tables(space=space, profile=profile, usable_bytes=usable, rc_choices=rcs_all, struct=struct, shardings=shardings,
                  static_ok=static_ok, static_bytes=static_bytes, act_rows=act_rows, act_struct=act_struct,
                  act_bytes=act_bytes, cand_act=cand_act, cand_shard=cand_shard, cand_peak=peak, cand_time_us=times,
                  variants=variants, variant_at=variant_at, cols=cols, cand_unpriced=unpriced,
                  counts={"declared": space.size(), "structural_rows": len(struct), "activation_rows": len(act_rows),
                          "candidates": int(len(cand_act)), "fitting": int(fit.sum())})


def row_recipe(space, struct, act_rows, rcs_all, shardings, static_ok):
    """recipe_of_row(a) for the variant rules: activation row a's recipe under its first accepted sharding."""
    def recipe_of_row(a):
        s, mbs, sp, rc, tpo = (int(x) for x in act_rows[a])
        tp, pp, vpp, cp, ep, etp, sched, acc = struct[s]
        return fast_recipe(tp, pp, vpp, cp, ep, etp, mbs, sp, rcs_all[rc], sched, shardings[int(np.argmax(static_ok[s]))], acc, tpo)
    return recipe_of_row


def row_variants(space, profile, recipe_of_row, cols) -> tuple[list, np.ndarray]:
    """(variants tried, [activation row, variant] legality): the space's variant domains on this hardware."""
    variants = space_variants(space, profile)
    if not variants or not len(cols["struct"]):
        return variants or [DEFAULT_VARIANT], np.zeros((len(cols["struct"]), max(len(variants), 1)), dtype=bool)
    # the default variant is the rows' own recipe, which the activation rules already accepted
    others = [v for v in variants if v != DEFAULT_VARIANT]
    legal = np.ones((len(cols["struct"]), len(variants)), dtype=bool)
    if others:
        keys = np.stack([cols[c] for c in key_columns()], axis=1)
        legal[:, [variants.index(v) for v in others]] = legal_variants(space, profile, recipe_of_row, keys, others)
    return variants, legal


def _price_variants(space, profile, cols, rcs_all, shardings, cand_act, cand_shard, variants, legal,
                    evaluator=None) -> tuple[np.ndarray, np.ndarray]:
    """Ranking time (µs) and variant index of each candidate: the fastest of its legal variants. One batch
    holds every (candidate, legal variant) pair, so the projection's layer costs are computed once."""
    ci, vi = np.nonzero(legal)
    t = ranking_time_us(space, profile, cols, rcs_all, shardings, cand_act[ci], cand_shard[ci], variants, vi, evaluator)
    by = np.full(legal.shape, UNPRICEABLE_US, dtype=np.int64)
    by[ci, vi] = t
    best, idx = choose(by, legal)
    return np.minimum(best, UNPRICEABLE_US), np.maximum(idx, 0)


def _activation_rows(space, profile, struct, static_ok, shardings, rcs_all, rc_idx) -> np.ndarray:
    """[row, (struct, mbs, sp, rc, tp_comm_overlap)] int64 rows whose activation and batch rules hold (judged under
    the row's first accepted sharding: these rules do not read the sharding). Activation verdicts are shared across
    rows that differ only in ETP, batch verdicts across ETP and the split, which those rule groups do not read
    (tests/solver/tables/test_solver_rules_factored.py holds the tables equal to check_rules on every full recipe)."""
    blocks, act_cache, batch_cache = [], {}, {}
    for i, row in enumerate(struct):
        if not static_ok[i].any():
            continue
        sh = shardings[int(np.argmax(static_ok[i]))]
        tp, pp, vpp, cp, ep, _etp, sched, split = row
        key = (tp, pp, vpp, cp, ep, sched, sh, split)  # the split: full recompute's layer count is bounded per stage
        sp_rc = act_cache.get(key)
        if sp_rc is None:
            # TP comm overlap is tried only where SP is on (the rule tp_comm_overlap_needs_sp rejects the rest)
            sp_rc = act_cache[key] = np.array([(sp, rci, tpo) for sp in space.domains["sp"] for rci in rc_idx
                                               for tpo in space.domains["tp_comm_overlap"]
                                               if not (sp and tp == 1) and not (tpo and not (sp and tp > 1))
                                               and activation_ok(space, profile, row, sp, rcs_all[rci], sh, tpo)],
                                              dtype=np.int64).reshape(-1, 3)
        mbs_ok = []
        for mbs in space.domains["mbs"]:
            bkey = (tp, pp, vpp, cp, sched, sh, mbs)
            ok = batch_cache.get(bkey)
            if ok is None:
                ok = batch_cache[bkey] = batch_ok(space, profile, row, mbs, rcs_all[0], sh)
            if ok:
                mbs_ok.append(mbs)
        if mbs_ok and len(sp_rc):  # rows in (mbs, sp, rc, tpo) order
            n_m, n_a = len(mbs_ok), len(sp_rc)
            blk = np.empty((n_m * n_a, 5), dtype=np.int64)
            blk[:, 0] = i
            blk[:, 1] = np.repeat(np.array(mbs_ok, dtype=np.int64), n_a)
            blk[:, 2:] = np.tile(sp_rc, (n_m, 1))
            blocks.append(blk)
    return np.concatenate(blocks) if blocks else np.zeros((0, 5), dtype=np.int64)
