"""The kernels of one Mamba-2 layer per micro-batch on one rank, and the layer kinds of a hybrid model.

Why apart from measure/layer_ops.py: a hybrid model's layer is one sub-block (constraints/mamba.py), so its kernel
list is the Mamba mixer, the attention block, the MLP or the MoE block alone; this module maps the pattern symbols
to layer kinds and holds the Mamba mixer's own kernels (built from measure.kernel_ops, as layer_ops' are), which
layer_ops.block_ops dispatches to.

Mamba mixer (megatron/core/ssm/mamba_mixer.py, training path `_ssm_training`), per rank with TP t (heads and
groups split over TP) and T tokens (CP re-splits heads, not tokens, around the scan: MambaContextParallel):
- the fused input norm (TELayerNormColumnParallelLinear) and in_proj, a column-parallel GEMM h -> in_proj_width/t;
- mamba_ssm's `mamba_split_conv1d_scan_combined`: the depthwise conv over conv_dim/t channels and the chunked SSD
  scan (Dao & Gu 2024, sec. 6: state-passing over chunks of 128, the intra-chunk part as small matmuls). It is
  priced by its memory traffic (it reads zxBCdt and writes y, fp32 states in between) and by Megatron's own FLOP
  count for the scan (7 T d_inner N, measure/flops.py); the backward reruns the conv and the chunk states, so it is
  2.5x the forward as flash attention's (`measure.layer_ops` convention);
- the gated RMSNorm over d_inner/t, then out_proj, a row-parallel GEMM d_inner/t -> h.
"""
from __future__ import annotations

from constraints.hybrid_pattern import ATTENTION, MAMBA, MLP, MOE
from constraints.mamba import mamba_dims
from constraints.spec import JobSpec, ModelSpec, Recipe
from measure.kernel_ops import Phase, PhaseOp, gemm_dtype, gemm_ops, norm_ops, pointwise_ops, rank_tokens
from measure.ops import Op, OpKind

# the hybrid symbol of each LayerKind a hybrid model's layers are priced as
HYBRID_KINDS = {MAMBA: "mamba", ATTENTION: "attention", MLP: "mlp", MOE: "moe_block"}


def mamba_ops(model: ModelSpec, job: JobSpec, recipe: Recipe) -> list:
    """Norm, in_proj, conv + scan, gated norm, out_proj and residual of one Mamba-2 layer (see module docstring)."""
    d = mamba_dims(model)
    tp, dt = recipe.tp, gemm_dtype(job)
    t, t_sp = rank_tokens(job, recipe)
    h = model.hidden_size
    in_w, d_local, conv_local = d.in_proj_width // tp, d.d_inner // tp, d.conv_dim // tp
    ops = norm_ops(model, t_sp, h)
    ops += gemm_ops(t, in_w, h, dt, "mamba")
    # conv1d + SSD scan: reads zxBCdt, writes y (bf16), keeps fp32 chunk states (heads x head_dim x N per chunk)
    chunks = -(-job.seq_length // 128) * recipe.mbs
    state_bytes = 4 * chunks * (d.heads // tp) * d.head_dim * d.state
    scan_flops = 7.0 * t * d_local * d.state + 2.0 * t * conv_local * d.conv_kernel
    scan_bytes = 2.0 * t * (in_w + d_local) + 2.0 * state_bytes
    shape = (t, d_local, d.state, d.conv_kernel)
    ops.append(PhaseOp(Op(OpKind.elementwise, shape, "bf16"), Phase.fwd, "mamba", scan_flops, scan_bytes))
    ops.append(PhaseOp(Op(OpKind.elementwise, shape, "bf16"), Phase.bwd_dgrad, "mamba", 2.5 * scan_flops, 2.5 * scan_bytes))
    ops += norm_ops(model, t, d_local, "mamba")  # gated RMSNorm (y * silu(z), per-group rstd)
    ops += gemm_ops(t, h, d_local, dt, "mamba")
    ops += pointwise_ops(OpKind.elementwise, (t_sp * h,), "residual", 2, 1, flops_per_elem=1.0, bwd_factor=1.0)
    return ops


def mamba_cp_s(model: ModelSpec, recipe: Recipe, tokens: int, groups, profile) -> float:
    """Context parallelism of one Mamba layer, forward: MambaContextParallel swaps the sequence split for a head split
    before the conv + scan (an all-to-all of zxBCdt) and back after it (an all-to-all of y), bf16
    (megatron/core/ssm/mamba_context_parallel.py pre_conv_ssm / post_conv_ssm)."""
    from measure import collectives as col

    d = mamba_dims(model)
    n_bytes = 2 * tokens * (d.in_proj_width + d.d_inner) // recipe.tp
    return col.all_to_all_s(n_bytes, groups.cp, profile)
