"""The JSON Schema of every result the API returns (`shardplan schema`, `shardplan.schemas()`).

Why a module of its own: it names every result type, the sweep's too; shardplan.sweep builds on the API, which
builds on shardplan.results, so the registry sits above all three and none of them imports back up.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from shardplan.results import CheckResult, HardwareInfo, ModelInfo, RenderResult, SolveResult
from shardplan.sweep import SweepResult

RESULT_TYPES: dict[str, type[BaseModel]] = {"check": CheckResult, "solve": SolveResult, "render": RenderResult,
                                            "models": ModelInfo, "hardware": HardwareInfo, "sweep": SweepResult}


def schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema of each command's result (for `models` / `hardware`: of one list item)."""
    return {name: cls.model_json_schema(mode="serialization") for name, cls in RESULT_TYPES.items()}
