"""The NVL72 racks' derived microbenchmarks follow the measured uplift of GB200 over B200 (same die at 1200 vs 1000 W),
not the ratio of nominal peaks (hardware/profiles/gb200-nvl72.yaml and gb300-nvl72.yaml say where each number is from).

Numbers: stas00/ml-engineering compute/accelerator/README.md @744d01e, Maximum Achievable Matmul FLOPS table (B200 1745.0
bf16 / 3432.5 fp8, GB200 1822.0 / 3615.6, B300 1769.0 / 3353.3 TFLOP/s; no GB300 entry) and device-reported maximum SM
clocks (GB200 2062, B200 1965 MHz); B200's in-step FlashAttention-4 rate 834 TFLOP/s counted as 3 causal forwards
(insights/when-to-upgrade-gpus/README.md), 3.5 executed."""
import pytest

from hardware.profile import load_profile

B200_MAMF_BF16, B200_MAMF_FP8 = 1745.0, 3432.5
GB200_MAMF_BF16, GB200_MAMF_FP8 = 1822.0, 3615.6
B300_MAMF_BF16, B300_MAMF_FP8 = 1769.0, 3353.3
GB200_MAX_SM_MHZ, B200_MAX_SM_MHZ = 2062, 1965
B200_ATTENTION_EXECUTED_TFLOPS = 834 * 3.5 / 3  # 973.0


def test_the_measured_uplift_is_the_clock_ratio_not_the_peak_ratio():
    uplift = GB200_MAMF_BF16 / B200_MAMF_BF16  # 1.044
    assert uplift == pytest.approx(GB200_MAX_SM_MHZ / B200_MAX_SM_MHZ, abs=0.01)  # 1.049
    gb200, b200 = load_profile("gb200-nvl72"), load_profile("b200")
    assert gb200.peak_tflops.bf16 / b200.peak_tflops.bf16 == pytest.approx(1.111, abs=1e-3)  # what no measurement shows
    assert (gb200.microbench.matmul_bf16_tflops, b200.microbench.matmul_bf16_tflops) == (GB200_MAMF_BF16, B200_MAMF_BF16)


def test_gb200_attention_is_b200s_in_step_rate_times_the_uplift():
    gb200, b200 = load_profile("gb200-nvl72"), load_profile("b200")
    assert b200.microbench.attention_fraction * b200.peak_tflops.bf16 == pytest.approx(B200_ATTENTION_EXECUTED_TFLOPS, abs=0.5)
    expected = B200_ATTENTION_EXECUTED_TFLOPS * GB200_MAMF_BF16 / B200_MAMF_BF16 / gb200.peak_tflops.bf16
    assert gb200.microbench.attention_fraction == pytest.approx(expected, abs=1e-4)  # 0.4064, was B200's 0.4324


def test_gb300_matmul_is_b300s_die_with_the_nvl72_uplift():
    gb300, b300 = load_profile("gb300-nvl72"), load_profile("b300")
    mb = gb300.microbench
    assert (b300.microbench.matmul_bf16_tflops, b300.microbench.matmul_fp8_tflops) == (B300_MAMF_BF16, B300_MAMF_FP8)
    assert mb.matmul_bf16_tflops == pytest.approx(B300_MAMF_BF16 * GB200_MAMF_BF16 / B200_MAMF_BF16, abs=0.1)  # 1847.1
    assert mb.matmul_fp8_tflops == pytest.approx(B300_MAMF_FP8 * GB200_MAMF_FP8 / B200_MAMF_FP8, abs=0.1)  # 3532.2
    # within 2.5 % of the GB200 figures the profile copied before: the matmul microbenchmarks cannot make GB300 ~1.2x GB200
    assert mb.matmul_bf16_tflops / GB200_MAMF_BF16 == pytest.approx(1.0, abs=0.025)
    assert mb.matmul_fp8_tflops / GB200_MAMF_FP8 == pytest.approx(1.0, abs=0.025)
