"""Each fp8 / NVFP4 recipe quantises a GEMM's activation input and incoming gradient with its own Transformer Engine
kernels (TransformerEngine d0067d0d pytorch/csrc/quantizer.cpp; measure/kernels/quantization.py), and a low-precision
GEMM is as small as the bf16 GEMM issuing the same MMA instructions (PTX ISA wgmma / tcgen05 K per instruction)."""
import pytest

from constraints.models.load import load_model
from constraints.spec import JobSpec, Precision, Recipe
from hardware.profile import load_profile
from measure.kernels.common import Phase, gemm_ops, grouped_gemm_ops
from measure.kernels.layer_ops import LayerKind, layer_ops
from measure.kernels.ops import OpKind
from measure.kernels.quantization import (
    TRANSPOSED_COPY_DTYPE,
    is_kernel_of_its_own,
    mma_equivalent_flops,
    padded_rows_per_expert,
    quantise_bytes_per_element,
)
from measure.kernels.roofline import roofline_time_s

H100 = load_profile("h100-sxm-80gb")
B200 = load_profile("b200")


@pytest.mark.parametrize("precision, plain, norm_fed", [
    # cast: read bf16 2 B, write fp8 1 B; delayed scaling reduces the amax in it (the transposed copy is apart)
    (Precision.fp8_delayed, 3.0, 3.0),
    # current scaling: nvte_compute_amax_with_config reads the tensor once more (2 B), except after a fused norm
    # (normalization.cpp FUSED_NORM_AMAX_FP8)
    (Precision.fp8_tensorwise, 5.0, 3.0),
    # MXFP8: one kernel, row- and column-wise copies, 1 B + an E8M0 scale per 32 elements each
    (Precision.mxfp8, 2.0 + 2 * (1 + 1 / 32), 2.0 + 2 * (1 + 1 / 32)),
    # blockwise 1x128: fp32 scale per 128 elements, row- and column-wise
    (Precision.fp8_blockwise, 2.0 + 2 * (1 + 4 / 128), 2.0 + 2 * (1 + 4 / 128)),
    # NVFP4: nvte_hadamard_transform_amax reads 2 B, nvte_quantize_with_hadamard_transform reads 2 B and writes the
    # row-wise and the Hadamard-transformed column-wise E2M1 copies, 9/16 B each with their E4M3 scale per 16
    (Precision.nvfp4, 5.125, 5.125),
    (Precision.bf16, 0.0, 0.0),
])
def test_bytes_each_recipe_moves_per_quantised_element(precision, plain, norm_fed):
    assert quantise_bytes_per_element(precision) == pytest.approx(plain)
    assert quantise_bytes_per_element(precision, norm_fed=True) == pytest.approx(norm_fed)


def _cast_bytes(ops, phase, part=None):
    """Bytes per quantised element of each pass in `phase`, on `part` (with the transposed copy where it writes one)."""
    casts = [p for p in ops if p.op.kind == OpKind.elementwise and not p.host_op and p.phase == phase]
    main = [p for p in casts if p.op.dtype != TRANSPOSED_COPY_DTYPE]
    copies = [p for p in casts if p.op.dtype == TRANSPOSED_COPY_DTYPE and part is not None and roofline_time_s(p, part) > 0]
    return [(p.bytes_moved + sum(c.bytes_moved for c in copies[:1])) / p.op.shape[0] for p in main]


def test_a_gemm_quantises_its_input_and_its_gradient_under_the_job_recipe():
    ops = gemm_ops(4096, 1024, 2048, "fp8", "proj", quant=Precision.fp8_tensorwise)
    # Hopper's FP8 GEMMs are TN only: the cast also writes the transposed copy (1 B); Blackwell's are not
    assert _cast_bytes(ops, Phase.fwd, H100) == [6.0] and _cast_bytes(ops, Phase.bwd_dgrad, H100) == [6.0]
    assert _cast_bytes(ops, Phase.fwd, B200) == [5.0]
    fed = gemm_ops(4096, 1024, 2048, "fp8", "qkv", quant=Precision.fp8_tensorwise, norm_fed=True)
    assert _cast_bytes(fed, Phase.fwd, H100) == [4.0] and _cast_bytes(fed, Phase.bwd_dgrad, H100) == [6.0]  # no norm before dY
    # the block-scaled recipes write both copies on every part
    mx = gemm_ops(4096, 1024, 2048, "fp8", "proj", quant=Precision.mxfp8)
    assert _cast_bytes(mx, Phase.fwd, B200) == [pytest.approx(4.0625)]
    grouped = grouped_gemm_ops(8, 512, 768, 2048, "fp4", "moe", quant=Precision.nvfp4)
    assert _cast_bytes(grouped, Phase.fwd) == [5.125] and _cast_bytes(grouped, Phase.bwd_dgrad) == [5.125]
    # without a recipe (torchao float8, measure/torch_native/float8.py) the plain cast-transpose stays
    assert _cast_bytes(gemm_ops(4096, 1024, 2048, "fp8", "proj"), Phase.fwd) == [4.0]


def test_the_transposed_copy_is_no_kernel_of_its_own():
    """It is written by the cast kernel: no launch time on Hopper, nothing on Blackwell, and `shardplan measure` never
    times it alone."""
    (copy,) = [p for p in gemm_ops(4096, 1024, 2048, "fp8", "proj", quant=Precision.fp8_delayed)
               if p.op.dtype == TRANSPOSED_COPY_DTYPE and p.phase == Phase.fwd]
    assert roofline_time_s(copy, B200) == 0.0
    hbm_s = 4096 * 2048 / (H100.hbm_bandwidth_gb_per_s * 1e9 * H100.calibration.memory_bound_efficiency)
    assert roofline_time_s(copy, H100) == pytest.approx(hbm_s)
    assert not is_kernel_of_its_own(copy.op)


