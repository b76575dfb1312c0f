"""Config keys of the stacks built on Megatron-LM, as Megatron-LM command-line flags (and back).

Why: Primus overrides, Megatron-Bridge's ConfigContainer and Megatron's own `--yaml-cfg` hold the same recipe
as a launch script, under the argparse *destination* names (`tensor_model_parallel_size`) or Megatron-Core's
config field names (`num_moe_experts`). Turning each key into the flag Megatron's argparse would read lets
every existing reader, rule, memory term and projection judge them unchanged (constraints.megatron.argv_to_specs).

Sources (Megatron-LM @ d98e8a64, the dump of constraints.megatron.flag_table):
- megatron/training/arguments.py: a flag's dest is its name with `-` -> `_`, except the `dest=` below;
  `action='store_false'` flags set their dest False (`--no-position-embedding` -> add_position_embedding).
- megatron/training/argument_utils.py: flags generated from config dataclasses give a boolean field that
  defaults True the two switches `--no-<field>` and `--disable-<field>` (store_false, dest `<field>`).
- megatron/training/yaml_arguments.py: `args.num_experts = args.language_model.num_moe_experts`;
  `activation_func` swiglu / squaredrelu / gelu; GQA whenever `num_query_groups` is set.
"""
from __future__ import annotations

from typing import Any, Optional

from constraints.megatron.flags import FLAGS, READ_FLAGS

# store_false flags whose dest arguments.py names itself (the rest strip `--no-` / `--disable-`)
_EXPLICIT_OFF_DEST = {
    "--bert-no-binary-head": "bert_binary_head", "--muon-no-split-qkv": "muon_split_qkv",
    "--no-one-logger": "enable_one_logger", "--no-overlap-p2p-communication": "overlap_p2p_comm",
    "--no-position-embedding": "add_position_embedding", "--no-rope-fusion": "apply_rope_fusion",
    "--torch-fsdp2-no-reshard-after-forward": "torch_fsdp2_reshard_after_forward",
    "--use-same-sampling-seed-across-dp-ranks": "offset_sampling_seed_by_dp_rank",
}
# store_true / value flags whose dest is not the flag's own name
_EXPLICIT_ON_DEST = {
    "--use-mcore-models": "deprecated_use_mcore_models", "--output-logit-dtype": "logit_dtype",
    "--use-nccl-ub": "nccl_ub",
    "--inference-dynamic-batching-prefix-caching": "inference_dynamic_batching_enable_prefix_caching",
}


# Config-dataclass fields whose flag names another word (`argparse_meta` arg_names in megatron/core/
# transformer/transformer_config.py, model_parallel_config.py, ...): argparse stores them under the field name,
# and Primus / Bridge / --yaml-cfg files use that name. dest -> (flag, sets True / a value, or sets False)
_FIELD_ALIASES = {
    "layernorm_epsilon": ("--norm-epsilon", True), "layernorm_zero_centered_gamma": ("--apply-layernorm-1p", True),
    "add_bias_linear": ("--disable-bias-linear", False), "fp8": ("--fp8-format", True),
    "fp4": ("--fp4-format", True), "fp4_param": ("--fp4-param-gather", True),
    "perform_initialization": ("--no-initialization", False), "use_te_rng_tracker": ("--te-rng-tracker", True),
    "overlap_p2p_comm_warmup_flush": ("--overlap-p2p-communication-warmup-flush", True),
    "microbatch_group_size_per_vp_stage": ("--microbatch-group-size-per-virtual-pipeline-stage", True),
    "use_mamba_mem_eff_path": ("--disable-mamba-mem-eff-path", False),
    "use_gloo_process_groups": ("--disable-gloo-process-groups", False),
    "barrier_with_L1_time": ("--no-barrier-with-level-1-timing", False),
}


def _off_dest(flag: str) -> str:
    if flag in _EXPLICIT_OFF_DEST:
        return _EXPLICIT_OFF_DEST[flag]
    for prefix in ("--no-", "--disable-"):
        if flag.startswith(prefix):
            return flag[len(prefix):].replace("-", "_")
    return flag[2:].replace("-", "_")


