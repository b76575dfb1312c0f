"""Read a Megatron-Bridge (NeMo) recipe as Megatron arguments: its ConfigContainer YAML, or `key=value` overrides.

Layout (NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/config.py `ConfigContainer`; the override YAMLs
under examples/*/conf/; the dotted `section.field=value` overrides its scripts take after the recipe):

    model:     GPTModelProvider = Megatron-Core TransformerConfig + ModelParallelConfig fields
               (tensor_model_parallel_size, num_layers, num_moe_experts, seq_length, ...)
    train:     micro_batch_size, global_batch_size, train_iters, ...
    optimizer: optimizer, use_distributed_optimizer, lr, ...
    ddp:       overlap_grad_reduce, overlap_param_gather, use_distributed_optimizer, ...
    dataset:   seq_length (must equal model.seq_length), ...
    mixed_precision: bf16_mixed | fp16_mixed | bf16_with_fp8_delayed_scaling_mixed | ... or a mapping of fields
    env_vars:  environment defaults the launcher applies
    scheduler / logger / checkpoint / tokenizer / rng / dist / ...: argparse dests where Megatron has them

`model` keys are Megatron-Core names (constraints.stacks.keys.CORE_RENAMES); every other section uses names that
equal Megatron's argparse dests. A recipe's Python function is not run: only what the file states is read.
"""
from __future__ import annotations

import re
from typing import Any

from boundary.errors import InputRefused
from boundary.limits import MAX_DEPTH, MAX_YAML_NODES
from boundary.parse import load_yaml
from boundary.show import shown
from constraints.stacks.bridge_precision import ALIASES as PRECISION_ALIASES
from constraints.stacks.bridge_precision import RESOLVED as PRECISION_FIELDS
from constraints.stacks.bridge_precision import BridgePrecisionError, precision_args
from constraints.stacks.bridge_precision import resolve as resolve_precision
from constraints.stacks.common import ArgvBuilder, EnvReferences, StackConfig, StackConfigError
from constraints.stacks.field_names import unknown_bridge_key
from constraints.stacks.keys import CORE_RENAMES, QUICK_GELU_TARGET

SECTIONS = ("model", "train", "optimizer", "ddp", "dataset", "scheduler", "logger", "checkpoint", "tokenizer",
            "rng", "dist", "validation", "profiling", "comm_overlap", "mixed_precision", "env_vars", "ft",
            "straggler", "rerun_state_machine", "peft",
            # ConfigContainer's fault-tolerance, inspection and optimizer-override sections (constraints/stacks/bridge_fields.py)
            "nvrx_straggler", "tensor_inspect", "inprocess_restart", "optimizer_config_override_provider")
# Megatron-Bridge ConfigContainer sections other than `model` (src/megatron/bridge/training/config.py)
BRIDGE_SECTIONS = {
    "train": ("micro_batch_size", "global_batch_size", "train_iters", "eval_iters", "eval_interval"),
    "optimizer": ("optimizer", "lr", "min_lr", "weight_decay", "clip_grad", "adam_beta1", "adam_beta2",
                  "use_distributed_optimizer"),
    "scheduler": ("lr_decay_style", "lr_warmup_iters", "lr_decay_iters"),
    "ddp": ("overlap_grad_reduce", "overlap_param_gather", "use_distributed_optimizer", "use_megatron_fsdp",
            "data_parallel_sharding_strategy", "num_distributed_optimizer_instances"),
    "dataset": ("seq_length", "data_path", "split"),
    "tokenizer": ("tokenizer_type", "tokenizer_model"),
    "logger": ("log_interval", "log_throughput", "tensorboard_dir"),
    "checkpoint": ("save", "load", "save_interval"),
}
_OVERRIDE = re.compile(r"\+?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)=(.*)")


