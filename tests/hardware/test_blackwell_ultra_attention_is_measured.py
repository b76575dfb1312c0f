"""Blackwell Ultra's attention speed over Blackwell is the measured one of cuDNN's fused attention (what Transformer Engine
runs on these parts), not twice it: the doubled exponent rate speeds only the forward, whose softmax is exponent-bound; the
backward is bound by shared-memory traffic (FlashAttention-4, arXiv 2603.05451).

Numbers: NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/llama3.1/{gb200,gb300}/*.csv @fb682ce7 (cuDNN
9.22): Llama-3.1 shapes, head dim 128, bf16, causal, 8k: forward / backward 1574 / 1332 TFLOP/s on GB200, 1856 / 1435 on
GB300; DeepSeek-V3 shapes (results/dsv3, head dim 192 / 128): 1585 / 1193 and 1825 / 1291."""
import pytest

from hardware.profile import load_profile

GB200_FWD, GB200_BWD, GB300_FWD, GB300_BWD = 1574.0, 1332.0, 1856.0, 1435.0


def fwd_bwd_tflops(fwd: float, bwd: float) -> float:
    """One forward and its backward (2.5x the forward's FLOPs) in executed FLOPs over their summed time."""
    return 3.5 / (1 / fwd + 2.5 / bwd)


def test_cudnn_measures_blackwell_ultra_attention_at_1_10x_not_2x():
    ratio = fwd_bwd_tflops(GB300_FWD, GB300_BWD) / fwd_bwd_tflops(GB200_FWD, GB200_BWD)
    assert ratio == pytest.approx(1.1014, abs=1e-4)
    assert fwd_bwd_tflops(1825.0, 1291.0) / fwd_bwd_tflops(1585.0, 1193.0) == pytest.approx(ratio, abs=0.01)  # DeepSeek-V3
    assert GB300_FWD / GB200_FWD > GB300_BWD / GB200_BWD  # the forward gains more (exponent-bound), the backward little


@pytest.mark.parametrize("ultra,base", [("gb300-nvl72", "gb200-nvl72"), ("b300", "b200")])
def test_ultra_parts_take_the_measured_ratio(ultra, base):
    ratio = fwd_bwd_tflops(GB300_FWD, GB300_BWD) / fwd_bwd_tflops(GB200_FWD, GB200_BWD)
    u, b = load_profile(ultra), load_profile(base)
    ultra_tflops = u.microbench.attention_fraction * u.peak_tflops.bf16
    base_tflops = b.microbench.attention_fraction * b.peak_tflops.bf16
    assert ultra_tflops / base_tflops == pytest.approx(ratio, abs=2e-3)
