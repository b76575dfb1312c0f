"""The searched recipe space: one candidate domain per axis, narrowed by user pins and bounds.

Why candidate domains and not legal ones: legality is decided by the rule functions themselves
(constraints.rules.registry / rules_features), called on recipes over small factor tables in solver/tables/build.py;
this module only says which values are *tried* per axis. The defaults are generous supersets of what
the rules allow (every power of two up to a cap, every divisor where a divisor is required) and the
caps are stated here, each with why, so a user can widen them with a bound (`--tp 1..16`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from boundary.errors import ShardplanError
from boundary.show import shown
from constraints.memory.magnitudes import magnitude_error
from constraints.spec import (
    DataParallelSharding,
    JobSpec,
    ModelSpec,
    MoeDispatcher,
    PipelineSchedule,
    Placement,
    Recipe,
    Recompute,
    RecomputeGranularity,
    RecomputeMethod,
    RecomputeModule,
)
from solver.splits import split_fields

AXES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "sp", "recompute", "schedule", "dp_sharding", "acc_split",
        "tp_comm_overlap", "uneven_stages", "moe_dispatcher", "ep_comm_overlap")
DEFAULT_MAX_TP = 8      # TP beyond one 8-GPU NVLink island is never competitive (Narayanan et al. 2021 sec. 3.2)
DEFAULT_MAX_PP = 64
DEFAULT_MAX_VPP = 8     # Megatron recipes use VPP <= 8; more only multiplies p2p traffic
DEFAULT_MAX_CP = 16
DEFAULT_MAX_EP = 64
DEFAULT_MAX_MBS = 8
FULL_RECOMPUTE_LAYERS = (1, 2, 4, 8)  # --recompute-num-layers tried for the block method
INT_AXES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs")  # sizes: every pinned or bounded value must be >= 1


class SpaceError(ShardplanError):
    """A pin or bound that leaves an axis empty (one line: the axis, the value, the fix)."""


def _pow2_upto(n: int) -> list[int]:
    out, v = [], 1
    while v <= n:
        out.append(v)
        v *= 2
    return out


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def recompute_name(rc: Recompute) -> str:
    """Short stable name of a recompute choice, used in tables, pins and output."""
    if rc.granularity == RecomputeGranularity.none:
        return "none"
    if rc.granularity == RecomputeGranularity.selective:
        return "selective:" + "+".join(m.value for m in rc.modules)
    return f"full:{rc.method.value}:{rc.num_layers}"


def recompute_choices(model: ModelSpec) -> list[Recompute]:
    """none; selective core_attn (Megatron default module); + the MLP or MoE activations; full recompute
    uniform 1 layer and block N layers (Megatron --recompute-method/--recompute-num-layers)."""
    out = [Recompute.none(), Recompute.selective(RecomputeModule.core_attn)]
    if model.is_moe:
        out.append(Recompute.selective(RecomputeModule.core_attn, RecomputeModule.moe_act))
    else:
        out.append(Recompute.selective(RecomputeModule.core_attn, RecomputeModule.mlp))
    if model.multi_latent_attention:
        out.append(Recompute.selective(RecomputeModule.core_attn, RecomputeModule.mla_up_proj))
    out.append(Recompute.full(RecomputeMethod.uniform, 1))
    out += [Recompute.full(RecomputeMethod.block, n) for n in FULL_RECOMPUTE_LAYERS]
    return out


@dataclass
class SearchSpace:
    """Per-axis candidate values (in search order) for one model, job and placement."""

    model: ModelSpec
    job: JobSpec
    placement: Placement
    world_size: int
    domains: dict[str, list] = field(default_factory=dict)

    def size(self) -> int:
        """Declared points: the product of the axis domains (before any legality)."""
        n = 1
        for values in self.domains.values():
            n *= len(values)
        return n


def default_domains(model: ModelSpec, job: JobSpec, world: int) -> dict[str, list]:
    w_div = set(_divisors(world))
    tp = [t for t in _pow2_upto(DEFAULT_MAX_TP) if t in w_div]
    pp = [p for p in _divisors(world) if p <= min(DEFAULT_MAX_PP, model.num_layers + 2)]
    cp = [c for c in _pow2_upto(DEFAULT_MAX_CP) if c in w_div]
    ep = [e for e in _divisors(model.num_experts) if e <= DEFAULT_MAX_EP and e in w_div] if model.is_moe else [1]
    etp = [t for t in _pow2_upto(DEFAULT_MAX_TP) if t in w_div] if model.is_moe else [None]
    return {
        "tp": tp, "pp": pp, "vpp": list(range(1, DEFAULT_MAX_VPP + 1)), "cp": cp, "ep": ep, "etp": etp,
        "mbs": [m for m in _pow2_upto(DEFAULT_MAX_MBS) if m <= job.global_batch_size],
        "sp": [False, True],
        "recompute": [recompute_name(r) for r in recompute_choices(model)],
        # zero-bubble schedules only when asked (--schedule zb-h1|zbv): Megatron-LM's pretrain_gpt.py has no
        # zero-bubble schedule, so a default answer must be one Megatron runs (1F1B or interleaved)
        "schedule": [PipelineSchedule.one_f_one_b.value, PipelineSchedule.interleaved.value],
        "dp_sharding": [DataParallelSharding.distributed_optimizer.value, DataParallelSharding.none.value,
                        DataParallelSharding.megatron_fsdp.value],
        # --account-for-embedding/loss-in-pipeline-split: Megatron refuses them with --hybrid-layer-pattern
        "acc_split": [False] if model.is_hybrid else [False, True],
        # --tp-comm-overlap (TE userbuffers) hides TP communication behind GEMMs; needs SP, so only tried with it
        "tp_comm_overlap": [False, True],
        # explicit --decoder-first/last-pipeline-num-layers (solver/splits.py says which pairs)
        "uneven_stages": [False, True],
        # MoE communication variants, chosen per candidate (solver/variants.py; flex only on Hopper and newer)
        "moe_dispatcher": ["alltoall", "flex"] if model.is_moe else ["alltoall"],
        "ep_comm_overlap": [False, True] if model.is_moe else [False],
    }


def parse_range(text: str) -> tuple[Optional[int], Optional[int]]:
    """'8' -> (8, 8); '2..8' -> (2, 8); '..8' / '2..' open ends. At most 12 digits per end (no axis reaches
    10^12), so a 10^30 bound is refused here instead of overflowing an int64 table later."""
    if len(text) > 40 or any(len(part) > 12 for part in text.split("..")):
        raise ValueError(f"range {text[:40]!r} has a bound of more than 12 digits")
    if ".." in text:
        lo, hi = text.split("..", 1)
        return (int(lo) if lo else None, int(hi) if hi else None)
    v = int(text)
    return v, v


def axis_ceiling(axis: str, model: ModelSpec, job: JobSpec, world: int) -> Optional[int]:
    """The largest value an integer axis can take at all, so a range is never materialised past it: a
    parallel degree divides the world size (TP, PP, CP, EP, ETP <= GPUs); a virtual stage holds at least
    one layer (VPP <= layers); a micro-batch is part of the global batch (MBS <= global batch)."""
    return {"tp": world, "pp": world, "cp": world, "ep": world, "etp": world,
            "vpp": model.num_layers, "mbs": job.global_batch_size}.get(axis)


def _ceiling_words(axis: str, ceiling: int) -> str:
    return {"vpp": f"the model's {ceiling} layers (a virtual stage holds at least one)",
            "mbs": f"the global batch size {ceiling}"}.get(axis, f"the {ceiling} GPUs of the world size")


def _restrict(name: str, values: list, allowed: Iterable) -> list:
    allowed = list(allowed)
    kept = [v for v in values if v in allowed]
    return kept


def bf16_layers_error(job: JobSpec) -> Optional[str]:
    """The search tables price every decoder layer in the job's precision (measure/projection/vectorized.py keys layers by kind,
    not index), so a job with --first-last-layers-bf16 layers is refused rather than ranked and sized without them;
    `check` prices those layers in bf16."""
    if not job.has_bf16_layers:
        return None
    return (f"job bf16_layers_at_start {job.bf16_layers_at_start} / bf16_layers_at_end {job.bf16_layers_at_end}: "
            "solve and sweep price every layer in the job's precision; set both to 0 to search, then `check` the "
            "answer with --first-last-layers-bf16")


def build_space(model: ModelSpec, job: JobSpec, placement: Placement,
                pins: Optional[dict[str, Sequence]] = None, ranges: Optional[dict[str, tuple]] = None) -> SearchSpace:
    """Default domains, then `pins` (axis -> allowed values) and `ranges` (axis -> (lo, hi), ends may be None).

    A range may widen a capped default (e.g. tp 1..16 adds 16 where the world size allows it)."""
    world = placement.world_size
    error = magnitude_error(model, job) or bf16_layers_error(job)
    if error:
        raise SpaceError(error)
    ranges = dict(ranges or {})
    for axis, (lo, hi) in ranges.items():
        if axis in INT_AXES and any(v is not None and v < 1 for v in (lo, hi)):
            raise SpaceError(f"--{axis} {lo}..{hi}: sizes are positive integers; give N >= 1 or LO..HI with LO >= 1")
        if lo is not None and hi is not None and lo > hi:
            raise SpaceError(f"--{axis} {lo}..{hi}: the low end is above the high end; give LO..HI with LO <= HI")
        ceiling = axis_ceiling(axis, model, job, world)
        if ceiling is not None and lo is not None and lo > ceiling:
            raise SpaceError(f"--{axis} {lo}..: above {_ceiling_words(axis, ceiling)}; give a range up to {ceiling}")
        if ceiling is not None and hi is not None and hi > ceiling:  # values past the ceiling can never be legal
            ranges[axis] = (lo, ceiling)
    for axis, allowed in (pins or {}).items():
        if axis in INT_AXES and any(v is not None and (not isinstance(v, int) or v < 1) for v in allowed):
            raise SpaceError(f"--{axis} {shown(list(allowed))}: sizes are positive integers; give N >= 1")
        ceiling = axis_ceiling(axis, model, job, world)
        if ceiling is not None and len(allowed) > ceiling:
            raise SpaceError(f"--{axis}: {len(allowed):,} pinned values, more than the {ceiling} this axis can take")
        too_big = [v for v in allowed if ceiling is not None and v is not None and v > ceiling]
        if too_big:
            raise SpaceError(f"--{axis} {shown(too_big[0])}: above {_ceiling_words(axis, ceiling)}; give a value up "
                             f"to {ceiling}")
    if model.is_hybrid and True in (pins or {}).get("acc_split", ()):
        # validate_args asserts --account-for-embedding/loss-in-pipeline-split are unset with --hybrid-layer-pattern
        raise SpaceError(f"acc_split: account-for-embedding/loss splits are refused by Megatron with the hybrid layer "
                         f"pattern of {model.name} (True); drop the pin (solve splits hybrid models with '|' segments)")
    domains = default_domains(model, job, world)
    for axis, (lo, hi) in ranges.items():
        if axis not in domains:
            raise SpaceError(f"--{axis}: not a searchable axis; choose one of {', '.join(AXES)}")
        values = domains[axis]
        if hi is not None and axis in ("tp", "cp", "etp", "mbs", "vpp", "ep", "pp") and values and hi > max(v for v in values if v):
            extra = {"tp": _pow2_upto(hi), "cp": _pow2_upto(hi), "etp": _pow2_upto(hi), "mbs": _pow2_upto(hi),
                     "vpp": list(range(1, hi + 1)), "pp": _divisors(world),
                     "ep": _divisors(model.num_experts) if model.is_moe else [1]}[axis]
            values = sorted(set(values) | {v for v in extra if world % v == 0 or axis in ("mbs", "vpp")})
        domains[axis] = [v for v in values if v is None or ((lo is None or v >= lo) and (hi is None or v <= hi))]
        if not domains[axis]:
            raise SpaceError(f"--{axis} {lo}..{hi}: no candidate value left; widen the range")
    for axis, allowed in (pins or {}).items():
        if axis not in domains:
            raise SpaceError(f"--{axis}: not a searchable axis; choose one of {', '.join(AXES)}")
        # named choices (schedules, shardings) are taken as given, so opt-in values (zero-bubble) can be pinned in
        named = axis in ("schedule", "dp_sharding", "moe_dispatcher")
        domains[axis] = list(allowed) if named else (_restrict(axis, domains[axis], allowed) or list(allowed))
    return SearchSpace(model=model, job=job, placement=placement, world_size=world, domains=domains)


def recipe_fields(tp: int, pp: int, vpp: int, cp: int, ep: int, etp: Optional[int], mbs: int, sp: bool,
                  recompute: Recompute, schedule: str, dp_sharding: str, acc_split, tp_comm_overlap: bool = False,
                  variant: tuple = ("alltoall", False)) -> dict:
    """The one place an axis assignment becomes Recipe fields (flags tied to others are set consistently:
    --overlap-param-gather needs a sharded optimizer, so it follows dp_sharding). `acc_split` is a split value
    of solver/splits.py (False, True or (first, last)); `variant` is (MoE dispatcher, EP overlap)."""
    sharding = DataParallelSharding(dp_sharding)
    return {"tp": tp, "pp": pp, "vpp": vpp, "cp": cp, "ep": ep, "etp": etp, "mbs": mbs, "sequence_parallel": sp and tp > 1,
            "recompute": recompute, "schedule": PipelineSchedule(schedule), "dp_sharding": sharding,
            "overlap_param_gather": sharding != DataParallelSharding.none, **split_fields(acc_split),
            "tp_comm_overlap": tp_comm_overlap, "moe_dispatcher": MoeDispatcher(variant[0]),
            "overlap_moe_expert_parallel_comm": bool(variant[1])}


def make_recipe(tp: int, pp: int, vpp: int, cp: int, ep: int, etp: Optional[int], mbs: int, sp: bool, recompute: Recompute,
                schedule: str, dp_sharding: str, acc_split, tp_comm_overlap: bool = False,
                variant: tuple = ("alltoall", False)) -> Recipe:
    """A validated Recipe from an axis assignment."""
    return Recipe(**recipe_fields(tp, pp, vpp, cp, ep, etp, mbs, sp, recompute, schedule, dp_sharding, acc_split,
                                  tp_comm_overlap, variant))
