"""Recognise a torch-native stack's recipe (a torchtitan job TOML, a NeMo AutoModel YAML) so that `check` refuses it by
name instead of reading it as a Megatron launch script or a shardplan recipe.

Why a refusal and not a reader: `check` judges a Megatron-LM launch (its rules, its memory arithmetic, its step model).
A torch-native stack runs PyTorch FSDP, its own activation checkpointing, torch.compile, torchao float8 and its own
pipeline and expert-parallel code; shardplan prices its published runs with a step model of its own
(measure/torch_native/step.py, docs/hardware-model.md) but has no reader for these recipes' keys and no memory model
of FSDP2's per-parameter sharding, so pricing the recipe as Megatron would be silently wrong. The file arrives here
already read through the bounded boundary (constraints/stacks/detect.py: boundary.read.read_text, boundary.parse.load_yaml);
only its top-level keys / TOML section headers are looked at.
"""
from __future__ import annotations

import re
from typing import Any, Optional

from boundary.show import shown

# torchtitan's job config sections (torchtitan/config_manager.py JobConfig @e7c0cae: [job], [model], [training],
# [parallelism], [activation_checkpoint], [float8], ...) and keys no other TOML shares
_TOML_SECTION = re.compile(r"^\s*\[(job|model|training|parallelism|activation_checkpoint|float8|optimizer|checkpoint)\]\s*$",
                           re.MULTILINE)
_TORCHTITAN_KEY = re.compile(r"^\s*(data_parallel_shard_degree|tensor_parallel_degree|dump_folder|selective_ac_option)\s*=",
                             re.MULTILINE)
# NeMo AutoModel recipe YAML: `step_scheduler`, `distributed.strategy` (fsdp2 / megatron_fsdp / ddp) and `_target_`s in
# nemo_automodel (examples/llm_benchmark/*/*.yaml, examples/llm_finetune/*/*.yaml)
_AUTOMODEL_STRATEGIES = ("fsdp2", "megatron_fsdp", "ddp")

REFUSAL = ("{name} is {what} (a torch-native stack: PyTorch FSDP, its own activation checkpointing, torch.compile, "
           "torchao float8); check judges Megatron-LM launches and does not price torch-native recipes (shardplan "
           "prices published torch-native runs with their own step model only: docs/hardware-model.md, "
           "'Torch-native stacks')")


def is_torchtitan_toml(text: str) -> bool:
    """A torchtitan job config: at least two of its sections and one of its own keys."""
    return len(set(_TOML_SECTION.findall(text))) >= 2 and _TORCHTITAN_KEY.search(text) is not None


def _targets_automodel(value: Any) -> bool:
    return isinstance(value, dict) and str(value.get("_target_", "")).startswith("nemo_automodel")


def is_automodel_yaml(data: Any) -> bool:
    """A NeMo AutoModel recipe: a step scheduler or an AutoModel distributed strategy, and a component it builds."""
    if not isinstance(data, dict):
        return False
    dist = data.get("distributed")
    strategy = isinstance(dist, dict) and (str(dist.get("strategy", "")) in _AUTOMODEL_STRATEGIES
                                           or _targets_automodel(dist))
    return ("step_scheduler" in data or strategy) and any(_targets_automodel(v) for v in data.values())


def torch_native_refusal(name: str, text: str, data: Any = None) -> Optional[str]:
    """The one-line refusal for a torch-native recipe (`text` as read, `data` its parsed YAML if any), else None."""
    if data is not None and is_automodel_yaml(data):
        return REFUSAL.format(name=shown(name), what="a NeMo AutoModel recipe")
    if data is None and is_torchtitan_toml(text):
        return REFUSAL.format(name=shown(name), what="a torchtitan job config")
    return None
