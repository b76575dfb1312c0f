"""Hybrid-model fields from parsed Megatron-LM flags: --hybrid-layer-pattern (or the deprecated
--hybrid-override-pattern) and the --mamba-* sizes, for the model; its `|` segments, for the pipeline split.

Why its own module: the flag readers (constraints/megatron_model.py, megatron_recipe.py) stay family-agnostic and
call these two functions. Megatron's behaviour @ d98e8a64 (arguments.py validate_args, hybrid block): the pattern
sets --num-layers (a different --num-layers only warns); both pattern flags at once is an assertion; VPP is the
number of segments / PP when there are more segments than PP; MambaMixer / TransformerConfig defaults are
--mamba-head-dim 64, --mamba-state-dim 128, --mamba-num-groups 8, --mamba-num-heads = 2 h / head dim, conv 4.
"""
from __future__ import annotations

from typing import Any, Optional

from constraints.mamba import MOE, PIPE, HybridPatternError, split_pattern
from constraints.megatron_errors import MegatronArgsError


def hybrid_pattern(raw: dict[str, Any]) -> Optional[str]:
    """The unified pattern string of the flags, or None for a transformer model."""
    new, old = raw.get("--hybrid-layer-pattern"), raw.get("--hybrid-override-pattern")
    if new is not None and old is not None:
        raise MegatronArgsError("--hybrid-override-pattern and --hybrid-layer-pattern cannot both be given "
                                "(validate_args asserts); keep --hybrid-layer-pattern")
    text = new if new is not None else old
    if text is not None and raw.get("--mtp-hybrid-override-pattern"):
        raise MegatronArgsError("--mtp-hybrid-override-pattern: MTP depths of a hybrid model are not modelled; drop it")
    return None if text is None else str(text)


def hybrid_model_fields(raw: dict[str, Any], hidden_size: int) -> Optional[dict[str, Any]]:
    """ModelSpec fields of a hybrid model (num_layers and the Mamba sizes), or None without a pattern."""
    text = hybrid_pattern(raw)
    if text is None:
        return None
    try:
        main, mtp, _ = split_pattern(text)
    except HybridPatternError as exc:
        raise MegatronArgsError(str(exc)) from None
    if mtp is not None:
        raise MegatronArgsError(f"--hybrid-layer-pattern {text!r}: MTP depths ('/') of a hybrid model are not modelled; drop them")
    layers = main.replace(PIPE, "")
    if not layers:
        raise MegatronArgsError("--hybrid-layer-pattern has no layers; give one symbol (M, *, -, E) per layer")
    head_dim = raw.get("--mamba-head-dim", 64)
    heads = raw.get("--mamba-num-heads") or (2 * hidden_size // head_dim if head_dim > 0 else 0)
    return dict(num_layers=len(layers), hybrid_layer_pattern=layers, mamba_num_heads=heads, mamba_head_dim=head_dim,
                mamba_state_dim=raw.get("--mamba-state-dim", 128), mamba_num_groups=raw.get("--mamba-num-groups", 8))


def hybrid_moe_layers(fields: dict[str, Any]) -> tuple[bool, ...]:
    """Which layers are MoE: the pattern's E layers (--moe-layer-freq does not apply to a hybrid model)."""
    return tuple(ch == MOE for ch in fields["hybrid_layer_pattern"])


def hybrid_split(raw: dict[str, Any], pp: int) -> Optional[dict[str, Any]]:
    """Recipe fields the pattern's `|` segments decide (vpp, and pipeline_layout standing for the segments:
    embedding on the first, loss on the last), or None when the pattern has no pipes."""
    text = hybrid_pattern(raw)
    if text is None or PIPE not in text.split("/")[0]:
        return None
    segments = text.split("/")[0].split(PIPE)
    stages = ["t" * len(seg) for seg in segments]
    stages[0], stages[-1] = "E" + stages[0], stages[-1] + "L"
    # a segment count that is not a multiple of PP (validate_args asserts) is left to the pipeline_layout rule
    return dict(vpp=max(len(segments) // max(pp, 1), 1), pipeline_layout="|".join(stages))
