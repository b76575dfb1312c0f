"""bench.cross_validate reports issue 16's families (NVFP4, hybrid Mamba, sliding window, Llama 4) as slices of
every held-out table, each row at the error its fold gave it."""
from __future__ import annotations

from bench.cross_validate import table
from bench.family_slices import family_slices
from bench.run_slices import is_torch_native, model_family, throughput_cases


def test_each_family_slice_lists_its_rows_held_out_errors():
    cases = throughput_cases()
    errs = {c.id: (0.5 if "hybrid-mamba" in family_slices(c.model, c.job) else 0.1) for c in cases}
    lines = table(cases, errs, model_family, "leave-one-family-out")
    megatron = [c for c in cases if not is_torch_native(c)]  # the slices, like the headline, are Megatron-stack rows
    hybrid = [c for c in megatron if "hybrid-mamba" in family_slices(c.model, c.job)]
    nvfp4 = [c for c in megatron if "nvfp4" in family_slices(c.model, c.job)]
    row = next(line for line in lines if line.startswith("| slice: hybrid-mamba |"))
    assert row.split("|")[2].strip() == str(len(hybrid)) and row.split("|")[3].strip() == "50.0"
    assert len(hybrid) >= 25 + 15  # the Megatron-Bridge Nemotron 3 Super and Nano rows at least
    assert next(line for line in lines if line.startswith("| slice: nvfp4 |")).split("|")[2].strip() == str(len(nvfp4))
