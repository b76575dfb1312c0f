"""Fused attention priced by its tile steps (measure/kernels/attention_tiles.py): a fixed share per query tile, from the
cuDNN causal forward figures of FlashAttention-3 (arXiv 2407.08608, Fig. 5, H100 SXM5, head dim 64, 16k tokens)."""
import pytest

from constraints.models.load import load_model
from constraints.spec import JobSpec, Precision, Recipe
from measure.kernels.attention_tiles import QUERY_TILE_FIXED_STEPS, REFERENCE_SEQ_TOKENS, query_tile_time_factor
from measure.kernels.layer_ops import Phase, attention_ops
from measure.kernels.ops import OpKind

# the published cuDNN causal forward rates, TFLOP/s, by sequence length
CUDNN_CAUSAL_HD64 = {512: 225, 1024: 288, 2048: 334, 4096: 363, 8192: 379, 16384: 388}


def _core(model, job, recipe=Recipe()):
    return next(p for p in attention_ops(model, job, recipe) if p.op.kind == OpKind.attention_fwd and p.phase == Phase.fwd)


def test_the_fixed_steps_reproduce_the_published_rates_across_lengths():
    """Rate in causal FLOPs = R / factor: the factor's ratios between lengths are the published rates' ratios."""
    llama = load_model("Llama-3.1-8B")
    rel = {s: 1 / query_tile_time_factor(llama, s) for s in CUDNN_CAUSAL_HD64}
    for s, tflops in CUDNN_CAUSAL_HD64.items():
        assert rel[s] / rel[16384] == pytest.approx(tflops / CUDNN_CAUSAL_HD64[16384], rel=0.01)
    assert QUERY_TILE_FIXED_STEPS == 1.0


def test_full_causal_attention_at_the_microbenchmark_length_keeps_its_rate():
    llama = load_model("Llama-3.1-8B")
    assert query_tile_time_factor(llama, REFERENCE_SEQ_TOKENS) == pytest.approx(1.0)
    # 4k: (33 / 32 + 2 / 32) / (65 / 64 + 2 / 64) = 1.0448
    assert query_tile_time_factor(llama, 4096) == pytest.approx((35 / 32) / (67 / 64), rel=1e-9)


def test_a_128_window_costs_its_two_tiles_and_the_fixed_step_per_query_tile():
    """gpt-oss at 4k: window 127 (HF sliding_window 128 keys) on 18 of 36 layers. Query tile q visits tiles q-1 and q
    (1 at q = 0): 63 tile steps + 32 fixed; full causal 528 + 32. Priced pairs: 4096^2 / 2 x (63 + 528) / 2 / 528.
    Steps per priced pair over the 8k reference's: ((63 + 528) / 2 + 32) / (512 x 295.5 / 528) / (67 / 64) = 1.0923."""
    gpt_oss = load_model("gpt-oss-120b")
    assert gpt_oss.window_size == 127
    expected = ((63 + 528) / 2 + 32) / (512 * 295.5 / 528) / (67 / 64)
    assert query_tile_time_factor(gpt_oss, 4096) == pytest.approx(expected, rel=1e-9)
    # the windowed layers alone: 95 tile steps where the FLOPs at the reference rate are worth 63 x 65/67 of them
    job = JobSpec(seq_length=4096, global_batch_size=8)
    full = load_model("gpt-oss-120b").model_copy(update={"window_size": None, "window_layers": None})
    ratio = _core(gpt_oss, job).flops / _core(full, job).flops
    assert ratio == pytest.approx(((63 + 528) / 2 + 32) / (528 + 32), rel=1e-9)


def test_fp32_core_attention_runs_untiled_and_keeps_its_flops():
    llama = load_model("Llama-3.1-8B")
    job = JobSpec(seq_length=2048, global_batch_size=8, precision=Precision.fp32)
    core = _core(llama, job)
    assert core.op.dtype == "fp32"
    assert core.flops == pytest.approx(4.0 * 32 * 2048 * 2048 * 128 / 2)
