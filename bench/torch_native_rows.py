"""Which runs.csv rows ran a torch-native stack, and with what settings (measure/torch_native/stack.py).

Why in the bench and not in runs.py: the row's `software` (STACK `torchtitan` / `automodel` / `llm-foundry`), `zero_or_fsdp` (FSDP2,
FSDP1 FULL_SHARD / SHARD_GRAD_OP), `recompute` (torchtitan's AC modes) and the notes' `torch-native:` clause
(bench/data/COLUMNS.md: `compile=on|off`, `fsdp float8 all-gather`, `async TP`, `eager RMSNorm`, AutoModel's `kernels: TE`) are read
here in one place; bench/runs.py only attaches the result to the case, and `bench.runs.project_case` picks the step
model from it.
"""
from __future__ import annotations

import re
from typing import Optional

from measure.torch_native.stack import ActivationCheckpoint, FsdpVersion, TorchNativeStack

TORCH_NATIVE_SOFTWARE = ("torchtitan", "automodel", "llm-foundry")


def fsdp_version(zero_or_fsdp: str) -> Optional[FsdpVersion]:
    """The PyTorch FSDP a `zero_or_fsdp` cell names, or None (Megatron's distributed optimizer / Megatron-FSDP / DDP)."""
    upper = (zero_or_fsdp or "").upper().replace("-", "_")
    if "MEGATRON_FSDP" in upper:
        return None
    if "FSDP2" in upper:
        return FsdpVersion.fsdp2
    if "FULL_SHARD" in upper:
        return FsdpVersion.full_shard
    if "SHARD_GRAD_OP" in upper:
        return FsdpVersion.shard_grad_op
    return None


def activation_checkpoint(recompute: str) -> ActivationCheckpoint:
    """torchtitan / AutoModel activation checkpointing from the `recompute` cell: `full`, `selective op`, `selective
    layer`; a bare `selective` (the option unstated) is read as torchtitan's default option, per op."""
    text = (recompute or "").strip().lower()
    if text.startswith("full"):
        return ActivationCheckpoint.full
    if text.startswith("selective"):
        return ActivationCheckpoint.selective_layer if "layer" in text else ActivationCheckpoint.selective_op
    return ActivationCheckpoint.none


def torch_native_stack(row: dict) -> Optional[TorchNativeStack]:
    """The row's torch-native stack, or None for a Megatron-family row. A row is torch-native when its software names
    torchtitan, AutoModel or LLM Foundry, or its `zero_or_fsdp` names PyTorch FSDP (FSDP2, FULL_SHARD, SHARD_GRAD_OP) and its
    software is not a Megatron stack."""
    software = (row.get("software") or "").split(":")[0].strip().lower()
    version = fsdp_version(row.get("zero_or_fsdp", ""))
    if software not in TORCH_NATIVE_SOFTWARE and (version is None or software):
        return None
    notes = row.get("notes", "")
    compiled = re.search(r"compile=on", notes) is not None
    te_kernels = re.search(r"kernels:\s*TE\b", notes) is not None
    return TorchNativeStack(fsdp=version or FsdpVersion.fsdp2, activation_checkpoint=activation_checkpoint(row.get("recompute", "")),
                            fused_pointwise=compiled or te_kernels,
                            eager_norm=not (compiled or te_kernels) and re.search(r"eager RMSNorm", notes) is not None,
                            fp8_all_gather=re.search(r"fsdp float8 all-gather", notes, re.I) is not None,
                            async_tp=re.search(r"\basync TP\b", notes) is not None)
