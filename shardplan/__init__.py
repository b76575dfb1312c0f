"""shardplan as a library: which Megatron-LM parallelism recipe to launch, whether it fits, how fast it runs.

    import shardplan
    best = shardplan.solve("Llama-3.1-8B", "h100-sxm-80gb", nodes=1, seq_length=8192, global_batch_size=64, top=3)
    verdict = shardplan.check(shardplan.examples.path("llama3-70b-h100"))

Every function returns a typed pydantic result (shardplan.results, shardplan.sweep) — the same object the CLI prints and
`--format json` dumps (`result.to_json()`); `schemas()` gives each result's JSON Schema. Unusable input raises
`ShardplanError` (boundary/errors.py: ArgumentError for a wrong argument, the reader's own subclasses for a bad file,
RenderRefused when a recipe is not legal, LimitExceeded, InternalError for a bug). `shardplan.examples` names the bundled
example recipes wherever the caller runs.
"""
from boundary.errors import ArgumentError, InputFileError, InternalError, LimitExceeded, NotLegal, ShardplanError
from shardplan import examples
from shardplan.api import calibrate, check, hardware, models, render, solve
from shardplan.result_schemas import schemas
from shardplan.results import CheckResult, HardwareInfo, ModelInfo, RenderResult, SolvedRecipe, SolveResult
from shardplan.sweep import SweepResult, sweep  # shardplan.sweep is the function (import the module's other names with from shardplan.sweep import ...)

__all__ = ["ShardplanError", "ArgumentError", "InputFileError", "NotLegal", "LimitExceeded", "InternalError", "examples",
           "check", "solve", "calibrate", "render", "models", "hardware", "schemas", "CheckResult", "SolveResult",
           "SolvedRecipe", "RenderResult", "ModelInfo", "HardwareInfo", "sweep", "SweepResult"]
