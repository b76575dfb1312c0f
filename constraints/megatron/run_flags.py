"""How a Megatron command line says its run executes, beyond the recipe: which kernels it captures in CUDA graphs,
whether its MoE experts run Transformer Engine's fused grouped MLP, and whether its MoE router is force-balanced.

Why apart from the spec builders: a CUDA graph is not part of a parallel recipe (the solver searches none, `Recipe`
has no field for it), but it changes how fast the recipe runs: captured kernels cost the host nothing per launch
(measure/kernels/cuda_graphs.py says what each scope removes from the projection). `check` on a launch script or a stack
config reads it here and passes it to the projection, as the published rows pass their preset's (bench/runs.py).

Megatron-LM @ d98e8a64, megatron/training/arguments.py:
- `--cuda-graph-impl` none | local | transformer_engine | full_iteration (default none);
- `--enable-cuda-graph` (deprecated) is `--cuda-graph-impl local`, `--external-cuda-graph` (deprecated) is
  `--cuda-graph-impl transformer_engine` (validate_args; either with `--cuda-graph-impl` is refused there);
- `--cuda-graph-modules` (and its deprecated spelling `--cuda-graph-scope`, dest cuda_graph_scope_deprecated; both
  together are refused) lists attn, mlp, moe, moe_router, moe_preprocess, mamba; empty or `full` captures the whole
  layer, and the deprecated module `full_iteration` means `--cuda-graph-impl full_iteration`
  (megatron/core/transformer/cuda_graph_config.py normalize_cuda_graph_modules, CUDA_GRAPH_MODULES_DEPRECATIONS).
- `--use-transformer-engine-op-fuser` on a MoE model with `--moe-grouped-gemm`: TEGroupedMLP takes its fused
  implementation (megatron/core/transformer/moe/experts.py, `_with_fused_impl`, which asserts it is supported), what
  Megatron-Bridge's performance presets call `cutedsl_fused_grouped_mlp` (scripts/performance/utils/overrides.py sets
  `use_transformer_engine_op_fuser` for it, NVIDIA-NeMo/Megatron-Bridge @ 067f987d). On a dense model the flag swaps the
  MLP for TE's op-fuser modules (megatron/training/models/gpt.py `use_te_op_fuser`), which is not modelled: there the
  flag stays "not understood".
"""
from __future__ import annotations

from typing import Optional

# the flags this module reads (constraints/megatron/flags.py PROJECTION_FLAGS lists them as understood)
GRAPH_IMPL_FLAG = "--cuda-graph-impl"
GRAPH_MODULES_FLAGS = ("--cuda-graph-modules", "--cuda-graph-scope")
LOCAL_GRAPH_FLAG, TE_GRAPH_FLAG = "--enable-cuda-graph", "--external-cuda-graph"
OP_FUSER_FLAG = "--use-transformer-engine-op-fuser"
FORCE_BALANCE_FLAG = "--moe-router-force-load-balancing"


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


def fused_grouped_mlp_requested(raw: dict, is_moe: bool, grouped_gemm: bool) -> bool:
    """The experts run TE's fused grouped MLP (module docstring): the op fuser on a grouped-GEMM MoE model."""
    return bool(raw.get(OP_FUSER_FLAG)) and is_moe and grouped_gemm


def natural_routing_requested(raw: dict, is_moe: bool) -> bool:
    """A MoE run routes by its learned router unless `--moe-router-force-load-balancing` (Megatron-LM
    megatron/core/transformer/moe/router.py: forced balance draws each token's experts uniformly, for benchmarking);
    measure/projection/moe_routing.py prices the difference."""
    return is_moe and not raw.get(FORCE_BALANCE_FLAG)
