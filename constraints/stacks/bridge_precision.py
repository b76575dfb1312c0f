"""Megatron-Bridge's `mixed_precision` section as the Megatron arguments it amounts to.

Why its own module: in Megatron-Bridge the precision a run trains with is whatever its MixedPrecisionConfig says,
not what the model section says. `MixedPrecisionConfig.setup` copies every one of its fields onto the model, the
optimizer and the DDP configs that have a field of that name (`update_config_with_precision_overrides`,
src/megatron/bridge/training/mixed_precision.py @067f987d), so `mixed_precision: bf16_mixed` next to `model.fp4:
e2m1` trains bf16 (fp4 None wins), and `bf16_mixed` turns `ddp.grad_reduce_in_fp32: false` back to fp32. A reader
that merged the two would judge a run that never happens. So: a present `mixed_precision` (a registered recipe
name, or a mapping of fields over the dataclass defaults) decides every field below, and the same fields in other
sections are overridden (and said to be); without it the other sections' values stand.

Only the fields that change legality, memory or speed are resolved; a mapping's other keys (loss scaling,
amax history, ...) are passed on as before.
"""
from __future__ import annotations

from typing import Any, Optional

# MixedPrecisionConfig dataclass defaults of the resolved fields (mixed_precision.py @067f987d). Note
# fp8_recipe "tensorwise" (Megatron's --fp8-recipe default is delayed) and the bf16 layer counts 0 (Megatron's 1).
DEFAULTS: dict[str, Any] = {
    "bf16": False, "fp16": False, "grad_reduce_in_fp32": True,
    "fp8": None, "fp8_recipe": "tensorwise", "fp8_param_gather": False,
    "first_last_layers_bf16": False, "num_layers_at_start_in_bf16": 0, "num_layers_at_end_in_bf16": 0,
    "fp4": None, "fp4_recipe": "nvfp4", "fp4_param_gather": False,
}
ALIASES = {"fp8_param": "fp8_param_gather", "fp4_param": "fp4_param_gather"}  # kept equal by MixedPrecisionConfig
RESOLVED = frozenset(DEFAULTS) | frozenset(ALIASES)


# Bridge's registered recipes (the @register functions of mixed_precision.py @067f987d), as field values
RECIPES: dict[str, dict[str, Any]] = {}


def _recipe(base: str, **fields: Any) -> dict[str, Any]:
    """A registered recipe built, as Bridge builds it, from `base` with some fields changed."""
    return {**RECIPES[base], **fields}


RECIPES["bf16_mixed"] = {**DEFAULTS, "bf16": True, "grad_reduce_in_fp32": True}
RECIPES["fp16_mixed"] = {**DEFAULTS, "fp16": True, "grad_reduce_in_fp32": False}
for _base in ("bf16", "fp16"):
    RECIPES[f"{_base}_with_fp8_delayed_scaling_mixed"] = _recipe(f"{_base}_mixed", fp8="hybrid", fp8_recipe="delayed",
                                                                 fp8_param_gather=True)
    RECIPES[f"{_base}_with_mxfp8_mixed"] = _recipe(f"{_base}_mixed", fp8="e4m3", fp8_recipe="mxfp8", fp8_param_gather=True)
    RECIPES[f"{_base}_with_fp8_current_scaling_mixed"] = _recipe(
        f"{_base}_mixed", fp8="hybrid", fp8_recipe="tensorwise", first_last_layers_bf16=True,
        num_layers_at_start_in_bf16=1, num_layers_at_end_in_bf16=1, fp8_param_gather=True)
    RECIPES[f"{_base}_with_fp8_subchannel_scaling_mixed"] = _recipe(f"{_base}_mixed", fp8="hybrid", fp8_recipe="blockwise",
                                                                    fp8_param_gather=False)
RECIPES["nemotron_h_bf16_with_fp8_current_scaling_mixed"] = _recipe(
    "bf16_mixed", fp8="hybrid", fp8_recipe="tensorwise", first_last_layers_bf16=True, num_layers_at_start_in_bf16=2,
    num_layers_at_end_in_bf16=2, fp8_param_gather=True)
RECIPES["nanov2_bf16_with_fp8_current_scaling_mixed"] = _recipe(
    "bf16_mixed", fp8="hybrid", fp8_recipe="blockwise", first_last_layers_bf16=True, num_layers_at_start_in_bf16=2,
    num_layers_at_end_in_bf16=2, fp8_param_gather=True)
RECIPES["bf16_with_nvfp4_mixed"] = _recipe("bf16_mixed", fp4="e2m1", fp4_recipe="nvfp4", fp4_param_gather=True)
RECIPES["nemotron_3_super_bf16_with_nvfp4_mixed"] = _recipe("bf16_with_nvfp4_mixed", first_last_layers_bf16=True,
                                                            num_layers_at_end_in_bf16=14)


class BridgePrecisionError(ValueError):
    """A mixed_precision value shardplan cannot resolve; one line for the user."""


