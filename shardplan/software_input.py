"""Which software generation a `check`, `solve`, `sweep` or `report` projects with, and where that came from.

Why one place: the generation can come from `--software` (or the API's `software=`), from a recipe file's top-level
`software:` key, or from the versions a Megatron log prints; every result says which it used and where it came from
(`software: {value, source, month, notes}`), and without any of them it is the newest generation
(constraints/software/generation.py), said as such. `--software` wins over the file or the log; where they disagree a
warning says so.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from constraints.read import LoadedCase
from constraints.rules.base import Violation
from constraints.software.apply import apply_generation, solve_pins
from constraints.software.generation import Generation, generation_or_newest, resolve
from constraints.software.versions import software_of_versions
from constraints.spec import ModelSpec


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


def with_software(loaded: LoadedCase, given: Optional[str]) -> tuple[LoadedCase, SoftwareUsed]:
    """The input with its recipe as the chosen generation runs it, and the `software` block. SoftwareError (one line)
    for a value shardplan cannot read or a recipe that states what the generation lacks."""
    stated, how = _stated_by_input(loaded)
    if given is not None:
        gen, source = resolve(given), "--software"
    elif stated is not None:
        gen, source = resolve(stated), how
    else:
        gen, source = generation_or_newest(None)
    recipe, notes = apply_generation(gen, loaded.case.model, loaded.case.job, loaded.case.recipe)
    warnings = list(loaded.warnings)
    if given is not None and stated is not None and resolve(stated).software != gen.software:
        warnings.append(Violation(rule="software_differs", severity="warning",
                                  message=f"the {how} state {resolve(stated).software}, --software {gen.software} was used",
                                  fix="drop --software to project with what the input states"))
    case = loaded.case.model_copy(update={"recipe": recipe}) if recipe is not loaded.case.recipe else loaded.case
    return replace(loaded, case=case, warnings=warnings), used(gen, source, notes)


def software_for_search(given: Optional[str], model: ModelSpec, pins: dict) -> tuple[dict, SoftwareUsed]:
    """solve / sweep: the pins restricted to the generation (constraints/software/apply.py solve_pins) and its block."""
    gen, source = generation_or_newest(given)
    if given is not None:
        source = "--software"
    return solve_pins(gen, model, pins), used(gen, source)
