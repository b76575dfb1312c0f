"""Megatron-LM's hybrid layer pattern (`--hybrid-layer-pattern`): its symbols, how it splits into the main pattern,
pipeline segments and MTP, and the checks a hybrid ModelSpec must pass.

Why apart from constraints/models/mamba.py: ModelSpec's own validator runs these checks, so they cannot import the spec;
everything here reads only the pattern text and the model's fields. Symbols: megatron/core/ssm/mamba_hybrid_layer_allocation.py
(M Mamba-2 mixer, * attention, - MLP, E MoE; `|` pipeline segments, `/` MTP).
"""
from __future__ import annotations

from typing import Optional, Protocol

MAMBA, ATTENTION, MLP, MOE = "M", "*", "-", "E"
LAYER_SYMBOLS = (MAMBA, ATTENTION, MLP, MOE)
PIPE, MTP_SEPARATOR = "|", "/"
NOT_MODELLED = {"G": "gated delta net", "D": "DeepSeek sparse attention", "+": "multi-latent attention"}


class HybridFields(Protocol):
    """The model fields check_hybrid_fields reads (constraints.spec.ModelSpec has them all). A protocol here, not the
    spec's class: ModelSpec's own validator calls check_hybrid_fields, so this module sits below constraints/spec.py."""

    num_layers: int
    mtp_num_layers: int
    hybrid_layer_pattern: Optional[str]
    mtp_hybrid_pattern: Optional[str]
    mamba_num_heads: Optional[int]
    mamba_head_dim: Optional[int]
    mamba_state_dim: Optional[int]
    mamba_num_groups: Optional[int]
    num_experts: Optional[int]
    layer_is_moe: Optional[tuple[bool, ...]]
    multi_latent_attention: bool


class HybridPatternError(ValueError):
    """A --hybrid-layer-pattern shardplan cannot read; the message is one line for the user."""


def split_pattern(text: str) -> tuple[str, str | None, int]:
    """(main pattern with its `|` separators, MTP pattern or None, MTP depth), as Megatron's parse_hybrid_pattern
    reads a unified pattern "<main>/<mtp>/<mtp>...": every MTP part must be the same, main may hold `|`."""
    parts = text.split(MTP_SEPARATOR)
    main, mtp_parts = parts[0], [p for p in parts[1:]]
    for ch in main:
        if ch not in LAYER_SYMBOLS and ch != PIPE:
            raise HybridPatternError(_bad_symbol(ch, text))
    if not mtp_parts or all(p == "" for p in mtp_parts):
        return main, None, 0
    if any(p != mtp_parts[0] for p in mtp_parts):
        raise HybridPatternError(f"--hybrid-layer-pattern {text!r}: all MTP patterns after '/' must be identical "
                                 "(Megatron parse_hybrid_pattern); repeat one pattern per depth")
    for ch in mtp_parts[0]:
        if ch not in LAYER_SYMBOLS:
            raise HybridPatternError(_bad_symbol(ch, text))
    return main, mtp_parts[0], len(mtp_parts)


def _bad_symbol(ch: str, text: str) -> str:
    what = NOT_MODELLED.get(ch)
    if what:
        return f"--hybrid-layer-pattern {text!r}: '{ch}' ({what}) layers are not modelled; use M, *, - and E"
    return f"--hybrid-layer-pattern {text!r}: '{ch}' is not a layer symbol; use M (Mamba), * (attention), - (MLP), E (MoE), | and /"


def pattern_segments(main: str) -> list[str]:
    """The `|`-separated pipeline segments of a main pattern (one segment when it has no `|`)."""
    return main.split(PIPE)


def check_hybrid_fields(model: HybridFields) -> None:
    """ModelSpec validation of a hybrid model (raises ValueError, which pydantic reports as one line)."""
    main, mtp = model.hybrid_layer_pattern, model.mtp_hybrid_pattern or ""
    for field, text in (("hybrid_layer_pattern", main), ("mtp_hybrid_pattern", mtp)):
        bad = [ch for ch in text if ch not in LAYER_SYMBOLS]
        if bad:
            raise ValueError(_bad_symbol(bad[0], text).replace("--hybrid-layer-pattern", field))
    if len(main) != model.num_layers:
        raise ValueError(f"hybrid_layer_pattern has {len(main)} layers, num_layers says {model.num_layers}; make them equal")
    if model.mtp_num_layers and not mtp:
        # validate_args only warns ("Hybrid model with --mtp-num-layers but no MTP pattern"), and HybridModel then
        # builds no MTP block (mtp_process needs a pattern): depths without a pattern would be priced for nothing
        raise ValueError(f"mtp_num_layers {model.mtp_num_layers} on a hybrid model needs mtp_hybrid_pattern (the '/' part "
                         "of --hybrid-layer-pattern, e.g. '*E'); give it or set mtp_num_layers 0")
    if mtp and not model.mtp_num_layers:
        raise ValueError("mtp_hybrid_pattern without mtp_num_layers; give the MTP depth or drop the pattern")
    pat = main + mtp
    if MAMBA in pat:
        missing = [f for f in ("mamba_num_heads", "mamba_head_dim", "mamba_state_dim", "mamba_num_groups") if getattr(model, f) is None]
        if missing:
            raise ValueError(f"hybrid model with Mamba layers needs {', '.join(missing)}")
        if model.mamba_num_heads % model.mamba_num_groups:
            # MambaMixer.__init__: "nheads must be evenly divisible by ngroups"
            raise ValueError(f"mamba_num_heads {model.mamba_num_heads} is not divisible by mamba_num_groups {model.mamba_num_groups}")
    if MOE in pat and model.num_experts is None:
        raise ValueError("hybrid pattern has E (MoE) layers but the model has no num_experts")
    if model.layer_is_moe is not None and model.layer_is_moe != tuple(ch == MOE for ch in main):
        raise ValueError("layer_is_moe disagrees with hybrid_layer_pattern's E layers; drop layer_is_moe")
    if model.multi_latent_attention:
        raise ValueError("hybrid models with multi-latent attention (+/D layers) are not modelled")
