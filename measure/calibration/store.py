"""The calibration file `shardplan calibrate` writes and `--calibration FILE` reads.

Why a sealed file: a calibration is evidence about one cluster and one software stack. It records the hardware
profile it was made for, the runs it was fitted on with their residuals and the software versions their logs printed,
and a SHA-256 of its own content, so a file edited by hand, made for another part or written by a newer shardplan
is refused in one line instead of silently moving every projection.

Why per model: a calibration's speed factors apply to the models it measured. On bench/data/runs.csv, a calibration on
one run carried to another recipe of the SAME model cuts the median error from 12.1 % to 5.0 % (bench.calibration_cv,
66 projections), but carried to ANOTHER model of the same group it makes it worse: median 7.4 % -> 9.3 %, p90
24.0 % -> 30.4 % (742 projections, the bench's "factors carried whole" line): what is left after the shipped fit is
mostly the model's own, not the cluster's. So a model with no run in the file takes only half (in log) of the factors
that stand for the cluster itself, communication and host (measure/calibration/carry.py CARRIED_RULE, chosen leave one
publication out: median 7.3 % / p90 24.2 % against 7.4 / 24.0 uncalibrated), keeps the shipped compute constants (said
in a note), and takes the measured allocator gap, which is the cluster's.
"""
from __future__ import annotations

import hashlib
import json
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from boundary.errors import ShardplanError
from boundary.parse import load_json
from boundary.read import read_text
from boundary.show import validation_line
from hardware.profile import HardwareProfile
from measure.calibration.carry import CARRIED_RULE, CARRY_RULES, carried_factors
from measure.calibration.factors import ClusterFactors, apply_factors

FORMAT = "shardplan-calibration"
FORMAT_VERSION = 1


class CalibrationError(ShardplanError):
    """A calibration file shardplan cannot use (one line: the file, what is wrong, the fix)."""


def model_key(model) -> str:
    """A model's identity for matching runs to projections: its architecture, not its name (every script-read model
    is named 'megatron-args')."""
    return hashlib.sha256(model.model_dump_json(exclude={"name"}).encode()).hexdigest()[:16]


class EvidenceRecord(BaseModel):
    """One run a calibration was fitted on, as it is recorded (not the whole spec: what a reader needs to judge it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    label: str = Field(max_length=4096, description="the log (or row) the run was read from")
    model: str = Field(max_length=512)
    model_key: str = Field(max_length=64, description="the model's architecture hash (`model_key`)")
    world_size: int = Field(ge=1)
    recipe_key: str = Field(max_length=64, description="the run's layout as Megatron reads it, hashed "
                            "(shardplan.calibrate.recipe_key): which solve answer this run measured")
    recipe: str = Field(max_length=1024, description="the parallel layout, e.g. 'tp2 pp1 cp1 ep1 mbs1 gbs64 seq4096 bf16'")
    measured_iteration_time_s: float = Field(gt=0)
    projected_before_s: float = Field(gt=0, description="the shipped constants' step time")
    projected_after_s: float = Field(gt=0, description="the calibrated step time")
    residual: float = Field(description="calibrated / measured - 1")
    iterations_used: Optional[int] = Field(None, ge=1)
    max_allocated_bytes: Optional[int] = Field(None, ge=0)
    max_reserved_bytes: Optional[int] = Field(None, ge=0)


class CalibrationFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    format: str = Field(FORMAT, description="always 'shardplan-calibration'")
    format_version: int = Field(FORMAT_VERSION, description="the file layout; a newer one is refused")
    hardware: str = Field(max_length=256, description="the hardware profile's name the factors apply to")
    factors: ClusterFactors = Field(description="fitted on every run (recorded; the allocator gap applies to every model)")
    model_factors: dict[str, ClusterFactors] = Field(default_factory=dict, max_length=10_000,
                                                     description="model_key -> factors fitted on that model's runs only")
    free_factors: tuple[str, ...] = Field(description="the factors the evidence moved; the rest are 1")
    evidence: tuple[EvidenceRecord, ...] = Field(min_length=1, max_length=10_000)
    software: dict[str, str] = Field(default_factory=dict, description="versions the logs printed (name -> version)")
    content_sha256: str = Field("", description="SHA-256 of the file's other fields (canonical JSON); set by `sealed`")

    def digest(self) -> str:
        body = self.model_dump(mode="json", exclude={"content_sha256"})
        return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    def sealed(self) -> "CalibrationFile":
        return self.model_copy(update={"content_sha256": self.digest()})

    def to_text(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=False) + "\n"


def load_calibration(path: str) -> CalibrationFile:
    """Read and verify a calibration file; every refusal is one line naming the file and the fix."""
    data = load_json(read_text(path, "calibration", "--calibration"), "calibration", f"--calibration {path}")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CalibrationError(f"--calibration {path}: not a shardplan calibration file; make one with `shardplan calibrate LOG... -o FILE`")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION:
        raise CalibrationError(f"--calibration {path}: format_version {version!r} is newer than this shardplan reads "
                               f"({FORMAT_VERSION}); upgrade shardplan or recalibrate with this one")
    try:
        cal = CalibrationFile.model_validate(data)
    except ValidationError as exc:
        raise CalibrationError(f"--calibration {path}: {validation_line(exc)}; recalibrate with `shardplan calibrate`") from None
    if cal.content_sha256 != cal.digest():
        raise CalibrationError(f"--calibration {path}: the file was edited after `shardplan calibrate` wrote it "
                               "(content_sha256 does not match); recalibrate instead of editing it")
    return cal


def factors_for(cal: CalibrationFile, model) -> tuple[ClusterFactors, bool]:
    """(the factors that apply to `model`, whether the file measured this model). A model the file did not measure
    takes the share of the file's factors that carries across models (measure/calibration/carry.py CARRIED_RULE) and
    the cluster's allocator gap (see the module docstring)."""
    key = model_key(model) if model is not None else None
    if key is not None and key in cal.model_factors:
        return cal.model_factors[key], True
    return carried_factors(cal.factors, CARRY_RULES[CARRIED_RULE]), False


def calibrated_profile(profile: HardwareProfile, cal: CalibrationFile, path: str, model=None) -> HardwareProfile:
    """`profile` with the file's factors for `model`, refused when the file was made for another part."""
    if cal.hardware.lower() != profile.name.lower():
        raise CalibrationError(f"--calibration {path}: made for hardware {cal.hardware!r}, not {profile.name!r}; "
                               f"calibrate on logs of {profile.name!r} or drop --calibration")
    return apply_factors(profile, factors_for(cal, model)[0])
