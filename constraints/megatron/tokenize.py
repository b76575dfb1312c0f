"""Split a Megatron-LM argument list into {flag: value} exactly as Megatron's argparse would.

Why its own module: splitting is pure argparse mechanics driven by the dumped flag table (how many values,
of what type, which choices), independent of what any flag means to shardplan. It also sorts every flag
three ways (constraints.megatron.flags): modelled or read by rules (kept in the dict only), known to have
no effect (`ignored`), or not understood (`unknown`, reported to the user, never dropped silently).
"""
from __future__ import annotations

import re
from typing import Any, Optional

from boundary.show import shown
from constraints.megatron import flags as mf
from constraints.megatron.errors import MegatronArgsError, MegatronRecipeIllegal
from constraints.megatron.refusals import MODELOPT_FLAGS
from constraints.script.expand import UNRESOLVED_RE

# argparse `choices=` of the string flags shardplan reads (megatron/training/arguments.py @ d98e8a64).
_CHOICES = {
    "--normalization": ("LayerNorm", "RMSNorm"), "--recompute-granularity": ("full", "selective"),
    "--recompute-method": ("uniform", "block"), "--moe-token-dispatcher-type": ("allgather", "alltoall", "flex"),
    "--fp8-format": ("e4m3", "hybrid"), "--fp8-recipe": ("tensorwise", "delayed", "mxfp8", "blockwise", "custom"),
    "--fp4-format": ("e2m1",), "--fp4-recipe": ("nvfp4", "custom"),  # TransformerConfig Literal types
    "--position-embedding-type": ("learned_absolute", "rope", "yarn", "mrope", "relative", "none"),
    "--cp-comm-type": ("p2p", "a2a", "allgather", "a2a+p2p"), "--softmax-type": ("vanilla", "off-by-one", "learnable"),
    "--optimizer": ("adam", "sgd", "muon", "dist_muon", "lion", "soap", "adaptive_muon"),
    "--attention-backend": ("flash", "fused", "unfused", "local", "auto"),  # AttnBackend (core/transformer/enums.py)
}


def _is_value(tok: str) -> bool:
    """argparse takes `-1` / `-.5` as a value (the parser defines no negative-number-like options)."""
    return not tok.startswith("-") or re.fullmatch(r"-\.?[0-9][0-9.eE+-]*", tok) is not None


def _convert(flag: str, info: mf.FlagInfo, text: str, choices_exit: bool = False) -> Any:
    """One value in the flag's argparse type; a string flag's value must be one of its choices. A no-effect flag's value
    held in a variable the script leaves unset (`--seed ${REPEAT}`, kept as text by constraints.megatron.launch_script) stays
    text: nothing reads it, and Megatron's type check of it depends on the value the run is given. `choices_exit`: the
    list goes to Megatron-LM's own argparse (a launch script or an argument file), whose `invalid choice` and `invalid
    int value` exits are an illegal verdict judged without the flag (MegatronRecipeIllegal, exit 1); a stack config may
    define choices and types of its own, so there the value is unusable input (exit 2)."""
    if info.no_effect and UNRESOLVED_RE.search(text):
        return text
    try:
        if info.value_type == "int":
            return int(text)
        if info.value_type == "float":
            return float(text)
    except ValueError:
        kind = "an integer" if info.value_type == "int" else "a number"
        if choices_exit:  # Megatron-LM's argparse exits on it (`type=int`): the recipe as written does not run
            raise MegatronRecipeIllegal(f"Megatron's argparse exits: argument {flag}: invalid {info.value_type} value: "
                                        f"{shown(text)}", "megatron_argparse", f"pass {flag} as {kind}, one per word (e.g. "
                                        f"{flag} 8)", flag) from None
        raise MegatronArgsError(f"{flag} expects {kind}, got {shown(text)}; pass e.g. {flag} 8") from None
    allowed = _CHOICES.get(flag)
    if allowed and text not in allowed:
        near = next((a for a in allowed if a.lower() == text.lower()), allowed[0])
        if choices_exit:
            raise MegatronRecipeIllegal(f"Megatron's argparse exits: argument {flag}: invalid choice: {shown(text)} (choose from "
                                        f"{', '.join(allowed)})", "megatron_argparse", f"use {flag} {near}", flag)
        raise MegatronArgsError(f"{flag} {shown(text)} is not one of Megatron-LM's {', '.join(allowed)} (a value only a stack "
                                f"on Megatron-LM defines, such as Primus's mxfp4 recipe, is not modelled); pick one of them")
    return text


def tokenize_args(argv: list[str], unrecognized: Optional[list[str]] = None,
                  choices_exit: bool = False) -> tuple[dict[str, Any], list[str], list[str]]:
    """Split argv as Megatron's argparse would: ({flag: value}, ignored flags, not-understood entries).

    `unrecognized` (when given) receives the argv words Megatron's argparse would refuse with "unrecognized
    arguments" (constraints.megatron.refusals): flags it does not define and values no flag takes. `choices_exit`:
    see `_convert`."""
    raw: dict[str, Any] = {}
    ignored: list[str] = []
    unknown: list[str] = []
    refused = unrecognized if unrecognized is not None else []
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if not tok.startswith("-") or _is_value(tok):
            unknown.append(f"{tok} (stray value, not after a flag that takes it)")
            refused.append(tok)
            continue
        flag, eq, inline = tok.partition("=")
        info = mf.lookup(flag)
        if info is None and flag in MODELOPT_FLAGS:
            want = MODELOPT_FLAGS[flag]
            vals = [inline] if eq else []
            while not eq and i < len(argv) and _is_value(argv[i]) and (want == "+" or len(vals) < want):
                vals.append(argv[i])
                i += 1
            raw[flag] = True if not vals else (vals[0] if len(vals) == 1 else vals)
            unknown.append(f"{flag} (an nvidia-modelopt flag, defined only when modelopt is installed)")
            continue
        if info is None:
            vals = [inline] if eq else []
            while not eq and i < len(argv) and _is_value(argv[i]):
                vals.append(argv[i])
                i += 1
            raw[flag] = True if not vals else (vals[0] if len(vals) == 1 else vals)
            unknown.append(f"{flag} (not a Megatron-LM flag)")
            refused.extend([tok] + ([] if eq else vals))  # `--zero-stage=3` is one word to argparse, its value inside
            continue
        if info.nargs == 0:
            if eq:
                raise MegatronArgsError(f"{flag} takes no value, got {tok!r}; write {flag} alone")
            value: Any = True
        else:
            vals = [inline] if eq else []
            want = 1 if info.nargs in (1, "+") else (info.nargs if isinstance(info.nargs, int) else 0)
            while not eq and i < len(argv) and _is_value(argv[i]) and (info.nargs in ("+", "*") or len(vals) < want):
                vals.append(argv[i])
                i += 1
            if len(vals) < want:
                raise MegatronArgsError(f"{flag} is missing its value; write {flag} VALUE")
            conv = [_convert(flag, info, v, choices_exit) for v in vals]
            value = conv[0] if info.nargs == 1 else conv
        raw[flag] = value
        if info.no_effect:
            ignored.append(flag) if flag not in ignored else None
        elif flag not in mf.READ_FLAGS and flag not in unknown:
            unknown.append(flag)
    return raw, ignored, unknown
