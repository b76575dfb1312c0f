"""`check --suggest`: the nearest legal recipe to a hand-written illegal one.

Nearest = fewest changed axes (TP, PP, VPP, CP, EP, ETP, MBS, SP, recompute, schedule, DP sharding, pipeline split,
TP comm overlap), then the projected step time (MoE dispatcher / EP overlap are each candidate's fastest legal
choice, and listed among the changes when they differ); found over the same exact tables as `solve`, and re-verified by check_case.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
from pydantic import ValidationError

from constraints.case import Case
from constraints.check import check_case
from constraints.spec import AttentionBackend
from hardware.profile import load_profile
from measure.projection.project import project
from solver.cpsat.model import axis_value
from solver.cpsat.solve import ExactRanker, fitting_index
from solver.space import build_space, recompute_name
from solver.tables.build import build_tables

AXES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sp", "recompute", "schedule", "dp_sharding", "acc_split",
        "uneven_stages", "tp_comm_overlap")


# Recipe fields the AXES above (or the per-candidate variants) decide; any other field the user set is reported when
# the suggestion does not carry it
_SEARCHED_FIELDS = frozenset({"tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sequence_parallel", "recompute", "schedule",
                              "dp_sharding", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
                              "first_stage_layers", "last_stage_layers", "tp_comm_overlap", "moe_dispatcher",
                              "overlap_moe_expert_parallel_comm"})


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
                env: Optional[Mapping] = None, validated_by: Optional[str] = None) -> dict:
    """The nearest legal, fitting recipe. Fields the search does not vary (fp8 param gather, vocabulary padding,
    fusions, ...) keep the user's values where the result still passes check; the answer is re-verified by check_case
    with the same flags and environment as the user's check, and `changed_axes` counts every changed field."""
    profile = load_profile(case.placement.hardware)
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
        return {"found": False, "message": "no legal recipe fits this model, cluster and job; see `shardplan solve`"}
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
    chosen = _verified(case, sorted(found, key=lambda r: r.key), profile, margin_fraction, flags, env, validated_by)
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
            "recipe": r1.model_dump(mode="json"), "projection": projection, "peak_bytes": report.memory.peak_bytes}


def _verified(case: Case, ranked: list, profile, margin: float, flags, env, validated_by: Optional[str] = None):
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
            if report.ok:
                proj = cand.check.projection if recipe == cand.recipe else \
                    project(case.model, case.job, recipe, case.placement, profile).model_dump(mode="json")
                return cand, recipe, report, proj
    return None


def _note_change(changes: dict, r0, r1, field: str, **extra) -> None:
    """changes[field] = {from, to, **extra} (enum values spelled) where the two recipes differ in `field`."""
    a0, a1 = getattr(r0, field), getattr(r1, field)
    if a0 != a1:
        changes[field] = {"from": getattr(a0, "value", a0), "to": getattr(a1, "value", a1), **extra}
