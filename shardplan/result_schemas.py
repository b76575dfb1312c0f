"""The JSON Schema of every result the API returns (`shardplan schema`, `shardplan.schemas()`).

Why a module of its own: it names every result type, the sweep's too; shardplan.sweep builds on the API, which
builds on shardplan.results, so the registry sits above all three and none of them imports back up.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from shardplan.api_arguments.edge import api_edge
from shardplan.api_arguments.models import Arguments
from shardplan.results import CheckResult, HardwareInfo, ModelInfo, RenderResult, SolveResult
from shardplan.sweep import SweepResult

RESULT_TYPES: dict[str, type[BaseModel]] = {"check": CheckResult, "solve": SolveResult, "render": RenderResult,
                                            "models": ModelInfo, "hardware": HardwareInfo, "sweep": SweepResult}
# commands whose JSON is a list of results, one per bundled model / profile
LIST_RESULTS = ("models", "hardware")


@api_edge(Arguments)
def schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema of each command's JSON as it prints it: an object, or for `models` / `hardware` an array of
    objects (the item's definitions hoisted to the top, so its `$ref`s resolve from the array's root)."""
    out = {}
    for name, cls in RESULT_TYPES.items():
        schema = cls.model_json_schema(mode="serialization")
        if name in LIST_RESULTS:
            defs = schema.pop("$defs", None)
            schema = {"title": f"{cls.__name__} list", "type": "array", "items": schema, **({"$defs": defs} if defs else {})}
        out[name] = schema
    return out
