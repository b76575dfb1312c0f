"""How the published rows are grouped and sliced for validation (shared by the fit and the cross-validation).

- `source_group`: the publication a row comes from, its `source_id` prefix. All releases of the Megatron-Bridge
  performance summary (MBR) are one publication: its releases re-measure the same configurations, so leaving
  out one release would leave its configurations in the fit.
- `model_family`: Llama, Qwen, DeepSeek-style MLA (DeepSeek, Moonlight, Kimi), gpt-oss, Nemotron, GPT-3,
  Mixtral, other.
- `is_torch_native`: NeMo AutoModel / torchtitan rows (torch FSDP2 stacks). Their step is FSDP2's own
  prefetch/overlap and eager or `torch.compile` kernels, not the Megatron-LM stack the projection prices, so
  no fit uses them and every validation reports them as their own slice.
"""
from __future__ import annotations

from typing import Optional

from bench.runs import RunCase, load_runs
from bench.validate_projection import assume_moe_dispatcher
from constraints.spec import DataParallelSharding

_FAMILIES = [("llama", "Llama"), ("qwen", "Qwen"), ("deepseek", "DeepSeek/MLA"), ("moonlight", "DeepSeek/MLA"),
             ("kimi", "DeepSeek/MLA"), ("gpt-oss", "gpt-oss"), ("nemotron", "Nemotron"), ("gpt-3", "GPT-3"),
             ("gpt3", "GPT-3"), ("mixtral", "Mixtral")]


def source_group(case: RunCase) -> str:
    return case.id.split("-")[0]


def model_family(case: RunCase) -> str:
    name = case.model.name.lower()
    return next((fam for key, fam in _FAMILIES if name.startswith(key)), "other")


def is_torch_native(case: RunCase) -> bool:
    return case.recipe.dp_sharding == DataParallelSharding.torch_fsdp2 or source_group(case) in ("AUTOMODEL", "TTITAN")


def throughput_cases(cases: Optional[list[RunCase]] = None) -> list[RunCase]:
    """Ran rows with a measured tokens/s/GPU, with the dispatcher assumption validate_projection makes."""
    cases = assume_moe_dispatcher(cases if cases is not None else load_runs())
    return [c for c in cases if c.outcome == "ran" and "tokens_per_s_per_gpu" in c.measured]
