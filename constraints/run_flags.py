"""How a Megatron command line says its run executes, beyond the recipe: which kernels it captures in CUDA graphs.

Why apart from the spec builders: a CUDA graph is not part of a parallel recipe (the solver searches none, `Recipe`
has no field for it), but it changes how fast the recipe runs: captured kernels cost the host nothing per launch
(measure/cuda_graphs.py says what each scope removes from the projection). `check` on a launch script or a stack
config reads it here and passes it to the projection, as the published rows pass their preset's (bench/runs.py).

Megatron-LM @ d98e8a64, megatron/training/arguments.py:
- `--cuda-graph-impl` none | local | transformer_engine | full_iteration (default none);
- `--enable-cuda-graph` (deprecated) is `--cuda-graph-impl local`, `--external-cuda-graph` (deprecated) is
  `--cuda-graph-impl transformer_engine` (validate_args; either with `--cuda-graph-impl` is refused there);
- `--cuda-graph-modules` (and its deprecated spelling `--cuda-graph-scope`, dest cuda_graph_scope_deprecated; both
  together are refused) lists attn, mlp, moe, moe_router, moe_preprocess, mamba; empty or `full` captures the whole
  layer, and the deprecated module `full_iteration` means `--cuda-graph-impl full_iteration`
  (megatron/core/transformer/cuda_graph_config.py normalize_cuda_graph_modules, CUDA_GRAPH_MODULES_DEPRECATIONS).
"""
from __future__ import annotations

from typing import Optional

# the flags this module reads (constraints/megatron_flags.py PROJECTION_FLAGS lists them as understood)
GRAPH_IMPL_FLAG = "--cuda-graph-impl"
GRAPH_MODULES_FLAGS = ("--cuda-graph-modules", "--cuda-graph-scope")
LOCAL_GRAPH_FLAG, TE_GRAPH_FLAG = "--enable-cuda-graph", "--external-cuda-graph"


def cuda_graph_request(raw: dict) -> tuple[Optional[str], list[str]]:
    """(implementation, modules) the parsed flags ask for: the implementation None when nothing is captured."""
    impl = raw.get(GRAPH_IMPL_FLAG)
    if impl in (None, "none"):
        impl = "local" if raw.get(LOCAL_GRAPH_FLAG) else "transformer_engine" if raw.get(TE_GRAPH_FLAG) else None
    modules: list[str] = []
    for flag in GRAPH_MODULES_FLAGS:
        value = raw.get(flag)
        if value:
            modules += [value] if isinstance(value, str) else [str(v) for v in value]
    return impl, modules
