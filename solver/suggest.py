"""`check --suggest`: the nearest legal recipe to a hand-written illegal one.

Nearest = fewest changed axes (TP, PP, VPP, CP, EP, ETP, MBS, SP, recompute, schedule, DP sharding, pipeline split,
TP comm overlap), then the projected step time (MoE dispatcher / EP overlap are each candidate's fastest legal
choice, and listed among the changes when they differ); found over the same exact tables as `solve`, and re-verified by check_case.

Why one search for every fix: each rule knows only its own axis (world_divisible says "use PP 2" for PP 3 on 16 GPUs),
so rule-local fixes disagree with each other and may not fit. `check` quotes this search's answer as the fix of every
violation it answers (shardplan/nearest_fix.py), and `--suggest` prints the same answer as a table. When no legal
recipe fits on the GPUs given, the answer is the fewest nodes on which one does (solver/explain.fewest_fitting_nodes,
the count `solve` reports; its screens are solver/fewest_gpus.CountScreen) and the nearest recipe there.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
from pydantic import ValidationError

from constraints.case import Case
from constraints.check import check_case
from constraints.rules.registry import RULES
from constraints.spec import AttentionBackend
from hardware.profile import load_profile
from measure.projection.project import project
from solver.cpsat.model import axis_value
from solver.cpsat.solve import ExactRanker, fitting_index
from solver.explain import MAX_NODES, fewest_fitting_nodes
from solver.explain_why import MAX_NODES_FACTOR
from solver.space import build_space, recompute_name
from solver.tables.build import build_tables

_RULES_BY_NAME = {fn.__name__: fn for fn in RULES}

AXES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sp", "recompute", "schedule", "dp_sharding", "acc_split",
        "uneven_stages", "tp_comm_overlap")


# Recipe fields the AXES above (or the per-candidate variants) decide; any other field the user set is reported when
# the suggestion does not carry it
_SEARCHED_FIELDS = frozenset({"tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sequence_parallel", "recompute", "schedule",
                              "dp_sharding", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
                              "first_stage_layers", "last_stage_layers", "tp_comm_overlap", "moe_dispatcher",
                              "overlap_moe_expert_parallel_comm"})


# rules whose fix is a launch setting (an environment variable), never a recipe value: when the user's own recipe fails
# one, its own fix stands, and the search does not route around it (e.g. to TP 1 where CUDA_DEVICE_MAX_CONNECTIONS is unset)
LAUNCH_SETTING_RULES = frozenset({"cuda_device_max_connections"})


def answers(rule: str) -> bool:
    """Whether this search answers a violation of `rule`: the memory verdict, or a rule that reads a field the search
    varies (constraints/rules/registry.py `reads`), unless its fix is a launch setting."""
    if rule == "memory_fits":
        return True
    if rule in LAUNCH_SETTING_RULES:
        return False
    reads = getattr(_RULES_BY_NAME.get(rule), "reads", None)
    return bool(reads and reads & _SEARCHED_FIELDS)


# searched per candidate only for MoE models: a dense model's dispatcher settings change nothing, so they are kept
_MOE_FIELDS = frozenset({"moe_dispatcher", "overlap_moe_expert_parallel_comm"})


def _own_values(case: Case) -> dict:
    r = case.recipe
    return {"tp": r.tp, "pp": r.pp, "vpp": r.vpp, "cp": r.cp, "ep": r.ep, "etp": r.etp_effective if case.model.is_moe else None,
            "mbs": r.mbs, "sp": r.sp_active, "recompute": recompute_name(r.recompute), "schedule": r.schedule.value,
            "dp_sharding": r.dp_sharding.value, "acc_split": r.account_for_embedding_in_pipeline_split,
            "uneven_stages": r.first_stage_layers is not None or r.last_stage_layers is not None,
            "tp_comm_overlap": r.tp_comm_overlap}


def suggest_fix(case: Case, margin_fraction: float = 0.0, max_tried: int = 50, flags: Optional[Mapping] = None,
                env: Optional[Mapping] = None, validated_by: Optional[str] = None, profile=None,
                more_nodes: bool = True) -> dict:
    """The nearest legal, fitting recipe. Fields the search does not vary (fp8 param gather, vocabulary padding,
    fusions, ...) keep the user's values where the result still passes check; the answer is re-verified by check_case
    with the same flags and environment as the user's check (a launch-setting violation the user's own recipe also
    has is left to its own fix, LAUNCH_SETTING_RULES), and `changed_axes` counts every changed field. `profile`: the
    one the user's check used (a calibrated one moves the memory reserve), else the placement's. When no legal recipe
    fits on these GPUs and `more_nodes`, the answer adds `fewest_nodes` (None: none up to `max_nodes`) and the
    nearest recipe there (`at_fewest_nodes`, the same search on that many nodes)."""
    profile = profile or load_profile(case.placement.hardware)
    own_report = check_case(case, profile, flags=flags, env=env, margin_fraction=margin_fraction, validated_by=validated_by)
    tolerated = frozenset(v.rule for v in own_report.violations if v.rule in LAUNCH_SETTING_RULES)
    own = _own_values(case)
    space = build_space(case.model, case.job, case.placement)
    for axis in ("tp", "pp", "vpp", "cp", "ep", "mbs"):
        if own[axis] not in space.domains[axis]:
            space.domains[axis] = sorted(set(space.domains[axis]) | {own[axis]})
    backend = case.recipe.attention_backend  # not searched, so kept: look only where it is legal (rules_attention_backend)
    if backend.stores_scores:
        space.domains["cp"] = [1]
        if backend == AttentionBackend.local and not case.model.multi_latent_attention:
            divides = [t for t in space.domains["tp"] if case.model.num_query_groups % t == 0]
            space.domains["tp"] = divides or space.domains["tp"]
    tables = build_tables(space, profile, margin_fraction)
    idx = fitting_index(tables)
    if not len(idx):
        world = case.placement.world_size
        out = {"found": False, "message": f"no legal recipe fits on {world} GPU" + ("" if world == 1 else "s")}
        return {**out, **_fewest_nodes(case, profile, margin_fraction, flags, env, validated_by)} if more_nodes else out
    a, s = tables.cand_act[idx], tables.cand_shard[idx]
    dist = np.zeros(len(idx), dtype=np.int64)
    for axis in AXES:
        same = tables.allowed(axis, [own[axis]])
        dist += ~(same[s] if axis == "dp_sharding" else same[a])
    order = np.lexsort((s, a, tables.cand_time_us[idx], dist))
    ranker = ExactRanker(tables, margin_fraction)
    best_d, found = None, []
    for j in order[:max_tried]:
        if best_d is not None and dist[j] > best_d:
            break
        r = ranker.evaluate(int(a[j]), int(s[j]), int(tables.cand_time_us[idx[j]]))
        if r is not None:
            best_d = int(dist[j]) if best_d is None else best_d
            found.append(r)
    chosen = _verified(case, sorted(found, key=lambda r: r.key), profile, margin_fraction, flags, env, validated_by, tolerated)
    if chosen is None:
        return {"found": False, "message": "no verified legal recipe among the nearest candidates"}
    top, r1, report, projection = chosen
    new = {axis: axis_value(tables, top.act, top.shard, axis) for axis in AXES}
    changes = {k: {"from": own[k], "to": new[k]} for k in AXES if new[k] != own[k]}
    r0 = case.recipe  # MoE variants and split sizes are chosen per candidate: say when they differ
    for field in ("moe_dispatcher", "overlap_moe_expert_parallel_comm", "first_stage_layers", "last_stage_layers"):
        if case.model.is_moe or field not in _MOE_FIELDS:
            _note_change(changes, r0, r1, field)
    for field in type(r0).model_fields:  # flags the search does not vary: the suggestion carries their defaults
        if field not in _SEARCHED_FIELDS and field not in changes:
            _note_change(changes, r0, r1, field, note="not searched")
    return {"found": True, "changed_axes": len(changes), "changes": changes,
            "recipe": r1.model_dump(mode="json"), "projection": projection, "peak_bytes": report.memory.peak_bytes,
            "usable_bytes": report.memory.usable_bytes}


def _fewest_nodes(case: Case, profile, margin: float, flags, env, validated_by) -> dict:
    """{fewest_nodes, fewest_gpus, at_fewest_nodes} when some count above the user's fits a legal recipe (the count
    `solve` names, solver/explain.fewest_fitting_nodes, with no pins), else {fewest_nodes: None, max_nodes} (the cap
    it scanned up to)."""
    pl = case.placement
    nodes = fewest_fitting_nodes(case.model, case.job, pl, profile, {}, {}, margin)
    if nodes is None:
        return {"fewest_nodes": None, "max_nodes": min(pl.num_nodes * MAX_NODES_FACTOR, MAX_NODES)}
    there = case.model_copy(update={"placement": pl.model_copy(update={"num_nodes": nodes})})
    return {"fewest_nodes": nodes, "fewest_gpus": there.placement.world_size,
            "at_fewest_nodes": suggest_fix(there, margin, flags=flags, env=env, validated_by=validated_by, profile=profile,
                                           more_nodes=False)}


def _passes(report, tolerated: frozenset) -> bool:
    """Legal and fits, but for launch-setting violations the user's own recipe also has (they keep their own fix)."""
    return report.ok or (report.fits and all(v.rule in tolerated for v in report.violations))


