"""`solve --objective fewest-gpus`: the smallest node count whose best recipe reaches a throughput target.

Why a scan and not one model: the world size fixes DP, the micro-batch count and which collectives cross
nodes, so every node count is its own space (own tables). Total throughput is not monotone in the node
count (batch divisibility, PP bubbles), so every count from 1 to --nodes is solved in increasing order
and the first that reaches the target wins; each solve is the exact throughput solve.
"""
from __future__ import annotations

from typing import Callable


class TargetError(ValueError):
    """--objective fewest-gpus without a usable --target-tokens-per-s."""


def fewest_gpus(placement, target_tokens_per_s: float, solve_at: Callable) -> tuple[object, object, object, list[dict]]:
    """solve_at(placement) -> (SolveResult, Tables); returns (result, tables, placement, tried) at the first
    node count whose best projected total tokens/s >= target, or the largest count's answer with
    result.ranked emptied when none reaches it. `tried` lists {nodes, gpus, tokens_per_s} per count."""
    if not target_tokens_per_s or target_tokens_per_s <= 0:
        raise TargetError("--target-tokens-per-s: give the total tokens/s to reach (> 0) with --objective fewest-gpus")
    tried: list[dict] = []
    last = None
    for nodes in range(1, placement.num_nodes + 1):
        pl = placement.model_copy(update={"num_nodes": nodes})
        result, tables = solve_at(pl)
        best = result.ranked[0].projection.tokens_per_s_per_gpu * pl.world_size if result.ranked else 0.0
        tried.append({"nodes": nodes, "gpus": pl.world_size, "tokens_per_s": best})
        last = (result, tables, pl)
        if best >= target_tokens_per_s:
            return result, tables, pl, tried
    result, tables, pl = last
    result.ranked = []
    return result, tables, pl, tried
