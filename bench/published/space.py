"""Where a published recipe sits relative to the solver's space, and how the bench tables name it.

Why apart: bench/published/recipes.py runs and reports the comparison; deciding whether a recipe is one the solver
could have returned (`outside_space`: capped axes, hand-written layouts, splits and MoE variants the solver does not
try), ranking a published throughput among the candidates' (`rank_among`) and labelling it so that different
recipes never read alike (`recipe_label`) are their own small idea.
"""
from __future__ import annotations

GIB = 1024 ** 3


def outside_space(recipe, domains: dict[str, list], model=None, profile=None) -> list[str]:
    """Axes where `recipe` lies outside the solver's candidate domains (so it cannot be in our list); uneven
    first/last stages are inside when they are one of the pairs solver/splits.py tries for `model` (account-for's
    layout under explicit flags counts as inside); flex only where the solver tries it (solver/variants.py)."""
    from solver.space import recompute_name
    from solver.splits import split_choices, split_fields
    from solver.variants import supports_flex

    out = []
    for axis, value in (("tp", recipe.tp), ("pp", recipe.pp), ("vpp", recipe.vpp), ("cp", recipe.cp), ("ep", recipe.ep),
                        ("mbs", recipe.mbs)):
        if value not in domains[axis]:
            out.append(f"{axis}={value} not in {{{','.join(str(v) for v in domains[axis] if v is not None)}}}")
    if recipe.etp is not None and recipe.etp not in domains["etp"]:
        out.append(f"etp={recipe.etp}")
    rc = recompute_name(recipe.recompute)
    if rc not in domains["recompute"]:
        out.append(f"recompute {rc}")
    if recipe.dp_sharding.value not in domains["dp_sharding"]:
        out.append(f"sharding {recipe.dp_sharding.value}")
    if recipe.schedule.value not in domains["schedule"]:
        out.append(f"schedule {recipe.schedule.value}")
    if recipe.pipeline_layout:
        out.append("custom pipeline layout")
    elif recipe.first_stage_layers or recipe.last_stage_layers:
        pair = (recipe.first_stage_layers, recipe.last_stage_layers)
        tried = split_choices(model, recipe.pp, recipe.vpp, domains["acc_split"], True) if model is not None else []
        if pair not in tried and True in tried and model is not None:  # the same layout as account-for's?
            from constraints.stages import StageSplitError, virtual_stage_layer_counts

            try:
                same = [virtual_stage_layer_counts(model, recipe.model_copy(update=split_fields(s))) for s in (pair, True)]
                tried = tried + [pair] if same[0] == same[1] else tried
            except StageSplitError:
                pass
        if pair not in tried or True not in domains.get("uneven_stages", [True]):
            out.append(f"first/last stage layers {pair[0]}/{pair[1]}")
    for axis, value in (("moe_dispatcher", recipe.moe_dispatcher.value), ("ep_comm_overlap", recipe.overlap_moe_expert_parallel_comm)):
        if axis in domains and value not in domains[axis]:
            out.append(f"{axis} {value}")
    if recipe.moe_dispatcher.value == "flex" and profile is not None and not supports_flex(profile):
        out.append("flex dispatcher on hardware without DeepEP/HybridEP")
    return out


def recipe_label(r) -> str:
    """Short recipe text for the table: TP/PP/VPP/CP/EP/ETP/MBS plus non-default features."""
    parts = [f"TP{r.tp}", f"PP{r.pp}"]
    if r.vpp > 1:
        parts.append(f"VP{r.vpp}")
    if r.cp > 1:
        parts.append(f"CP{r.cp}")
    if r.ep > 1:
        parts.append(f"EP{r.ep}")
    if r.etp is not None and r.etp != r.tp:
        parts.append(f"ETP{r.etp}")
    parts.append(f"MBS{r.mbs}")
    if r.recompute.granularity.value != "none":
        mods = "+".join(m.value for m in r.recompute.modules)
        parts.append(f"rc:{mods}" if mods else f"rc:full/{r.recompute.method.value}{r.recompute.num_layers}")
    if r.dp_sharding.value not in ("distributed_optimizer",):
        parts.append(r.dp_sharding.value)
    if r.first_stage_layers or r.last_stage_layers:
        parts.append(f"first/last {r.first_stage_layers}/{r.last_stage_layers}")
    elif r.account_for_embedding_in_pipeline_split:
        parts.append("acc-split")
    if r.tp_comm_overlap:
        parts.append("tp-ovl")
    if r.ep > 1 and r.moe_dispatcher.value != "alltoall":
        parts.append(r.moe_dispatcher.value)
    if r.overlap_moe_expert_parallel_comm:
        parts.append("ep-ovl")
    return " ".join(parts)


def rank_among(published_tps: float, candidate_tps) -> tuple[int, int]:
    """(number of candidates projected strictly faster, candidates priced); NaN candidates are ignored."""
    n = faster = 0
    for t in candidate_tps:
        if t != t:  # NaN: impossible pipeline split
            continue
        n += 1
        faster += bool(t > published_tps)  # plain ints: numpy scalars would reach --json as strings
    return faster, n
