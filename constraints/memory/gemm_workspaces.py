"""Transformer Engine's cuBLAS workspaces: fixed tensors every TE run allocates once, whatever the model's size.

Why: they do not scale with the model, so they weigh most on small ones (Megatron-LM's functional tests, toy models
of 1-3 GiB, bench/megatron_golden/compare.py). TE allocates them with `torch.empty` (so they are torch-allocated
tensors, in `max_memory_allocated`) and keeps them for the process (`functools.lru_cache`):
transformer_engine/pytorch/cpp_extensions/gemm.py:37-67 @d0067d0d.
- One GEMM workspace of `get_cublas_workspace_size_bytes()`: 32 MiB + 1 KiB on compute capability 9.0 and above
  (Hopper, Blackwell), 4 MiB (4,194,304 B) below (:40-45).
- Grouped GEMM (TE's GroupedLinear, the experts of `--moe-grouped-gemm` with the TE impl) takes one workspace per
  compute stream, `tex.get_num_cublas_streams()` = 4 (transformer_engine/common/util/multi_stream.cpp:52-54), on top
  (:59-65: a separate lru_cache entry).
- A GEMM overlapped with userbuffers (`--tp-comm-overlap`) takes 3 workspaces (`_NUM_MAX_UB_STREAMS`, :37, :53-58), on
  top.
Not here: `--transformer-impl local` runs no TE GEMM (Megatron's own linear layers use torch's matmul); PyTorch's own
cuBLAS workspace, whose default size changed across releases (aten/src/ATen/cuda/CublasHandlePool.cpp), is part of the
framework reserve; TE on AMD parts (no compute capability) is not modelled.
"""
from __future__ import annotations

from typing import Optional

from constraints.spec import ModelSpec, Recipe

HOPPER_WORKSPACE_BYTES = 32 * 1024 * 1024 + 1024  # gemm.py:43-44, "32 MiB for NVFP4 GEMM, plus 1024 B"
PRE_HOPPER_WORKSPACE_BYTES = 4_194_304           # gemm.py:45
GROUPED_GEMM_STREAMS = 4                         # multi_stream.cpp:53, num_compute_streams
UB_STREAMS = 3                                   # gemm.py:37, _NUM_MAX_UB_STREAMS


def workspace_bytes(compute_capability: float) -> int:
    """One TE cuBLAS workspace on a part of this compute capability (gemm.py:40-45)."""
    return HOPPER_WORKSPACE_BYTES if compute_capability >= 9 else PRE_HOPPER_WORKSPACE_BYTES


def te_gemm_workspace_bytes(compute_capability: Optional[float], model: ModelSpec, recipe: Recipe) -> int:
    """Bytes of TE's cuBLAS workspaces on every rank (module docstring); 0 where TE runs no GEMM or the part has no
    CUDA compute capability."""
    if compute_capability is None or recipe.local_transformer_impl:
        return 0
    one = workspace_bytes(compute_capability)
    count = 1
    if model.is_moe and recipe.moe_grouped_gemm:
        count += GROUPED_GEMM_STREAMS
    if recipe.tp_comm_overlap:
        count += UB_STREAMS
    return count * one
