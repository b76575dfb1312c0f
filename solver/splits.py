"""Pipeline layer splits the solver tries: even, Megatron's account-for-embedding/loss, and uneven first/last stages.

Why these: the first pipeline rank also holds the embedding and the most in-flight micro-batches (1F1B keeps
PP of them alive there), the last holds the output layer and the loss, so moving a layer or two off the ends
can shorten the critical stage or make the first rank fit. Megatron offers two ways: `--account-for-embedding-
in-pipeline-split` / `--account-for-loss-in-pipeline-split` (each end counts as one layer) and explicit
`--decoder-first/last-pipeline-num-layers` (docs/facts/megatron-rules.md rule 11: each > 0 and divisible by
VPP, the middle split evenly over the other ranks and over VPP, never combined with account-for).

A split value, as the solver's tables carry it: False (even), True (account-for both ends), a tuple
(first, last) of decoder layers on the first and last rank, or for a hybrid model with more than one stage a
PipeSegments: the same even or (first, last) split written as `|` segments of --hybrid-layer-pattern. Megatron gives
a hybrid model virtual stages only through pipes (validate_args refuses the VPP flags, layouts and account-for flags
with a pattern; constraints/rules/hybrid.py), and at VPP 1 a pattern without pipes is split at run time with a
deprecation warning (megatron/core/models/hybrid/hybrid_layer_allocation.py select_pipeline_segment @ d98e8a64), so
the solver writes pipes at every PP x VPP > 1. Account-for splits are never tried for a hybrid model. The uneven pairs tried make each end up to
MAX_TRIM_LAYERS lighter than a middle rank, in steps of VPP layers (never heavier: the ends carry extra work), and
skip pairs whose per-stage counts equal the even or account-for split (the same recipe under other flags).
"""
from __future__ import annotations

from dataclasses import dataclass

from constraints.spec import Recipe
from constraints.stages import StageSplitError, virtual_stage_layer_counts

MAX_TRIM_LAYERS = 2  # an end is at most this many layers (one chunk per virtual stage when VPP > 1) off the middle


def max_trim_chunks(vpp: int) -> int:
    """Trim steps are VPP layers (each end's count is a multiple of VPP): 2 steps at VPP 1, 1 step otherwise."""
    return max(1, MAX_TRIM_LAYERS // vpp)


@dataclass(frozen=True)
class PipeSegments:
    """A hybrid model's pipeline split as `|` segments of its pattern (Recipe.pipeline_layout stands for them:
    decoder layers only, the embedding on the first segment, the loss on the last; constraints/models/mamba.py
    layout_as_segments). `first` / `last` are the per-rank layer counts of the (first, last) split the segments
    write (0 = the even split), which is how the projection's stage rows read it (the chunks are the same)."""

    layout: str
    first: int = 0
    last: int = 0


def pipe_segments(model, pp: int, vpp: int, split) -> PipeSegments:
    """The segments of `split` (False or (first, last)) at (PP, VPP), one per virtual stage, in stage order."""
    counts = virtual_stage_layer_counts(model, Recipe(pp=pp, vpp=vpp, **split_fields(split)))
    stages = ["t" * n for n in counts]
    stages[0], stages[-1] = "E" + stages[0], stages[-1] + "L"
    first, last = split if isinstance(split, tuple) else (0, 0)
    return PipeSegments("|".join(stages), int(first), int(last))


def is_uneven(split) -> bool:
    """A split with explicit first / last stage layer counts (flags or segments)."""
    return isinstance(split, tuple) or (isinstance(split, PipeSegments) and split.first > 0)


def split_fields(split) -> dict:
    """Recipe fields of a split value (False, True, (first, last) or PipeSegments)."""
    if isinstance(split, PipeSegments):
        return {"account_for_embedding_in_pipeline_split": False, "account_for_loss_in_pipeline_split": False,
                "first_stage_layers": None, "last_stage_layers": None, "pipeline_layout": split.layout}
    if isinstance(split, tuple):
        return {"account_for_embedding_in_pipeline_split": False, "account_for_loss_in_pipeline_split": False,
                "first_stage_layers": int(split[0]), "last_stage_layers": int(split[1]), "pipeline_layout": None}
    return {"account_for_embedding_in_pipeline_split": bool(split), "account_for_loss_in_pipeline_split": bool(split),
            "first_stage_layers": None, "last_stage_layers": None, "pipeline_layout": None}


def _counts(model, pp: int, vpp: int, split):
    try:
        return tuple(virtual_stage_layer_counts(model, Recipe(pp=pp, vpp=vpp, **split_fields(split))))
    except (StageSplitError, ValueError):
        return None


def uneven_pairs(num_layers: int, pp: int, vpp: int) -> list[tuple[int, int]]:
    """(first, last) decoder layers with both ends lighter than the middle rank by 0..max_trim_chunks(VPP) steps
    of VPP layers (not both 0), each a multiple of VPP, the middle an equal multiple of VPP per rank (Megatron rule
    11). At PP 2 there is no middle: the pairs differ by up to twice that, either end lighter."""
    if pp < 2:
        return []
    out = []
    steps = max_trim_chunks(vpp)
    if pp == 2:  # no middle: the two ends share the layers, one lighter by up to 2 x steps x VPP
        return [(first, num_layers - first) for first in range(vpp, num_layers, vpp)
                if (num_layers - first) % vpp == 0 and 0 < abs(2 * first - num_layers) <= 2 * steps * vpp]
    for tf in range(steps + 1):
        for tl in range(steps + 1):
            if tf == tl == 0:
                continue
            total = num_layers + (tf + tl) * vpp  # = pp x mid when the ends are mid - tf*vpp and mid - tl*vpp
            if total % pp:
                continue
            mid = total // pp
            first, last = mid - tf * vpp, mid - tl * vpp
            if mid % vpp == 0 and first > 0 and last > 0:
                out.append((first, last))
    return out


def split_choices(model, pp: int, vpp: int, acc_domain, uneven: bool) -> list:
    """Split values to try at this (PP, VPP): the even split where layers divide evenly, account-for where they
    do not (where they do it duplicates nothing useful: Megatron would then need L + 2 to divide), and, when
    `uneven`, the (first, last) pairs whose stage counts differ from both."""
    out = []
    for acc in acc_domain:
        if acc and (model.num_layers % (pp * vpp) == 0 or model.is_hybrid):
            continue  # account-for only where the layers do not split evenly (prunes duplicates); never with a pattern
        out.append(bool(acc))
    if uneven and pp > 1:
        seen = {_counts(model, pp, vpp, s) for s in out} - {None}
        for pair in uneven_pairs(model.num_layers, pp, vpp):
            c = _counts(model, pp, vpp, pair)
            if c is not None and c not in seen:
                seen.add(c)
                out.append(pair)
    if model.is_hybrid and pp * vpp > 1:  # a hybrid model's stages as pipe segments (the only form VPP takes)
        out = [pipe_segments(model, pp, vpp, s) for s in out if _counts(model, pp, vpp, s) is not None]
    return out


def split_code(split) -> tuple[int, int, int]:
    """(account-for flag, first, last) integer columns of a split value (0 = unset)."""
    if isinstance(split, PipeSegments):
        return 0, split.first, split.last
    if isinstance(split, tuple):
        return 0, int(split[0]), int(split[1])
    return int(bool(split)), 0, 0
