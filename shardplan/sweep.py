"""`shardplan sweep`: the best legal recipe at each cluster size, for one model and job, on one or more
hardware profiles; tokens/s/GPU, step time, scaling efficiency against a stated baseline (the size with the most
tokens/s/GPU, efficiency_baseline: the smallest size that fits may need full recompute, which put every larger one
above 100 %), and
the time, GPU-hours and cost to train a token budget.

What is shared across sizes (each size is still its own exact solve; the world size fixes DP, the micro-batch
count and which collectives cross nodes, so no size's tables serve another's):
- solver.fewest_gpus.CountScreen's proofs that a size holds no fitting recipe (the static memory bound, and no
  legal factorisation of the world with the global batch), computed once per model and job: such sizes build no
  tables;
- the tables are the branch-and-bound ones for K = 1 (solver/prune.py), ranked by the numpy scan over them
  (solver/exhaustive.py) instead of a CP-SAT listing: the same best recipe with the same proof (the tests hold
  the scan equal to CP-SAT), without building a one-hot model per size;
- the layer costs of every per-rank shape (measure.projection.layer_cost.layer_parts, the vectorised projection's costliest
  factor): they read the placement only through the TP / CP / EP / ETP group spans, which depend on the scale-up
  domain, not the node count, so one dict serves every size with the same domain (measure.projection.vectorized.Evaluator's
  `shared_parts`);
- the rule verdicts cached per axis values (solver/tables/rules.py) and the loaded model and profiles.
bench/speed/sweep.py measures this against one `solve` per size.
"""
from __future__ import annotations

import time
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from boundary.errors import ShardplanError
from boundary.numbers import bounded_float
from boundary.show import shown
from constraints.memory.allocator import near_limit, resolve_memory_fraction
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from measure.calibration.store import CalibrationFile, calibrated_profile, load_calibration
from measure.projection.vectorized import Evaluator
from shardplan.api import input_boundary, parameter_counts
from shardplan.api_arguments.bounds import MAX_SWEEP_SIZES, MAX_TRAIN_TOKENS, MAX_USD_PER_GPU_HOUR
from shardplan.api_arguments.edge import api_edge
from shardplan.api_arguments.models import SweepArguments
from shardplan.progress import step
from shardplan.results import recipe_label
from shardplan.software_input import software_for_search
from solver.explain_why import recipe_free_blockers
from solver.fewest_gpus import CountScreen
from solver.space import build_space
from solver.tables.build import build_tables

SECONDS_PER_HOUR = 3600.0


class SweepPoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hardware: str
    nodes: int
    gpus: int
    status: Literal["solved", "nothing_fits", "no_memory_fit", "no_legal_layout", "refused"] = Field(
        description="solved: best recipe found; nothing_fits: solved, no legal recipe fits; no_memory_fit / "
                    "no_legal_layout: proven without tables (static-memory bound / no legal factorisation); refused: a "
                    "rule that reads no recipe field rejects every recipe on this part (`reason`)")
    reason: Optional[str] = Field(None, description="when refused: the rule, what it says and the fix, as solve explains it")
    recipe_label: Optional[str] = None
    recipe: Optional[dict] = Field(None, description="constraints.spec.Recipe of the best recipe")
    dp: Optional[int] = None
    step_time_s: Optional[float] = Field(None, description="projected iteration time (event-simulated schedule)")
    tokens_per_s_per_gpu: Optional[float] = None
    tokens_per_s: Optional[float] = Field(None, description="whole cluster")
    mfu: Optional[float] = None
    peak_bytes: Optional[int] = None
    usable_bytes: Optional[int] = None
    near_memory_limit: Optional[bool] = Field(None, description="the best recipe fits within a few percent of HBM of the "
                                              "usable limit (constraints/memory/allocator.py near_limit)")
    scaling_efficiency: Optional[float] = Field(
        None, description="tokens/s/GPU over that of the hardware's efficiency baseline, its size with the most "
                          "tokens/s/GPU (SweepResult.efficiency_baselines): at most 1.0")
    train_time_s: Optional[float] = None
    gpu_hours: Optional[float] = None
    cost_usd: Optional[float] = None
    proven_optimal: Optional[bool] = None
    solve_s: float = Field(description="wall-clock seconds this size took")


class EfficiencyBaseline(BaseModel):
    """The size a hardware's scaling efficiency divides by (shardplan.sweep.efficiency_baseline)."""
    model_config = ConfigDict(extra="forbid")
    nodes: int
    gpus: int
    recipe_label: str
    tokens_per_s_per_gpu: float


class SweepResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str
    model_params: Optional[dict[str, int]] = Field(None, description="the model's exact parameter counts {total, active}")
    seq_length: int
    global_batch_size: int
    precision: str
    gpus_per_node: Optional[int] = Field(description="GPUs per node of every point; None when each profile took its own "
                                         "server size and they differ (each point's `gpus` counts its own)")
    train_tokens: Optional[float] = None
    usd_per_gpu_hour: Optional[float] = None
    points: list[SweepPoint]
    efficiency_baselines: dict[str, EfficiencyBaseline] = Field(
        {}, description="hardware -> the size its scaling efficiency is measured against")
    software: Optional[dict[str, Any]] = Field(None, description="the stack generation every point kept to {value, source, "
                                               "month, missing, notes} (docs/software.md)")

    def efficiency_lines(self) -> list[str]:
        """The efficiency baseline of each hardware, one line each (printed under the table)."""
        return [f"efficiency % ({hw}): tokens/s/GPU against {b.nodes} node{'' if b.nodes == 1 else 's'} ({b.gpus} GPUs, "
                f"{b.recipe_label}: {b.tokens_per_s_per_gpu:,.0f}), the size with the most tokens/s/GPU; smaller sizes lose "
                "to memory pressure (recompute, smaller micro-batches), larger ones to communication and bubbles"
                for hw, b in self.efficiency_baselines.items()]

    def refusal_lines(self) -> list[str]:
        """`hardware: reason` once per refused part, in point order (the CLI's stderr and the page both print them)."""
        return list(dict.fromkeys(f"{p.hardware}: {p.reason}" for p in self.points if p.reason))


