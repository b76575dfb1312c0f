"""Which decoder layers each pipeline rank (and each of its virtual chunks) holds.

Why its own module: memory, projection and the legality rules all need the same split, and Megatron
has four ways to say it (even, account-for-embedding/loss, uneven first/last stage, an explicit
layout string). Virtual stage v lives on rank v % PP as chunk v // PP (Megatron interleaving).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from boundary.errors import ShardplanError
from boundary.expand import MAX_EXPANDED_CHARS, expand_groups, repeat_count
from constraints.spec import ModelSpec, Recipe


@dataclass(frozen=True)
class Chunk:
    """One virtual pipeline stage: decoder layer indices plus what else it holds."""

    layers: tuple[int, ...]
    embedding: bool
    loss: bool
    mtp: int = 0


class StageSplitError(ShardplanError):
    """The recipe's pipeline split cannot hold this model's layers (the rules module explains why)."""


_GROUP = re.compile(r"\(([^()]*)\)\*(\d+)")
_ITEM = re.compile(r"([EtLm])(?:\*(\d+))?")


def expand_layout(layout: str) -> list[str]:
    """Expand Megatron's `--pipeline-model-parallel-layout` (e.g. "Et*3|(tt|)*29,L") into virtual stages.

    Grammar (pipeline_parallel_layer_layout): stages separated by '|'; E embedding, t decoder layer,
    m MTP layer, L loss; `x*N` repeats a symbol and `(...)*N` a group; commas and spaces are ignored."""
    label = "--pipeline-model-parallel-layout"
    text = expand_groups(_GROUP, layout.replace(",", "").replace(" ", ""), label, StageSplitError)
    stages, total = [], len(text)
    for part in text.split("|"):
        expanded = ""
        pos = 0
        for m in _ITEM.finditer(part):
            if m.start() != pos:
                raise StageSplitError(f"--pipeline-model-parallel-layout: cannot read {part!r} (symbols are E, t, m, L)")
            count = repeat_count(m.group(2) or "1", label, StageSplitError)
            total += count
            if total > MAX_EXPANDED_CHARS:
                raise StageSplitError(f"{label}: expands past {MAX_EXPANDED_CHARS:,} symbols; check its repeat counts")
            expanded += m.group(1) * count
            pos = m.end()
        if pos != len(part):
            raise StageSplitError(f"--pipeline-model-parallel-layout: cannot read {part!r} (symbols are E, t, m, L)")
        stages.append(expanded)
    return stages


def virtual_stage_layer_counts(model: ModelSpec, recipe: Recipe) -> list[int]:
    """Decoder layers per virtual stage, in virtual-stage order (v = chunk * PP + rank)."""
    pp, vpp, num_layers = recipe.pp, recipe.vpp, model.num_layers
    n_virtual = pp * vpp
    if recipe.pipeline_layout:
        return [s.count("t") for s in expand_layout(recipe.pipeline_layout)]
    if recipe.first_stage_layers is not None or recipe.last_stage_layers is not None:
        first, last = recipe.first_stage_layers, recipe.last_stage_layers
        ends = (first is not None) + (last is not None)
        rest = num_layers - (first or 0) - (last or 0)
        middle_ranks = pp - ends
        if middle_ranks == 0:
            if rest != 0 or pp < ends:
                raise StageSplitError("uneven pipeline: first/last stage layers must add up to num_layers when PP=2")
            per_rank = [first if first is not None else 0, last if last is not None else 0][:pp]
        else:
            if rest <= 0 or rest % middle_ranks:
                raise StageSplitError(f"uneven pipeline: {rest} middle layers do not split over {middle_ranks} ranks")
            mid = rest // middle_ranks
            per_rank = [mid] * pp
            if first is not None:
                per_rank[0] = first
            if last is not None:
                per_rank[-1] = last
        counts = []
        for _chunk in range(vpp):
            for rank in range(pp):
                if per_rank[rank] % vpp:
                    raise StageSplitError(f"uneven pipeline: rank {rank} has {per_rank[rank]} layers, not divisible by VPP={vpp}")
                counts.append(per_rank[rank] // vpp)
        return counts
    extra_first = int(recipe.account_for_embedding_in_pipeline_split)
    extra_last = int(recipe.account_for_loss_in_pipeline_split)
    units = num_layers + extra_first + extra_last
    if units % n_virtual:
        raise StageSplitError(f"{units} layer slots do not split evenly over PP*VPP={n_virtual} virtual stages")
    per = units // n_virtual
    counts = [per] * n_virtual
    counts[0] -= extra_first
    counts[-1] -= extra_last
    if min(counts) < 0:
        raise StageSplitError("too few layers for the pipeline split")
    return counts


def rank_chunks(model: ModelSpec, recipe: Recipe) -> list[list[Chunk]]:
    """chunks[rank][chunk] with layer indices assigned in virtual-stage order."""
    counts = virtual_stage_layer_counts(model, recipe)
    pp = recipe.pp
    n_virtual = len(counts)
    if n_virtual % pp:
        raise StageSplitError(f"pipeline layout has {n_virtual} stages, not a multiple of PP={pp}")
    vpp = n_virtual // pp
    if sum(counts) != model.num_layers:
        raise StageSplitError(f"pipeline split holds {sum(counts)} decoder layers, model has {model.num_layers}")
    layout = expand_layout(recipe.pipeline_layout) if recipe.pipeline_layout else None
    chunks: list[list[Chunk]] = [[None] * vpp for _ in range(pp)]  # type: ignore[list-item]
    start = 0
    for v, n in enumerate(counts):
        rank, chunk = v % pp, v // pp
        if layout:
            emb, loss, mtp = "E" in layout[v], "L" in layout[v], layout[v].count("m")
            if model.is_hybrid:  # HybridModel puts the MTP block on the last stage (mtp_on_this_rank); pipes hold no 'm'
                mtp = model.mtp_num_layers if loss else 0
        else:
            emb, loss = v == 0, v == n_virtual - 1
            mtp = model.mtp_num_layers if loss else 0
        chunks[rank][chunk] = Chunk(tuple(range(start, start + n)), emb, loss, mtp)
        start += n
    return chunks