def test_a_dense_layer_quantises_every_linear_of_the_job_recipe():
    """Llama-3.1-8B (hidden 4096, 32 heads, 8 KV heads of 128, FFN 14336: meta-llama/Llama-3.1-8B config.json), one
    4096-token micro-batch at TP 1 in NVFP4: the forward quantises the inputs of QKV, the projection, FC1 and FC2
    (4096 x (4096 + 4096 + 4096 + 14336) elements) at 5.125 B each."""
    model = load_model("Llama-3.1-8B")
    job = JobSpec(seq_length=4096, global_batch_size=64, precision=Precision.nvfp4)
    ops = layer_ops(model, job, Recipe(tp=1, pp=1, mbs=1), LayerKind.dense)
    fwd_bytes = sum(p.bytes_moved for p in ops if p.op.kind == OpKind.elementwise and not p.host_op and p.phase == Phase.fwd)
    assert fwd_bytes == pytest.approx(4096 * (4096 * 3 + 14336) * 5.125)


def test_a_low_precision_gemm_reads_the_curve_where_the_bf16_gemm_of_its_mma_work_does():
    """H100: fp8 dense 1978.9 TFLOP/s, bf16 989.4 (the profile's datasheet peaks): an fp8 GEMM issues the MMA
    instructions of a bf16 GEMM of half its FLOPs (wgmma k32 for e4m3 against k16 for bf16)."""
    assert mma_equivalent_flops(2.0**34, 989.4e12, 1978.9e12) == pytest.approx(2.0**33, rel=1e-3)
    assert mma_equivalent_flops(2.0**34, 989.4e12, 989.4e12) == 2.0**34  # bf16, or a part without a faster rate

    def compute_s(m, n, k, dtype):
        (op,) = [p for p in gemm_ops(m, n, k, dtype, "mlp") if p.phase == Phase.fwd and p.op.kind == OpKind.gemm]
        return roofline_time_s(op, H100) - H100.calibration.kernel_launch_us * 1e-6

    # a per-expert GEMM of Qwen3-30B-A3B (2048 tokens, FC1 2 x 768 wide, hidden 2048; Qwen/Qwen3-30B-A3B config.json):
    # in fp8 it takes the time of the bf16 GEMM of half its K, over fp8's relative efficiency at large shapes
    fp8, bf16_half_k = compute_s(2048, 1536, 2048, "fp8"), compute_s(2048, 1536, 1024, "bf16")
    assert fp8 == pytest.approx(bf16_half_k * 989.4 / (1978.9 / 2) / H100.calibration.fp8_gemm_relative_efficiency, rel=1e-3)
    # so fp8 gains less than the 2x peak ratio there, and nearly all of it on a large GEMM (16k x 16k x 16k)
    assert compute_s(2048, 1536, 2048, "bf16") / fp8 < 0.97 * 2 * H100.calibration.fp8_gemm_relative_efficiency
    big = compute_s(16384, 16384, 16384, "bf16") / compute_s(16384, 16384, 16384, "fp8")
    assert big == pytest.approx(1978.9 / 989.4 * H100.calibration.fp8_gemm_relative_efficiency, rel=1e-3)


def test_each_expert_s_rows_are_padded_to_the_recipe_alignment():
    """Megatron's TEGroupedMLP pads every expert's tokens with TE's Fp8Padding under fp8 / fp4, to
    `get_align_size_for_quantization` (32 MXFP8, 128 NVFP4, 16 otherwise; 256 with the fused grouped MLP)."""
    assert padded_rows_per_expert(10923, Precision.mxfp8) == 10944  # Kimi-K2 at EP 64, MBS 2, 4k (runs.csv MBR-053)
    assert padded_rows_per_expert(100, Precision.nvfp4) == 128
    assert padded_rows_per_expert(100, Precision.fp8_tensorwise) == 112
    assert padded_rows_per_expert(100, Precision.mxfp8, fused_grouped_mlp=True) == 256
    assert padded_rows_per_expert(100, Precision.bf16) == 100
    # Qwen3-30B-A3B (128 experts, top-8) at EP 8 with 4000-token micro-batches: 2000 tokens per local expert -> 2016 rows
    model = load_model("Qwen3-30B-A3B")
    job = JobSpec(seq_length=4000, global_batch_size=64, precision=Precision.mxfp8)
    grouped = [p for p in layer_ops(model, job, Recipe(ep=8, mbs=1), LayerKind.moe)
               if p.op.kind == OpKind.grouped_gemm and p.phase == Phase.fwd]
    assert {p.op.shape[:2] for p in grouped} == {(16, 2016)}


def test_shardplan_measure_never_lists_the_transposed_copy():
    """`shardplan measure` times every kernel of a recipe's layers (shardplan/cli/measure.py keys_for); the transposed fp8
    copy has no kernel of its own to time, and the cast that writes it is listed."""
    from shardplan.cli.measure import keys_for

    job = JobSpec(seq_length=4096, global_batch_size=64, precision=Precision.fp8_tensorwise)
    model, recipe = load_model("Llama-3.1-8B"), Recipe(tp=1, mbs=1)
    keys, _ = keys_for(model, job, [recipe])
    ops = layer_ops(model, job, recipe, LayerKind.dense)
    assert any(p.op.dtype == TRANSPOSED_COPY_DTYPE for p in ops)  # the layer has copies (current scaling)...
    assert not any(TRANSPOSED_COPY_DTYPE in k for k in keys)  # ...none of which is listed
    assert {p.key for p in ops if p.op.dtype != TRANSPOSED_COPY_DTYPE} <= set(keys)
