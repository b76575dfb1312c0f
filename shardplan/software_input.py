"""Which software generation a `check`, `solve`, `sweep` or `report` projects with, and where that came from.

Why one place: the generation can come from `--software` (or the API's `software=`), from a recipe file's top-level
`software:` key, or from the versions a Megatron log prints; every result says which it used and where it came from
(`software: {value, source, month, notes}`), and without any of them it is the newest generation
(constraints/software/generation.py), said as such. `--software` wins over the file or the log; where they disagree a
warning says so. A calibration file is tied to the software its logs printed: without --software the projection takes
it, and --software naming another generation is refused (`refuse_other_software`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from boundary.show import shown
from constraints.read import LoadedCase
from constraints.rules.base import Violation
from constraints.software.apply import UNSEARCHABLE, apply_generation, solve_pins
from constraints.software.generation import Generation, SoftwareError, generation_or_newest, resolve
from constraints.software.versions import software_of_versions
from constraints.spec import JobSpec, ModelSpec, Precision
from measure.calibration.store import load_calibration
from measure.deepspeed.engine import DeepSpeedEngine, engine_of_generation


class SoftwareUsed(BaseModel):
    """The `software` block of every result."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: str = Field(description="STACK:VERSION the projection used")
    source: str = Field(description="--software | recipe file | log versions | default: the newest generation")
    month: str = Field(description="the month the release belongs to (constraints/software/generations.yaml)")
    missing: list[str] = Field(default_factory=list, description="features of the newest generation it lacks")
    notes: list[str] = Field(default_factory=list, description="recipe knobs set to what this generation runs")

    def line(self) -> str:
        """One line for the text outputs."""
        lacks = f"; lacks {', '.join(self.missing)}" if self.missing else ""
        return f"software: {self.value} ({self.source}; {self.month}{lacks})"


def used(gen: Generation, source: str, notes: Optional[list[str]] = None) -> SoftwareUsed:
    return SoftwareUsed(value=gen.software, source=source, month=gen.month, missing=gen.missing(), notes=notes or [])


def _stated_by_input(loaded: LoadedCase) -> tuple[Optional[str], str]:
    """(software the input itself states, how): the recipe file's key, or the versions a log printed."""
    if loaded.software:
        return loaded.software, "recipe file"
    if loaded.measured is not None:
        from_log = software_of_versions(loaded.measured.versions)
        if from_log:
            return from_log, "log versions"
    return None, ""


def calibration_software(calibration: Optional[str]) -> Optional[str]:
    """STACK:VERSION of the logs a calibration file was fitted on (the versions it records,
    measure/calibration/store.py `software`), None without a file or when its logs printed none."""
    if calibration is None:
        return None
    return software_of_versions(load_calibration(str(calibration)).software)


def refuse_other_software(used_value: str, calibrated_with: Optional[str], calibration: Optional[str]) -> None:
    """A calibration is tied to its software: its factors absorb that release's kernels, which move a configuration by
    20-30 % between releases (issue 30). Projecting another generation with them is refused in one line."""
    if calibrated_with is not None and resolve(calibrated_with).software != used_value:
        raise SoftwareError(f"--calibration {shown(str(calibration))}: fitted on logs of {calibrated_with}, not {used_value}; "
                            "drop --software to project with the calibration's, or calibrate on logs of that software")


def _chosen(given: Optional[str], stated: Optional[str], how: str, calibrated_with: Optional[str]) -> tuple[Generation, str]:
    """--software, else what the input states, else the calibration's, else the newest."""
    if given is not None:
        return resolve(given), "--software"
    if stated is not None:
        return resolve(stated), how
    if calibrated_with is not None:
        return resolve(calibrated_with), "calibration file"
    return generation_or_newest(None)


def with_software(loaded: LoadedCase, given: Optional[str], calibration: Optional[str] = None) -> tuple[LoadedCase, SoftwareUsed]:
    """The input with its recipe as the chosen generation runs it, and the `software` block. SoftwareError (one line)
    for a value shardplan cannot read, a recipe that states what the generation lacks, or a calibration of another
    software (`refuse_other_software`)."""
    stated, how = _stated_by_input(loaded)
    calibrated_with = calibration_software(calibration)
    gen, source = _chosen(given, stated, how, calibrated_with)
    refuse_other_software(gen.software, calibrated_with, calibration)
    recipe, notes = apply_generation(gen, loaded.case.model, loaded.case.job, loaded.case.recipe)
    warnings = list(loaded.warnings)
    if given is not None and stated is not None and resolve(stated).software != gen.software:
        warnings.append(Violation(rule="software_differs", severity="warning",
                                  message=f"the {how} state {resolve(stated).software}, --software {gen.software} was used",
                                  fix="drop --software to project with what the input states"))
    case = loaded.case.model_copy(update={"recipe": recipe}) if recipe is not loaded.case.recipe else loaded.case
    return replace(loaded, case=case, warnings=warnings), used(gen, source, notes)


def search_refusal(software: SoftwareUsed) -> Optional[str]:
    """Why the nearest-recipe search (shardplan/nearest_fix.py) cannot answer for this generation, or None: its
    candidates are built with what solve cannot switch off (constraints/software/apply.py UNSEARCHABLE)."""
    lacking = [f for f in UNSEARCHABLE if f in software.missing]
    if not lacking:
        return None
    return (f"the recipe search builds recipes with {', '.join(lacking)}, which {software.value} lacks; "
            "change the recipe by hand and check it again")


def software_for_search(given: Optional[str], model: ModelSpec, pins: dict,
                        calibration: Optional[str] = None) -> tuple[dict, SoftwareUsed]:
    """solve / sweep: the pins restricted to the generation (constraints/software/apply.py solve_pins) and its block;
    the generation is --software, else the calibration's, else the newest."""
    calibrated_with = calibration_software(calibration)
    gen, source = _chosen(given, None, "", calibrated_with)
    refuse_other_software(gen.software, calibrated_with, calibration)
    return solve_pins(gen, model, pins), used(gen, source)


def generation_engine(value: str, job: JobSpec) -> Optional[DeepSpeedEngine]:
    """The DeepSpeed engine `check` prices a Megatron-DeepSpeed generation with (measure/deepspeed/step.py), None for
    another stack: ZeRO stage 0, since a recipe cannot state DeepSpeed's, and BF16_Optimizer for a bf16 job from the
    DeepSpeed release that has it (measure/deepspeed/engine.py `engine_of_generation`)."""
    gen = resolve(value)
    return engine_of_generation(gen.stack, gen.month, job.precision == Precision.bf16)


def with_engine_note(software: SoftwareUsed, engine: Optional[DeepSpeedEngine]) -> SoftwareUsed:
    """The software block with a note saying which DeepSpeed engine priced the step (unchanged without one)."""
    if engine is None:
        return software
    optimizer = "BF16_Optimizer (fp32 gradient accumulation and all-reduce)" if engine.bf16_optimizer \
        else "gradients accumulated and all-reduced in the training dtype"
    note = (f"DeepSpeed's pipeline engine priced (measure/deepspeed/step.py): ZeRO stage {engine.zero_stage} assumed, "
            f"{optimizer}")
    return software.model_copy(update={"notes": list(software.notes) + [note]})
