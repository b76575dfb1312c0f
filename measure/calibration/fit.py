"""Fit a cluster's factors (measure/calibration/factors.py) to the step times its runs measured.

Why this fit: the evidence is a handful of step times, often one. The fit is a maximum a-posteriori estimate of the
log factors: each measured step pulls with a 2 % noise scale (steady-state step times of one run spread ~1-2 %,
Megatron-LM training_log medians), and the factors are held toward 1 (the shipped constants, fitted on every published
run) by a Gaussian prior.

Why this prior (shrinkage by evidence): each factor's log keeps the prior width it always had (PRIOR_WIDTH), and half
of compute's and communication's prior variance is shared by all three (COMMON_WIDTH): a cluster is a priori as likely
to be uniformly faster or slower than shipped as to differ in one part only. So one run moves ONE direction in factor
space: the common scale, tilted toward the factors its step is most sensitive to (and host, whose prior is widest). A
run whose step is 80 % compute puts its residual mostly on compute and carries less of it to another recipe's
communication time, which that run never measured. Two runs whose steps are made differently pull the factors apart;
with more runs each factor moves as its own evidence allows. Measured out of sample on bench/data/runs.csv
(bench.calibration_cv: one run of a model calibrates, the group's other runs of that model are projected): median
3.6 % / p90 14.8 % on the 34 projections the set held when this fit was chosen (5.0 / 11.0 % on today's 66), where
the whole-step scale it replaces (all three factors tied for one run) read 3.3 % / 16.8 % and an earlier compute-only
factor 4.5 % / 18.7 %. The gain is on runs that differ from the
calibrating run in their communication share (an all-to-all dispatcher fallback against a HybridEP run: 16-17 % ->
7-12 %); the small loss is between runs of nearly the same make-up (0.9 % -> 3.5 %).

The search is Levenberg-Marquardt in log space with a finite-difference Jacobian (one projection per factor per run and
step): the projection is a black box with kinks (efficiencies capped at peak, host floors), the problem has three
unknowns, and the result is deterministic. Each factor stays in [1/4, 4].
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from constraints.spec import JobSpec, ModelSpec, Placement, Recipe
from hardware.profile import HardwareProfile
from measure.calibration.factors import FACTOR_NAMES, MAX_FACTOR, MIN_FACTOR, ClusterFactors, apply_factors
from measure.projection.project import project

STEP_NOISE = 0.02  # relative spread of a steady-state step time (log scale)
PRIOR_WIDTH = {"compute": 0.5, "communication": 0.5, "host": 1.0}  # log-space prior sd per factor (its marginal)
COMMON_WIDTH = 0.5 / math.sqrt(2)  # the cluster-wide share: half of compute's and communication's prior variance
JACOBIAN_STEP = 0.02  # log-space finite difference: larger than the projection's rounding, smaller than its kinks
MAX_STEPS, TOLERANCE = 8, 1e-4  # Levenberg-Marquardt steps (and tries per step), and the log-factor change that ends them


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


def free_factors(num_evidence: int) -> tuple[str, ...]:
    """The factors the evidence moves: none without a run, all three (along one direction per run) with any."""
    return FACTOR_NAMES if num_evidence > 0 else ()


def prior_covariance() -> np.ndarray:
    """Covariance of the log factors (FACTOR_NAMES order): the common scale's variance everywhere, plus each factor's own."""
    own = [PRIOR_WIDTH[n] ** 2 - COMMON_WIDTH ** 2 for n in FACTOR_NAMES]
    return np.full((len(FACTOR_NAMES), len(FACTOR_NAMES)), COMMON_WIDTH ** 2) + np.diag(own)


def step_time_s(ev: Evidence, profile: HardwareProfile) -> float:
    return project(ev.model, ev.job, ev.recipe, ev.placement, profile, **ev.run_options).iteration_time_s


def _log_steps(profile: HardwareProfile, evidence: list[Evidence], logs: np.ndarray, gap: Optional[int]) -> np.ndarray:
    factors = ClusterFactors(**{n: float(math.exp(v)) for n, v in zip(FACTOR_NAMES, logs)}, allocator_gap_bytes=gap)
    calibrated = apply_factors(profile, factors)
    return np.array([math.log(step_time_s(ev, calibrated)) for ev in evidence])


def fit_factors(profile: HardwareProfile, evidence: list[Evidence]) -> FitResult:
    """The factors that best reproduce `evidence` on `profile` (the shipped profile, uncalibrated)."""
    gaps = sorted(ev.allocator_gap_bytes for ev in evidence if ev.allocator_gap_bytes is not None)
    gap = gaps[len(gaps) // 2] if gaps else None  # the median run's gap, exact bytes (no averaging of integers)
    measured = np.array([math.log(ev.iteration_time_s) for ev in evidence])
    precision = np.linalg.inv(prior_covariance())
    lo, hi = math.log(MIN_FACTOR), math.log(MAX_FACTOR)

    def objective(logs: np.ndarray, at: np.ndarray) -> float:
        return float(np.sum(((at - measured) / STEP_NOISE) ** 2) + logs @ precision @ logs)

    logs = np.zeros(len(FACTOR_NAMES))
    at = _log_steps(profile, evidence, logs, gap) if evidence else measured
    damping = 1e-3
    for _ in range(MAX_STEPS if evidence else 0):
        # a factor at its upper bound is differenced downward, so no probe leaves [MIN_FACTOR, MAX_FACTOR]
        steps = np.where(logs + JACOBIAN_STEP > hi, -JACOBIAN_STEP, JACOBIAN_STEP)
        jacobian = np.column_stack([(_log_steps(profile, evidence, logs + steps[k] * np.eye(len(logs))[k], gap) - at) / steps[k]
                                    for k in range(len(logs))])
        # Levenberg-Marquardt on the MAP objective: (J'J/s^2 + C^-1 + damping) dx = J'(y - g)/s^2 - C^-1 x; a step is
        # kept only when it lowers the objective (the projection has kinks: an efficiency reaching peak, a host floor)
        normal = jacobian.T @ jacobian / STEP_NOISE ** 2 + precision
        rhs = jacobian.T @ (measured - at) / STEP_NOISE ** 2 - precision @ logs
        for _ in range(MAX_STEPS):
            trial = np.clip(logs + np.linalg.solve(normal + damping * np.diag(np.diag(normal)), rhs), lo, hi)
            trial_at = _log_steps(profile, evidence, trial, gap)
            if objective(trial, trial_at) < objective(logs, at):
                break
            damping *= 10
        else:
            break
        moved = float(np.max(np.abs(trial - logs)))
        logs, at, damping = trial, trial_at, max(damping / 10, 1e-6)
        if moved < TOLERANCE:
            break
    fitted = ClusterFactors(**{n: float(math.exp(v)) for n, v in zip(FACTOR_NAMES, logs)}, allocator_gap_bytes=gap)
    shipped = tuple(step_time_s(ev, profile) for ev in evidence)
    calibrated = apply_factors(profile, fitted)
    after = tuple(step_time_s(ev, calibrated) for ev in evidence)
    return FitResult(factors=fitted, free=free_factors(len(evidence)), projected_before_s=shipped, projected_after_s=after)
