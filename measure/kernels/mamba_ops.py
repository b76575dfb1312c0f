"""The kernels of one Mamba-2 layer per micro-batch on one rank, and the layer kinds of a hybrid model.

Why apart from measure/kernels/layer_ops.py: a hybrid model's layer is one sub-block (constraints/models/mamba.py), so its kernel
list is the Mamba mixer, the attention block, the MLP or the MoE block alone; this module maps the pattern symbols
to layer kinds and holds the Mamba mixer's own kernels (built from measure.kernels.common, as layer_ops' are), which
layer_ops.block_ops dispatches to.

Mamba mixer (megatron/core/ssm/mamba_mixer.py, training path `_ssm_training`), per rank with TP t (heads and
groups split over TP) and T tokens (CP re-splits heads, not tokens, around the scan: MambaContextParallel):
- the fused input norm (TELayerNormColumnParallelLinear) and in_proj, a column-parallel GEMM h -> in_proj_width/t;
- mamba_ssm's `mamba_split_conv1d_scan_combined`: the depthwise causal conv and the chunked SSD scan (Dao & Gu 2024,
  sec. 6), priced kernel by kernel from mamba_ssm's source (measure/kernels/mamba_ssd.py: the conv and five Triton kernels
  forward; the conv and chunk states recomputed and a dozen kernels plus torch reductions backward), each by the
  bytes it moves; with MBS > 1 Megatron's `rearrange(...).contiguous()` copies zxBCdt in and y out (a size-1 batch
  dimension leaves both views contiguous, so MBS 1 copies nothing), and in the backward the gradient of zxBCdt, which
  the scan writes (b, l, d) contiguous, reaches in_proj as an (l, b, d) permuted view that Transformer Engine copies
  (`grad_output_preprocess`: `grad_output.reshape(-1, d)` then `.contiguous()`, transformer_engine/pytorch/module/
  base.py); y's gradient needs no copy (the scan backward takes any stride with a unit last dimension: mamba_ssm
  `_mamba_chunk_scan_combined_bwd` makes dout contiguous only when `dout.stride(-1) != 1`);
- the mixer's RMSNorm over d_inner/t (ExtendedRMSNorm, per-group rstd; the silu(z) gate is applied inside the
  scan, which is given z), then out_proj, a row-parallel GEMM d_inner/t -> h.
"""
from __future__ import annotations

from constraints.models.hybrid_pattern import ATTENTION, MAMBA, MLP, MOE
from constraints.models.mamba import mamba_dims
from constraints.spec import JobSpec, ModelSpec, Recipe
from measure.comm import collectives as col
from measure.kernels.common import gemm_dtype, gemm_ops, norm_ops, pointwise_ops, rank_tokens
from measure.kernels.mamba_ssd import scan_ops, scan_shape
from measure.kernels.ops import OpKind

# the hybrid symbol of each LayerKind a hybrid model's layers are priced as
HYBRID_KINDS = {MAMBA: "mamba", ATTENTION: "attention", MLP: "mlp", MOE: "moe_block"}


def mamba_ops(model: ModelSpec, job: JobSpec, recipe: Recipe) -> list:
    """Norm, in_proj, conv + scan kernels, norm, out_proj and residual of one Mamba-2 layer (see module docstring)."""
    d = mamba_dims(model)
    tp, dt = recipe.tp, gemm_dtype(job)
    t, t_sp = rank_tokens(job, recipe)
    h = model.hidden_size
    in_w, d_local = d.in_proj_width // tp, d.d_inner // tp
    ops = norm_ops(model, t_sp, h)
    ops += gemm_ops(t, in_w, h, dt, "mamba", quant=job.precision, norm_fed=True)  # in_proj: TELayerNormColumnParallelLinear
    shape = scan_shape(model, job, recipe)
    if recipe.mbs > 1:  # MambaMixer._ssm_training: zxBCdt "l b d -> b l d" .contiguous(), y "b l d -> l b d" .contiguous()
        # (forward copies), and TE's copy of zxBCdt's permuted gradient before in_proj's backward GEMMs (module docstring)
        ops += pointwise_ops(OpKind.elementwise, (t * in_w,), "mamba", 1, 1, flops_per_elem=0.0, bwd_factor=1.0)
        ops += pointwise_ops(OpKind.elementwise, (t * d_local,), "mamba", 1, 1, flops_per_elem=0.0, bwd_factor=0.0)[:1]
    ops += scan_ops(shape)
    ops += norm_ops(model, t, d_local, "mamba")  # RMSNorm over the gated y, per-group rstd
    ops += gemm_ops(t, h, d_local, dt, "mamba", quant=job.precision)
    ops += pointwise_ops(OpKind.elementwise, (t_sp * h,), "residual", 2, 1, flops_per_elem=1.0, bwd_factor=1.0)
    return ops


def mamba_cp_s(model: ModelSpec, recipe: Recipe, tokens: int, groups, profile) -> float:
    """Context parallelism of one Mamba layer, forward: MambaContextParallel swaps the sequence split for a head split
    before the conv + scan (an all-to-all of zxBCdt) and back after it (an all-to-all of y), bf16
    (megatron/core/ssm/mamba_context_parallel.py pre_conv_ssm / post_conv_ssm)."""
    d = mamba_dims(model)
    n_bytes = 2 * tokens * (d.in_proj_width + d.d_inner) // recipe.tp
    return col.all_to_all_s(n_bytes, groups.cp, profile)
