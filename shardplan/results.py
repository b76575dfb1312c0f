"""The typed results of the public API: what `shardplan.check/solve/render/models/hardware` return, what the CLI
prints and what `--format json` dumps (`result.to_json()`), each with a JSON Schema (`schemas()`).

Why pydantic models with extra="forbid": a notebook user gets attribute access and validation, and a consumer of the
JSON gets a schema it can check against; a key the model does not declare can never slip into the output.
"""
from __future__ import annotations

from typing import Any, ClassVar, Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from constraints.check import MemorySummary
from constraints.rules.registry import Violation
from constraints.spec import Recipe
from measure.projection.project import Projection
from solver.proposer.summary import HintReport


class Result(BaseModel):
    """Base of every API result: strict fields, `to_json()` = the CLI's JSON (keys in `_omit_when_none` are left out
    when unset, as the CLI always did)."""

    model_config = ConfigDict(extra="forbid")
    _omit_when_none: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        for key in self._omit_when_none:
            if data.get(key) is None:
                data.pop(key, None)
        return data


class CheckResult(Result):
    """`check`: the verdict on one recipe (rules, exact per-rank memory, projection), as `check --json` prints it."""

    _omit_when_none: ClassVar[tuple[str, ...]] = ("suggestion", "measured", "measured_vs_projected", "calibration", "model_params")
    legal: bool
    fits: bool
    violations: list[Violation]
    warnings: list[Violation]
    memory: Optional[MemorySummary] = Field(description="the most loaded pipeline rank and every rank's terms (bytes)")
    projection: Optional[Projection] = Field(None, description="projected step (None when illegal or not projected)")
    unknown_flags: list[str] = []
    ignored_flags: list[str] = []
    cuda_graph_scope: list[str] = Field([], description="what the input's run captures in CUDA graphs (--cuda-graph-impl / "
                                        "--cuda-graph-modules; measure/kernels/cuda_graphs.py), which the projection prices; "
                                        "empty when nothing is captured or the input is a recipe YAML")
    fused_grouped_mlp: bool = Field(False, description="the input's MoE experts run Transformer Engine's fused grouped MLP "
                                    "(--use-transformer-engine-op-fuser with --moe-grouped-gemm), which the projection prices")
    dp: int
    expert_dp: int
    world_size: int
    recipe: Recipe
    model: str
    hardware: str
    suggestion: Optional[dict[str, Any]] = Field(None, description="when illegal or not fitting: the nearest legal recipe that "
                                                 "fits, which the violations' fixes quote, or the fewest nodes that fit "
                                                 "(solver.suggest, shardplan/nearest_fix.py)")
    measured: Optional[dict[str, Any]] = Field(None, description="a training log: what the run measured in steady state "
                                               "(constraints/megatron/measured.py MeasuredRun, plus estimated_peak_bytes)")
    measured_vs_projected: Optional[dict[str, Any]] = Field(None, description="a training log: measured / projected step, "
                                                            "tokens/s/GPU and per-timer terms (shardplan/verdict.py)")
    calibration: Optional[str] = Field(None, description="the calibration file the projection used (`calibrate`), if any")
    software: Optional[dict[str, Any]] = Field(None, description="the stack generation projected with {value, source, month, "
                                               "missing, notes} (shardplan/software_input.py, docs/software.md)")
    model_params: Optional[dict[str, int]] = Field(None, description="the judged model's exact parameter counts {total, active} "
                                                   "(constraints/models/params.py), so a user can confirm the config was read as meant")
    memory_fraction: Optional[dict[str, Any]] = Field(None, description="the share of HBM a peak may reach and its source "
                                                      "(constraints/memory/allocator.py: learnt | --max-memory-fraction | calibration)")
    _case: Any = PrivateAttr(None)

    @property
    def ok(self) -> bool:
        """Legal and fits (the CLI's exit status 0)."""
        return self.legal and self.fits

    @property
    def case(self):
        """The judged `constraints.case.Case` (model, job, recipe, placement)."""
        return self._case

    @classmethod
    def of(cls, data: dict[str, Any], case) -> "CheckResult":
        """The result from check's JSON fields, remembering the judged Case (not part of the JSON)."""
        result = cls.model_validate(data)
        result._case = case
        return result


class Parallel(Result):
    """The parallel layout of one answer, with what follows from it (DP, expert-DP, micro-batches)."""

    tp: int
    pp: int
    vpp: int
    cp: int
    ep: int
    etp: int
    dp: int
    expert_dp: int
    mbs: int
    num_microbatches: int
    sequence_parallel: bool
    tp_comm_overlap: bool
    recompute: dict[str, Any]
    distributed_optimizer: bool
    dp_sharding: str
    schedule: str
    account_for_embedding_and_loss_in_pipeline_split: bool
    first_stage_layers: Optional[int]
    last_stage_layers: Optional[int]
    moe_dispatcher: str
    ep_comm_overlap: bool


class SolvedRecipe(Result):
    """One ranked answer of `solve`, re-verified by check."""

    parallel: Parallel
    recipe: Recipe
    step_time_us: int = Field(description="event-simulated step (displayed)")
    ranking_time_us: int = Field(description="closed-form step the ranking used")
    memory: MemorySummary
    projection: Optional[Projection]
    measured_step_s: Optional[float] = Field(None, description="with --calibration: the step a calibrating log measured "
                                             "for this very recipe (the answer is then ranked by it)")
    megatron_args: list[str] = Field(description="the full pretrain_gpt.py argument list")
    env: dict[str, Optional[str]] = Field(description="launch environment the rendered scripts export (None = must be unset)")


class RejectedRecipe(Result):
    recipe: dict[str, Any] = Field(description="the fields that differ from Recipe's defaults")
    why: Any


