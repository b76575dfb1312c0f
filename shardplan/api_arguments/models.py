"""One model of arguments per public API function: the same names, types and defaults as the function's signature,
with the CLI's ranges (shardplan/api_arguments/bounds.py) and the data model's (constraints/spec.py). Each field's
description says what to give: shardplan/api_arguments/messages.py puts it into the one-line error.

render's **paths take RenderPaths' fields (templates/recipe_args.py), read from that dataclass, so a path a render
option adds is an argument here too."""
from __future__ import annotations

import dataclasses
import typing
from typing import Annotated, Any, Mapping, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictStr, create_model

from constraints.spec import DataParallelSharding, MoeDispatcher, PipelineSchedule, Precision, RecomputeGranularity
from shardplan.api_arguments.bounds import (
    MAX_LOGS,
    MAX_MEMORY_FRACTION,
    MAX_SWEEP_PROFILES,
    MAX_TOP,
    MAX_TRAIN_TOKENS,
    MAX_TRIALS,
    MAX_USD_PER_GPU_HOUR,
    MIN_MEMORY_FRACTION,
    MIN_TIME_LIMIT_S,
    SOLVE_DP_SHARDINGS,
)
from shardplan.api_arguments.types import (
    AxisRange,
    Flag,
    GlobalBatchSize,
    GpusPerNode,
    Nodes,
    OptionalFlag,
    OptionalPath,
    PathOrName,
    SeqLength,
    SourceFile,
    SweepNodes,
    choice,
    count,
    number,
)
from solver.deadline import MAX_MAX_TIME_S
from solver.objective import OBJECTIVE_NAMES
from solver.proposer.config import ProposerConfig
from templates.recipe_args import RenderPaths
from templates.render import RENDER_FORMATS

assert set(SOLVE_DP_SHARDINGS) <= {s.value for s in DataParallelSharding}  # the solver's choices are the spec's

Fraction = number(MIN_MEMORY_FRACTION, MAX_MEMORY_FRACTION)
ProposerKind = ProposerConfig.model_fields["kind"].annotation
FRACTION = f"give a fraction of HBM in {MIN_MEMORY_FRACTION}..{MAX_MEMORY_FRACTION}, e.g. 0.9"
SOURCE = "give a file path (a recipe YAML, launch script, stack config or training log) or a recipe mapping"
HARDWARE = "give a hardware profile name (shardplan.hardware() lists them, e.g. 'h100-sxm-80gb') or a YAML path"
MODEL = "give a bundled model name (shardplan.models() lists them, e.g. 'Llama-3.1-8B') or a config path"
NODES = "give the number of nodes as an int, e.g. 8"
GPUS = "give GPUs per node as an int, e.g. 8, or None for the profile's"
AXIS = "give N, 'LO..HI' or (lo, hi) with ints, e.g. 8, '2..8' or (2, 8)"


class Arguments(BaseModel):
    """The base: unknown arguments refused, nothing coerced that the function would read otherwise."""

    model_config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)


MAX_SCRIPT_ARGS = 1024  # a launch script's positional arguments or environment entries: real ones are a handful
ScriptWord = Annotated[str, Field(max_length=65_536)]  # one word: boundary/limits.py's longest string
EnvName = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


# the stack generation (constraints/software/generation.py reads it; a bad value is refused there in one line)
SoftwareText = Annotated[StrictStr, Field(min_length=1, max_length=128)]
SOFTWARE = "give STACK:VERSION as a str, e.g. 'megatron-bridge:26.08' or 'megatron-lm:2021-04', or None (docs/software.md)"


class CheckArguments(Arguments):
    source: Union[SourceFile, Mapping[str, Any]] = Field(description=SOURCE)
    hardware: Optional[PathOrName] = Field(None, description=HARDWARE)
    nodes: Optional[Nodes] = Field(None, description=NODES)
    gpus_per_node: Optional[GpusPerNode] = Field(None, description=GPUS)
    model: Optional[PathOrName] = Field(None, description=MODEL)
    max_memory_fraction: Optional[Fraction] = Field(None, description=FRACTION + "; None: the learnt default (docs/memory.md)")
    project: Flag = Field(True, description="give True or False")
    suggest: Flag = Field(False, description="give True or False")
    calibration: OptionalPath = Field(None, description="give the path of a file `calibrate` wrote, or None")
    software: Optional[SoftwareText] = Field(None, description=SOFTWARE)
    # what `check SCRIPT -- ARG...` and `--env NAME=VALUE` give a launch script (constraints/script/)
    script_args: Annotated[Union[list[ScriptWord], tuple[ScriptWord, ...]], Field(max_length=MAX_SCRIPT_ARGS)] = Field(
        (), description=f"give the script's positional arguments as a list of at most {MAX_SCRIPT_ARGS} str")
    env: Optional[Annotated[dict[EnvName, ScriptWord], Field(max_length=MAX_SCRIPT_ARGS)]] = Field(
        None, description=f"give the launch environment as a mapping of at most {MAX_SCRIPT_ARGS} NAME: value str, or None")


