"""The issue-16 families each validator reports as its own slice: NVFP4 rows, hybrid Mamba rows, Llama 4
rows, sliding-window rows. One definition shared by bench/validate_memory.py and bench/validate_projection.py,
so both slice the same rows."""
from __future__ import annotations

from constraints.spec import JobSpec, ModelSpec


def family_slices(model: ModelSpec, job: JobSpec) -> list[str]:
    """Slice labels a run belongs to (none for the families modelled before NVFP4 and hybrid models)."""
    out = []
    if job.precision.is_fp4:
        out.append("nvfp4")
    if getattr(model, "hybrid_layer_pattern", None):
        out.append("hybrid-mamba")
    if getattr(model, "window_size", None):
        out.append("sliding-window")
    if model.no_rope_layers is not None and model.is_moe:  # Llama 4: NoPE layers, shared expert, interleaved MoE
        out.append("llama4")
    return out
