"""Legality rules of the pipeline split and schedule (same contract as constraints/rules/registry.py).

Why apart: one concern per module; constraints.rules.registry imports this module at its end and this module imports
rules_attention at its end, so every rule registers in one fixed order whichever module is imported first.
"""
from __future__ import annotations

from typing import Optional

from constraints.rules.base import SPLIT_FIELDS, UNEVEN_SPLIT_FIELDS, RuleInput, Violation, divisors, nearest, rule, violation
from constraints.spec import PipelineSchedule
from constraints.stages import StageSplitError, expand_layout, virtual_stage_layer_counts


# ---------------------------------------------------------------- pipeline split
@rule(reads=SPLIT_FIELDS)
def one_virtual_pipeline_spec(x: RuleInput) -> Optional[Violation]:
    """[7][8] A layout string fixes VPP itself and excludes first/last-stage and account-for-* flags."""
    r = x.recipe
    if not r.pipeline_layout:
        return None
    try:
        n_stages = len(expand_layout(r.pipeline_layout))
    except StageSplitError as exc:
        return violation("pipeline_layout", str(exc), "write stages as e.g. 'Et*3|t*4|t*4|t*3L'")
    if n_stages % r.pp:
        return violation("pipeline_layout", f"layout has {n_stages} stages, not a multiple of PP={r.pp}",
                  f"give PP*VPP stages, e.g. {r.pp * max(1, n_stages // r.pp)}")
    if n_stages // r.pp != r.vpp:
        return violation("pipeline_layout", f"layout implies VPP={n_stages // r.pp} but the recipe says {r.vpp}", f"set vpp {n_stages // r.pp}")
    if r.first_stage_layers or r.last_stage_layers or r.account_for_embedding_in_pipeline_split or r.account_for_loss_in_pipeline_split:
        return violation("pipeline_layout", "--pipeline-model-parallel-layout cannot be combined with first/last-stage or account-for-* flags",
                  "drop the first/last-stage and account-for-* flags")
    return None


@rule(reads=UNEVEN_SPLIT_FIELDS)
def uneven_split_exclusive(x: RuleInput) -> Optional[Violation]:
    """[11] Uneven first/last stages cannot be combined with --account-for-*-in-pipeline-split."""
    r = x.recipe
    if (r.first_stage_layers or r.last_stage_layers) and (r.account_for_embedding_in_pipeline_split or r.account_for_loss_in_pipeline_split):
        return violation("uneven_split_exclusive", "--decoder-first/last-pipeline-num-layers cannot be combined with --account-for-*-in-pipeline-split",
                  "drop the account-for-* flags")
    return None


@rule(reads=SPLIT_FIELDS + " tp cp ep etp")  # tp cp ep etp: only the fix's PP, chosen to fit the world's grids
def layers_split(x: RuleInput) -> Optional[Violation]:
    """[9][10][11] The decoder layers (+1 per account-for flag) must split over PP (x VPP) stages; uneven
    first/last stages must leave a positive, evenly divisible middle; each chunk needs >= 1 layer
    (TransformerConfig, validate_args)."""
    r = x.recipe
    try:
        counts = virtual_stage_layer_counts(x.model, r)
    except StageSplitError as exc:
        L = x.model.num_layers
        extra = int(r.account_for_embedding_in_pipeline_split) + int(r.account_for_loss_in_pipeline_split)
        # a PP that splits the layers and also fits this world's dense and expert grids (so the fix passes check)
        ok = [p for p in divisors(L + extra) if (L + extra) % (p * r.vpp) == 0
              and x.world_size % (p * r.tp * r.cp) == 0 and x.world_size % (p * r.ep * r.etp_effective) == 0]
        if r.first_stage_layers or r.last_stage_layers:  # the uneven counts are what breaks: bound them, keep PP
            ends = int(bool(r.first_stage_layers)) + int(bool(r.last_stage_layers))
            fix = (f"give --decoder-first/last-pipeline-num-layers that leave a positive middle divisible by {r.pp - ends} "
                   f"(together under {L})" if r.pp > ends else f"make the first and last stage layers add up to {L}")
        else:
            fix = f"use --pipeline-model-parallel-size {nearest(ok, r.pp)}" if ok and not r.pipeline_layout else "change the layer split"
        return violation("layers_split", str(exc), fix)
    if sum(counts) != x.model.num_layers:
        return violation("layers_split", f"pipeline split holds {sum(counts)} decoder layers, model has {x.model.num_layers}",
                  "make the layout hold exactly num_layers 't' entries")
    accounts = r.account_for_embedding_in_pipeline_split or r.account_for_loss_in_pipeline_split
    empty = [i for i, n in enumerate(counts) if n == 0 and not r.pipeline_layout and not accounts]
    if empty:
        return violation("layers_split", f"virtual stage(s) {empty} would hold no decoder layer", "use fewer pipeline stages or virtual stages")
    return None


