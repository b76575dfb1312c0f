"""bench.release_spread: one configuration measured in several Megatron-Bridge releases, each row predicted by the
median of the other releases' figures (the floor under a projection that does not know the release)."""
from __future__ import annotations

import pytest

from bench.release_spread import release_blind_errors, split_line, summary_line
from bench.run_slices import throughput_cases


def test_a_row_is_predicted_by_its_configurations_other_releases():
    errs = release_blind_errors(throughput_cases())
    # GPT OSS 120B, 64 GB300, MXFP8, GBS 1280, MBS 4, EP 16 (performance-summary tables): 26.06 33166, 26.06.01 20288
    # (publisher-flagged regression: left out, as from every headline), 26.08 33024 tokens/s/GPU; the verification
    # card's 33017 is not a release table and stays out
    assert errs["MBR-044"] == pytest.approx(33024 / 33166 - 1)
    assert errs["MBR-005"] == pytest.approx(33166 / 33024 - 1)
    assert "MBR-021" not in errs and "MBCARD-482" not in errs
    # Qwen3-235B-A22B, 256 GB300, MXFP8, GBS 8192, MBS 2, PP 4, VP 12, EP 32: 26.04 6994, 26.04.01 6944, 26.06 9015,
    # 26.06.01 9008, 26.08 8816 tokens/s/GPU; the 26.08 row against the median of the other four, (6994 + 9008) / 2
    assert errs["MBR-009"] == pytest.approx((6994 + 9008) / 2 / 8816 - 1)


def test_two_releases_make_a_pair_and_one_release_is_left_out():
    errs = release_blind_errors(throughput_cases())
    # Llama-3.1-405B on 64 B200 was published in 25.09 (622) and 25.11 (624) with the same configuration
    assert errs["MBR-281"] == pytest.approx(624 / 622 - 1)
    # GPT OSS 120B on 64 B200 at GBS 512, EP 8 was published in 25.11 only (later releases run GBS 1280)
    assert "MBR-257" not in errs
    assert summary_line(throughput_cases()).startswith("Release-blind reference (bench.release_spread): ")


def test_moe_configurations_move_more_between_releases_than_dense_ones():
    """Qwen3-30B-A3B, 16 H100, FP8, GBS 1024, MBS 1, PP 2, VP 12, EP 8: 5,113 tokens/s/GPU in 26.02 (MBR-228) and 9,058 in
    26.02.01 (MBR-191), the widest release-to-release move in the summary, and a MoE one."""
    cases = throughput_cases()
    errs = release_blind_errors(cases)
    assert errs["MBR-228"] == pytest.approx(9058 / 5113 - 1) and errs["MBR-191"] == pytest.approx(5113 / 9058 - 1)
    line = split_line(cases)
    moe_p90, dense_p90 = (float(part.split("p90 ")[1].split(" %")[0]) for part in line.split("; "))
    assert line.startswith("Release-blind reference by layer type: MoE ") and moe_p90 > 2 * dense_p90
