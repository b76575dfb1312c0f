"""The one error type of the Megatron argument reader, and the wording of pydantic errors in Megatron's flags.

Why its own module: every step of reading a Megatron argument list (tokenizing, the model, the recipe, the
job) raises the same one-line `MegatronArgsError`, and a pydantic error on a spec field must name the flag
the user actually wrote (`--tensor-model-parallel-size`, not `tp`). Both live here so each step imports
them without importing the others.
"""
from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from boundary.errors import ShardplanError


class MegatronArgsError(ShardplanError):
    """A Megatron argument list shardplan cannot use; the message is one line naming the flag and the fix."""


class MegatronRecipeIllegal(MegatronArgsError):
    """A flag whose value Megatron's validate_args refuses, but which still describes a recipe: `check` reports it as
    a violation of `rule` (exit 1, JSON) and judges the rest of the arguments without `flag`."""

    def __init__(self, message: str, rule: str, fix: str, flag: str) -> None:
        super().__init__(message)
        self.rule, self.fix, self.flag = rule, fix, flag


# Spec field -> the Megatron flag that sets it, to word pydantic errors in the user's terms.
FIELD_FLAGS = {
    # ModelSpec.yarn (YarnRope) fields, named by the flags argument_utils._apply_yarn_config_from_args reads
    "scaling_factor": "--rotary-scaling-factor", "original_max_position_embeddings": "--yarn-original-max-position-embeddings",
    "beta_fast": "--yarn-beta-fast", "beta_slow": "--yarn-beta-slow", "mscale": "--mscale", "mscale_all_dim": "--mscale-all-dim",
    "num_layers": "--num-layers", "hidden_size": "--hidden-size", "ffn_hidden_size": "--ffn-hidden-size",
    "num_attention_heads": "--num-attention-heads", "num_query_groups": "--num-query-groups",
    "kv_channels": "--kv-channels", "vocab_size": "--vocab-size", "max_position_embeddings": "--max-position-embeddings",
    "hidden_dropout": "--hidden-dropout", "attention_dropout": "--attention-dropout", "num_experts": "--num-experts",
    "moe_router_topk": "--moe-router-topk", "moe_ffn_hidden_size": "--moe-ffn-hidden-size",
    "moe_shared_expert_intermediate_size": "--moe-shared-expert-intermediate-size", "layer_is_moe": "--moe-layer-freq",
    "moe_latent_size": "--moe-latent-size",
    "moe_router_num_groups": "--moe-router-num-groups", "moe_router_group_topk": "--moe-router-group-topk",
    "q_lora_rank": "--q-lora-rank", "kv_lora_rank": "--kv-lora-rank", "qk_head_dim": "--qk-head-dim",
    "qk_pos_emb_head_dim": "--qk-pos-emb-head-dim", "v_head_dim": "--v-head-dim", "mtp_num_layers": "--mtp-num-layers",
    "seq_length": "--seq-length", "global_batch_size": "--global-batch-size", "tp": "--tensor-model-parallel-size",
    "pp": "--pipeline-model-parallel-size", "vpp": "--num-virtual-stages-per-pipeline-rank",
    "cp": "--context-parallel-size", "ep": "--expert-model-parallel-size", "etp": "--expert-tensor-parallel-size",
    "mbs": "--micro-batch-size", "first_stage_layers": "--decoder-first-pipeline-num-layers",
    "last_stage_layers": "--decoder-last-pipeline-num-layers",
    "microbatch_group_size": "--microbatch-group-size-per-virtual-pipeline-stage",
    "num_distributed_optimizer_instances": "--num-distributed-optimizer-instances",
    "cpu_offloading_num_layers": "--cpu-offloading-num-layers", "hierarchical_cp_sizes": "--hierarchical-context-parallel-sizes",
    "make_vocab_size_divisible_by": "--make-vocab-size-divisible-by", "num_layers_recompute": "--recompute-num-layers",
    "bf16_layers_at_start": "--num-layers-at-start-in-bf16", "bf16_layers_at_end": "--num-layers-at-end-in-bf16",
}


def error_from_validation(err: ValidationError, values: dict[str, Any]) -> MegatronArgsError:
    """The first pydantic error, worded with the Megatron flag that set the field."""
    e = err.errors()[0]
    field = str(e["loc"][-1]) if e["loc"] else ""
    if e["loc"][:1] == ("recompute",) and field == "num_layers":
        field = "num_layers_recompute"
    flag = FIELD_FLAGS.get(field, field or "arguments")
    got = values.get(field, e.get("input"))
    msg = e["msg"].removeprefix("Value error, ")
    shown = f"{got:.3g}" if isinstance(got, float) else (f"10^{len(str(got)) - 1}" if isinstance(got, int) and got > 10**12 else got)
    if not e["loc"]:  # a model-level check: name fields by their flags
        for f, fl in sorted(FIELD_FLAGS.items(), key=lambda kv: -len(kv[0])):
            msg = re.sub(rf"\b{f}\b", fl, msg)
        return MegatronArgsError(f"{msg}; fix the model flags")
    return MegatronArgsError(f"{flag}={shown}: {msg}; fix the value of {flag}")
