"""A pipeline split as the vectorised projection reads it: per distinct rank, its layer and end counts.

Why a row of counts: a rank's per-micro-batch time is a sum over its chunks of per-layer costs, so the split enters
only through how many dense / MoE layers (and how many of them fully recomputed), embedding and loss chunks each
rank holds (`constraints.stages.rank_chunks`); ranks with equal counts are folded with their multiplicity, so a
64-stage pipeline prices as a handful of rank profiles.
"""
from __future__ import annotations

from constraints.spec import ModelSpec, Placement, Recipe
from constraints.stages import StageSplitError, rank_chunks
from hardware.profile import HardwareProfile
from measure.project import full_recompute_layers
from measure.topology import group_span

# per distinct rank profile: dense, MoE, fully recomputed dense / MoE layers, embedding, loss, vocab chunks; multiplicity
STAGE_COLS = ("nd", "nm", "nfd", "nfm", "emb", "loss", "vocab", "mult")


def stage_row(model: ModelSpec, recipe: Recipe, placement: Placement, profile: HardwareProfile) -> list[float]:
    """[valid, chunks per rank, PP crosses a domain] + STAGE_COLS per rank profile; [0.0] when the split fails."""
    try:
        chunks = rank_chunks(model, recipe)
    except StageSplitError:
        return [0.0]
    flags = model.moe_layers if model.is_moe else (False,) * model.num_layers
    profiles: list[list[int]] = []
    for rank_chunks_ in chunks:
        c = [0] * 7
        for ch in rank_chunks_:
            kinds = [flags[i] for i in ch.layers] + [flags[-1]] * ch.mtp
            full = full_recompute_layers(recipe, len(ch.layers))
            c[0] += kinds.count(False)
            c[1] += kinds.count(True)
            c[2] += kinds[:full].count(False)
            c[3] += kinds[:full].count(True)
            c[4] += ch.embedding
            c[5] += ch.loss
            c[6] += (ch.embedding or ch.loss) and (ch.loss and not model.tied_embeddings or ch.embedding)
        for prof in profiles:  # fold equal ranks; first occurrence keeps rank order for argmax ties
            if prof[:7] == c:
                prof[7] += 1
                break
        else:
            profiles.append(c + [1])
    pp = recipe.pp
    cross = group_span(pp, max(placement.world_size // pp, 1), profile, placement).num_domains > 1
    return [1.0, len(chunks[0]), float(cross)] + [x for prof in profiles for x in prof]
