"""Fit a cluster's factors (measure/calibration/factors.py) to the step times its runs measured.

Why this fit: the evidence is a handful of step times, often one. The fit is a maximum a-posteriori estimate in log
space: each measured step pulls with a 2 % noise scale (steady-state step times of one run spread ~1-2 %,
Megatron-LM training_log medians), and each factor is held toward 1 (the shipped constants, fitted on every published
run) by a prior of its own width. Which factors are free follows the evidence: one run moves ONE factor, the three
tied together (a whole-step scale: one step time cannot tell compute from communication from host time; on
bench/data/runs.csv, carried to another recipe of the same model, the whole-step scale reads median 3.3 % / p90 16.8 %
in bench.calibration_cv, where an earlier, exploratory run of it with a compute-only factor read 4.5 % / 18.7 %), two
runs untie compute from the rest, three or more free all three.
So one log moves one factor and more logs move more, and a single run is reproduced exactly while nothing it cannot
tell apart is invented. The search is a coordinate descent with golden-section steps over log factors in [1/4, 4]: no gradient of
the projection is needed, and it is deterministic.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict, Field

from constraints.spec import JobSpec, ModelSpec, Placement, Recipe
from hardware.profile import HardwareProfile
from measure.calibration.factors import FACTOR_NAMES, MAX_FACTOR, MIN_FACTOR, ClusterFactors, apply_factors
from measure.projection.project import project

STEP_NOISE = 0.02  # relative spread of a steady-state step time (log scale)
PRIOR_WIDTH = {"compute": 0.5, "communication": 0.5, "host": 1.0}  # log-space prior sd per factor
_GOLDEN = (math.sqrt(5) - 1) / 2


class Evidence(BaseModel):
    """One measured run: the recipe it ran, how it ran, and what it measured."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
    label: str = Field(description="where the measurement comes from (a log path, a runs.csv id)")
    model: ModelSpec
    job: JobSpec
    recipe: Recipe
    placement: Placement
    run_options: dict = Field(default_factory=dict, description="measure.projection.project.project's run keywords "
                              "(cuda_graph_scope, fp8_attention, fused_grouped_mlp)")
    iteration_time_s: float = Field(gt=0, description="measured steady-state seconds per iteration")
    allocator_gap_bytes: Optional[int] = Field(None, ge=0, description="measured max reserved - max allocated")


class FitResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    factors: ClusterFactors
    free: tuple[str, ...] = Field(description="the factors the evidence was allowed to move")
    projected_before_s: tuple[float, ...] = Field(description="per evidence: step time with the shipped constants")
    projected_after_s: tuple[float, ...] = Field(description="per evidence: step time with the fitted factors")


# the factors each amount of evidence moves, as groups that move together
FREE_GROUPS = {0: (), 1: (("compute", "communication", "host"),), 2: (("compute",), ("communication", "host")),
               3: (("compute",), ("communication",), ("host",))}


def free_groups(num_evidence: int) -> tuple[tuple[str, ...], ...]:
    """One freely moving group of factors per run, at most one group per factor."""
    return FREE_GROUPS[max(0, min(num_evidence, 3))]


def free_factors(num_evidence: int) -> tuple[str, ...]:
    """The factors the evidence moves (tied ones included)."""
    return tuple(name for group in free_groups(num_evidence) for name in group)


def step_time_s(ev: Evidence, profile: HardwareProfile) -> float:
    return project(ev.model, ev.job, ev.recipe, ev.placement, profile, **ev.run_options).iteration_time_s


def _golden_min(f: Callable[[float], float], lo: float, hi: float, iters: int = 40) -> float:
    a, b = lo, hi
    c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLDEN * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit_factors(profile: HardwareProfile, evidence: list[Evidence], sweeps: int = 3) -> FitResult:
    """The factors that best reproduce `evidence` on `profile` (the shipped profile, uncalibrated)."""
    groups = free_groups(len(evidence))
    free = free_factors(len(evidence))
    gaps = sorted(ev.allocator_gap_bytes for ev in evidence if ev.allocator_gap_bytes is not None)
    gap = gaps[len(gaps) // 2] if gaps else None  # the median run's gap, exact bytes (no averaging of integers)
    logs = {name: 0.0 for name in FACTOR_NAMES}

    def factors_of(values: dict[str, float]) -> ClusterFactors:
        return ClusterFactors(**{n: math.exp(v) for n, v in values.items()}, allocator_gap_bytes=gap)

    def loss(values: dict[str, float]) -> float:
        prof = apply_factors(profile, factors_of(values))
        misfit = sum((math.log(step_time_s(ev, prof) / ev.iteration_time_s) / STEP_NOISE) ** 2 for ev in evidence)
        return misfit + sum((values[n] / PRIOR_WIDTH[n]) ** 2 for n in free)

    lo, hi = math.log(MIN_FACTOR), math.log(MAX_FACTOR)
    for _ in range(sweeps if len(groups) > 1 else 1):
        for group in groups:
            best = _golden_min(lambda x, group=group: loss({**logs, **{n: x for n in group}}), lo, hi)
            logs.update({n: best for n in group})
    fitted = factors_of(logs)
    before = tuple(step_time_s(ev, profile) for ev in evidence)
    calibrated = apply_factors(profile, fitted)
    after = tuple(step_time_s(ev, calibrated) for ev in evidence)
    return FitResult(factors=fitted, free=free, projected_before_s=before, projected_after_s=after)
