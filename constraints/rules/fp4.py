"""NVFP4 legality rules: Megatron-LM's refusals for `--fp4-format e2m1 --fp4-recipe nvfp4` and
`--fp4-param-gather`, and the hardware the recipe needs.

Same contract as constraints/rules/registry.py (pure, one Megatron check each, registered with @rule). Sources are
megatron/training/arguments.py (validate_args) and megatron/core/transformer/transformer_config.py
@ d98e8a64; the hardware rule follows Transformer Engine's NVFP4BlockScaling recipe (Blackwell tensor cores).
"""
from __future__ import annotations

from typing import Optional

from constraints.rules.base import RuleInput, Violation, rule, violation

# TE's NVFP4 GEMMs run on 5th-generation tensor cores (sm_100 and later): megatron/core/fp4_utils.py names
# NVFP4BlockScaling "for Blackwell+ architecture" (TransformerConfig.fp4_recipe docstring).
NVFP4_MIN_COMPUTE_CAPABILITY = 10.0
# arguments.py validate_args: "--fp4-format requires Transformer Engine >= 2.7.0.dev0 for NVFP4BlockScaling"
NVFP4_MIN_TE_VERSION = "2.7.0.dev0"


def _weight_shards(x: RuleInput) -> int:
    """The larger of --tensor-parallel-num-weight-shards / TP and --expert-tensor-parallel-num-weight-shards /
    ETP: Megatron's gtp_weight_remat_size (model_parallel_config.resolve_tensor_parallel_weight_shards)."""
    r = x.recipe
    remat = 1
    for flag, size in (("--tensor-parallel-num-weight-shards", r.tp), ("--expert-tensor-parallel-num-weight-shards", r.etp_effective)):
        shards = x.flags.get(flag)
        if isinstance(shards, int) and shards >= size and shards % size == 0:
            remat = max(remat, shards // size)
    return remat


@rule(reads="")
def fp4_excludes_fp8(x: RuleInput) -> Optional[Violation]:
    """--fp4-format and --fp8-format are mutually exclusive (arguments.py validate_args raises; TransformerConfig
    __post_init__ too: "fp4 and fp8 cannot be used simultaneously")."""
    if x.job.precision.is_fp4 and x.flags.get("--fp8-format"):
        return violation("fp4_excludes_fp8", "--fp4-format and --fp8-format are both set", "drop --fp8-format (and --fp8-recipe)")
    return None


@rule(reads="fp4_param_gather")
def fp4_param_gather(x: RuleInput) -> Optional[Violation]:
    """--fp4-param-gather must be used together with --fp4-format (arguments.py validate_args; TransformerConfig:
    "fp4_param must be used together with fp4 mode")."""
    if x.recipe.fp4_param_gather and not x.job.precision.is_fp4:
        return violation("fp4_param_gather", "--fp4-param-gather without --fp4-format", "drop --fp4-param-gather or add --fp4-format e2m1")
    return None


@rule(reads="fp4_param_gather tp etp")
def fp4_weight_shards(x: RuleInput) -> Optional[Violation]:
    """Weight shards beyond TP / expert TP (GTP: --tensor-parallel-num-weight-shards or
    --expert-tensor-parallel-num-weight-shards > the TP size) with --fp4-format need --fp4-param-gather, so NVFP4
    weights are all-gathered as native NVFP4 (arguments.py validate_args raises otherwise)."""
    if x.job.precision.is_fp4 and not x.recipe.fp4_param_gather and _weight_shards(x) > 1:
        return violation("fp4_weight_shards", "weight shards beyond TP (--*-num-weight-shards) with --fp4-format need --fp4-param-gather",
                  "add --fp4-param-gather")
    return None


@rule(reads="")
def nvfp4_hardware(x: RuleInput) -> Optional[Violation]:
    """NVFP4 needs NVIDIA Blackwell tensor cores (compute capability >= 10.0): TE's NVFP4BlockScaling recipe
    (E2M1 values with an E4M3 scale per 16 elements) has no kernels elsewhere. AMD's MI355X runs MXFP4 (E8M0
    scales per 32), a different format that Megatron's --fp4-recipe does not offer."""
    hw = x.profile
    if hw is None or not x.job.precision.is_fp4:
        return None
    cc = getattr(hw, "compute_capability", None)
    if getattr(hw, "vendor", "nvidia") == "nvidia" and cc is not None and cc >= NVFP4_MIN_COMPUTE_CAPABILITY:
        return None
    return violation("nvfp4_hardware", f"NVFP4 needs NVIDIA Blackwell tensor cores (sm_100+); {hw.name} has none",
              nvfp4_fallback(hw))


def nvfp4_fallback_precisions(hw) -> list[str]:
    """What a part without NVFP4 runs instead, best first (`precision_supported`'s support flags), so the remedy
    never names a recipe that rule refuses on the same part. Values of constraints.spec.Precision."""
    if not getattr(hw, "supports_fp8", True):
        return ["bf16"]
    if getattr(hw, "supports_mxfp8", False):
        return ["mxfp8", "fp8-tensorwise", "bf16"]
    return ["fp8-tensorwise", "fp8-delayed", "bf16"]


def nvfp4_fallback(hw) -> str:
    """`nvfp4_fallback_precisions` in Megatron flags, the fix `check` prints."""
    fallback = nvfp4_fallback_precisions(hw)
    drop = "drop --fp4-format / --fp4-recipe and "
    if fallback == ["bf16"]:
        return drop + "train in bf16 (--bf16)"
    recipes = " or ".join(p.removeprefix("fp8-") for p in fallback[:-1])
    return drop + f"use --fp8-format e4m3 --fp8-recipe {recipes} (or --bf16)"


@rule(reads="")
def fp4_transformer_engine(x: RuleInput) -> Optional[Violation]:
    """--fp4-format needs Transformer Engine >= 2.7.0.dev0 (arguments.py validate_args raises below it). The TE
    version is not part of a recipe, so this is a warning on every NVFP4 recipe, not a verdict."""
    if x.job.precision.is_fp4:
        return violation("fp4_transformer_engine", f"--fp4-format needs Transformer Engine >= {NVFP4_MIN_TE_VERSION}",
                  f"run with transformer-engine >= {NVFP4_MIN_TE_VERSION}", "warning")
    return None
