"""What a report holds: the job, one view per recipe (verdict, exact memory, projection, timeline), and a sweep.

Pydantic models so the page is rendered from one typed object, which `--json`-style consumers could reuse.
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from shardplan.report.timeline import Timeline


class JobView(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str
    model_parameters: str = ""  # '8.03 B parameters' (constraints.models.params.parameters_phrase): the config read as meant?
    hardware: str
    nodes: int
    gpus_per_node: int
    world_size: int
    seq_length: int
    global_batch_size: int
    precision: str
    projection_calibrated: bool = True


class RecipeView(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="short label, e.g. '#1 TP8 PP4 VPP5 DP2'")
    parallel: dict[str, Any] = Field(description="the recipe's settings as the report's recipe table shows them")
    recipe: dict[str, Any] = Field(description="constraints.spec.Recipe as JSON")
    legal: bool
    fits: bool
    violations: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    memory: Optional[dict[str, Any]] = Field(None, description="check --json's memory object")
    projection: Optional[dict[str, Any]] = Field(None, description="check --json's projection object")
    timeline: Optional[Timeline] = None


class Report(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["check", "solve", "sweep"]
    job: JobView
    recipes: list[RecipeView]
    notes: list[str] = Field([], description="what the page should say about how it was made (solve proof, bounds)")
    sweep: Optional[dict[str, Any]] = Field(None, description="shardplan.sweep.SweepResult as JSON")
