"""Tell a Megatron-Bridge config key that is a real field shardplan does not model from one that is no field.

Why: both reach check as "not understood" (no Megatron argument to map them to). A real field (`ddp.
grad_reduce_in_fp32`) is honestly "not modelled"; a misspelt one (`model.tensor_model_paralel_size: 2`) is a
key Bridge never applies (its override path skips a key the config object lacks, with a log warning:
src/megatron/bridge/training/utils/omegaconf_utils.py `_apply_overrides`; building the dataclass from the YAML
refuses the keyword), and reading on would judge the recipe with the default (TP=1) the user did not mean.
The field names are dumped from Bridge's and Megatron-Core's dataclasses (constraints.stacks.bridge_fields); the
nearest real field is suggested (difflib.get_close_matches).
"""
from __future__ import annotations

import difflib
import functools
from typing import Optional

from constraints.stacks.bridge_fields import FIELDS


@functools.lru_cache(maxsize=None)
def bridge_fields(section: str) -> Optional[frozenset[str]]:
    """The field names of ConfigContainer section `section`; None for a section without a field list."""
    names = FIELDS.get(section)
    return frozenset(names.split()) if names is not None else None


def unknown_bridge_key(path: str) -> Optional[str]:
    """A one-line error for `section.key` when key is no field of the section's dataclasses; else None (a real
    field, a Hydra `_meta_` key, or a section shardplan has no field list for)."""
    section, _, key = path.partition(".")
    key = key.split(".", 1)[0]
    names = bridge_fields(section)
    if names is None or not key or key in names or key.startswith("_") and key.endswith("_"):
        return None
    near = difflib.get_close_matches(key, sorted(names), n=1, cutoff=0.75)
    fix = f"did you mean {section}.{near[0]}?" if near else \
        f"remove it or spell a field of Bridge's {section} config"
    return f"{section}.{key}: no such field in Megatron-Bridge's {section} config ({key}), so Bridge never applies it; {fix}"


__all__ = ["bridge_fields", "unknown_bridge_key"]
