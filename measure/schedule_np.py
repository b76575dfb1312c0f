"""Closed-form pipeline step times (measure.pipeline_sim.closed_form_s) over numpy arrays."""
from __future__ import annotations

import numpy as np

from constraints.spec import PipelineSchedule
from measure.recipe_batch import SCHEDULES


def closed_form_np(schedule: np.ndarray, f, b, w, p, v, m) -> np.ndarray:
    """measure.pipeline_sim.closed_form_s over arrays; schedule holds indices into SCHEDULES."""
    t = f + b + w
    out = (m + p - 1) * t
    inter = (schedule == SCHEDULES.index(PipelineSchedule.interleaved)) & (v > 1)
    out = np.where(inter, (m + (p - 1) / v) * t, out)
    out = np.where(schedule == SCHEDULES.index(PipelineSchedule.zb_h1), m * t + (p - 1) * np.maximum(f + b - w, 0.0), out)
    return np.where(schedule == SCHEDULES.index(PipelineSchedule.zbv), m * t + (p - 1) * np.maximum(f + b - 2 * w, 0.0) / 2, out)
