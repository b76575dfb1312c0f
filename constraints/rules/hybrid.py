"""Legality rules of hybrid Mamba / attention models (--hybrid-layer-pattern), each mirroring one Megatron-LM check.

Same contract as constraints/rules/registry.py. Sources @ d98e8a64: megatron/training/arguments.py validate_args (the
"hybrid layer pattern" block), megatron/core/models/hybrid/hybrid_layer_allocation.py select_pipeline_segment,
megatron/core/ssm/mamba_mixer.py MambaMixer.__init__ and mamba_context_parallel.py MambaContextParallel.__init__.
A recipe's `pipeline_layout` on a hybrid model stands for the pattern's `|` segments (render writes them as pipes);
`--pipeline-model-parallel-layout` itself is refused with a hybrid pattern.
"""
from __future__ import annotations

from typing import Optional

from constraints.models.mamba import layout_as_segments, mamba_dims
from constraints.rules.base import RuleInput, Violation, divisors, nearest, rule, violation


@rule(reads="pipeline_layout first_stage_layers last_stage_layers account_for_embedding_in_pipeline_split "
            "account_for_loss_in_pipeline_split")
def hybrid_pipeline_flags(x: RuleInput) -> Optional[Violation]:
    """With --hybrid-layer-pattern, validate_args asserts: no --pipeline-model-parallel-layout, no
    --account-for-embedding/loss-in-pipeline-split, and with `|` in the pattern no --decoder-first/last-pipeline-
    num-layers (the pipes define the stages)."""
    m, r = x.model, x.recipe
    if not m.is_hybrid:
        return None
    if "--pipeline-model-parallel-layout" in x.flags:
        return violation("hybrid_pipeline_flags", "--pipeline-model-parallel-layout with --hybrid-layer-pattern",
                  "drop the layout and put '|' between the pipeline segments of --hybrid-layer-pattern")
    if r.account_for_embedding_in_pipeline_split or r.account_for_loss_in_pipeline_split:
        return violation("hybrid_pipeline_flags", "--account-for-embedding/loss-in-pipeline-split with --hybrid-layer-pattern",
                  "drop them; split the pattern with '|' to balance the stages")
    if r.pipeline_layout and (r.first_stage_layers or r.last_stage_layers):
        return violation("hybrid_pipeline_flags", "--decoder-first/last-pipeline-num-layers with '|' segments in --hybrid-layer-pattern",
                  "drop --decoder-first/last-pipeline-num-layers")
    if r.pipeline_layout and layout_as_segments(r.pipeline_layout) is None:
        return violation("hybrid_pipeline_flags", f"pipeline layout {r.pipeline_layout!r} is not a set of '|' segments of the pattern "
                  "(decoder layers only, embedding first, loss last)", "split the hybrid pattern with '|' instead")
    return None


@rule(reads="pp vpp pipeline_layout")
def hybrid_virtual_pipeline(x: RuleInput) -> Optional[Violation]:
    """A hybrid model's virtual stages come only from `|` segments: validate_args asserts
    --num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank are unset, and
    select_pipeline_segment raises for a virtual stage of a pattern without pipes. Segments must be a multiple of PP."""
    m, r = x.model, x.recipe
    if not m.is_hybrid:
        return None
    given = [f for f in ("--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank") if f in x.flags]
    if given:
        return violation("hybrid_virtual_pipeline", f"{given[0]} with --hybrid-layer-pattern",
                  "drop it; give the pattern PP x VPP '|'-separated segments")
    if r.vpp > 1 and not r.pipeline_layout:
        return violation("hybrid_virtual_pipeline", f"VPP {r.vpp} on a hybrid pattern without '|' segments",
                  f"split --hybrid-layer-pattern into {r.pp * r.vpp} '|' segments, or use VPP 1")
    return None


@rule(reads="tp cp")
def mamba_heads_split(x: RuleInput) -> Optional[Violation]:
    """Mamba heads and groups are split over TP, then heads over CP: MambaMixer asserts nheads % TP == 0 and
    ngroups % TP == 0; MambaContextParallel asserts (nheads/TP) % CP == 0 and that CP and ngroups/TP divide one
    another."""
    m, r = x.model, x.recipe
    if not m.is_hybrid or "M" not in m.hybrid_layer_pattern:
        return None
    d = mamba_dims(m)
    tp_ok = [t for t in divisors(x.world_size) if d.heads % t == 0 and d.groups % t == 0]
    if d.heads % r.tp or d.groups % r.tp:
        return violation("mamba_heads_split", f"{d.heads} Mamba heads / {d.groups} groups are not divisible by TP={r.tp}",
                  f"use --tensor-model-parallel-size {nearest(tp_ok, r.tp)}")
    heads_local, groups_local = d.heads // r.tp, d.groups // r.tp
    groups_ok = (r.cp % groups_local == 0) if groups_local < r.cp else (groups_local % r.cp == 0)
    if r.cp > 1 and (heads_local % r.cp or not groups_ok):
        ok = [c for c in divisors(heads_local) if ((c % groups_local == 0) if groups_local < c else (groups_local % c == 0))]
        return violation("mamba_heads_split", f"CP={r.cp} does not split {heads_local} Mamba heads / {groups_local} groups per TP rank",
                  f"use --context-parallel-size {nearest(ok, r.cp)}")
    return None


@rule(reads="")
def mamba_fp8_width(x: RuleInput) -> Optional[Violation]:
    """Under FP8 the Mamba in_proj output width (2 d_inner + 2 groups N + heads) must be a multiple of 16
    (MambaMixer.__init__ asserts it when config.fp8 is set)."""
    m = x.model
    if not (m.is_hybrid and "M" in m.hybrid_layer_pattern and x.job.precision.is_fp8):
        return None
    width = mamba_dims(m).in_proj_width
    if width % 16 == 0:
        return None
    return violation("mamba_fp8_width", f"FP8 needs the Mamba in_proj width {width} to be a multiple of 16",
              "use --bf16 (no --fp8-format) or Mamba sizes whose in_proj width is a multiple of 16")
