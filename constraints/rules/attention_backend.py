"""Legality rules of the unfused attention backends, `--attention-backend local / unfused` (same contract as
constraints/rules/registry.py; their memory is constraints/memory/attention_scores.py).

Why apart: the default backend (auto) never trips them, and they mirror asserts of two other code bases:
- local, megatron/core/transformer/dot_product_attention.py DotProductAttention.__init__ @ d98e8a64: asserts
  context_parallel_size == 1 ("Context parallelism is only supported by TEDotProductAttention!"), and takes
  divide(num_query_groups, TP), which asserts that TP divides the query groups (the attention module itself
  also allows fewer groups than TP ranks, replicating them; DotProductAttention does not);
- unfused, transformer_engine/pytorch/attention/dot_product_attention/utils.py get_attention_backend
  @ d0067d0d: "Disabling UnfusedDotProductAttention as it does not support context parallelism", and with
  flash and fused attention switched off by the backend (NVTE_FLASH_ATTN=0, NVTE_FUSED_ATTN=0) no backend is
  left, so TE's DotProductAttention raises.
"""
from __future__ import annotations

from typing import Optional

from constraints.rules.base import RuleInput, Violation, divisors, nearest, rule, violation
from constraints.spec import AttentionBackend


@rule(reads="attention_backend cp")
def unfused_attention_without_cp(x: RuleInput) -> Optional[Violation]:
    """local / unfused attention need CP = 1 (module docstring)."""
    backend, cp = x.recipe.attention_backend, x.recipe.cp
    if cp == 1 or not backend.stores_scores:
        return None
    where = ("Megatron's DotProductAttention asserts CP = 1" if backend == AttentionBackend.local
             else "Transformer Engine's UnfusedDotProductAttention does not support context parallelism")
    return violation("unfused_attention_without_cp", f"--attention-backend {backend.value} with CP={cp}: {where}",
                     "use --context-parallel-size 1, or drop --attention-backend (auto picks a fused kernel that "
                     "supports CP)")


@rule(reads="attention_backend tp")
def local_attention_query_groups(x: RuleInput) -> Optional[Violation]:
    """local attention: TP must divide --num-query-groups (DotProductAttention's divide asserts; module docstring)."""
    g, tp = x.model.num_query_groups, x.recipe.tp
    if x.recipe.attention_backend != AttentionBackend.local or x.model.multi_latent_attention or g % tp == 0:
        return None
    ok = [d for d in divisors(g) if x.model.num_attention_heads % d == 0 and x.world_size % d == 0]
    return violation("local_attention_query_groups", f"--attention-backend local needs TP to divide the {g} query "
                     f"groups (DotProductAttention asserts), TP={tp} does not",
                     f"use --tensor-model-parallel-size {nearest(ok, tp)}, or --attention-backend unfused")


@rule(reads="attention_backend")
def unfused_attention_projection(x: RuleInput) -> Optional[Violation]:
    """A warning: the projection (measure/kernels/layer_ops.py) prices core attention as one fused kernel over the causal half
    of the scores; local / unfused run two batched matmuls over all s x s scores plus a separate softmax, so the
    projected step time is low for them. Memory is exact (constraints/memory/attention_scores.py)."""
    backend = x.recipe.attention_backend
    if not backend.stores_scores:
        return None
    return violation("unfused_attention_projection", f"--attention-backend {backend.value}: memory counts the s x s "
                     "scores, but the projection prices core attention as a fused causal kernel: the unfused work "
                     "(all s x s scores, twice the causal FLOPs, and the softmax passes over them) is left out of "
                     "the step time", "drop --attention-backend (auto) for a projection that applies", "warning")