class SolveArguments(Arguments):
    model: PathOrName = Field(description=MODEL)
    hardware: PathOrName = Field(description=HARDWARE)
    nodes: Nodes = Field(description=NODES)
    seq_length: SeqLength = Field(description="give the tokens per sample as an int, e.g. 8192")
    global_batch_size: GlobalBatchSize = Field(description="give the samples per optimizer step as an int, e.g. 128")
    gpus_per_node: Optional[GpusPerNode] = Field(None, description=GPUS)
    precision: choice(Precision) = Field("bf16", description="give one of " + ", ".join(p.value for p in Precision))
    top: count(1, MAX_TOP) = Field(10, description=f"give the number of answers as an int in 1..{MAX_TOP}")
    tp: AxisRange = Field(None, description=AXIS)
    pp: AxisRange = Field(None, description=AXIS)
    vpp: AxisRange = Field(None, description=AXIS)
    cp: AxisRange = Field(None, description=AXIS)
    ep: AxisRange = Field(None, description=AXIS)
    etp: AxisRange = Field(None, description=AXIS)
    mbs: AxisRange = Field(None, description=AXIS)
    schedule: Optional[choice(PipelineSchedule)] = Field(
        None, description="give one of " + ", ".join(s.value for s in PipelineSchedule) + ", or None")
    recompute: Optional[choice(RecomputeGranularity)] = Field(
        None, description="give one of " + ", ".join(g.value for g in RecomputeGranularity) + ", or None")
    sequence_parallel: OptionalFlag = Field(None, description="give True, False or None")
    tp_comm_overlap: OptionalFlag = Field(None, description="give True, False or None")
    dp_sharding: Optional[choice(SOLVE_DP_SHARDINGS)] = Field(
        None, description="give one of " + ", ".join(SOLVE_DP_SHARDINGS) + ", or None")
    moe_dispatcher: Optional[choice(MoeDispatcher)] = Field(
        None, description="give one of " + ", ".join(d.value for d in MoeDispatcher) + ", or None")
    ep_comm_overlap: OptionalFlag = Field(None, description="give True, False or None")
    uneven_stages: OptionalFlag = Field(None, description="give True, False or None")
    max_memory_fraction: Optional[Fraction] = Field(None, description=FRACTION + "; None: the learnt default (docs/memory.md)")
    objective: choice(OBJECTIVE_NAMES) = Field("throughput", description="give one of " + ", ".join(OBJECTIVE_NAMES))
    target_tokens_per_s: Optional[number(0.0, float("inf"), lo_open=True)] = Field(
        None, description="give the total tokens/s to reach as a positive number, or None")
    method: choice(("cpsat", "exhaustive")) = Field("cpsat", description="give 'cpsat' or 'exhaustive'")
    time_limit_s: number(MIN_TIME_LIMIT_S, float("inf")) = Field(
        60.0, description=f"give CP-SAT's time limit in seconds, a number of at least {MIN_TIME_LIMIT_S}")
    proposer: Union[ProposerKind, ProposerConfig] = Field(
        "rules", description="give 'none', 'rules' or a solver.proposer.config.ProposerConfig")
    render_dir: OptionalPath = Field(None, description="give a folder path, or None")
    max_time_s: number(0.0, MAX_MAX_TIME_S, lo_open=True) = Field(
        300.0, description=f"give the wall-clock seconds of the whole solve, a number in (0, {MAX_MAX_TIME_S:g}]")
    calibration: OptionalPath = Field(None, description="give the path of a file `calibrate` wrote, or None")
    trials: Optional[count(1, MAX_TRIALS)] = Field(None, description=f"give the number of trials as an int in 1..{MAX_TRIALS}, or None")
    trials_dir: OptionalPath = Field(None, description="give a folder path, or None")
    software: Optional[SoftwareText] = Field(None, description=SOFTWARE)


