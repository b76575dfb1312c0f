"""JobSpec from parsed Megatron-LM flags: sequence length, global batch, precision and optimizer.

Why its own module: the job half of a command line has its own Megatron defaults (GBS = MBS x DP when
--global-batch-size is absent, delayed scaling as the default fp8 recipe) and its own refusals (fp32
training and unmodelled optimizers or fp8 recipes), apart from the model and the parallel recipe.
Defaults follow megatron/training/arguments.py (validate_args) @ d98e8a64 unless a comment says otherwise.
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import ValidationError

from constraints.megatron.errors import MegatronArgsError, error_from_validation
from constraints.spec import JobSpec, Optimizer, Precision, Recipe

_FP8_RECIPES = {"delayed": Precision.fp8_delayed, "tensorwise": Precision.fp8_tensorwise,
                "blockwise": Precision.fp8_blockwise, "mxfp8": Precision.mxfp8}
_OPTIMIZERS = {"adam": Optimizer.adam, "muon": Optimizer.muon, "dist_muon": Optimizer.muon}


def _precision(raw: dict[str, Any]) -> Precision:
    """--fp8-format (with --fp8-recipe) over --fp16 / --bf16; neither flag is fp32 training (params_dtype torch.float,
    megatron/training/arguments.py @d98e8a64)."""
    if raw.get("--fp16") and raw.get("--bf16"):
        raise MegatronArgsError("--fp16 and --bf16 are both set; keep one")
    if raw.get("--fp4-format"):
        # --fp4-format with --fp8-format is Megatron's refusal (arguments.py validate_args), judged by the
        # fp4_excludes_fp8 rule (constraints/rules/fp4.py) from the raw flags; the job is the FP4 one
        fp4_recipe = raw.get("--fp4-recipe", "nvfp4")  # TransformerConfig.fp4_recipe default
        if fp4_recipe != "nvfp4":
            raise MegatronArgsError(f"--fp4-recipe {fp4_recipe} is not modelled (a user quantizer factory); use --fp4-recipe nvfp4")
        return Precision.nvfp4
    if raw.get("--fp8-format"):
        recipe = raw.get("--fp8-recipe", "delayed")  # Megatron's default fp8 recipe is delayed scaling
        if recipe not in _FP8_RECIPES:
            raise MegatronArgsError(f"--fp8-recipe {recipe} is not modelled; use delayed, tensorwise, blockwise or mxfp8")
        return _FP8_RECIPES[recipe]
    if raw.get("--fp16"):
        return Precision.fp16
    if raw.get("--bf16"):
        return Precision.bf16
    return Precision.fp32


def _bf16_layers(raw: dict[str, Any], precision: Precision) -> dict[str, int]:
    """--first-last-layers-bf16 with --num-layers-at-start/end-in-bf16 (TransformerConfig defaults 1 and 1). Without
    an fp8 / fp4 autocast the flag changes nothing (fp8_utils / fp4_utils only read it inside their contexts).
    Megatron's own range and delayed-scaling refusals are rules (constraints/rules/bf16_layers.py)."""
    if not raw.get("--first-last-layers-bf16") or not (precision.is_fp8 or precision.is_fp4):
        return {}
    return dict(bf16_layers_at_start=raw.get("--num-layers-at-start-in-bf16", 1),
                bf16_layers_at_end=raw.get("--num-layers-at-end-in-bf16", 1))


def job_from_flags(raw: dict[str, Any], recipe: Recipe, world_size: Optional[int]) -> JobSpec:
    """JobSpec for the parsed flags; `world_size` is needed only when --global-batch-size is absent."""
    seq = raw.get("--seq-length", raw.get("--encoder-seq-length"))  # validate_args: either one names the sequence
    if seq is None:
        raise MegatronArgsError("--seq-length is required; add --seq-length 4096 (or your length)")
    gbs = raw.get("--global-batch-size")
    if gbs is None:
        if not world_size:
            raise MegatronArgsError("--global-batch-size is absent and the world size is unknown; add --global-batch-size or give --nodes/--gpus-per-node")
        gbs = recipe.mbs * max(recipe.dp(world_size), 1)  # validate_args: default GBS = MBS x DP
    optimizer = raw.get("--optimizer", "adam")
    if optimizer not in _OPTIMIZERS:
        raise MegatronArgsError(f"--optimizer {optimizer} is not modelled; use adam or muon")
    moments_bf16 = bool(raw.get("--use-precision-aware-optimizer")) and raw.get("--exp-avg-dtype") == "bf16" \
        and raw.get("--exp-avg-sq-dtype") == "bf16"
    precision = _precision(raw)
    job_fields = dict(seq_length=seq, global_batch_size=gbs, precision=precision, optimizer=_OPTIMIZERS[optimizer],
                      optimizer_moments_bf16=moments_bf16, **_bf16_layers(raw, precision))
    try:
        return JobSpec(**job_fields)
    except ValidationError as e:
        raise error_from_validation(e, job_fields) from None