class FewestGpus(Result):
    target_tokens_per_s: Optional[float]
    tried: list[dict[str, Any]]


class RenderedFolder(Result):
    """What `solve --render DIR` wrote: the scripts, and the answers it wrote none for and why."""

    directory: str
    scripts: list[str] = Field(description="file names written, in rank order (SUMMARY.md beside them)")
    not_rendered: list[str] = Field(description="'rank N: why' for each answer pretrain_gpt.py cannot run as ranked")
    placeholders: list[str] = Field([], description="each `/path/to/...` placeholder the scripts hold (SUMMARY.md and "
                                    "each script's header list them too)")


class SolveResult(Result):
    """`solve`: ranked legal recipes, the proof and the searched space, as `solve --json` prints it."""

    _omit_when_none: ClassVar[tuple[str, ...]] = ("fewest_gpus", "explanation", "rendered", "calibration", "trials")
    recipes: list[SolvedRecipe]
    proven_optimal: bool
    bound: Optional[float] = Field(description="proven lower bound in the objective's unit (bound_unit)")
    bound_unit: str
    best_ranking_time_s: Optional[float]
    method: str
    space: dict[str, Any] = Field(description="declared points, structural rows, legal / fitting counts (or *_expanded)")
    evaluated: int
    proposer: Optional[HintReport]
    objective: str
    nodes: int
    best_objective: Optional[float]
    projection_calibrated: bool
    model_notes: list[str] = Field([], description="what the model's HF config reader did not follow (constraints/models/hf_reading.py)")
    job_warnings: list[str] = Field([], description="warnings of the rules that read no recipe field: they hold for every "
                                    "answer (constraints.rules.registry.recipe_free_violations), as 'rule: message (fix: ...)'")
    ignored_pins: list[str] = Field([], description="pins the model does not read (MoE-only options on a dense model), "
                                    "as 'option value: not applied: why'")
    rejected_by_check: list[RejectedRecipe]
    fewest_gpus: Optional[FewestGpus] = None
    explanation: Optional[dict[str, Any]] = Field(None, description="when nothing fits: the conflict and the remedies")
    rendered: Optional[RenderedFolder] = Field(None, description="with --render: what was written")
    calibration: Optional[str] = Field(None, description="the calibration file the ranking and projections used, if any")
    model: Optional[str] = Field(None, description="the model solved for, as read")
    model_params: Optional[dict[str, int]] = Field(None, description="its exact parameter counts {total, active}")
    software: Optional[dict[str, Any]] = Field(None, description="the stack generation the search kept to {value, source, month, "
                                               "missing, notes} (docs/software.md)")
    memory_fraction: Optional[dict[str, Any]] = Field(None, description="the share of HBM a peak may reach and its source "
                                                      "(constraints/memory/allocator.py: learnt | --max-memory-fraction | calibration)")
    trials: Optional[RenderedFolder] = Field(None, description="with trials: the short measuring runs written")
    _context: Any = PrivateAttr(None)

    @property
    def ok(self) -> bool:
        """At least one recipe (the CLI's exit status 0)."""
        return bool(self.recipes)

    @property
    def context(self):
        """(model, placement, job) the answer is for."""
        return self._context

    def for_context(self, model, placement, job) -> "SolveResult":
        """Remember (model spec, placement, job) the answer is for (not part of the JSON); returns self."""
        self._context = (model, placement, job)
        return self


class RenderResult(Result):
    """`render`: one launch script for a recipe."""

    format: str
    script: str
    path: Optional[str] = Field(None, description="where it was written, when asked to write it")
    problems: list[str] = Field(description="violations found by check (rendered anyway only with force=True)")
    model_notes: list[str] = Field([], description="what the model's HF config reader did not follow (constraints/models/hf_reading.py); "
                                   "the script renders the model as read")
    not_carried: list[str] = Field([], description="a source launch script's flags the rendered torchrun / slurm script "
                                   "leaves out or sets otherwise, one line each (`--train-iters 1000: rendered as 500000`)")
    placeholders: list[str] = Field([], description="each `/path/to/...` placeholder the text holds, one line each "
                                    "(also in its header): replace it, or render again with the option named")


class ModelInfo(Result):
    """One bundled model with its exact parameter counts."""

    name: str
    total_params: int
    active_params: int
    layers: int
    hidden_size: int
    moe: bool
    mla: bool
    num_experts: Optional[int]
    topk: Optional[int]
    hybrid_layer_pattern: Optional[str] = None  # Megatron --hybrid-layer-pattern (M Mamba-2, * attention, - MLP, E MoE)


class HardwareInfo(Result):
    """One bundled hardware profile (bandwidths per GPU, one direction)."""

    name: str
    description: str
    bf16_tflops: float
    fp8_tflops: Optional[float]
    hbm_capacity_bytes: int
    hbm_gib: float
    hbm_tb_per_s: float
    gpus_per_node: int
    scale_up_domain_size: int
    scale_up_gb_per_s: float
    scale_out_gb_per_s: float


def recipe_label(recipe, dp: int) -> str:
    """'TP8 PP4 VPP5 DP2 MBS1 SP sel-rc': the axes a reader compares first (sweep rows, report
    headings)."""
    r = recipe
    parts = [f"TP{r.tp}", f"PP{r.pp}"] + ([f"VPP{r.vpp}"] if r.vpp > 1 else []) + ([f"CP{r.cp}"] if r.cp > 1 else [])
    parts += ([f"EP{r.ep}"] if r.ep > 1 else []) + [f"DP{dp}", f"MBS{r.mbs}"]
    parts += (["SP"] if r.sp_active else []) + ({"selective": ["sel-rc"], "full": ["full-rc"]}.get(r.recompute.granularity.value, []))
    return " ".join(parts)
