"""The versions a Megatron log prints -> `STACK:VERSION`.

Why Megatron-Core first: it is the package whose features the timeline dates (generations.yaml), and a log read by
constraints/megatron/training_log.py keeps what its `pip list` rows and container banners print ("megatron-core 0.12.0",
"NeMo Version 24.07"). A Megatron-Bridge or NeMo pip version (0.x) is not a container release, so it is not read as one.
"""
from __future__ import annotations

from typing import Mapping, Optional

from constraints.software.generation import CONTAINER, VERSION


def software_of_versions(versions: Mapping[str, str]) -> Optional[str]:
    """`megatron-core:X.Y.Z` when the log prints Megatron-Core's version, else `nemo:YY.MM` from a NeMo container banner,
    else None (the log does not say)."""
    core = (versions.get("megatron-core") or "").strip()
    if VERSION.match(core):
        return f"megatron-core:{core}"
    nemo = (versions.get("nemo") or "").strip()
    if CONTAINER.fullmatch(nemo.lower()):
        return f"nemo:{nemo}"
    return None
