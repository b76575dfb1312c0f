"""FP8 dot-product attention (Transformer Engine `fp8_dot_product_attention`): core attention's MMA share at the fp8 rate,
the softmax share unchanged (measure/kernels/roofline.py), and the Megatron-Bridge presets that turn it on (bench/runs.py)."""
import pytest

from bench.mbridge_presets import preset_for
from bench.runs import load_runs
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Precision, Recipe
from hardware.profile import load_profile
from measure.kernels.cuda_graphs import FULL_ITERATION
from measure.kernels.layer_ops import attention_ops
from measure.kernels.ops import OpKind
from measure.kernels.roofline import attention_head_dim_factor, fp8_attention_time_factor, op_time_s
from measure.projection.project import project

H100 = load_profile("h100-sxm-80gb")
QWEN = load_model("Qwen3-30B-A3B")
FP8 = JobSpec(seq_length=4096, global_batch_size=256, precision=Precision.mxfp8)


def test_fp8_attention_speedup_matches_flashattention3_at_head_dim_256():
    """FlashAttention-3 (arXiv 2407.08608) on H100 (989 / 1979 dense bf16 / fp8 TFLOP/s), forward at seqlen 16k: 1171
    TFLOP/s in FP8 at head dim 256 against 756 TFLOP/s in bf16, a 1.55x speed-up; the MMA-share split gives 312 / 184 =
    1.70x, within 10 %."""
    bf16, fp8 = H100.peak_tflops.bf16, H100.peak_tflops.fp8
    assert fp8 == pytest.approx(2 * bf16, rel=0.01)
    speedup = 1.0 / fp8_attention_time_factor(256, bf16, fp8)
    assert speedup == pytest.approx((256 + 56) / (128 + 56), rel=0.01)
    assert speedup == pytest.approx(1171 / 756, rel=0.10)
    # head dim 128 (Llama, Qwen): (64 + 56) / (128 + 56) of the bf16 time; no fp8 rate -> the bf16 time
    assert fp8_attention_time_factor(128, bf16, fp8) == pytest.approx(120 / 184, rel=0.01)
    assert fp8_attention_time_factor(128, bf16, None) == 1.0
    assert attention_head_dim_factor(128) == 1.0


def test_only_an_fp8_job_runs_core_attention_in_fp8():
    r = Recipe(ep=8)
    core = [p for p in attention_ops(QWEN, FP8, r, fp8_attention=True) if p.op.kind in (OpKind.attention_fwd, OpKind.attention_bwd)]
    assert {p.op.dtype for p in core} == {"fp8"}
    plain = [p for p in attention_ops(QWEN, FP8, r) if p.op.kind == OpKind.attention_fwd][0]
    fp8 = [p for p in core if p.op.kind == OpKind.attention_fwd][0]
    ratio = op_time_s(fp8, H100) / op_time_s(plain, H100)
    assert ratio == pytest.approx(fp8_attention_time_factor(128, H100.peak_tflops.bf16, H100.peak_tflops.fp8), rel=0.02)
    bf16_job = FP8.model_copy(update={"precision": Precision.bf16})
    assert {p.op.dtype for p in attention_ops(QWEN, bf16_job, r, fp8_attention=True)
            if p.op.kind == OpKind.attention_fwd} == {"bf16"}


def test_projection_with_fp8_attention_is_faster_by_the_attention_share():
    """Under full-iteration CUDA graphs (no host-issue floor, as the presets that set fp8 attention run)."""
    place = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    r, graphs = Recipe(ep=8, mbs=4), frozenset({FULL_ITERATION})
    base = project(QWEN, FP8, r, place, H100, cuda_graph_scope=graphs)
    fast = project(QWEN, FP8, r, place, H100, cuda_graph_scope=graphs, fp8_attention=True)
    assert fast.iteration_time_s < base.iteration_time_s
    assert fast.iteration_time_s > 0.8 * base.iteration_time_s  # attention is a share of the layer, not all of it
    assert project(QWEN, FP8, r, place, H100, cuda_graph_scope=graphs, fp8_attention=False).iteration_time_s == base.iteration_time_s


def test_rows_of_presets_with_fp8_attention_are_flagged():
    """Megatron-Bridge v0.5.0 (26.06) scripts/performance/configs/qwen/qwen3_workload_base_configs.py: the Qwen3-30B-A3B
    GB200 FP8_MX preset sets fp8_dot_product_attention=True; its 26.04.01 preset does not."""
    assert preset_for("26.06", "Qwen3-30B-A3B", "GB200", "MXFP8", 1, 1, 1, 8, 4)["fp8_dot_product_attention"] is True
    assert not preset_for("26.04.01", "Qwen3-30B-A3B", "GB200", "MXFP8", 1, 1, 1, 8, 4).get("fp8_dot_product_attention")
    cases = {c.id: c for c in load_runs()}
    assert cases["MBR-048"].fp8_attention and not cases["MBR-144"].fp8_attention  # same recipe, 26.06 / 26.04
    assert not any(c.fp8_attention for c in cases.values() if not c.job.precision.is_fp8)
