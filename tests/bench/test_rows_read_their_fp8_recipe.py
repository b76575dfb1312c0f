"""A row's precision names its quantisation recipe: a plain "FP8" of a stack released before Transformer Engine's
per-tensor current scaling (TE PR #1471, 2025-03-07; first in TE v2.2, 2025-04-03) is delayed scaling, and
bench.cross_validate reports each recipe as a `precision:` slice (issue 32)."""
import csv

from bench.cross_validate import source_group, table
from bench.run_slices import precision_slice, throughput_cases
from bench.runs import RUNS_CSV, RunCase, fp8_recipe_of_its_time, row_case
from constraints.spec import Precision

with open(RUNS_CSV, newline="") as fh:
    COLUMNS = csv.DictReader(fh).fieldnames


def row(**cells) -> dict:
    """Llama-3.1-8B on 8 H100 at TP 1 as NeMo's performance tables publish it (hidden 4096, 32 layers, GBS 128)."""
    base = dict(source_id="TEST-001", source="test", model="Llama3-8B", hardware="H100-SXM-80GB", gpus="8", gbs="128",
                mbs="1", tp="1", pp="1", seq_len="8192", precision="FP8", notes="", outcome="ran",
                tokens_per_s_per_gpu="12000")
    return {c: "" for c in COLUMNS} | base | cells


def test_plain_fp8_before_current_scaling_is_delayed_scaling():
    old = row_case(row(software="nemo:24.07"))
    new = row_case(row(software="megatron-bridge:26.02"))
    assert isinstance(old, RunCase) and old.job.precision == Precision.fp8_delayed
    assert isinstance(new, RunCase) and new.job.precision == Precision.fp8_tensorwise
    # the month TE v2.2 shipped is the first that can run current scaling; a named recipe is kept whatever the date
    assert fp8_recipe_of_its_time(Precision.fp8_tensorwise, "FP8", "nemo:25.04") == Precision.fp8_tensorwise
    assert fp8_recipe_of_its_time(Precision.fp8_tensorwise, "FP8", "nemo:25.02") == Precision.fp8_delayed
    assert fp8_recipe_of_its_time(Precision.mxfp8, "MXFP8", "nemo:24.07") == Precision.mxfp8
    assert fp8_recipe_of_its_time(Precision.fp8_tensorwise, "FP8", None) == Precision.fp8_tensorwise


def test_each_precision_is_a_slice_of_the_held_out_table():
    cases = throughput_cases()
    errs = {c.id: (0.3 if c.job.precision == Precision.nvfp4 else 0.05) for c in cases}
    lines = table(cases, errs, source_group, "leave-one-source-out")
    nvfp4 = next(line for line in lines if line.startswith("| slice: precision: nvfp4 |")).split("|")
    assert int(nvfp4[2]) >= 23 and nvfp4[3].strip() == "30.0"  # the 23 Megatron-Bridge NVFP4 rows at least
    delayed = [c for c in cases if precision_slice(c) == "precision: fp8-delayed"]
    assert len(delayed) >= 20  # NeMo 24.07 / 24.12 / 25.02's FP8 rows
