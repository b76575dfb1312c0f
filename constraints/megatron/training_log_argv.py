"""A Megatron-LM argument dump (`name ..... value` per args attribute) turned back into the command line that made it.

Why its own module: the dump holds argparse *dests* and their final values, while shardplan reads option strings.
Mapping one to the other needs Megatron's flag table (constraints.megatron.flag_table, via constraints.megatron.flags)
plus the dests that do not follow `--a-b` -> `a_b`: a `--no-x` / `--disable-x` switch stores False into `x`, and a
few options name their dest outright. Those exceptions are listed below from NVIDIA/Megatron-LM @ d98e8a64
(megatron/training/arguments.py `dest=`, and the dataclass fields whose `argparse_meta` names their option).
"""
from __future__ import annotations

import ast
import re
from typing import Optional

from constraints.megatron.flags import FLAGS, FlagInfo

# dest -> option string where the dest is not the option's name with dashes turned to underscores (and, for a
# store_false switch, its `no-` / `disable-` prefix dropped).
DEST_OPTIONS = {
    "add_position_embedding": "--no-position-embedding", "bert_binary_head": "--bert-no-binary-head",
    "enable_one_logger": "--no-one-logger", "muon_split_qkv": "--muon-no-split-qkv",
    "apply_rope_fusion": "--no-rope-fusion", "overlap_p2p_comm": "--no-overlap-p2p-communication",
    "torch_fsdp2_reshard_after_forward": "--torch-fsdp2-no-reshard-after-forward",
    "offset_sampling_seed_by_dp_rank": "--use-same-sampling-seed-across-dp-ranks", "nccl_ub": "--use-nccl-ub",
    "logit_dtype": "--output-logit-dtype", "perform_initialization": "--no-initialization",
    "use_te_rng_tracker": "--te-rng-tracker", "overlap_p2p_comm_warmup_flush": "--overlap-p2p-communication-warmup-flush",
    "microbatch_group_size_per_vp_stage": "--microbatch-group-size-per-virtual-pipeline-stage",
    "barrier_with_L1_time": "--no-barrier-with-level-1-timing", "layernorm_epsilon": "--norm-epsilon",
    "layernorm_zero_centered_gamma": "--apply-layernorm-1p", "add_bias_linear": "--disable-bias-linear",
    "fp8": "--fp8-format", "fp4": "--fp4-format", "fp4_param": "--fp4-param-gather",
    "use_mamba_mem_eff_path": "--disable-mamba-mem-eff-path", "use_gloo_process_groups": "--disable-gloo-process-groups",
    "metadata_path": "--tokenizer-metadata", "special_tokens": "--tokenizer-special-tokens",
    "ckpt_fully_parallel_save": "--no-ckpt-fully-parallel-save",
}

# torch dtypes as the dump prints them -> the choice strings of the `*-dtype` flags
_DTYPES = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.uint8": "uint8",
           "torch.float8_e4m3fn": "fp8"}
_ENUM = re.compile(r"[A-Z]\w*\.(\w+)")  # `AttnBackend.auto` -> `auto`


def _dest_table() -> dict[str, tuple[str, FlagInfo]]:
    """dest -> (option string, parse rule) for every option in the flag table; the first spelling wins, with
    `--no-x` preferred over `--disable-x` and dashes over underscores, so the argv reads as Megatron's docs write it."""
    table: dict[str, tuple[str, FlagInfo]] = {}
    for flag in sorted(FLAGS, key=lambda f: ("_" in f, f.startswith("--disable-"), f)):
        info = FLAGS[flag]
        dest = flag[2:].replace("-", "_")
        if info.store_false:
            dest = re.sub(r"^(no|disable)_", "", dest)
        table.setdefault(dest, (flag, info))
    for dest, flag in DEST_OPTIONS.items():
        if flag in FLAGS:
            table[dest] = (flag, FLAGS[flag])
    return table


DEST_TABLE = _dest_table()


def _values(text: str) -> Optional[list[str]]:
    """The dump's value text as argv words: None for `None` or nothing, a Python list printed `[1, 2]` as its items."""
    if text in ("None", ""):
        return None
    if text.startswith("[") and text.endswith("]"):
        try:
            items = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return [text]
        if isinstance(items, (list, tuple)):
            return [str(x) for x in items]
    text = _DTYPES.get(text, text)
    m = _ENUM.fullmatch(text)
    return [m.group(1) if m and not text.startswith("torch.") else text]


# entries Megatron-LM computes in validate_args / initialisation and prints with the options (megatron/training/
# arguments.py validate_args, megatron/training/initialize.py): not options, and nothing a user wrote, so leaving them
# out of argv is not worth a warning
DERIVED_ENTRIES = frozenset({"rank", "world_size", "data_parallel_size", "params_dtype", "consumed_train_samples",
                             "consumed_valid_samples", "padded_vocab_size", "variable_seq_lengths", "iteration",
                             "transformer_pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
                             "expert_tensor_model_parallel_size", "expert_model_parallel_rank"})


def dump_to_argv(entries: list[tuple[int, str, str]]) -> tuple[list[str], list[str]]:
    """(argv, warnings) from dump entries `(line, name, value text)`: `--flag value...` for each entry the table knows
    with a value, `--flag` for a switch set away from its default (True for store_true, False for store_false);
    None, empty lists and switches at their default are left out, as Megatron would fill them in itself. Each
    entry that is no Megatron option (a value Megatron derives, like `world_size`) or cannot be written back
    gives one warning `line N: ...`."""
    argv: list[str] = []
    warnings: list[str] = []
    for line, name, text in entries:
        known = DEST_TABLE.get(name)
        if known is None:
            if name in DERIVED_ENTRIES:
                continue
            warnings.append(f"line {line}: dump entry `{name}` ({text[:40]}) is no Megatron-LM option; left out of argv")
            continue
        flag, info = known
        if info.nargs == 0:
            if text not in ("True", "False", "None"):
                warnings.append(f"line {line}: switch `{name}` has value {text[:40]}; left out of argv")
            elif text == ("False" if info.store_false else "True"):
                argv.append(flag)
            continue
        words = _values(text)
        if not words:
            continue
        if info.nargs == 1 and len(words) != 1:
            warnings.append(f"line {line}: `{name}` holds {len(words)} values but {flag} takes one; left out of argv")
            continue
        if isinstance(info.nargs, int) and info.nargs > 1 and len(words) != info.nargs:
            warnings.append(f"line {line}: `{name}` holds {len(words)} values but {flag} takes {info.nargs}; left out")
            continue
        if info.value_type in ("int", "float") and not all(re.fullmatch(r"-?[0-9.]+(?:[eE][+-]?\d+)?", w) for w in words):
            warnings.append(f"line {line}: `{name}` value {text[:40]} is not a number as {flag} needs; left out of argv")
            continue
        argv.append(flag)
        argv.extend(words)
    return argv, warnings