def bridge_key(dest: str) -> str:
    """Where a Bridge config states Megatron dest `dest` (for messages): its section, else the model section."""
    if dest in ("bf16", "fp16"):
        return f"mixed_precision ({dest}_mixed)"
    section = next((s for s, keys in BRIDGE_SECTIONS.items() if dest in keys), "model")
    renamed = {v: k for k, v in CORE_RENAMES.items()}.get(dest, dest) if section == "model" else dest
    return f"{section}.{renamed}"


def is_bridge(data: dict) -> bool:
    """A ConfigContainer mapping: a `model` mapping or `train` section, and none of a shardplan recipe's keys."""
    if any(k in data for k in ("recipe", "job", "hardware", "nodes", "gpus_per_node")):
        return False
    return (isinstance(data.get("model"), dict) or isinstance(data.get("train"), dict)) and \
        all(k in SECTIONS for k in data)


def overrides_text(text: str) -> list[str] | None:
    """The `key=value` tokens of a Bridge overrides file (one or more per line, `#` comments), or None when the
    text is not one: every token must be `section.field=value` or a top-level section `=value`."""
    tokens = [t for line in text.splitlines() for t in line.split("#", 1)[0].split()]
    if not tokens:
        return None
    for t in tokens:
        m = _OVERRIDE.fullmatch(t)
        if m is None or ("." not in m.group(1) and m.group(1) not in SECTIONS):
            return None
    return tokens if any("." in t.split("=", 1)[0] for t in tokens) else None


def mapping_from_overrides(tokens: list[str], load_value, label: str = "overrides") -> dict:
    """`a.b=v` tokens -> {'a': {'b': v}}; values typed as YAML types them (Hydra's grammar for plain values). Held to
    a YAML file's limits (boundary.limits), counted before the mapping is built: at most MAX_YAML_NODES overrides, each
    key at most MAX_DEPTH parts (a ConfigContainer field is 2-3 parts deep)."""
    if len(tokens) > MAX_YAML_NODES:
        raise StackConfigError(f"{label}: {len(tokens):,} key=value overrides, over the {MAX_YAML_NODES:,} values a config file may "
                               "hold; give the overrides of one run")
    out: dict = {}
    for t in tokens:
        key, value = _OVERRIDE.fullmatch(t).groups()
        if key.count(".") >= MAX_DEPTH:
            raise StackConfigError(f"{label}: {shown(key)}: nested more than {MAX_DEPTH} levels deep; a ConfigContainer field is "
                                   "section.field or section.group.field")
        *parents, leaf = key.split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise StackConfigError(f"{key}: {p} is set to a value and used as a section; keep one")
        node[leaf] = load_value(value, key)
    return out


def _mixed_precision(resolved, builder: ArgvBuilder, env: EnvReferences) -> None:
    """The section's Megatron arguments (constraints/stacks/bridge_precision.py); a mapping's other keys as fields."""
    fields, rest = resolved
    builder.add_args("mixed_precision", precision_args(fields))
    for k, v in rest.items():
        path = f"mixed_precision.{k}"
        builder.add(path, k, env.value(v, path), core_names=True)


# sections whose fields MixedPrecisionConfig.setup overwrites (model, optimizer and DDP configs)
_PRECISION_TARGETS = ("model", "optimizer", "ddp")


