"""Attention runs at its kernel publications' rate, not at a fitted multiple of it (session 38, issue 32 item 2): the
fit leaves `attention_scale` at 1.0 (bench/fit_software.py GRID says why), so a part's flash-attention rate is its
microbenchmark's in-step rate in executed FLOPs, rising with the K/V length."""
import pytest

from bench.fit_software import GRID
from hardware.calibration import load_software_constants
from hardware.profile import load_profile


def test_the_fit_does_not_scale_attention():
    assert "attention_scale" not in GRID
    assert load_software_constants().attention_scale == 1.0


def test_parts_price_attention_at_the_published_in_step_rate():
    """stas00/ml-engineering insights/when-to-upgrade-gpus @18fa0175: FlashAttention-3 447 TFLOP/s in-step on H200
    (H100's die) and FlashAttention-4 834 on B200 at 8k, counted as 3 causal forwards, executed as 3.5."""
    assert load_profile("h100-sxm-80gb").calibration.attention_efficiency == pytest.approx(447 * 3.5 / 3 / 989, abs=1e-4)
    assert load_profile("b200").calibration.attention_efficiency == pytest.approx(834 * 3.5 / 3 / 2250, abs=1e-4)
