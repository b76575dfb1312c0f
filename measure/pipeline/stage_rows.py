"""A pipeline split as the vectorised projection reads it: per distinct rank, its layer and end counts.

Why a row of counts: a rank's per-micro-batch time is a sum over its chunks of per-layer costs, so the split enters
only through how many layers of each kind (dense / MoE for a transformer, M / * / - / E for a hybrid model:
constraints.memory.activation_coef.kind_keys) and how many of them fully recomputed, embedding and loss chunks each
rank holds (`constraints.stages.rank_chunks`); ranks with equal counts are folded with their multiplicity, so a
64-stage pipeline prices as a handful of rank profiles.
"""
from __future__ import annotations

from constraints.memory.activation_coef import kind_keys
from constraints.spec import ModelSpec, Placement, Recipe
from constraints.stages import StageSplitError, rank_chunks
from hardware.profile import HardwareProfile
from measure.comm.topology import group_span
from measure.projection.project import full_recompute_layers

# per distinct rank profile, after the per-kind counts (layers of each kind, then fully recomputed layers of each kind):
# embedding, loss, vocab chunks; multiplicity
END_COLS = ("emb", "loss", "vocab", "mult")


def stage_width(model: ModelSpec) -> int:
    """Columns of one rank profile: layers and fully recomputed layers per kind, then END_COLS (8 for a transformer:
    nd, nm, nfd, nfm, emb, loss, vocab, mult)."""
    return 2 * len(kind_keys(model)) + len(END_COLS)


def stage_row(model: ModelSpec, recipe: Recipe, placement: Placement, profile: HardwareProfile) -> list[float]:
    """[valid, chunks per rank, PP crosses a domain] + stage_width columns per rank profile; [0.0] when the split
    fails."""
    try:
        chunks = rank_chunks(model, recipe)
    except StageSplitError:
        return [0.0]
    flags, keys = model.layer_kinds, kind_keys(model)
    nk = len(keys)
    width = 2 * nk + 3
    profiles: list[list[int]] = []
    for rank_chunks_ in chunks:
        c = [0] * width
        for ch in rank_chunks_:
            kinds = [flags[i] for i in ch.layers] + list(model.mtp_layer_kinds) * ch.mtp
            full = full_recompute_layers(recipe, len(ch.layers))
            for k, key in enumerate(keys):
                c[k] += kinds.count(key)
                c[nk + k] += kinds[:full].count(key)
            c[2 * nk] += ch.embedding
            c[2 * nk + 1] += ch.loss
            c[2 * nk + 2] += (ch.embedding or ch.loss) and (ch.loss and not model.tied_embeddings or ch.embedding)
        for prof in profiles:  # fold equal ranks; first occurrence keeps rank order for argmax ties
            if prof[:width] == c:
                prof[width] += 1
                break
        else:
            profiles.append(c + [1])
    pp = recipe.pp
    cross = group_span(pp, max(placement.world_size // pp, 1), profile, placement).num_domains > 1
    return [1.0, len(chunks[0]), float(cross)] + [x for prof in profiles for x in prof]