def _verified(case: Case, ranked: list, profile, margin: float, flags, env, validated_by: Optional[str] = None,
              tolerated: frozenset = frozenset()):
    """(candidate, recipe, report, projection) for the first candidate that passes check with the user's flags and
    env: with the user's values of the fields not searched kept, else as searched; None if none passes."""
    r0 = case.recipe
    searched = _SEARCHED_FIELDS if case.model.is_moe else _SEARCHED_FIELDS - _MOE_FIELDS  # a dense model keeps them
    keep = {f: getattr(r0, f) for f in type(r0).model_fields if f not in searched}
    for cand in ranked:
        options = []
        try:
            options.append(type(r0).model_validate({**cand.recipe.model_dump(), **keep}))
        except ValidationError:
            pass
        options.append(cand.recipe)
        for recipe in options:
            report = check_case(case.model_copy(update={"recipe": recipe}), profile, flags=flags, env=env,
                                margin_fraction=margin, validated_by=validated_by)
            if _passes(report, tolerated):
                proj = cand.check.projection if recipe == cand.recipe else \
                    project(case.model, case.job, recipe, case.placement, profile).model_dump(mode="json")
                return cand, recipe, report, proj
    return None


def _note_change(changes: dict, r0, r1, field: str, **extra) -> None:
    """changes[field] = {from, to, **extra} (enum values spelled) where the two recipes differ in `field`."""
    a0, a1 = getattr(r0, field), getattr(r1, field)
    if a0 != a1:
        changes[field] = {"from": getattr(a0, "value", a0), "to": getattr(a1, "value", a1), **extra}
