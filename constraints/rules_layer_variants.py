"""Legality of per-layer attention variants: NoPE layers (--no-rope-freq, Llama 4) and sliding windows.

Same contract as constraints/rules.py. Source: megatron/core/transformer/transformer_config.py __post_init__
@ d98e8a64 (no_rope_freq). Sliding windows (--window-size, --window-attn-skip-freq) have no training-time check in
Megatron beyond Transformer Engine >= 1.2 at layer build; a skip list of the wrong length is refused when the flags
are read (constraints/hybrid_flags.py).
"""
from __future__ import annotations

from typing import Optional

from constraints.rules import RuleInput, Violation, _v, divisors, nearest, rule


@rule(reads="")
def no_rope_freq(x: RuleInput) -> Optional[Violation]:
    """An integer --no-rope-freq N must divide the layers: TransformerConfig asserts num_layers % no_rope_freq == 0
    before expanding it to ([0]*(N-1)+[1]) * (num_layers / N)."""
    text = str(x.flags.get("--no-rope-freq", "")).strip()
    if not text.isdigit() or int(text) == 0 or x.model.num_layers % int(text) == 0:
        return None
    n = int(text)
    return _v("no_rope_freq", f"--no-rope-freq {n} does not divide the {x.model.num_layers} layers",
              f"use --no-rope-freq {nearest(divisors(x.model.num_layers), n)} or a 0/1 list of {x.model.num_layers} entries")
