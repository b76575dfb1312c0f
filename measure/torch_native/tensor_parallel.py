"""Tensor-parallel traffic a torch-native block shows: all of it, or under async TP what its GEMMs cannot cover.

Why: torchtitan's TP (DTensor `ColwiseParallel` / `RowwiseParallel` with `SequenceParallel`) all-gathers the sequence
before each column-parallel GEMM and reduce-scatters after each row-parallel one, on the critical path. Async TP
(`enable_async_tensor_parallel`, PyTorch symmetric-memory micro-pipelining; Wang et al., "Overlap Communication with
Dependent Computation via Decomposition in Large Deep Learning Models", ASPLOS 2023) splits each collective into TP
pieces and runs piece i's GEMM while piece i+1 moves, so a block shows the larger of what its GEMM time leaves and
one piece (1/TP of the traffic), which has no GEMM to hide behind.
"""
from __future__ import annotations


def exposed_tp_s(tp_raw_s: float, gemm_s: float, tp: int, async_tp: bool) -> float:
    """Exposed TP seconds of one pass of a block: `tp_raw_s` of collectives beside `gemm_s` of its TP GEMMs."""
    if not async_tp or tp <= 1:
        return tp_raw_s
    return max(tp_raw_s - gemm_s, tp_raw_s / tp)