@rule(reads="vpp pp overlap_p2p_comm")
def interleaved_needs_pp(x: RuleInput) -> Optional[Violation]:
    """[12] Interleaving (VPP>1) needs PP>1 with --overlap-p2p-communication (default), else PP>2 (validate_args)."""
    r = x.recipe
    if r.vpp == 1:
        return None
    need = 2 if r.overlap_p2p_comm else 3
    if r.pp >= need:
        return None
    return violation("interleaved_needs_pp", f"VPP={r.vpp} needs PP >= {need}, got PP={r.pp}",
              "drop the virtual pipeline (VPP=1)" if r.pp == 1 else "enable --overlap-p2p-communication or use PP >= 3")


@rule(reads="schedule vpp pp")
def schedule_matches_vpp(x: RuleInput) -> Optional[Violation]:
    """shardplan's schedule enum vs VPP: interleaved <=> VPP>1 (Megatron picks the interleaved schedule when
    VPP is set); ZB-V runs exactly 2 chunks per rank; ZB-H1 and 1F1B one. A zero-bubble schedule splits the
    backward of a pipeline (Qi et al. 2023), so it needs PP >= 2, as interleaving does (`interleaved_needs_pp`):
    at PP 1 the recipe would name a schedule that does not run."""
    r = x.recipe
    if r.schedule == PipelineSchedule.zb_h1 and r.pp == 1:
        return violation("schedule_matches_vpp", "schedule zb-h1 needs pipeline parallelism, got PP=1",
                         "use schedule 1f1b, or PP >= 2")
    want = {PipelineSchedule.interleaved: r.vpp > 1, PipelineSchedule.zbv: r.vpp == 2,
            PipelineSchedule.one_f_one_b: r.vpp == 1, PipelineSchedule.zb_h1: r.vpp == 1}[r.schedule]
    if want:
        return None
    fix = {PipelineSchedule.interleaved: "set vpp >= 2", PipelineSchedule.zbv: "set vpp 2"}.get(r.schedule, "set vpp 1 or schedule interleaved")
    return violation("schedule_matches_vpp", f"schedule {r.schedule.value} does not run with VPP={r.vpp}", fix)


@rule(reads="vpp pp schedule tp cp mbs microbatch_group_size")
def interleaved_microbatches(x: RuleInput) -> Optional[Violation]:
    """[13] Interleaved schedule (schedules.py): group size N (--microbatch-group-size-per-virtual-pipeline-stage,
    default PP) must be in [PP, M], and M % N must be 0 or >= PP."""
    r = x.recipe
    if r.vpp == 1 or r.pp == 1 or r.schedule != PipelineSchedule.interleaved or x.world_size % (r.tp * r.pp * r.cp):
        return None
    dp = r.dp(x.world_size)
    if x.job.global_batch_size % (r.mbs * dp):
        return None
    m = x.job.global_batch_size // (r.mbs * dp)
    n = r.microbatch_group_size or r.pp
    if r.pp <= n <= m and (m % n == 0 or m % n >= r.pp):
        return None
    if n < r.pp:  # the group is the user's --microbatch-group-size-per-virtual-pipeline-stage: no batch size helps
        return violation("interleaved_microbatches", f"interleaved schedule needs the micro-batch group "
                         f"(--microbatch-group-size-per-virtual-pipeline-stage {n}) to be at least PP={r.pp}",
                         f"use --microbatch-group-size-per-virtual-pipeline-stage {r.pp} (or drop it: it defaults to PP)")
    good = [g for g in range(r.pp * r.mbs * dp, 4 * max(x.job.global_batch_size, r.pp * r.mbs * dp) + 1, r.mbs * dp)
            if (g // (r.mbs * dp)) % n == 0 and g // (r.mbs * dp) >= n]
    return violation("interleaved_microbatches", f"interleaved schedule needs micro-batches M={m} >= group {n} and M % {n} in {{0}} or >= PP={r.pp}",
              f"use --global-batch-size {nearest(good, x.job.global_batch_size)}" if good else "drop interleaving")
