"""What a low-precision GEMM costs beyond its MMA work: the quantisation passes Transformer Engine runs around it, by
recipe, and the rate its small shapes reach.

Why a module of its own: the four recipes a Megatron job can train its linears in (`--fp8-recipe delayed / tensorwise /
blockwise / mxfp8`, `--fp4-recipe nvfp4`) quantise an activation or a gradient with different kernels, and the GEMM op
builders (measure/kernels/common.py) and the roofline (measure/kernels/roofline.py) both need one answer to "what does
this recipe move per quantised element" and "how small is this GEMM for its format". Both the scalar and the vectorised
projection (measure/projection/layer_cost.py, layer_columns.py) read these through the op lists, so they stay equal.

Quantisation passes, per element of the bf16 tensor quantised (HBM bytes read + written; Transformer Engine d0067d0d,
transformer_engine/pytorch/csrc/quantizer.cpp):
- delayed scaling (`Float8Quantizer`): one cast kernel reads bf16 (2 B) and writes the fp8 copy (1 B); the scale
  comes from the amax history and the amax is reduced inside the same kernel: 3 B.
- current scaling, `tensorwise` (`Float8CurrentScalingQuantizer::quantize_impl`): the scale needs this tensor's own amax
  before the cast, so `nvte_compute_amax_with_config` reads the tensor once more (2 B) before the cast (3 B): 5 B. A
  LayerNormLinear's input is the exception: its norm writes the amax with its output
  (pytorch/csrc/extensions/normalization.cpp `FUSED_NORM_AMAX_FP8`), so the cast alone remains: 3 B.
- both per-tensor recipes also write a transposed fp8 copy for the other GEMM (1 B, in the same cast-transpose kernel)
  on parts whose FP8 GEMMs are TN only (Hopper); Blackwell runs non-TN FP8 GEMMs and makes none
  (`is_non_tn_fp8_gemm_supported`: compute capability 10.x, pytorch/utils.py; pytorch/tensor/storage/
  float8_tensor_storage.py drops `_transpose` there). The op lists are the same for every part, so the copy is an op
  of its own (`TRANSPOSED_COPY_DTYPE`), which measure/kernels/roofline.py prices only where the part is TN only.
- `blockwise` (1x128 activations / gradients, DeepSeek-V3's recipe) and `mxfp8` (1x32 blocks, E8M0 scales): scales are
  local to their block, computed in the cast kernel itself; it reads bf16 once and writes a row-wise and a column-wise
  copy, each 1 B per element plus its scales (4 B per 128 elements, fp32; 1 B per 32 elements, E8M0): 4.0625 B / 4.0625 B.
- `nvfp4` (`NVFP4Quantizer::quantize_impl`): the two-level NVFP4 scale needs the tensor's fp32 amax first, and both the
  activation input and the gradient take the random Hadamard transform on their column-wise (wgrad) copy
  (common/recipe/__init__.py NVFP4BlockScaling: fp4_quant_fwd_inp and fp4_quant_bwd_grad random_hadamard_transform=True),
  so `nvte_hadamard_transform_amax` reads the tensor once (2 B) for the row-wise amax and the post-transform column-wise
  amax, then `nvte_quantize_with_hadamard_transform` reads it again (2 B) and writes the row-wise E2M1 copy and the
  transformed column-wise one, each 9/16 B with its E4M3 scale per 16 elements: 5.125 B. A norm's output gets no
  fused amax here (the post-transform amax takes the norm's unfused path). Stochastic rounding of the gradient and the
  16-point transform run inside that kernel and move no bytes of their own (arXiv 2509.25149 sec. 4.2-4.3).

Weights are quantised once per optimizer step and cached across micro-batches (TE `is_first_microbatch`; with
`--fp8-param-gather` / `--fp4-param-gather` they are kept quantised), so no per-micro-batch pass prices them.

Small GEMMs (`mma_equivalent_flops`): an FP8 MMA instruction does the work of a bf16 one over twice the K (PTX ISA
`wgmma.mma_async` shapes m64nNk16 for bf16, m64nNk32 for e4m3 / e5m2 on Hopper; `tcgen05.mma` K = 16 / 32 / 64 for
kind::f16 / kind::f8f6f4 / kind::mxf4nvf4 on Blackwell) in the same issue time, so a GEMM (m, n, k) in a format whose
tensor rate is r times bf16's runs the same tiles, waves, prologues and epilogues as a bf16 GEMM (m, n, k / r): its
achieved fraction of its own peak is the bf16 curve's at FLOPs / r. Large GEMMs lose nothing (the curve is flat there);
the per-expert GEMMs of a small-hidden MoE (hidden 2048, expert FFN 768) lose most.
"""
from __future__ import annotations

from constraints.spec import Precision