def read_bridge(data: dict, env: EnvReferences, printed: bool = False) -> StackConfig:
    """The ConfigContainer mapping as Megatron arguments. `printed`: the config Bridge itself printed in a training log
    (its `Task Configuration` block), so every key is a field of the Bridge release that ran: one shardplan's field
    lists do not hold (another release) is not understood, not refused as a misspelling."""
    builder, notes, ignored = ArgvBuilder(), env.notes, []
    env_vars = None
    try:
        precision = resolve_precision(data.get("mixed_precision"))
    except BridgePrecisionError as exc:
        raise StackConfigError(str(exc)) from None
    for section, body in data.items():
        if section == "mixed_precision":
            if precision is not None:
                _mixed_precision(precision, builder, env)
            continue
        if section == "env_vars":
            if not isinstance(body, dict):
                raise StackConfigError("env_vars: must be a mapping of NAME: value")
            env_vars = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in body.items()}
            continue
        if body is None:
            continue
        if not isinstance(body, dict):
            raise StackConfigError(f"{section}: a ConfigContainer section is a mapping of fields ({body!r}); "
                                   f"write {section}: {{field: value}}")
        for key, value in body.items():
            path = f"{section}.{key}"
            if key == "_target_":
                ignored.append(path)
                continue
            if key in PRECISION_FIELDS and section in _PRECISION_TARGETS:
                if precision is not None:  # Bridge copies mixed_precision's value over this one
                    said = precision[0][PRECISION_ALIASES.get(key, key)]
                    if value != said:
                        notes.append(f"{path}: {value!r} is replaced by mixed_precision's {said!r} (Megatron-Bridge "
                                     "MixedPrecisionConfig.setup copies its fields onto the model, optimizer and DDP configs)")
                    continue
                if key == "grad_reduce_in_fp32":
                    builder.add_args(path, [] if value in (None, True) else ["--grad-reduce-in-bf16"])
                    continue
            if section == "model" and key == "gated_linear_unit" and _quick_geglu(body):
                builder.add_args(path, ["--quick-geglu"])  # not --swiglu: the gate is quick_gelu
                continue
            if isinstance(value, dict):
                if not (section == "model" and key == "activation_func" and _activation_agrees(value, body)):
                    builder.not_understood.append(path)
                continue
            builder.add(path, str(key), env.value(value, path), core_names=section == "model")
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    if "max_position_embeddings" not in model and isinstance(model.get("seq_length"), int):
        # GPTModelProvider has no max_position_embeddings: it builds GPTModel with max_sequence_length=self.seq_length
        # (Megatron-Bridge v0.6.0 src/megatron/bridge/models/gpt_provider.py), which is what Megatron's flag sets
        builder.add_args("model.seq_length", ["--max-position-embeddings", str(model["seq_length"])])
    if "cross_entropy_loss_fusion" not in model:
        # GPTModelProvider.cross_entropy_loss_fusion defaults to True (Megatron-Bridge 067f987d gpt_provider.py), where
        # Megatron-LM's flag defaults to off
        builder.add_args("model.cross_entropy_loss_fusion", ["--cross-entropy-loss-fusion"])
    for path in builder.not_understood:  # a misspelt key is an error, a real field Megatron has no flag for is not
        error = None if printed else unknown_bridge_key(path)
        if error:
            raise StackConfigError(error)
    return StackConfig(kind="bridge", argv=builder.argv(), not_understood=builder.not_understood, ignored=ignored,
                       notes=notes + builder.notes, env=env_vars)


def _activation_agrees(value: dict, model: dict) -> bool:
    """A provider's `activation_func: {_target_: torch.nn.functional.silu}` is what Megatron's --swiglu builds with
    gated_linear_unit (SiLU GLU), quick_gelu with it is --quick-geglu (gpt-oss), and gelu without it is Megatron's
    default MLP; any other pairing is not modelled."""
    if model.get("gated_linear_unit"):
        return value.get("_target_") in ("torch.nn.functional.silu", QUICK_GELU_TARGET)
    return value.get("_target_") == "torch.nn.functional.gelu"


def _quick_geglu(model: dict) -> bool:
    """The model section builds Megatron's --quick-geglu: quick_gelu as a gated linear unit."""
    act = model.get("activation_func")
    return bool(model.get("gated_linear_unit")) and isinstance(act, dict) and act.get("_target_") == QUICK_GELU_TARGET


def load_override_value(text: str, key: str) -> Any:
    """One override's value as YAML types it (`2` int, `true` bool, `null` None, `bf16_mixed` str)."""
    if text == "":
        return ""
    try:
        return load_yaml(text, "override value", f"{key}")
    except InputRefused as exc:
        raise StackConfigError(str(exc)) from None
