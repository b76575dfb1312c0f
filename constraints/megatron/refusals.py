"""What Megatron-LM itself refuses before training, found in a parsed argument list: each is an illegal verdict.

Why its own module: these are not shardplan's rules but Megatron's exits (argparse errors, validate_args
asserts and exits), so `check` must call them illegal with Megatron's own message (exit 1), never pass them
and never treat them as unusable input. Sources, NVIDIA/Megatron-LM @ d98e8a64:
- argparse `parse_args()` (megatron/training/arguments.py parse_args, allow_abbrev=False, no
  ignore_unknown_args in pretrain_gpt.py): an option it does not define, or a value no option takes, ends
  the run with `error: unrecognized arguments: ...` (exit 2 of the training script);
- validate_args: `--checkpoint-activations` prints "is no longer valid" and calls exit();
  `--step-batch-size-schedule` with `--global-batch-size` raises ValueError; Megatron-FSDP asserts
  `--ckpt-format fsdp_dtensor` and fsdp_dtensor asserts Megatron-FSDP; torch FSDP2 asserts no gradient
  accumulation fusion (`--no-gradient-accumulation-fusion`) and --ckpt-format torch_dist or torch_dcp
  (ckpt_format defaults to torch_dist: megatron/training/config/training_config.py); MTP asserts a rope or no
  position embedding (checked before --use-rotary-position-embeddings becomes rope); `--num-layers-per-virtual-pipeline-
  stage` with --decoder-first/last-pipeline-num-layers asserts "please use --num-virtual-stages-per-pipeline-rank";
  `--seq-length` asserts `--encoder-seq-length` unset; without `--kv-channels` it asserts hidden_size %
  num_attention_heads == 0; `--save` asserts a positive `--save-interval`; the deprecated
  `--batch-size`, `--warmup` and `--model-parallel-size` are asserted unset; `--cross-entropy-loss-fusion` asserts
  `--cross-entropy-fusion-impl` is not `te` ("disabled due to stability issues");
  `--attention-backend local` asserts `--spec local` ("--attention-backend local is only supported with
  --spec local"), and pretrain_gpt.py / pretrain_hybrid.py then import args.spec as a (module, name) pair
  (megatron/core/transformer/spec_utils.py import_module, called by megatron/training/argument_utils.py
  gpt_config_from_args and hybrid_builders.py), which ['local'] cannot be: ValueError. So no pretrain script of
  this commit starts with the local backend; checked only for a launch script naming its pretrain_*.py (a plain
  argument file or a stack config, whose launcher builds the model itself, is not held to it);
- argparse again: --tokenizer-type takes the names of TokenizerConfig.tokenizer_type's Literal
  (megatron/training/config/training_config.py); Primus's own tokenizer types (Llama3Tokenizer, ...,
  constraints/megatron/tokenizer_vocab.py) are choices only Primus adds, so a pretrain_*.py launch script naming one exits.
Flags of nvidia-modelopt's argument group (megatron/post_training/arguments.py add_modelopt_args) are defined
only when modelopt is installed; they are reported as not modelled, not as an argparse exit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from constraints.megatron.tokenizer_vocab import PRIMUS_HF_TOKENIZERS

# megatron/post_training/arguments.py @ d98e8a64: option -> takes a value (nargs "+" for --finetune-data-files)
MODELOPT_FLAGS: dict[str, object] = {
    "--export-model-type": 1, "--export-legacy-megatron": 0, "--export-te-mcore-model": 0,
    "--export-default-te-spec": 0, "--export-force-local-attention": 0, "--export-kv-cache-quant": 1,
    "--export-real-quant-cfg": 1, "--export-quant-cfg": 1, "--export-kd-teacher-load": 1,
    "--export-kd-teacher-model-config": 1, "--export-kd-teacher-ckpt-format": 1, "--export-kd-cfg": 1,
    "--finetune-hf-dataset": 1, "--finetune-data-split": 1, "--finetune-data-files": "+", "--qad-train-target": 1,
    "--freeze-base-for-mtp": 0, "--export-qk-l2-norm": 0, "--export-moe-apply-probs-on-input": 0,
    "--export-offline-model": 0, "--modelopt-enabled": 0, "--enable-gpt-oss": 0,
}


@dataclass(frozen=True)
class Refusal:
    """One thing Megatron refuses: the rule name check reports, Megatron's message, and the fix."""

    rule: str
    message: str
    fix: str