def _render_path_type(hint) -> object:
    """A text field of RenderPaths (a path, a tokenizer name) is a name or path here; any other keeps its own type."""
    return OptionalPath if hint in (str, Optional[str]) else Optional[hint]


def _render_path_description(name: str, hint) -> str:
    what = "a path or name as a str" if hint in (str, Optional[str]) else ("True or False" if hint in (bool, Optional[bool])
                                                                            else f"a {getattr(hint, '__name__', hint)}")
    return f"give {what}, or None ({name} of templates.recipe_args.RenderPaths)"


RenderPathArguments = create_model(
    "RenderPathArguments", __base__=Arguments,
    **{f.name: (_render_path_type(hint), Field(None, description=_render_path_description(f.name, hint)))
       for f, hint in zip(dataclasses.fields(RenderPaths), typing.get_type_hints(RenderPaths).values())})


class RenderArguments(RenderPathArguments):
    source: Union[SourceFile, Mapping[str, Any]] = Field(description=SOURCE)
    format: choice(RENDER_FORMATS) = Field("torchrun", description="give one of " + ", ".join(RENDER_FORMATS))
    output: OptionalPath = Field(None, description="give the file path to write, or None")
    force: Flag = Field(False, description="give True or False")
    hardware: Optional[PathOrName] = Field(None, description=HARDWARE)
    nodes: Optional[Nodes] = Field(None, description=NODES)
    gpus_per_node: Optional[GpusPerNode] = Field(None, description=GPUS)
    slurm: Optional[Annotated[dict[str, Any], Field(max_length=16)]] = Field(
        None, description="give a mapping of sbatch settings (templates.slurm_options.SlurmOptions fields), or None")


class SweepArguments(Arguments):
    model: PathOrName = Field(description=MODEL)
    hardware: Union[PathOrName, Annotated[list[PathOrName], Field(max_length=MAX_SWEEP_PROFILES)]] = Field(
        description=f"give a hardware profile name, a comma-separated text or a list of at most {MAX_SWEEP_PROFILES} names")
    nodes: SweepNodes = Field(description="give node counts as a text ('1..64', '1,2,4,8', '8..64+8') or a list of ints")
    seq_length: SeqLength = Field(description="give the tokens per sample as an int, e.g. 8192")
    global_batch_size: GlobalBatchSize = Field(description="give the samples per optimizer step as an int, e.g. 128")
    gpus_per_node: Optional[GpusPerNode] = Field(None, description=GPUS)
    precision: choice(Precision) = Field("bf16", description="give one of " + ", ".join(p.value for p in Precision))
    max_memory_fraction: Optional[Fraction] = Field(None, description=FRACTION + "; None: the learnt default (docs/memory.md)")
    train_tokens: Optional[number(0.0, MAX_TRAIN_TOKENS, lo_open=True)] = Field(
        None, description=f"give the tokens to train as a positive number up to {MAX_TRAIN_TOKENS:g}, e.g. 1e12, or None")
    usd_per_gpu_hour: Optional[number(0.0, MAX_USD_PER_GPU_HOUR)] = Field(
        None, description=f"give a price per GPU-hour in 0..{MAX_USD_PER_GPU_HOUR:g}, or None")
    calibration: OptionalPath = Field(None, description="give the path of a file `calibrate` wrote, or None")
    software: Optional[SoftwareText] = Field(None, description=SOFTWARE)


class CalibrateArguments(Arguments):
    logs: Annotated[Union[list[PathOrName], tuple[PathOrName, ...]], Field(min_length=1, max_length=MAX_LOGS)] = Field(
        description=f"give a list of 1..{MAX_LOGS} training log paths")
    hardware: PathOrName = Field(description=HARDWARE)
    nodes: Optional[Nodes] = Field(None, description=NODES + ", or None for the log's")
    gpus_per_node: Optional[GpusPerNode] = Field(None, description=GPUS)
    model: Optional[PathOrName] = Field(None, description=MODEL + ", or None")
    output: OptionalPath = Field(None, description="give the file path to write, or None")


class ExampleArguments(Arguments):
    name: PathOrName = Field(description="give a bundled example's name as a str (shardplan.examples.names() lists them)")
