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


def test_moe_slices_list_the_moe_rows_and_those_of_the_performance_summary():
    """Issue 32: the MoE rows' held-out error, and that of the MoE rows of the Megatron-Bridge performance summary
    (the MBR fold fits its MoE constants on the other publications' MoE rows only)."""
    from bench.run_slices import is_headline, moe_slices, source_group
    cases = throughput_cases()
    errs = {c.id: (0.3 if c.model.is_moe and source_group(c) == "MBR" else -0.2 if c.model.is_moe else 0.01) for c in cases}
    lines = table(cases, errs, model_family, "leave-one-family-out")
    moe = [c for c in cases if is_headline(c) and c.model.is_moe]
    mbr = [c for c in moe if source_group(c) == "MBR"]
    assert 0 < len(mbr) < len(moe) and all(moe_slices(c) == ["moe", "moe in MBR"] for c in mbr)
    cells = next(line for line in lines if line.startswith("| slice: moe in MBR |")).split("|")
    assert cells[2].strip() == str(len(mbr)) and cells[3].strip() == "30.0" and cells[7].strip() == "+30.0"
    assert next(line for line in lines if line.startswith("| slice: moe |")).split("|")[2].strip() == str(len(moe))
    assert not moe_slices(next(c for c in cases if c.model.name.startswith("Llama")))