def _local_backend(raw: dict[str, Any], entry_point: Optional[str]) -> list[Refusal]:
    """--attention-backend local from a pretrain script (module docstring)."""
    if raw.get("--attention-backend") != "local" or not entry_point:
        return []
    fix = "use --attention-backend unfused (Transformer Engine's unfused attention, the same s x s scores) or auto"
    spec = raw.get("--spec") or []
    if not spec or spec[0] != "local":
        return [Refusal("megatron_exits", "--attention-backend local is only supported with --spec local "
                                          "(Megatron's validate_args asserts)", fix)]
    return [Refusal("megatron_exits", f"{entry_point} imports --spec {' '.join(spec)} as a (module, name) pair "
                                      "(spec_utils.import_module): Megatron stops with a ValueError before training",
                    fix)]


def refusals(raw: dict[str, Any], unrecognized: list[str], entry_point: Optional[str] = None,
             megatron_lm_launch: bool = True) -> list[Refusal]:
    """Megatron's own refusals for the parsed flags; `unrecognized` are the argv words argparse would not take;
    `entry_point` the pretrain_*.py a launch script runs (None for an argument file or a stack config);
    `megatron_lm_launch`: the arguments go to Megatron-LM's own pretrain script (a launch script or an argument file),
    not to a stack that builds the run itself, so the asserts this commit's validate_args added are held too."""
    out = _local_backend(raw, entry_point)
    kind = raw.get("--tokenizer-type")
    if entry_point and kind in PRIMUS_HF_TOKENIZERS:
        out.append(Refusal("megatron_argparse", f"Megatron's argparse exits: argument --tokenizer-type: invalid choice: "
                                                f"'{kind}' (a tokenizer type only Primus adds)",
                           "use --tokenizer-type HuggingFaceTokenizer with the same --tokenizer-model"))
    if unrecognized:
        shown = " ".join(unrecognized)
        out.append(Refusal("megatron_argparse", f"Megatron's argparse exits: error: unrecognized arguments: {shown}",
                           f"remove {shown}, or spell the Megatron-LM flag it stands for"))
    hidden, heads = raw.get("--hidden-size"), raw.get("--num-attention-heads")
    if "--kv-channels" not in raw and isinstance(hidden, int) and isinstance(heads, int) and heads > 0 and hidden % heads:
        out.append(Refusal("megatron_exits", f"--hidden-size {hidden} is not divisible by --num-attention-heads {heads}: "
                                             "validate_args asserts hidden_size % num_attention_heads == 0 when --kv-channels "
                                             "is unset", f"set --kv-channels {max(hidden // heads, 1)} (the head dimension), "
                                                         "or a hidden size divisible by the heads"))
    if raw.get("--checkpoint-activations"):
        out.append(Refusal("megatron_exits", "--checkpoint-activations is no longer valid: Megatron prints this and "
                                             "exits (validate_args)",
                           "use --recompute-activations, or --recompute-granularity full --recompute-method uniform"))
    if "--step-batch-size-schedule" in raw and "--global-batch-size" in raw:
        out.append(Refusal("megatron_exits", "Cannot specify both --step-batch-size-schedule and --global-batch-size "
                                             "(Megatron's validate_args raises ValueError)",
                           "drop one of --step-batch-size-schedule and --global-batch-size"))
    position = raw.get("--position-embedding-type", "learned_absolute")
    if raw.get("--mtp-num-layers") and position not in ("rope", "none"):
        # validate_args asserts this before it turns --use-rotary-position-embeddings into rope, so that flag does not help
        out.append(Refusal("megatron_exits", f"Multi-Token Prediction (MTP) is not supported with {position} position "
                                             "embedding type (validate_args asserts rope or none)",
                           "add --position-embedding-type rope (or none)"))
    if (raw.get("--num-layers-per-virtual-pipeline-stage") is not None and raw.get("--num-virtual-stages-per-pipeline-rank") is None
            and raw.get("--pipeline-model-parallel-layout") is None
            and (raw.get("--decoder-first-pipeline-num-layers") is not None or raw.get("--decoder-last-pipeline-num-layers") is not None)):
        out.append(Refusal("megatron_exits", "--num-layers-per-virtual-pipeline-stage with an uneven pipeline "
                                             "(--decoder-first/last-pipeline-num-layers): validate_args asserts 'please use "
                                             "--num-virtual-stages-per-pipeline-rank'",
                           "give the virtual stages as --num-virtual-stages-per-pipeline-rank N instead"))
    for flag, instead in (("--batch-size", "--micro-batch-size"), ("--warmup", "--lr-warmup-fraction"),
                          ("--model-parallel-size", "--tensor-model-parallel-size")):
        if raw.get(flag) is not None:  # validate_args: "Deprecated arguments" asserts each is None
            out.append(Refusal("megatron_exits", f"{flag} is no longer valid (validate_args asserts it is unset)",
                               f"use {instead} instead"))
    if raw.get("--cross-entropy-loss-fusion") and raw.get("--cross-entropy-fusion-impl") == "te" and megatron_lm_launch:
        # Megatron-Core's language_module runs the te impl: Megatron-Bridge builds the model itself, and Primus's MLPerf
        # gpt-oss configs (AMD-AGI/Primus fd1eeabb) run with it
        out.append(Refusal("megatron_exits", "Transformer Engine cross entropy loss fusion is disabled due to stability issues "
                                             "(validate_args asserts --cross-entropy-fusion-impl is not te with "
                                             "--cross-entropy-loss-fusion)",
                           "use --cross-entropy-fusion-impl native, or drop --cross-entropy-loss-fusion"))
    if raw.get("--seq-length") is not None and raw.get("--encoder-seq-length") is not None:
        out.append(Refusal("megatron_exits", "--seq-length with --encoder-seq-length: validate_args asserts that "
                                             "--encoder-seq-length is unset when --seq-length is given",
                           "drop --encoder-seq-length (it takes --seq-length's value)"))
    if raw.get("--save") is not None and not raw.get("--save-interval"):
        out.append(Refusal("megatron_exits", "--save without a positive --save-interval: validate_args asserts "
                                             "save_interval is set and above 0",
                           "add --save-interval N (or drop --save)"))
    fmt = raw.get("--ckpt-format", "torch_dist")
    if raw.get("--use-megatron-fsdp") and fmt != "fsdp_dtensor":
        out.append(Refusal("megatron_exits", f"Megatron-FSDP requires the `fsdp_dtensor` checkpointing format (got "
                                             f"--ckpt-format {fmt}; validate_args asserts)", "add --ckpt-format fsdp_dtensor"))
    if fmt == "fsdp_dtensor" and not raw.get("--use-megatron-fsdp"):
        out.append(Refusal("megatron_exits", "--ckpt-format fsdp_dtensor is only tested with Megatron FSDP (validate_args "
                                             "asserts)", "add --use-megatron-fsdp or use --ckpt-format torch_dist"))
    if raw.get("--use-torch-fsdp2"):
        if not raw.get("--no-gradient-accumulation-fusion"):
            out.append(Refusal("megatron_exits", "--use-torch-fsdp2 is not supported with gradient accumulation fusion "
                                                 "(validate_args asserts)", "add --no-gradient-accumulation-fusion"))
        if fmt not in ("torch_dist", "torch_dcp"):
            out.append(Refusal("megatron_exits", f"--use-torch-fsdp2 requires --ckpt-format torch_dist or torch_dcp (got {fmt})",
                               "use --ckpt-format torch_dist"))
    return out
