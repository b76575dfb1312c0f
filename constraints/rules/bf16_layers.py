"""Legality of `--first-last-layers-bf16`: the decoder layers kept out of the fp8 / NVFP4 autocast.

Same contract as constraints/rules/registry.py (pure, one Megatron check each, registered with @rule). Both checks are
TransformerConfig.__post_init__'s, run only under fp8 (megatron/core/transformer/transformer_config.py
@ d98e8a64, inside `if self.fp8:`); under NVFP4 Megatron checks neither.
"""
from __future__ import annotations

from typing import Optional

from constraints.rules.base import RuleInput, Violation, rule, violation
from constraints.spec import Precision


@rule(reads="")
def bf16_layers_delayed_scaling(x: RuleInput) -> Optional[Violation]:
    """"Delayed scaling does not support first / last layer in BF16." (fp8 with first_last_layers_bf16 and the
    delayed recipe raises)."""
    if x.job.precision == Precision.fp8_delayed and x.job.has_bf16_layers:
        return violation("bf16_layers_delayed_scaling",
                         "--first-last-layers-bf16 with --fp8-recipe delayed: delayed scaling does not support "
                         "first / last layers in bf16", "use --fp8-recipe tensorwise (or mxfp8), or drop --first-last-layers-bf16")
    return None


@rule(reads="pp")
def bf16_layers_per_stage(x: RuleInput) -> Optional[Violation]:
    """num_layers_at_start_in_bf16 and num_layers_at_end_in_bf16 must each lie between 0 and num_layers // PP
    ("must be between 0 and number of layers per pipeline stage")."""
    if not (x.job.precision.is_fp8 and x.job.has_bf16_layers):
        return None
    limit = x.model.num_layers // x.recipe.pp
    for flag, n in (("--num-layers-at-start-in-bf16", x.job.bf16_layers_at_start),
                    ("--num-layers-at-end-in-bf16", x.job.bf16_layers_at_end)):
        if n > limit:
            return violation("bf16_layers_per_stage",
                             f"{flag} {n} exceeds the layers per pipeline stage ({x.model.num_layers} // PP {x.recipe.pp} = {limit})",
                             f"set {flag} to at most {limit}")
    return None