def _dest(flag: str) -> str:
    return _EXPLICIT_ON_DEST.get(flag) or flag[2:].replace("-", "_")


def _preferred(flags: list[str]) -> str:
    """Of several flags for one dest, the one shardplan's rules read, else the shortest (stable)."""
    read = [f for f in flags if f in READ_FLAGS]
    return sorted(read or flags, key=lambda f: (len(f), f))[0]


def _tables() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    on: dict[str, list[str]] = {}
    off: dict[str, list[str]] = {}
    for flag, info in FLAGS.items():
        (off if info.store_false else on).setdefault(_off_dest(flag) if info.store_false else _dest(flag), []).append(flag)
    dest_of = {flag: (_off_dest(flag) if info.store_false else _dest(flag)) for flag, info in FLAGS.items()}
    on_flag, off_flag = {d: _preferred(f) for d, f in on.items()}, {d: _preferred(f) for d, f in off.items()}
    for dest, (flag, sets_true) in _FIELD_ALIASES.items():
        (on_flag if sets_true else off_flag).setdefault(dest, flag)
        dest_of[flag] = dest
    return on_flag, off_flag, dest_of


ON_FLAG, OFF_FLAG, DEST_OF = _tables()  # dest -> flag that sets it (a value / True), dest -> flag that sets it False

# Megatron-Core config field -> argparse dest, where the names differ (TransformerConfig / ModelParallelConfig,
# read by yaml_arguments.py and Megatron-Bridge's model providers)
CORE_RENAMES = {
    "num_moe_experts": "num_experts",
    "virtual_pipeline_model_parallel_size": "num_virtual_stages_per_pipeline_rank",
    "fp8_param": "fp8_param_gather",
    # GPTModelProvider's YaRN fields; Megatron-LM's command line spells them without the prefix
    # (megatron/training/argument_utils.py _apply_yarn_config_from_args)
    "yarn_rotary_scaling_factor": "rotary_scaling_factor",
    "yarn_mscale": "mscale",
    "yarn_mscale_all_dim": "mscale_all_dim",
}
_ACTIVATIONS = {"swiglu": ["--swiglu"], "squaredrelu": ["--squared-relu"], "gelu": []}
# the callable a Bridge provider names for gpt-oss's gate (models/gpt_oss/gpt_oss_bridge.py imports it from here);
# with gated_linear_unit it is Megatron's --quick-geglu
QUICK_GELU_TARGET = "megatron.core.fusions.fused_bias_geglu.quick_gelu"


class StackKeyError(ValueError):
    """A stack config value that cannot become a Megatron argument; one line for the user."""


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def flags_for_dest(dest: str, value: Any, path: str) -> Optional[list[str]]:
    """The Megatron arguments that set argparse dest `dest` to `value`; None when Megatron has no such argument.
    `None` values and switches left at their default give no argument (Megatron's default applies)."""
    if value is None:
        return [] if dest in ON_FLAG or dest in OFF_FLAG else None
    on = ON_FLAG.get(dest)
    if isinstance(value, (list, tuple)) and not value and (on or dest in OFF_FLAG):
        return []  # an empty list sets nothing (argparse would refuse the bare flag)
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1) and \
            (on and FLAGS[on].nargs == 0 or on is None and dest in OFF_FLAG):
        value = bool(value)  # Primus writes switches as 0/1; Megatron tests them for truth
    if isinstance(value, bool):
        if value and on and FLAGS[on].nargs == 0:
            return [on]
        if not value and dest in OFF_FLAG:
            return [OFF_FLAG[dest]]
        if on and FLAGS[on].nargs == 0 or dest in OFF_FLAG:
            return []  # a switch at its default
        if on is None:
            return None
        raise StackKeyError(f"{path}: {on} takes a {FLAGS[on].value_type} value, not {_value_text(value)} "
                            f"({_value_text(value)}); give a {FLAGS[on].value_type}")
    if on is None:
        return None
    info = FLAGS[on]
    if info.nargs == 0:
        raise StackKeyError(f"{path}: a switch takes true or false ({value!r}); write true or false")
    if isinstance(value, (list, tuple)):
        if info.nargs in ("+", "*") or (isinstance(info.nargs, int) and info.nargs == len(value)):
            return [on, *(_value_text(v) for v in value)]
        ints = ",".join(str(v) for v in value) if value and all(isinstance(v, int) and not isinstance(v, bool)
                                                                for v in value) else None
        if ints is not None and on in TUPLE_FLAGS:
            return [on, ints]  # tuple_type parses "128,0"; a config holds the tuple itself
        if ints is not None and on in PER_LAYER_LIST_FLAGS:
            return [on, f"[{ints}]"]  # the per-layer list as the flag's text writes it
        raise StackKeyError(f"{path}: {on} takes one value, not a list ({value!r}); give one value")
    if isinstance(value, dict):
        raise StackKeyError(f"{path}: {on} takes a value, not a mapping; give one value")
    return [on, _value_text(value)]


