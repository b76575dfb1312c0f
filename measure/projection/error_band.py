"""How far a projection may be from what the run will measure: a range from held-out residuals, not a single number.

Why from held-out residuals: a projection's error on runs nobody fitted to is the honest width of its uncertainty.
bench/calibration_cv.py measures it on bench/data/runs.csv (constants refitted without the run's publication; with a
calibration, the error on other runs of the calibrated model) and writes the 10th and 90th percentiles of the signed
error (projected / measured - 1) into measure/projection/error_bands.json; `--check` in CI keeps the file equal to what
the bench measures. A range is then [projected / (1 + p90), projected / (1 + p10)]: where 80 % of held-out measurements
fell.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

BANDS_PATH = Path(__file__).resolve().parent / "error_bands.json"


class ErrorBand(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    low_error: float = Field(gt=-1, description="10th percentile of the signed held-out error (projected / measured - 1)")
    high_error: float = Field(gt=-1, description="90th percentile of the signed held-out error")
    num_runs: int = Field(ge=1, description="held-out projections the percentiles come from")
    measured_by: str = Field(description="the command that measures it")


@lru_cache(maxsize=1)
def error_bands() -> dict[str, ErrorBand]:
    """'uncalibrated' and 'calibrated' bands (the file shipped with the package)."""
    data = json.loads(BANDS_PATH.read_text())
    return {name: ErrorBand.model_validate(band) for name, band in data["bands"].items()}


def tokens_range(tokens_per_s_per_gpu: float, calibrated: bool) -> tuple[float, float]:
    """[low, high] tokens/s/GPU where 80 % of held-out measurements fell, for this projection."""
    band = error_bands()["calibrated" if calibrated else "uncalibrated"]
    return tokens_per_s_per_gpu / (1 + band.high_error), tokens_per_s_per_gpu / (1 + band.low_error)
