"""Megatron flag values shardplan does not model and that change what a verdict would say: refused by name.

Why its own module: a flag whose value changes memory or numerics in a way the memory model does not count
must never be judged as if it were absent (an unfused attention judged as flash). Each such value is one
line naming the flag and the fix (exit 2, unusable input), so no verdict is given for a recipe shardplan
would misjudge. (NVFP4's --fp4-* flags are modelled: constraints/megatron_job.py, rules_fp4.py.) Values that have no effect in their context are left alone.
Sources: megatron/training/arguments.py @ d98e8a64 (choices and defaults named below).
"""
from __future__ import annotations

from typing import Any

from constraints.megatron_errors import MegatronArgsError

# --attention-backend choices (AttnBackend: flash, fused, unfused, local, auto; default auto). flash/fused/auto
# run a fused kernel that never stores the s x s score matrix, which is what constraints/activations.py counts.
_FUSED_BACKENDS = ("auto", "flash", "fused")


def not_modelled_values(raw: dict[str, Any]) -> list[str]:
    """Entries for the not-understood list; raises MegatronArgsError for values that would change the verdict."""
    backend = raw.get("--attention-backend")
    if backend is not None and backend not in _FUSED_BACKENDS:
        raise MegatronArgsError(f"--attention-backend {backend} stores the seq x seq attention scores, which shardplan's "
                                "activation memory does not count; drop it (auto picks a fused kernel) to judge the "
                                "fused recipe")
    return []
