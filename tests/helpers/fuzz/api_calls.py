"""Second-round API inputs (issue 33): every public function of `shardplan` (its `__all__`) called with valid
arguments except one or two of the wrong type or out of range.

Why generated from the signatures: a new parameter is fuzzed the day it is added. The judge (run.py) wants either
an answer or a `ShardplanError`; a TypeError, ValueError, AttributeError, RecursionError, MemoryError or an internal
alarm leaking out of the API is a failure (`solve(model=None)`, `nodes="8"`, `sweep(nodes=range(1, 100_000))` once
were).
"""
from __future__ import annotations

from pathlib import Path

from tests.helpers.fuzz.choice import Case, chance, pick

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = str(REPO / "constraints" / "examples" / "llama3-70b-h100.yaml")
LOG = str(REPO / "tests" / "data" / "logs" / "swift_qwen2_0p5b_megatron_core.log")
# a cheap valid call of each function, so one wrong argument is what the call is about
VALID = {
    "check": {"source": EXAMPLE},
    "solve": {"model": "Llama-3.1-8B", "hardware": "h100-sxm-80gb", "nodes": 1, "seq_length": 1024,
              "global_batch_size": 16, "top": 1, "proposer": "none", "time_limit_s": 20.0, "max_time_s": 40.0},
    "render": {"source": EXAMPLE},
    "sweep": {"model": "Llama-3.1-8B", "hardware": "h100-sxm-80gb", "nodes": "1", "seq_length": 1024, "global_batch_size": 16},
    "calibrate": {"logs": [LOG], "hardware": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 1},
    "models": {},
    "hardware": {},
    "schemas": {},
}


class Unprintable:
    """An object whose repr and str raise: an error message must not depend on printing the value."""

    def __repr__(self) -> str:
        raise RuntimeError("repr")

    __str__ = __repr__


def wrong_values():
    """The wrong-typed and out-of-range values a careless caller passes (rebuilt per call: some are mutable)."""
    deep: list = []
    for _ in range(3000):
        deep = [deep]
    return [None, "8", "", "x" * 70_000, ["h100"], [], {"a": 1}, {}, 1e300, float("nan"), float("inf"), -1, 0, 10**30,
            True, b"bytes", range(1, 100_000), list(range(300)), object(), Unprintable(), Path("/dev/zero"), deep, 0.5,
            "most", "1..100000", (1, 2, 3), {1, 2}, -0.0, 2**63]


def api_case(c) -> Case:
    import inspect

    import shardplan

    name = pick(c, [n for n in VALID if n != "schemas"] + ["solve", "check", "render", "sweep"])
    fn = getattr(shardplan, name)
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    kwargs = dict(VALID[name])
    for _ in range(c.int(1, 2) if params else 0):
        kwargs[pick(c, params).name] = pick(c, wrong_values())
    if name == "render" and chance(c, 30):
        kwargs[pick(c, ["data_path", "tokenizer_model", "checkpoint_dir", "megatron_path", "bogus_path"])] = pick(c, wrong_values())
    return Case("api", [], call=(name, kwargs))
