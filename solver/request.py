"""One solve request: everything `shardplan.solve` resolved from its arguments, as the solver workflow reads it.

Why an object: the request used to travel as 13-14 positional arguments through shardplan/api.py and
solver/workflow.py (the same values in the same order, easy to swap unseen); one validated object names each value
once. shardplan/api.py builds it; solver/workflow.py takes it (and hands build_tables its part of it).
"""
from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, InstanceOf

from constraints.spec import JobSpec, ModelSpec, Placement
from hardware.profile import HardwareProfile
from solver.objective import Objective
from solver.proposer.config import ProposerConfig


class SolveRequest(BaseModel):
    """A resolved solve: the model, job and cluster, the user's pins and ranges, and how to search."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: InstanceOf[ModelSpec] = Field(description="the model (constraints.spec.ModelSpec), loaded and validated")
    job: InstanceOf[JobSpec] = Field(description="sequence length, global batch size and precision")
    placement: InstanceOf[Placement] = Field(description="hardware name, nodes and GPUs per node (fewest-gpus: the most nodes tried)")
    profile: InstanceOf[HardwareProfile] = Field(description="the hardware profile `placement.hardware` names")
    pins: dict[str, Any] = Field(description="axis -> allowed values (solver.workflow.collect_pins; recompute kind resolved)")
    bounds: dict[str, Any] = Field(description="axis -> (lo, hi) range, either end None when open (solver.workflow.collect_pins)")
    top: int = Field(description="answers to return (K), each re-verified by check")
    margin: float = Field(description="fraction of HBM kept free: 1 - the share a peak may reach (constraints/memory/"
                                      "allocator.py resolve_memory_fraction: --max-memory-fraction, else the learnt 97 %)")
    method: Literal["cpsat", "exhaustive"] = Field(description="cpsat: CP-SAT top-K; exhaustive: scan every candidate of the tables")
    time_limit_s: Union[int, float] = Field(description="CP-SAT deterministic time limit (seconds of its deterministic clock)")
    objective: Objective = Field(Objective.throughput, description="what the answers are ranked by")
    proposer: Optional[InstanceOf[ProposerConfig]] = Field(None, description="hints steering the throughput search; None: plain solve")
    target_tokens_per_s: Optional[Union[int, float]] = Field(None, description="fewest-gpus: the total tokens/s to reach")

    @property
    def prune_k(self) -> Optional[int]:
        """K for build_tables' pruning: the throughput CP-SAT solve expands only the structural rows that can hold a
        top-K answer (solver/prune.py); --method exhaustive and the other objectives enumerate every row."""
        return self.top if self.method == "cpsat" and self.objective == Objective.throughput else None
