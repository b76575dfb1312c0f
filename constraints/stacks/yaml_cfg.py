"""Read a Megatron-LM `--yaml-cfg` file as Megatron arguments.

Layout (NVIDIA/Megatron-LM megatron/training/yaml_arguments.py; the old examples/gpt3/gpt_config.yaml):

    language_model: {num_layers: 32, hidden_size: 4096, num_moe_experts: null, activation_func: swiglu, ...}
    model_parallel: {tensor_model_parallel_size: 2, pipeline_model_parallel_size: 1, bf16: true, ...}
    micro_batch_size: 1                               every other top-level key: an argparse dest
    global_batch_size: 128

`load_yaml` ignores every command-line argument once `--yaml-cfg` is given and merges the three levels into
one namespace; `language_model` and `model_parallel` hold Megatron-Core field names (TransformerConfig,
ModelParallelConfig), renamed to argparse dests by constraints.stacks.keys. validate_yaml overwrites
`virtual_pipeline_model_parallel_size` from `num_layers_per_virtual_pipeline_stage`, so that key is not read.
"""
from __future__ import annotations

from typing import Any

from constraints.stacks.common import ArgvBuilder, EnvReferences, StackConfig, StackConfigError

SECTIONS = ("language_model", "model_parallel")
# validate_yaml sets these itself; a value in the file has no effect
OVERWRITTEN = ("virtual_pipeline_model_parallel_size", "params_dtype", "pipeline_dtype", "variable_seq_lengths",
               "yaml_cfg")


def is_yaml_cfg(data: dict) -> bool:
    return any(isinstance(data.get(s), dict) for s in SECTIONS)


def read_yaml_cfg(data: dict, env: EnvReferences) -> StackConfig:
    for section in SECTIONS:
        if not isinstance(data.get(section), dict):
            raise StackConfigError(f"{section}: missing or not a mapping; Megatron's --yaml-cfg reads both "
                                   "language_model and model_parallel sections (yaml_arguments.validate_yaml)")
    builder, notes, ignored = ArgvBuilder(), env.notes, []
    items: list[tuple[str, str, Any, bool]] = []
    for section in SECTIONS:
        items += [(f"{section}.{k}", str(k), v, True) for k, v in data[section].items()]
    items += [(str(k), str(k), v, False) for k, v in data.items() if k not in SECTIONS]
    for path, key, value, core in items:
        if key in OVERWRITTEN:
            if value is not None:
                ignored.append(path)
            continue
        builder.add(path, key, env.value(value, path), core_names=core)
    if ignored:
        notes.append(f"{', '.join(ignored)}: Megatron's yaml path sets these itself (validate_yaml); the file's "
                     "value has no effect")
    return StackConfig(kind="yaml-cfg", argv=builder.argv(), not_understood=builder.not_understood,
                       ignored=ignored, notes=notes + builder.notes)
