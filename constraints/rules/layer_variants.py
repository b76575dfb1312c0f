"""Legality of per-layer attention variants (NoPE layers, --no-rope-freq; sliding windows) and of Llama 4's top-1 router.

Same contract as constraints/rules/registry.py. Source: megatron/core/transformer/transformer_config.py __post_init__
@ d98e8a64 (no_rope_freq). Sliding windows (--window-size, --window-attn-skip-freq) have no training-time check in
Megatron beyond Transformer Engine >= 1.2 at layer build; a skip list of the wrong length is refused when the flags
are read (constraints/megatron/hybrid_flags.py).
"""
from __future__ import annotations

from typing import Optional

from constraints.rules.base import RuleInput, Violation, divisors, nearest, rule, violation


@rule(reads="")
def no_rope_freq(x: RuleInput) -> Optional[Violation]:
    """An integer --no-rope-freq N must divide the layers: TransformerConfig asserts num_layers % no_rope_freq == 0
    before expanding it to ([0]*(N-1)+[1]) * (num_layers / N)."""
    text = str(x.flags.get("--no-rope-freq", "")).strip()
    if not text.isdigit() or int(text) == 0 or x.model.num_layers % int(text) == 0:
        return None
    n = int(text)
    return violation("no_rope_freq", f"--no-rope-freq {n} does not divide the {x.model.num_layers} layers",
              f"use --no-rope-freq {nearest(divisors(x.model.num_layers), n)} or a 0/1 list of {x.model.num_layers} entries")


@rule(reads="")
def top1_router_pre_softmax(x: RuleInput) -> Optional[Violation]:
    """Top-1 routing with a softmax score needs --moe-router-pre-softmax (softmax over one selected score has zero
    gradient): TransformerConfig.__post_init__ raises unless the score function is not softmax or the load balancing is
    sinkhorn. Judged on a Megatron argument list (its router flags); `render` writes the flag for top-1 models."""
    m, f = x.model, x.flags
    if not m.is_moe or m.moe_router_topk != 1 or "--moe-router-topk" not in f:
        return None
    balancing = f.get("--moe-router-load-balancing-type") or []
    balancing = balancing if isinstance(balancing, (list, tuple)) else [balancing]
    if f.get("--moe-router-score-function", "softmax") != "softmax" or f.get("--moe-router-pre-softmax") or "sinkhorn" in balancing:
        return None
    return violation("top1_router_pre_softmax", "--moe-router-topk 1 with a softmax router needs --moe-router-pre-softmax",
              "add --moe-router-pre-softmax (or --moe-router-score-function sigmoid)")
