"""Which runs.csv rows ran DeepSpeed's engine, and with what settings (measure/deepspeed/engine.py).

Why here and not in runs.py: the row's `software` (STACK `megatron-deepspeed`) and `zero_or_fsdp` cell ("ZeRO-1
(DeepSpeed BF16_Optimizer)", "ZeRO-3 (DeepSpeed)") are read in one place, as bench/torch_native_rows.py reads the
torch-native stacks; bench/runs.py attaches the result to the case (or skips the row with the engine's refusal) and
`bench.runs.project_case` picks the step model from it.
"""
from __future__ import annotations

import re
from typing import Optional

from constraints.software.generation import resolve
from measure.deepspeed.engine import STACK, DeepSpeedEngine, engine_of_generation

DEEPSPEED_SOFTWARE = ("megatron-deepspeed",)
ZERO_STAGE = re.compile(r"ZeRO[-_ ]?([0-3])\b", re.I)


def deepspeed_engine(row: dict) -> Optional[DeepSpeedEngine]:
    """The row's DeepSpeed engine, or None for a row DeepSpeed did not run. A row ran DeepSpeed's engine when its
    software names Megatron-DeepSpeed or its `zero_or_fsdp` cell names DeepSpeed (Narayanan et al. 2021's ZeRO-3
    baseline, DeepSpeed integrated into Megatron-LM). The ZeRO stage is the cell's ("ZeRO-1"), 0 where it states
    none; BF16_Optimizer where the cell names it or the generation's DeepSpeed gives it to a bf16 run
    (measure/deepspeed/engine.py `engine_of_generation`; an empty precision cell is bf16, as bench/runs.py reads it)."""
    software = (row.get("software") or "").strip().lower()
    stack = software.partition(":")[0]
    cell = row.get("zero_or_fsdp") or ""
    if stack not in DEEPSPEED_SOFTWARE and "deepspeed" not in cell.lower():
        return None
    stage = ZERO_STAGE.search(cell)
    month = resolve(software).month if software else ""
    bf16 = not re.search(r"FP16|FP8|FP4", row.get("precision") or "", re.I)
    return engine_of_generation(STACK, month, bf16, int(stage.group(1)) if stage else 0,
                                stated_bf16_optimizer=re.search(r"BF16_Optimizer", cell) is not None)