# flags Megatron-LM parses with `type=tuple_type` ("1,2" -> (1, 2); megatron/training/arguments.py @ d98e8a64): a
# config that sets the argument namespace directly (Primus, yaml-cfg) or a Megatron-Core field holds the tuple
TUPLE_FLAGS = frozenset({"--window-size"})
# flags parsed by moe_freq_type / no_rope_freq_type, which take an int or a per-layer list written "[1,0,1,0]"
PER_LAYER_LIST_FLAGS = frozenset({"--moe-layer-freq", "--window-attn-skip-freq", "--no-rope-freq"})


def flags_for_core_field(field: str, value: Any, path: str, core_names: bool) -> Optional[list[str]]:
    """As flags_for_dest, for a Megatron-Core config field name (core_names) or an argparse dest."""
    if core_names:
        if field == "activation_func" and isinstance(value, str) and value in _ACTIVATIONS:
            return list(_ACTIVATIONS[value])
        if field == "gated_linear_unit":  # Megatron's --swiglu = SiLU gated linear unit
            return ["--swiglu"] if value else []
        if field == "share_embeddings_and_output_weights":
            return [] if value or value is None else ["--untie-embeddings-and-output-weights"]
        if field == "num_query_groups" and value is not None:
            return ["--group-query-attention", "--num-query-groups", _value_text(value)]
        if field == "fp8" and isinstance(value, bool):  # Bridge: fp8 on/off; the format lives elsewhere
            return None
        field = CORE_RENAMES.get(field, field)
    return flags_for_dest(field, value, path)


def dests_from_args(argv: list[str]) -> dict[str, Any]:
    """Megatron arguments -> {argparse dest: value}, in argument order (the inverse of flags_for_dest):
    switches become True (store_false: False), values their int / float / string, lists stay lists."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        flag = argv[i]
        info = FLAGS.get(flag)
        if info is None:
            raise StackKeyError(f"argument {flag}: not a Megatron-LM flag; cannot write it as a config key")
        dest = DEST_OF[flag]
        if info.nargs == 0:
            out[dest] = not info.store_false
            i += 1
            continue
        j = i + 1
        while j < len(argv) and not (argv[j].startswith("--") and argv[j] in FLAGS):
            j += 1
        values = [_typed(v, info.value_type) for v in argv[i + 1:j]]
        out[dest] = values if info.nargs in ("+", "*") or (isinstance(info.nargs, int) and info.nargs > 1) else values[0]
        i = j
    return out


def _typed(text: str, value_type: str) -> Any:
    try:
        return int(text) if value_type == "int" else float(text) if value_type == "float" else text
    except ValueError:
        return text


# every argparse dest of Megatron-LM's flag table (constraints.megatron.flags), sorted: the names a stack config may use
MEGATRON_DESTS: tuple[str, ...] = tuple(sorted(set(DEST_OF.values())))
