"""Hybrid-model and sliding-window fields from parsed Megatron-LM flags: --hybrid-layer-pattern (or the deprecated
--hybrid-override-pattern) and the --mamba-* sizes, for the model; its `|` segments, for the pipeline split.

Why its own module: the flag readers (constraints/megatron/model.py, megatron_recipe.py) stay family-agnostic and
call these two functions. Megatron's behaviour @ d98e8a64 (arguments.py validate_args, hybrid block): the pattern
sets --num-layers (a different --num-layers only warns); both pattern flags at once is an assertion; VPP is the
number of segments / PP when there are more segments than PP; MambaMixer / TransformerConfig defaults are
--mamba-head-dim 64, --mamba-state-dim 128, --mamba-num-groups 8, --mamba-num-heads = 2 h / head dim, conv 4. MTP
depths are the pattern's `/` parts (the deprecated --mtp-hybrid-override-pattern with --mtp-num-layers N is converted to
them, as validate_args does).
"""
from __future__ import annotations

from typing import Any, Optional

from constraints.megatron.errors import MegatronArgsError
from constraints.megatron.patterns import moe_layer_pattern
from constraints.models.hybrid_pattern import MOE, MTP_SEPARATOR, PIPE, HybridPatternError, split_pattern
from constraints.models.window import flags_from_skip_freq


def hybrid_pattern(raw: dict[str, Any]) -> Optional[str]:
    """The unified pattern string of the flags, or None for a transformer model. Linear-attention (gated delta-net)
    layers are refused here: --linear-attention-freq has no terms in shardplan."""
    if raw.get("--linear-attention-freq") is not None:
        raise MegatronArgsError("--linear-attention-freq: gated delta-net linear attention layers (Qwen3-Next) are not "
                                "modelled; shardplan cannot price this model")
    new, old = raw.get("--hybrid-layer-pattern"), raw.get("--hybrid-override-pattern")
    if new is not None and old is not None:
        raise MegatronArgsError("--hybrid-override-pattern and --hybrid-layer-pattern cannot both be given "
                                "(validate_args asserts); keep --hybrid-layer-pattern")
    text = new if new is not None else old
    legacy, depth = raw.get("--mtp-hybrid-override-pattern"), raw.get("--mtp-num-layers") or 0
    if text is not None and legacy and depth > 0 and MTP_SEPARATOR not in str(text):
        # validate_args converts the deprecated MTP pattern to the unified form: main + ("/" + mtp) per depth
        text = str(text) + "".join(MTP_SEPARATOR + str(legacy) for _ in range(depth))
    return None if text is None else str(text)


def ignored_num_layers_note(raw: dict[str, Any]) -> Optional[str]:
    """The note Megatron's validate_args warns with when --num-layers disagrees with the hybrid pattern (it takes the
    pattern's count, as shardplan does); None when they agree or there is no pattern."""
    text, given = hybrid_pattern(raw), raw.get("--num-layers")
    if text is None or given is None:
        return None
    try:
        layers = len(split_pattern(text)[0].replace(PIPE, ""))
    except HybridPatternError:
        return None  # hybrid_model_fields refuses the pattern with its own message
    if layers == given:
        return None
    return (f"--num-layers {given} ignored: the hybrid layer pattern holds {layers} layers, which Megatron's validate_args "
            "takes instead (with a warning); priced with the pattern's count")


def hybrid_model_fields(raw: dict[str, Any], hidden_size: int) -> Optional[dict[str, Any]]:
    """ModelSpec fields of a hybrid model (num_layers and the Mamba sizes), or None without a pattern."""
    text = hybrid_pattern(raw)
    if text is None:
        return None
    try:
        main, mtp, depth = split_pattern(text)
    except HybridPatternError as exc:
        raise MegatronArgsError(str(exc)) from None
    layers = main.replace(PIPE, "")
    if not layers:
        raise MegatronArgsError("--hybrid-layer-pattern has no layers; give one symbol (M, *, -, E) per layer")
    head_dim = raw.get("--mamba-head-dim", 64)
    heads = raw.get("--mamba-num-heads") or (2 * hidden_size // head_dim if head_dim > 0 else 0)
    # validate_args infers --mtp-num-layers from the pattern's depths (a different value only warns); without an MTP
    # pattern HybridModel builds no MTP block whatever --mtp-num-layers says
    return dict(num_layers=len(layers), hybrid_layer_pattern=layers, mamba_num_heads=heads, mamba_head_dim=head_dim,
                mamba_state_dim=raw.get("--mamba-state-dim", 128), mamba_num_groups=raw.get("--mamba-num-groups", 8),
                mtp_hybrid_pattern=mtp or None, mtp_num_layers=depth if mtp else 0)


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


def window_fields(raw: dict[str, Any], num_layers: int) -> dict[str, Any]:
    """window_size / window_layers from --window-size (tuple_type "(W,0)": causal left window W) and
    --window-attn-skip-freq (moe_freq_type: int N or a list expression; constraints/models/window.py)."""
    size = raw.get("--window-size")
    if size is None:
        return {}
    try:
        parts = tuple(int(p) for p in str(size).strip("()").split(","))
    except ValueError:
        raise MegatronArgsError(f"--window-size {size!r} is not a pair of integers like (4095,0)") from None
    if len(parts) != 2 or parts[1] != 0 or parts[0] < -1:
        raise MegatronArgsError(f"--window-size {size!r}: only causal left windows (W,0) are modelled; give (W,0)")
    if parts[0] == -1:  # -1 is an infinite window: full attention
        return {}
    freq = raw.get("--window-attn-skip-freq")
    if freq is None or num_layers <= 0:
        return dict(window_size=parts[0])
    text = str(freq).strip()
    if text.isdigit():
        if int(text) <= 0:
            raise MegatronArgsError(f"--window-attn-skip-freq {text} must be positive")
        flags = flags_from_skip_freq(int(text), num_layers)
    else:
        flags = moe_layer_pattern(text, num_layers, "--window-attn-skip-freq")  # the same list grammar (moe_freq_type)
    return dict(window_size=parts[0], window_layers=flags)


def no_rope_fields(raw: dict[str, Any], num_layers: int) -> dict[str, Any]:
    """no_rope_layers from --no-rope-freq (no_rope_freq_type: int N skips RoPE on every N-th layer, layers counted from
    1, as TransformerConfig expands it to ([0]*(N-1)+[1])*(L/N); or a 0/1 list expression, 1 = no RoPE) and
    qk_l2_norm from --qk-l2-norm. A count N that does not divide the layers is left to the no_rope_freq rule."""
    out: dict[str, Any] = {"qk_l2_norm": bool(raw.get("--qk-l2-norm", False))}
    freq = raw.get("--no-rope-freq")
    if freq is None or num_layers <= 0:
        return out
    text = str(freq).strip()
    if text.isdigit():
        n = int(text)
        if n <= 0:
            raise MegatronArgsError(f"--no-rope-freq {text} must be positive")
        out["no_rope_layers"] = tuple((i + 1) % n == 0 for i in range(num_layers))
    else:
        out["no_rope_layers"] = moe_layer_pattern(text, num_layers, "--no-rope-freq")
    return out