def resolve(value: Any) -> Optional[tuple[dict[str, Any], dict[str, Any]]]:
    """(resolved fields, other mapping keys) of a `mixed_precision` value; None when the section is absent or null."""
    if value is None:
        return None
    if isinstance(value, str):
        name = value.replace("-", "_")
        if name not in RECIPES:
            raise BridgePrecisionError(f"mixed_precision: {value} is not a recipe shardplan knows; use one of "
                                       f"{', '.join(RECIPES)}, or a mapping of its fields (bf16, fp8, fp8_recipe)")
        return dict(RECIPES[name]), {}
    if not isinstance(value, dict):
        raise BridgePrecisionError(f"mixed_precision: a recipe name or a mapping ({value!r}); give bf16_mixed or a mapping")
    fields = dict(DEFAULTS)
    rest = {}
    for k, v in value.items():
        key = ALIASES.get(str(k), str(k))
        if key in DEFAULTS:
            _check_field(key, v)
            fields[key] = v
        else:
            rest[str(k)] = v
    return fields, rest


# the values MixedPrecisionConfig's string fields take (TransformerConfig fp8 / fp4 formats and recipes)
_CHOICES = {"fp8": ("e4m3", "hybrid"), "fp8_recipe": ("delayed", "tensorwise", "blockwise", "mxfp8"),
            "fp4": ("e2m1",), "fp4_recipe": ("nvfp4",)}


def _check_field(key: str, value: Any) -> None:
    """One line naming the field when a mapping gives a value of the wrong kind."""
    if key in _CHOICES:
        if value is not None and value not in _CHOICES[key]:
            raise BridgePrecisionError(f"mixed_precision.{key}: {value!r} is not one of {', '.join(_CHOICES[key])}"
                                       f"{'' if key.endswith('recipe') else ' (or null)'}; give one of them")
    elif key.startswith("num_layers_at_"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BridgePrecisionError(f"mixed_precision.{key}: {value!r} is not a layer count; give an integer >= 0")
    elif not isinstance(value, bool):
        raise BridgePrecisionError(f"mixed_precision.{key}: {value!r} is not true or false; write true or false")


def precision_args(fields: dict[str, Any]) -> list[str]:
    """The Megatron arguments of resolved fields. The bf16 layer counts are always written when the flag is on:
    Bridge's defaults (0, 0) are not Megatron's (1, 1). Under fp16, grad_reduce_in_fp32 False reduces in fp16, which
    Megatron does without a flag."""
    args: list[str] = []
    if fields["fp16"]:
        args.append("--fp16")
    elif fields["bf16"]:
        args.append("--bf16")
    if fields["fp8"]:
        args += ["--fp8-format", str(fields["fp8"]), "--fp8-recipe", str(fields["fp8_recipe"])]
        if fields["fp8_param_gather"]:
            args.append("--fp8-param-gather")
    if fields["fp4"]:
        args += ["--fp4-format", str(fields["fp4"]), "--fp4-recipe", str(fields["fp4_recipe"])]
        if fields["fp4_param_gather"]:
            args.append("--fp4-param-gather")
    if fields["first_last_layers_bf16"]:
        args += ["--first-last-layers-bf16", "--num-layers-at-start-in-bf16", str(fields["num_layers_at_start_in_bf16"]),
                 "--num-layers-at-end-in-bf16", str(fields["num_layers_at_end_in_bf16"])]
    if fields["grad_reduce_in_fp32"] is False and fields["bf16"] and not fields["fp16"]:
        args.append("--grad-reduce-in-bf16")
    return args


def recipe_name(fields: dict[str, Any]) -> Optional[str]:
    """The registered recipe whose fields are exactly `fields` (for rendering), else None."""
    return next((name for name, f in RECIPES.items() if f == fields), None)


def fields_from_dests(dests: dict[str, Any]) -> dict[str, Any]:
    """Resolved fields from Megatron argparse dests (what `render` has): the inverse of precision_args."""
    out = dict(DEFAULTS)
    out.update(bf16=bool(dests.get("bf16")), fp16=bool(dests.get("fp16")),
               grad_reduce_in_fp32=not dests.get("grad_reduce_in_bf16", False))
    if dests.get("fp8"):
        out.update(fp8=dests["fp8"], fp8_recipe=dests.get("fp8_recipe", "delayed"),
                   fp8_param_gather=bool(dests.get("fp8_param_gather")))
    if dests.get("fp4"):
        out.update(fp4=dests["fp4"], fp4_recipe=dests.get("fp4_recipe", "nvfp4"),
                   fp4_param_gather=bool(dests.get("fp4_param")))
    if dests.get("first_last_layers_bf16"):
        out.update(first_last_layers_bf16=True, num_layers_at_start_in_bf16=dests.get("num_layers_at_start_in_bf16", 1),
                   num_layers_at_end_in_bf16=dests.get("num_layers_at_end_in_bf16", 1))
    return out


# argparse dests of the resolved fields (what `render` moves into mixed_precision)
PRECISION_DESTS = frozenset({"bf16", "fp16", "fp8", "fp8_recipe", "fp8_param_gather", "fp4", "fp4_recipe",
                             "fp4_param", "first_last_layers_bf16", "num_layers_at_start_in_bf16",
                             "num_layers_at_end_in_bf16", "grad_reduce_in_bf16"})
