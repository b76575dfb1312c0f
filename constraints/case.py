"""A case: one model, job, recipe and placement together — what `check` judges and `render` writes.

The YAML recipe file (schema in docs/recipe-yaml.md) is the human-written form:

    model: Llama-3.1-70B            # bundled name, a path, or an inline ModelSpec mapping
    hardware: h100-sxm-80gb         # profile name or path
    nodes: 8
    gpus_per_node: 8
    job: {seq_length: 8192, global_batch_size: 128, precision: bf16}
    recipe: {tp: 8, pp: 2, vpp: 5, schedule: interleaved, mbs: 1, sequence_parallel: true,
             recompute: {granularity: selective, modules: [core_attn]}}
    software: megatron-bridge:26.08  # optional: the stack generation (docs/software.md)
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import ValidationError, model_validator

from boundary.errors import InputRefused, ShardplanError
from boundary.parse import load_yaml
from boundary.read import is_regular_file, read_text
from boundary.show import validation_line
from boundary.write import atomic_write_text  # noqa: F401  (re-exported: the writers import it from here)
from constraints.memory.magnitudes import magnitude_error
from constraints.models.load import ModelError, load_model, model_from_mapping
from constraints.spec import BOUND_REASONS, JobSpec, ModelSpec, Placement, Recipe, Strict


class CaseError(ShardplanError):
    """A recipe file that cannot be used; the message is one line naming the field and the fix."""


class Case(Strict):
    model: ModelSpec
    job: JobSpec
    recipe: Recipe
    placement: Placement

    @property
    def world_size(self) -> int:
        return self.placement.world_size

    @model_validator(mode="after")
    def _in_integer_range(self) -> "Case":
        error = magnitude_error(self.model, self.job)
        if error:
            raise ValueError(error)
        return self


# recipe fields that take a mapping, with an example of one (a plain value there gets it as its fix)
MAPPING_SHAPES = {"recompute": "{granularity: selective} or {granularity: full, method: uniform, num_layers: 1}"}


def _one_line(exc: ValidationError, prefix: str, rename: dict[str, str] | None = None,
              fields: Iterable[str] = ()) -> str:
    """First pydantic error as `prefix.field: message (got value)`; `rename` maps spec fields to the file's keys; for a
    key the section does not have, the nearest of its `fields` is named (`job.precison` -> precision)."""
    line = prefix + validation_line(exc, rename, BOUND_REASONS, MAPPING_SHAPES)
    err = exc.errors()[0]
    if err.get("type") == "extra_forbidden" and err.get("loc"):
        near = difflib.get_close_matches(str(err["loc"][-1]), list(fields), n=1, cutoff=0.8)
        if near:
            line += f"; did you mean {prefix}{near[0]}?"
    return line


# `software` (STACK:VERSION, docs/software.md) is read by constraints/read.py beside the case, not part of it
_TOP_KEYS = {"model", "hardware", "nodes", "gpus_per_node", "job", "recipe", "software"}
_PLACEMENT_KEYS = {"num_nodes": "nodes"}  # Placement field -> the recipe file's key


def case_from_mapping(data: dict[str, Any], base_dir: Path | None = None) -> Case:
    """Build a Case from the YAML mapping; model and hardware profile paths are resolved relative to the file
    (`base_dir`), as a reader of the file expects, and fall back to the working directory or a bundled name."""
    if not isinstance(data, dict):
        raise CaseError("recipe file must be a mapping with keys: " + ", ".join(sorted(_TOP_KEYS)))
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise CaseError(f"recipe file: unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(_TOP_KEYS))}")
    for key in ("model", "hardware", "nodes", "gpus_per_node", "job", "recipe"):
        if key not in data:
            raise CaseError(f"recipe file: missing key {key!r}")
    raw_model = data["model"]
    try:
        if isinstance(raw_model, dict):
            model = model_from_mapping(raw_model, raw_model.get("name", "model"))
        else:
            ref = str(raw_model)
            if base_dir is not None and is_regular_file(base_dir / ref):
                ref = str(base_dir / ref)
            model = load_model(ref)
    except ModelError as exc:
        raise CaseError(str(exc)) from None
    for key, cls in (("job", JobSpec), ("recipe", Recipe)):
        if not isinstance(data[key], dict):
            raise CaseError(f"recipe file: {key} must be a mapping of {cls.__name__} fields")
    try:
        job = JobSpec(**data["job"])
    except ValidationError as exc:
        raise CaseError(_one_line(exc, "job.", fields=JobSpec.model_fields)) from None
    try:
        recipe = Recipe(**data["recipe"])
    except ValidationError as exc:
        raise CaseError(_one_line(exc, "recipe.", fields=Recipe.model_fields)) from None
    hardware = str(data["hardware"])
    if base_dir is not None and is_regular_file(base_dir / hardware):
        hardware = str(base_dir / hardware)
    try:
        placement = Placement(hardware=hardware, num_nodes=data["nodes"], gpus_per_node=data["gpus_per_node"])
    except ValidationError as exc:
        raise CaseError(_one_line(exc, "", rename=_PLACEMENT_KEYS)) from None
    error = magnitude_error(model, job)
    if error:
        raise CaseError(error)
    return Case(model=model, job=job, recipe=recipe, placement=placement)


def load_case_yaml(path: str | Path, overrides: Mapping[str, Any] | None = None) -> Case:
    """The case of a recipe YAML; `overrides` (top-level keys such as hardware / nodes / gpus_per_node, None = keep
    the file's) replace what the file states, as the command-line options of `check` and `render` do."""
    path = Path(path)
    try:
        data = load_yaml(read_text(path, "recipe", f"recipe file {path}"), "recipe", f"recipe file {path}")
    except InputRefused as exc:
        raise CaseError(str(exc)) from None
    if overrides and isinstance(data, dict):
        data = {**data, **{key: value for key, value in overrides.items() if value is not None}}
    return case_from_mapping(data, path.parent)