# bytes per E2M1 element with its E4M3 scale per 16 (arXiv 2509.25149 sec. 2), as measure/kernels/common.py DTYPE_BYTES
NVFP4_BYTES_PER_ELEMENT = 9 / 16
BF16_BYTES = 2.0
_CAST_FP8 = BF16_BYTES + 1.0  # read bf16, write the fp8 copy
_AMAX_READ = BF16_BYTES  # a separate amax kernel reads the bf16 tensor once more
# Op dtype of the transposed fp8 copy a per-tensor recipe writes for TN-only FP8 GEMMs (module docstring)
TRANSPOSED_COPY_DTYPE = "fp8-transposed-copy"
TRANSPOSED_COPY_BYTES_PER_ELEMENT = 1.0
PER_TENSOR_RECIPES = frozenset({Precision.fp8_delayed, Precision.fp8_tensorwise})

# (bytes per element for a tensor whose producer is not a fused norm, bytes for a LayerNormLinear's input)
QUANTISE_BYTES_PER_ELEMENT: dict[Precision, tuple[float, float]] = {
    Precision.fp8_delayed: (_CAST_FP8, _CAST_FP8),
    Precision.fp8_tensorwise: (_AMAX_READ + _CAST_FP8, _CAST_FP8),
    Precision.fp8_blockwise: (BF16_BYTES + 2 * (1.0 + 4 / 128),) * 2,
    Precision.mxfp8: (BF16_BYTES + 2 * (1.0 + 1 / 32),) * 2,
    Precision.nvfp4: (_AMAX_READ + BF16_BYTES + 2 * NVFP4_BYTES_PER_ELEMENT,) * 2,
}


def quantise_bytes_per_element(precision: Precision, norm_fed: bool = False) -> float:
    """HBM bytes Transformer Engine's quantisation of one bf16 activation or gradient element moves under this recipe
    (module docstring), 0 for a precision that quantises nothing. `norm_fed`: the tensor is a LayerNormLinear's input
    (its norm computes the amax of a current-scaling recipe). The per-tensor recipes' transposed copy is apart
    (`transposed_copy_bytes_per_element`)."""
    pair = QUANTISE_BYTES_PER_ELEMENT.get(precision)
    if pair is None:
        return 0.0
    return pair[1] if norm_fed else pair[0]


def mma_equivalent_flops(flops: float, bf16_peak_flops: float, dtype_peak_flops: float) -> float:
    """The FLOPs of the bf16 GEMM that issues the same MMA instructions as this GEMM in a format `dtype_peak /
    bf16_peak` times faster (module docstring): where the GEMM efficiency curve (measured on bf16 shapes) reads its
    achieved fraction. Unchanged for bf16 and for a part without a faster rate for the format."""
    if dtype_peak_flops <= bf16_peak_flops:
        return flops
    return flops * bf16_peak_flops / dtype_peak_flops


def transposed_copy_bytes_per_element(precision: Precision) -> float:
    """Bytes of the transposed fp8 copy a per-tensor recipe writes per quantised element where the part's FP8 GEMMs are
    TN only (module docstring); 0 for the block-scaled recipes, which write their column-wise copy in any case."""
    return TRANSPOSED_COPY_BYTES_PER_ELEMENT if precision in PER_TENSOR_RECIPES else 0.0


def writes_transposed_copy(supports_mx_formats: bool) -> bool:
    """Whether a part's FP8 GEMMs are TN only, so the per-tensor recipes write the transposed copy: Transformer Engine
    makes it below compute capability 10.0 (`is_non_tn_fp8_gemm_supported`). The profiles do not carry the compute
    capability; MX block-scaled GEMMs (`supports_mxfp8`) arrive with the same generation (sm_100), so a part with them
    runs non-TN FP8 GEMMs and one without them (Hopper) does not."""
    return not supports_mx_formats


def is_kernel_of_its_own(op) -> bool:
    """Whether an op (measure/kernels/ops.py Op) is a kernel `shardplan measure` can time alone: the transposed fp8 copy
    is written by its cast kernel, so it is priced by the roofline and never measured."""
    return op.dtype != TRANSPOSED_COPY_DTYPE


# rows per expert Transformer Engine's Fp8Padding pads a grouped GEMM's input to (Megatron's TEGroupedMLP pads every
# expert's tokens under fp8 / fp4: megatron/core/transformer/moe/experts.py `quantization_padding = Fp8Padding(...)`):
# `get_align_size_for_quantization` (pytorch/quantization.py @d0067d0d) 32 for MXFP8, 128 for NVFP4, 16 for the other
# recipes; 256 where the experts run the fused grouped MLP (experts.py passes align_size=256 there)
GROUPED_ROW_ALIGNMENT: dict[Precision, int] = {Precision.mxfp8: 32, Precision.nvfp4: 128, Precision.fp8_delayed: 16,
                                               Precision.fp8_tensorwise: 16, Precision.fp8_blockwise: 16}
FUSED_GROUPED_MLP_ROW_ALIGNMENT = 256


def padded_rows_per_expert(tokens: int, precision: Precision, fused_grouped_mlp: bool = False) -> int:
    """The rows one expert's grouped GEMM runs on: its tokens rounded up to the recipe's alignment (above); bf16 pads
    nothing."""
    align = GROUPED_ROW_ALIGNMENT.get(precision)
    if align is None:
        return tokens
    if fused_grouped_mlp:
        align = FUSED_GROUPED_MLP_ROW_ALIGNMENT
    return -(-tokens // align) * align
