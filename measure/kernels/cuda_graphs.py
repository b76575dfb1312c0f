"""Which of a layer's kernels a run captures in CUDA graphs, so that the host-issue floor skips them.

Why: a layer pass cannot run faster than the host issues its kernels (measure/projection/layer_cost.py `_host_floor`: Python,
framework and launch time per op), which is what leaves small per-rank kernels (MoE layers at MBS 1, high EP)
waiting on the CPU. A captured CUDA graph is replayed by one launch, so its kernels cost the host nothing per op
(CUDA C++ Programming Guide, "CUDA Graphs": "work submission using graphs is separated into three distinct stages:
definition, instantiation, and execution ... reducing CPU launch costs"). Megatron-LM captures by scope
(`--cuda-graph-impl local|transformer_engine`, `--cuda-graph-scope`, megatron/training/arguments.py and
megatron/core/transformer/cuda_graphs.py):

- `full_iteration` (Megatron-Bridge presets write it as the impl): the whole forward-backward of every micro-batch;
  nothing is left to issue, and no host synchronisation can remain inside it (a graph cannot wait on the CPU), so
  the MoE dispatcher's host sync of the token counts is gone as well.
- `full` (the local impl's default): each transformer layer whole, forward and backward.
- `attn`: the attention block (input norm, QKV, core attention, projection, residual add: TransformerLayer
  `_forward_attention`); `mlp` / `moe` / `mamba`: that block whole; `moe_router`: the MoE block's pre-MLP norm and
  the router. `moe_preprocess` (the dispatcher's metadata and first permute) is one op each way and is not counted.

The scope is a property of the run, not of the parallel recipe: `measure.projection.project.project(..., cuda_graph_scope=)`
reads it (the published rows take it from their release's Megatron-Bridge preset, bench/runs.py); the solver and
`check` price no capture, since `Recipe` has no field for it.
"""
from __future__ import annotations

from typing import Iterable, Optional, Union

FULL_ITERATION = "full_iteration"
WHOLE_LAYER = "full"
SCOPES = frozenset({FULL_ITERATION, WHOLE_LAYER, "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba"})
# layer_ops modules of the MoE block that the moe_router scope captures
_ROUTER_MODULES = frozenset({"layernorm", "router"})


def graph_scope(impl: Optional[str], scope: Union[str, Iterable[str], None]) -> frozenset[str]:
    """The captured scopes of a Megatron-Bridge preset's (cuda_graph_impl, cuda_graph_scope); empty without capture."""
    if impl in (None, "none"):
        return frozenset()
    if impl == FULL_ITERATION:
        return frozenset({FULL_ITERATION})
    names = [scope] if isinstance(scope, str) else list(scope or [])
    out = frozenset(n for n in names if n in SCOPES)
    return out or frozenset({WHOLE_LAYER})  # the local impl's default scope: whole layers


def captures_whole_layer(scope: frozenset[str]) -> bool:
    return bool(scope & {FULL_ITERATION, WHOLE_LAYER})


def captures_experts(scope: frozenset[str]) -> bool:
    """The run captures the MoE experts (whole layers, the whole iteration, or the `moe` block), so no host
    synchronisation can remain in them (a graph cannot wait on the CPU)."""
    return captures_whole_layer(scope) or "moe" in scope


def uncaptured_ops(scope: frozenset[str], kind, attn_counts: tuple[int, int],
                   block_counts_by_module: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """(forward, backward) ops of one layer the host still issues one by one: the attention block's
    `attn_counts` unless `attn` is captured, plus the block's ops by module (`kind`: a measure.kernels.layer_ops.LayerKind)
    less the captured ones."""
    if captures_whole_layer(scope):
        return 0, 0
    n_fwd, n_bwd = (0, 0) if "attn" in scope else attn_counts
    whole_block = (kind.has_moe and "moe" in scope) or (kind.value in ("dense", "mlp") and "mlp" in scope) \
        or (kind.value == "mamba" and "mamba" in scope) or (kind.value == "attention" and "attn" in scope)
    for module, (f, b) in block_counts_by_module.items():
        if whole_block or (kind.has_moe and "moe_router" in scope and module in _ROUTER_MODULES):
            continue
        n_fwd, n_bwd = n_fwd + f, n_bwd + b
    return n_fwd, n_bwd
