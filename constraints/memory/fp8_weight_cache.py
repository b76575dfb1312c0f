"""The fp8 weights Transformer Engine caches across micro-batches when an fp8 run keeps bf16 parameters.

Why: without `--fp8-param-gather` the parameters stay bf16 and every TE linear module quantises its weight in the
first micro-batch of a step and keeps the quantised copy for the others: Megatron passes `is_first_microbatch`
(megatron/core/extensions/transformer_engine.py:1338-1345 @d98e8a64, unless
`--disable-parameter-transpose-cache`), and TE stores the result in the module's `_fp8_workspaces["weight"]`
(transformer_engine/pytorch/module/linear.py:1958-1960 and :2068-2071 @d0067d0d, `cache_name = "weight"`). The
copy is made for both GEMM directions in training (linear.py:466-476: column-wise usage whenever the input needs a
gradient), so per weight element it holds:
- delayed / tensorwise scaling (Float8Tensor): the row-wise data, 1 B, plus a transposed copy, 1 B, on parts without
  non-TN fp8 GEMMs; compute capability 10.x and 13+ run non-TN layouts from the one buffer
  (transformer_engine/pytorch/tensor/float8_tensor.py:423-427, utils.py:658-663);
- MXFP8: row-wise and column-wise data, 1 B each, and one E8M0 scale byte per 32 elements in each direction
  (transformer_engine/pytorch/constants.py:175, MXFP8_BLOCK_SCALING_SIZE);
- fp8 blockwise: row-wise and column-wise data, 1 B each, and one fp32 scale per 128 x 128 block in each
  direction (weights use 2-D 128 x 128 blocks, as Megatron-Bridge's FP8-blockwise-128x128 names them).
Which weights: those TE builds under the fp8 context, the same decoder linear weights as NVFP4's
(constraints/memory/nvfp4_weights.py `rank_quantised_weights`; --first-last-layers-bf16 layers excluded). Not
counted: the per-tensor fp32 scale of Float8Tensor (4 B a weight) and the scales' tile padding.
"""
from __future__ import annotations

from typing import Optional

from constraints.spec import JobSpec, Precision, Recipe

MXFP8_BLOCK = 32            # constants.py:175
BLOCKWISE_WEIGHT_BLOCK = 128 * 128
FP32_SCALE_BYTES = 4


def non_tn_fp8_gemm(compute_capability: float) -> bool:
    """TE's is_non_tn_fp8_gemm_supported (utils.py:658-663): (10, 0) <= cc < (12, 0) or cc >= (13, 0)."""
    return 10 <= compute_capability < 12 or compute_capability >= 13


def fp8_weight_cache_bytes(job: JobSpec, recipe: Recipe, elements: int, compute_capability: Optional[float]) -> int:
    """Bytes of the cached fp8 copies of `elements` quantised weight elements on one rank (module docstring); 0
    unless an fp8 precision runs TE modules on bf16 parameters on a CUDA part."""
    p = job.precision
    if not p.is_fp8 or recipe.fp8_param_gather or recipe.local_transformer_impl or compute_capability is None:
        return 0
    if p == Precision.mxfp8:
        return 2 * elements + 2 * -(-elements // MXFP8_BLOCK)
    if p == Precision.fp8_blockwise:
        return 2 * elements + 2 * FP32_SCALE_BYTES * -(-elements // BLOCKWISE_WEIGHT_BLOCK)
    return elements * (1 if non_tn_fp8_gemm(compute_capability) else 2)