def parse_nodes(text: str) -> list[int]:
    """'1,2,4,8' a list; '1..64' doubling from 1 up to 64 (64 included); '8..64+8' steps of 8. Raises ShardplanError
    (unusable input) with the fix. The number of sizes is counted by arithmetic before any list is built, and a list
    of more than MAX_SWEEP_SIZES items is refused before its numbers are read: `1..100000001+1` once built a list of
    10^8 sizes (9.6 s, 4 GB) before the cap said no."""
    text = text.strip()
    fix = "give a list (1,2,4,8), a doubling range (1..64) or a stepped range (8..64+8)"
    cap = f"sweep at most {MAX_SWEEP_SIZES} sizes, e.g. a doubling range 1..1024"
    if ".." not in text and text.count(",") >= MAX_SWEEP_SIZES:
        raise ShardplanError(f"--nodes: {text.count(',') + 1:,} items ({shown(text, 40)}); {cap}")
    try:
        if ".." in text:
            lo_s, rest = text.split("..", 1)
            hi_s, _, step_s = rest.partition("+")
            lo, hi = int(lo_s), int(hi_s)
            if lo < 1 or hi < lo:
                raise ValueError
            step = int(step_s) if step_s else None
            if step is not None and step < 1:
                raise ValueError
        else:
            out = sorted({int(x) for x in text.split(",") if x.strip()})
            if not out or out[0] < 1:
                raise ValueError
            return out
    except ValueError:
        raise ShardplanError(f"--nodes: not a node count list or range ({shown(text, 80)}); {fix}") from None
    if step is not None:
        count = (hi - lo) // step + 1
    else:  # lo, 2 lo, 4 lo, ... below hi, then hi: 1 + the doublings below hi
        count = 1 + max(0, ((hi - 1) // lo).bit_length())
    if count > MAX_SWEEP_SIZES:
        raise ShardplanError(f"--nodes: {count:,} sizes ({shown(text, 40)}); {cap}")
    if step is not None:
        return list(range(lo, hi + 1, step))
    return [lo << i for i in range(count - 1)] + [hi]


def efficiency_baseline(points: list[SweepPoint]) -> Optional[SweepPoint]:
    """The size one hardware's efficiency is measured against: its solved size with the most tokens/s/GPU (the
    smallest such). Why not the smallest size that fits: that size is the most memory-bound, and the recipe that fits
    there may pay for it (Llama-3.1-70B on 2 H100 nodes needs full recompute, which repeats the forward pass: ~1/3 more
    compute, Korthikanti et al. 2022, arXiv:2205.05198 section 5), so every larger size read ~130 %. Against the best
    size, every row reads at most 100 %: what it loses to memory pressure (smaller sizes) or to communication and
    pipeline bubbles (larger ones)."""
    solved = [p for p in points if p.status == "solved"]
    return max(solved, key=lambda p: (p.tokens_per_s_per_gpu, -p.gpus)) if solved else None


def _finish(points: list[SweepPoint], train_tokens: Optional[float], usd_per_gpu_hour: Optional[float]) -> dict[str, EfficiencyBaseline]:
    """Scaling efficiency per hardware against its baseline (efficiency_baseline) and the training budget figures;
    returns the baselines."""
    baselines: dict[str, EfficiencyBaseline] = {}
    for hw in dict.fromkeys(p.hardware for p in points):
        mine = [p for p in points if p.hardware == hw]
        base = efficiency_baseline(mine)
        if base is None:
            continue
        baselines[hw] = EfficiencyBaseline(nodes=base.nodes, gpus=base.gpus, recipe_label=base.recipe_label,
                                           tokens_per_s_per_gpu=base.tokens_per_s_per_gpu)
        for p in mine:
            if p.status == "solved":
                p.scaling_efficiency = p.tokens_per_s_per_gpu / base.tokens_per_s_per_gpu
    for p in points:
        if p.status == "solved" and train_tokens:
            p.train_time_s = train_tokens / p.tokens_per_s
            p.gpu_hours = p.train_time_s * p.gpus / SECONDS_PER_HOUR
            if usd_per_gpu_hour is not None:
                p.cost_usd = p.gpu_hours * usd_per_gpu_hour
    return baselines


@api_edge(SweepArguments)
def sweep(model: str, hardware: Union[str, list[str]], nodes: Union[str, list[int]], *, seq_length: int,
          global_batch_size: int, gpus_per_node: Optional[int] = None, precision: str = "bf16", max_memory_fraction: Optional[float] = None,
          train_tokens: Optional[float] = None, usd_per_gpu_hour: Optional[float] = None,
          calibration: Optional[str] = None, software: Optional[str] = None) -> SweepResult:
    """The best legal recipe (throughput objective) at each node count on each hardware profile (a name or path, a
    list, or comma-separated names); `nodes` a list or parse_nodes' text ('1..64'); `gpus_per_node` None takes each
    profile's GPUs per server or tray (`HardwareProfile.gpus_per_node`). `calibration`: a file `calibrate` wrote for one of
    the profiles, which then projects with that cluster's factors. `software`: the stack generation (docs/software.md;
    default the newest), whose missing features every point's search leaves out. Unusable input raises ShardplanError
    before any solve."""
    named = [h.strip() for text in ([hardware] if isinstance(hardware, str) else hardware) for h in text.split(",") if h.strip()]
    # each profile once, first mention first (a name given twice, in any case, solved and listed twice)
    profiles = list({h.lower(): h for h in reversed(named)}.values())[::-1]
    counts = parse_nodes(nodes) if isinstance(nodes, str) else sorted(set(nodes))
    if not profiles:
        raise ShardplanError(f"--hardware: no profile given ({hardware!r}); name one, e.g. h100-sxm-80gb")
    if not counts or counts[0] < 1:
        raise ShardplanError(f"--nodes: give node counts of at least 1 ({nodes!r}), e.g. 1..64")

    if train_tokens is not None:  # NaN / inf passed click's FloatRange and came out as NaN in the JSON
        bounded_float(train_tokens, "--train-tokens", 0.0, MAX_TRAIN_TOKENS, "the largest published pre-training runs use "
                      "~4e13 tokens; give a finite token budget", lo_open=True)
    if usd_per_gpu_hour is not None:
        bounded_float(usd_per_gpu_hour, "--usd-per-gpu-hour", 0.0, MAX_USD_PER_GPU_HOUR, "give a finite price per GPU-hour")
    if usd_per_gpu_hour is not None and train_tokens is None:
        raise ShardplanError(f"--usd-per-gpu-hour: a cost needs a token budget ({usd_per_gpu_hour}); add --train-tokens N, e.g. 1e12")
    with input_boundary():
        spec = load_model(model)
        job = JobSpec(seq_length=seq_length, global_batch_size=global_batch_size, precision=precision)
        pins, software_used = software_for_search(software, spec, {}, calibration)
        for hw in profiles:  # every profile and the node counts are checked before the first solve
            Placement(hardware=hw, num_nodes=counts[-1], gpus_per_node=load_profile(hw).gpus_per_node if gpus_per_node is None else gpus_per_node)
        cal = None
        if calibration is not None:  # the file names its part: one of the swept profiles, or refused before any solve
            cal = load_calibration(str(calibration))
            if cal.hardware.lower() not in {load_profile(hw).name.lower() for hw in profiles}:
                raise ShardplanError(f"--calibration {shown(str(calibration))}: made for hardware {cal.hardware.lower()!r}, which "
                                     "this sweep does not include; add that --hardware or drop --calibration")
    # the learnt share of HBM (constraints/memory/allocator.py) unless given, or 100 % when every swept part is the one
    # whose allocator gap the calibration measured (the other parts keep the learnt reserve)
    measured_gap = (cal is not None and cal.factors.allocator_gap_bytes is not None
                    and all(load_profile(hw).name.lower() == cal.hardware.lower() for hw in profiles))
    fraction = resolve_memory_fraction(max_memory_fraction, measured_gap)
    result = sweep_specs(spec, job, profiles, counts, gpus_per_node, fraction.margin, train_tokens, usd_per_gpu_hour,
                         pins=pins, calibration=None if cal is None else (cal, str(calibration)))
    return result.model_copy(update={"software": software_used.model_dump()})


def sweep_specs(model, job, hardware: list[str], nodes: list[int], gpus_per_node: Optional[int] = None, margin_fraction: float = 0.0,
                train_tokens: Optional[float] = None, usd_per_gpu_hour: Optional[float] = None, pins: Optional[dict] = None,
                bounds: Optional[dict] = None, calibration: Optional[tuple[CalibrationFile, str]] = None) -> SweepResult:
    """`sweep` over a loaded ModelSpec and JobSpec (and optional solve pins / bounds, solver.workflow.collect_pins);
    each size shows progress on stderr when it takes over a second (shardplan.progress). `calibration`: (a read
    calibration file, its path), applied to the profile it was made for."""
    pins, bounds = dict(pins or {}), dict(bounds or {})
    points: list[SweepPoint] = []
    per_node: set[int] = set()
    for hw in hardware:
        profile = load_profile(hw)
        if calibration is not None and calibration[0].hardware.lower() == profile.name.lower():
            profile = calibrated_profile(profile, *calibration, model)
        node_gpus = profile.gpus_per_node if gpus_per_node is None else gpus_per_node
        per_node.add(node_gpus)
        screen = CountScreen(model, job, profile, margin_fraction, pins, bounds)
        shared_parts: dict = {}  # layer parts by shape and scale-up domain, for every size of this profile
        # rules that read no recipe field refuse the part at every size (e.g. FP8 on a part without FP8 tensor cores)
        blockers = recipe_free_blockers(model, job, Placement(hardware=hw, num_nodes=1, gpus_per_node=node_gpus), profile)
        for n in sorted(set(nodes)):
            placement = Placement(hardware=hw, num_nodes=n, gpus_per_node=node_gpus)
            if blockers:
                points.append(SweepPoint(hardware=profile.name, nodes=n, gpus=placement.world_size, status="refused",
                                         reason="; ".join(blockers), solve_s=0.0))
                continue
            with step(f"{hw}: best recipe on {n} node{'' if n == 1 else 's'}"):
                points.append(best_at(model, job, placement, profile, screen, shared_parts, margin_fraction, pins, bounds))
    baselines = _finish(points, train_tokens, usd_per_gpu_hour)
    return SweepResult(model=model.name, model_params=parameter_counts(model), seq_length=job.seq_length, global_batch_size=job.global_batch_size,
                       precision=job.precision.value, gpus_per_node=per_node.pop() if len(per_node) == 1 else None,
                       train_tokens=train_tokens,
                       usd_per_gpu_hour=usd_per_gpu_hour, points=points, efficiency_baselines=baselines)


def best_at(model, job, placement, profile, screen, shared_parts: dict, margin_fraction: float, pins: dict,
            bounds: dict) -> SweepPoint:
    """One size: proven empty by the screen (no tables), or the pruned K = 1 tables' best, verified by check."""
    # lazy: solver.exhaustive imports OR-Tools (via solver.cpsat.solve); `import shardplan` and `--help` must not load it
    from solver.exhaustive import solve_exhaustive

    t0 = time.perf_counter()
    point = dict(hardware=profile.name, nodes=placement.num_nodes, gpus=placement.world_size)
    if screen.min_peak_bytes(placement.world_size) > screen.usable_bytes:
        return SweepPoint(**point, status="no_memory_fit", solve_s=time.perf_counter() - t0)
    if screen.space_is_empty(placement):
        return SweepPoint(**point, status="no_legal_layout", solve_s=time.perf_counter() - t0)
    space = build_space(model, job, placement, pins=dict(pins), ranges=bounds)
    evaluator = Evaluator(model, job, placement, profile, shared_parts=shared_parts)
    tables = build_tables(space, profile, margin_fraction, prune_k=1, evaluator=evaluator)
    result = solve_exhaustive(tables, 1, margin_fraction=margin_fraction)
    if not result.ranked:
        return SweepPoint(**point, status="nothing_fits", proven_optimal=result.proven_optimal, solve_s=time.perf_counter() - t0)
    best = result.ranked[0]
    proj, mem = best.projection, best.check.memory
    return SweepPoint(**point, status="solved", recipe_label=recipe_label(best.recipe, best.check.dp),
                      recipe=best.recipe.model_dump(mode="json"), dp=best.check.dp, step_time_s=proj.iteration_time_s,
                      tokens_per_s_per_gpu=proj.tokens_per_s_per_gpu, tokens_per_s=proj.tokens_per_s_per_gpu * placement.world_size,
                      mfu=proj.mfu, peak_bytes=mem.peak_bytes, usable_bytes=mem.usable_bytes,
                      near_memory_limit=near_limit(mem.peak_bytes, mem.usable_bytes, profile.hbm_capacity_bytes),
                      proven_optimal=result.proven_optimal, solve_s=time.perf_counter() - t0)
