"""Argument types of the public API, strict where a wrong type must be refused: pydantic's lax mode reads "8" as 8,
True as 1 and "0.9" as 0.9, so `nodes="8"` would pass here and fail later, far from the call. Every bound comes from
shardplan/api_arguments/bounds.py or from the data model's own field (constraints/spec.py), never a copy."""
from __future__ import annotations

from pathlib import PurePath
from typing import Annotated, Literal, Optional, Union

from annotated_types import Ge, Gt, Le, Lt
from pydantic import AfterValidator, Field, Strict, StrictBool, StrictStr

from constraints.spec import MAX_WORLD_SIZE, JobSpec, Placement
from shardplan.api_arguments.bounds import MAX_NODE_TEXT_CHARS, MAX_PATH_CHARS, MAX_RANGE_CHARS, MAX_SWEEP_SIZES


def _bounds(model, field: str) -> list:
    """The numeric bounds (Gt / Ge / Lt / Le) a data-model field declares, to bound an argument exactly as that field."""
    return [m for m in model.model_fields[field].metadata if isinstance(m, (Gt, Ge, Lt, Le))]


def choice(values) -> object:
    """A Literal of `values` (an enum's values or a tuple), so an unknown choice names every allowed one."""
    return Literal[tuple(v.value if hasattr(v, "value") else v for v in values)]


def _path_text(value: Union[str, PurePath]) -> Union[str, PurePath]:
    text = str(value)
    if not text.strip():
        raise ValueError("empty")
    if "\0" in text:
        raise ValueError("holds a NUL byte, which no file name can")
    if len(text) > MAX_PATH_CHARS:
        raise ValueError(f"{len(text):,} characters, longer than any path ({MAX_PATH_CHARS:,})")
    return value


# a bundled name or a path, as a str (a model, a hardware profile, an output folder): the bodies treat these as text
PathOrName = Annotated[StrictStr, AfterValidator(_path_text)]
OptionalPath = Optional[PathOrName]
# the file a function reads (check's and render's source): a str or a pathlib path
SourceFile = Annotated[Union[StrictStr, PurePath], AfterValidator(_path_text)]
Flag = StrictBool
OptionalFlag = Optional[StrictBool]

# counts that the data model bounds
Nodes = Annotated[(int, Strict(), *_bounds(Placement, "num_nodes"))]
GpusPerNode = Annotated[(int, Strict(), *_bounds(Placement, "gpus_per_node"))]
SeqLength = Annotated[(int, Strict(), *_bounds(JobSpec, "seq_length"))]
GlobalBatchSize = Annotated[(int, Strict(), *_bounds(JobSpec, "global_batch_size"))]


def count(lo: int, hi: int) -> object:
    """An int in [lo, hi] (never a bool, a float or a text)."""
    return Annotated[int, Strict(), Ge(lo), Le(hi)]


def number(lo: float, hi: float, lo_open: bool = False) -> object:
    """A finite float (an int is one too) in [lo, hi], or (lo, hi] with `lo_open`; never a bool or a text."""
    return Annotated[float, Strict(), Field(allow_inf_nan=False), Gt(lo) if lo_open else Ge(lo), Le(hi)]


# tp .. mbs: N, 'N', 'LO..HI' or (lo, hi) (solver.workflow.collect_pins parses the text and says what is wrong with it)
AxisCount = Annotated[int, Strict(), Ge(1), Le(MAX_WORLD_SIZE)]
AxisRange = Optional[Union[AxisCount, Annotated[StrictStr, Field(min_length=1, max_length=MAX_RANGE_CHARS)],
                           tuple[AxisCount, AxisCount]]]

# sweep's node counts: parse_nodes' text, or a list of counts
NodeList = Annotated[list[Nodes], Field(min_length=1, max_length=MAX_SWEEP_SIZES)]
SweepNodes = Union[Annotated[StrictStr, Field(min_length=1, max_length=MAX_NODE_TEXT_CHARS)], NodeList]
