"""Rows whose publisher marks the figure itself as a known regression (bench/run_slices.py PUBLISHED_REGRESSIONS) are
left out of every fit and headline and reported as their own slice, as torch-native rows are."""
from __future__ import annotations

from bench.cross_validate import table
from bench.fit_calibration import training_cases
from bench.run_slices import bridge_release, model_family, published_regression, throughput_cases


def test_only_the_flagged_release_of_the_flagged_family_is_excluded():
    cases = throughput_cases()
    flagged = {c.id for c in cases if published_regression(c)}
    # Megatron-Bridge performance-summary-archive.md 26.06.01: GPT OSS 120B on GB300 (20288 tok/s/GPU) and GB200
    # (18304) carry the footnote; the same configurations measured 33166 and 28947 in 26.06
    assert flagged == {c.id for c in cases if bridge_release(c) == "26.06.01" and model_family(c) == "gpt-oss"}
    assert {c.measured["tokens_per_s_per_gpu"] for c in cases if c.id in flagged} == {20288.0, 18304.0}
    assert not flagged & {c.id for c in training_cases()}
    same_model_other_release = [c for c in training_cases() if model_family(c) == "gpt-oss" and bridge_release(c) == "26.06"]
    assert {c.measured["tokens_per_s_per_gpu"] for c in same_model_other_release} >= {33166.0, 28947.0}


def test_cross_validation_reports_the_flagged_rows_as_their_own_slice():
    cases = throughput_cases()
    errs = {c.id: (0.6 if published_regression(c) else 0.1) for c in cases}
    lines = table(cases, errs, model_family, "leave-one-family-out")
    head = next(line for line in lines if line.startswith("| all Megatron-stack rows |"))
    assert head.split("|")[3].strip() == "10.0" and head.split("|")[5].strip() == "10.0"  # none of them in the headline
    row = next(line for line in lines if line.startswith("| publisher-flagged regressions, excluded above |"))
    assert row.split("|")[2].strip() == "2" and row.split("|")[3].strip() == "60.0"
