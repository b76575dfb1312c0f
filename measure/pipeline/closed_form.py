"""Closed-form pipeline step times (measure.pipeline.simulator.staged_closed_form_s, p2p_units) over numpy arrays."""
from __future__ import annotations

import numpy as np

from constraints.spec import PipelineSchedule
from measure.projection.recipe_batch import SCHEDULES


def staged_closed_form_np(schedule: np.ndarray, f, b, w, mult, v, m) -> np.ndarray:
    """measure.pipeline.simulator.staged_closed_form_s over arrays: f, b, w, mult are [row, rank profile] (mult = how
    many ranks share the profile, 0 for padding), schedule, v, m are [row]."""
    t = f + b + w
    vv = v[:, None]
    sc = schedule[:, None]
    share = np.where((sc == SCHEDULES.index(PipelineSchedule.interleaved)) & (vv > 1), t / np.maximum(vv, 1), t)
    share = np.where(sc == SCHEDULES.index(PipelineSchedule.zb_h1), np.maximum(f + b - w, 0.0), share)
    share = np.where(sc == SCHEDULES.index(PipelineSchedule.zbv), np.maximum(f + b - 2 * w, 0.0) / 2, share)
    total = (mult * share).sum(axis=1)[:, None]
    return np.where(mult > 0, m[:, None] * t + total - share, -np.inf).max(axis=1)


def p2p_units_np(schedule: np.ndarray, p, v, m) -> np.ndarray:
    """measure.pipeline.simulator.p2p_units over arrays."""
    inter = (schedule == SCHEDULES.index(PipelineSchedule.interleaved)) & (v > 1)
    one = schedule == SCHEDULES.index(PipelineSchedule.one_f_one_b)
    out = np.where(inter, 2 * (p * v - 1), np.where(one, 2 * (m + p - 2 - -(-(m - 1) // np.maximum(p, 1))), 2 * (m * v + p - 1)))
    return np.where(p > 1, out, 0)
