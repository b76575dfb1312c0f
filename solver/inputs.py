"""Turn what a user hands `check` (a YAML recipe, a Megatron launch script or argument file) into a Case.

Why here: the CLI stays a thin layer, and the solver's `check --suggest` and the round-trip tests read
files through the same path as users do.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from constraints.case import Case, CaseError, case_from_mapping
from constraints.models import load_model
from constraints.spec import Placement


class InputError(ValueError):
    """Unusable input (exit status 2); one line naming the field and the fix."""


@dataclass
class LoadedCase:
    case: Case
    flags: dict = field(default_factory=dict)
    env: Optional[dict] = None
    unknown_flags: list = field(default_factory=list)
    ignored_flags: list = field(default_factory=list)
    source: str = "yaml"


def _looks_like_recipe_yaml(path: Path, text: str) -> Optional[dict]:
    if path.suffix not in (".yaml", ".yml"):
        return None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: a recipe YAML must be a mapping with model, hardware, nodes, gpus_per_node, job, recipe")
    return data


def load_check_input(path: str, hardware: Optional[str], nodes: Optional[int], gpus_per_node: Optional[int],
                     model: Optional[str] = None) -> LoadedCase:
    """A Case from FILE; command-line --hardware/--nodes/--gpus-per-node/--model override or complete it."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    data = _looks_like_recipe_yaml(p, text)
    if data is not None:
        data = dict(data)
        for key, value in (("hardware", hardware), ("nodes", nodes), ("gpus_per_node", gpus_per_node), ("model", model)):
            if value is not None:
                data[key] = value
        try:
            return LoadedCase(case=case_from_mapping(data, p.parent))
        except CaseError as exc:
            raise InputError(str(exc)) from None
    return _load_megatron(text, hardware, nodes, gpus_per_node, model)


def _load_megatron(text: str, hardware, nodes, gpus_per_node, model_ref) -> LoadedCase:
    from constraints.launch_script import extract_argv
    from constraints.megatron_args import parse_megatron_args

    try:
        launch = extract_argv(text)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    dist = launch.distributed or {}
    nodes = nodes or _int_or_none(dist.get("nnodes"))
    gpus_per_node = gpus_per_node or _int_or_none(dist.get("nproc_per_node"))
    if hardware is None:
        raise InputError("--hardware: a Megatron script does not name the GPU; pass --hardware NAME|PATH (see `shardplan hardware`)")
    if not nodes or not gpus_per_node:
        raise InputError("--nodes/--gpus-per-node: the script does not fix the world size; pass --nodes N --gpus-per-node G")
    try:
        cfg = parse_megatron_args(list(launch.script_args), world_size=nodes * gpus_per_node)
    except TypeError:
        cfg = parse_megatron_args(list(launch.script_args))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    model = load_model(model_ref) if model_ref else cfg.model
    if model is None:
        raise InputError("--model: the arguments hold no model shape (--num-layers, --hidden-size, ...); pass --model NAME|PATH")
    try:
        placement = Placement(hardware=hardware, num_nodes=nodes, gpus_per_node=gpus_per_node)
        case = Case(model=model, job=cfg.job, recipe=cfg.recipe, placement=placement)
    except ValueError as exc:
        raise InputError(str(exc).splitlines()[0]) from None
    return LoadedCase(case=case, flags=dict(getattr(cfg, "raw", {}) or {}), env=dict(launch.env or {}),
                      unknown_flags=list(cfg.unknown_flags), ignored_flags=list(getattr(cfg, "ignored_flags", [])),
                      source="megatron")


def _int_or_none(value) -> Optional[int]:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
