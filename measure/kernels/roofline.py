"""Time of one kernel: a measured cost-table entry when there is one (the table passed in, else the profile's
bundled hardware/measured/<name>.json), else a roofline.

Why a roofline with efficiency curves: a GEMM's achieved fraction of peak grows with its size (tile
quantisation, wave tails, launch), so a constant efficiency misprices the small per-rank GEMMs that high
TP / EP produce. The curve (achieved/peak vs log2 FLOPs) and the other constants are the profile's
`calibration` block, fitted on runs.csv (bench/fit_calibration.py), never set in code.

op time = max(FLOPs / (peak(dtype) * eff(FLOPs)), bytes / (HBM bw * mem_eff)) + kernel launch
(Williams et al., "Roofline", CACM 2009; efficiency-curve idea as in calculon's per-size efficiencies).
"""
from __future__ import annotations

import math
from typing import Optional, Protocol

from hardware.profile import Calibration, HardwareProfile
from measure.kernels.layer_ops import PhaseOp
from measure.kernels.measured_tables import bundled_table
from measure.kernels.ops import OpKind
from measure.kernels.quantization import TRANSPOSED_COPY_DTYPE, mma_equivalent_flops, writes_transposed_copy


class CostLookup(Protocol):
    def lookup(self, fingerprint: str, op_key: str) -> Optional[float]: ...


_MATMUL = (OpKind.gemm, OpKind.grouped_gemm)
_ATTENTION = (OpKind.attention_fwd, OpKind.attention_bwd)


def curve_efficiency(curve: tuple[tuple[float, float], ...], flops: float) -> float:
    """Piecewise-linear achieved/peak at log2(flops), flat beyond the end points."""
    x = math.log2(max(flops, 1.0))
    if x <= curve[0][0]:
        return curve[0][1]
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return curve[-1][1]


def peak_flops(profile: HardwareProfile, dtype: str) -> float:
    """Dense peak FLOP/s for a GEMM input dtype; fp8 (and fp4) fall back to bf16 on parts without them."""
    p = profile.peak_tflops
    if dtype == "fp4" and p.fp4:
        return p.fp4 * 1e12
    if dtype == "fp8" and p.fp8:
        return p.fp8 * 1e12
    if dtype == "tf32":  # fp32 GEMMs under Transformer Engine (measure/kernels/common.py gemm_dtype)
        return (p.tf32 or p.fp32 or p.bf16 / 16) * 1e12
    if dtype == "fp32":
        return (p.fp32 or p.bf16 / 16) * 1e12
    return (p.fp16 if dtype == "fp16" else p.bf16) * 1e12


def matmul_efficiency(cal: Calibration, flops_per_gemm: float, dtype: str) -> float:
    eff = curve_efficiency(cal.gemm_efficiency, flops_per_gemm)
    if dtype in ("fp8", "fp4"):
        # no fitted fp4 constant (runs.csv has too few NVFP4 rows to fit one apart): fp4 GEMMs take fp8's
        eff *= cal.fp8_gemm_relative_efficiency
    return eff


def grouped_token_efficiency(cal: Calibration, tokens_per_group: float) -> float:
    """Grouped GEMM achieved/peak relative to one plain GEMM of the same per-group FLOPs, as a saturating
    function of the tokens each expert sees: m / (m + m_half). Few tokens per expert leave most of a
    128-row MMA tile empty and the per-group tile scheduling unamortised (grouped GEMMs in CUTLASS/TE pad
    each group to the tile height), so efficiency halves at m_half tokens and tends to the calibration's
    `grouped_gemm_relative_efficiency` for large m."""
    half = cal.grouped_gemm_half_tokens
    return cal.grouped_gemm_relative_efficiency * (tokens_per_group / (tokens_per_group + half) if half > 0 else 1.0)


# FlashAttention's achieved rate grows with the head dimension: per score element the kernel does 4*d MMA FLOPs
# (QK^T and PV) but a fixed amount of softmax work (exponent, max, rescale) on the slower non-MMA units, so the
# MMA pipes idle for a share d_soft / (d + d_soft) of the time. FlashAttention-3 (Shah et al. 2024, arXiv
# 2407.08608, Fig. 5, H100 BF16 forward, seqlen 16k, non-causal) reaches 497 / 648 / 756 TFLOP/s at head dim
# 64 / 128 / 256, which d / (d + 56) reproduces (0.767 and 1.18 of head dim 128's rate against the paper's 0.767
# and 1.167). The parts' attention microbenchmarks are head-dim-128 kernels (Llama), so 128 is the reference.
SOFTMAX_EQUIV_HEAD_DIM = 56.0
REFERENCE_HEAD_DIM = 128.0


def attention_head_dim_factor(head_dim: float) -> float:
    """Flash attention's achieved/peak at this head dimension over its value at head dim 128 (see above)."""
    d, d0, ref = float(head_dim), SOFTMAX_EQUIV_HEAD_DIM, REFERENCE_HEAD_DIM
    return (d / (d + d0)) / (ref / (ref + d0))


def fp8_attention_time_factor(head_dim: float, bf16_peak: float, fp8_peak: float) -> float:
    """Time of an FP8 flash attention kernel over the bf16 one at this head dimension: by the split above the MMA
    pipes take d / (d + d_soft) of a bf16 kernel's time and the softmax the rest; FP8 inputs (Transformer Engine
    `fp8_dot_product_attention`, cuDNN's FP8 fused attention) run QK^T and PV at the part's fp8 tensor rate and leave
    the exponent work as it is: (d * bf16/fp8 + d_soft) / (d + d_soft). Check: FlashAttention-3 (Shah et al. 2024,
    arXiv 2407.08608, H100 forward at seqlen 16k) reaches 1171 TFLOP/s in FP8 at head dim 256 (its FP8 speed figure)
    against 756 TFLOP/s in bf16, 1.55x; this gives 1.70x on H100's 2x fp8 peak (within 10 %). A part without an fp8 rate keeps the bf16 time."""
    if not fp8_peak or fp8_peak <= bf16_peak:
        return 1.0
    d, d0 = float(head_dim), SOFTMAX_EQUIV_HEAD_DIM
    return (d * bf16_peak / fp8_peak + d0) / (d + d0)


# Flash attention's achieved rate also grows with the K/V length each query iterates over: every query block pays a
# fixed prologue and epilogue (load Q, rescale and write O, write the softmax statistics; in the backward, dQ) that the
# inner loop over K/V blocks amortises, and a causal kernel's diagonal blocks are half masked. So the rate saturates as
# L / (L + L_half) in the mean K/V tokens per query L, with L_half a property of the part's kernel
# (Microbench.attention_half_kv_tokens, derived from the same publication's in-step rate at 8k and its end-to-end
# rates at 128k-256k). The microbenchmarks are 8k causal kernels: L = 4096 is the reference the fraction holds at.
ATTENTION_REFERENCE_KV_TOKENS = 4096.0


def attention_mean_kv_tokens(s_q: int) -> float:
    """Mean K/V tokens one query iterates over inside one flash-attention call of a rank holding `s_q` queries. Without
    CP a causal kernel's query attends to s/2 keys on average. Under CP Megatron gives each rank two of 2 x CP chunks
    (chunks r and 2 CP - r - 1: megatron/core/utils.py:2510-2557 @d98e8a64) and Transformer Engine's p2p ring
    (`--cp-comm-type p2p`, the default: megatron/training/arguments.py:3221 @d98e8a64) runs CP calls per pass, each
    over one rank's K/V (s/CP tokens, half of it on average under the causal split): s/(2 CP), again s_q / 2."""
    return s_q / 2.0


def attention_length_factor(mean_kv_tokens: float, half_kv_tokens: float) -> float:
    """Flash attention's rate at this mean K/V length over its rate at the 8k reference (1 when L_half is 0)."""
    if half_kv_tokens <= 0:
        return 1.0
    ref = ATTENTION_REFERENCE_KV_TOKENS
    return (mean_kv_tokens / (mean_kv_tokens + half_kv_tokens)) / (ref / (ref + half_kv_tokens))


def _grouped_tokens(pop: PhaseOp) -> int:
    """Tokens per expert of a grouped GEMM: M of fwd / dgrad (g, m, n, k), K (the reduction) of wgrad."""
    return pop.op.shape[3] if pop.phase.value == "bwd_wgrad" else pop.op.shape[1]


def memory_efficiency(cal: Calibration, kind: OpKind) -> float:
    """Achieved/peak HBM bandwidth of a kernel class: mamba_ssm's Triton SSD scan kernels have their own
    (`ssd_scan_memory_efficiency`; hardware/calibration.py says why), every other bytes-bound kernel the
    elementwise one. A calibration without a scan value prices the scan as elementwise kernels."""
    if kind == OpKind.ssd_scan and cal.ssd_scan_memory_efficiency is not None:
        return cal.ssd_scan_memory_efficiency
    return cal.memory_bound_efficiency


def roofline_time_s(pop: PhaseOp, profile: HardwareProfile) -> float:
    """Analytic time of one kernel from its FLOPs and bytes."""
    cal = profile.calibration
    kind = pop.op.kind
    if pop.op.dtype == TRANSPOSED_COPY_DTYPE:  # part of its cast kernel: no launch of its own, and none on non-TN parts
        if not writes_transposed_copy(profile.supports_mxfp8):
            return 0.0
        return pop.bytes_moved / (profile.hbm_bandwidth_gb_per_s * 1e9 * memory_efficiency(cal, kind))
    mem_s = pop.bytes_moved / (profile.hbm_bandwidth_gb_per_s * 1e9 * memory_efficiency(cal, kind))
    if kind in _MATMUL:
        groups = pop.op.shape[0] if kind == OpKind.grouped_gemm else 1
        peak = peak_flops(profile, pop.op.dtype)
        # a low-precision GEMM is as small as the bf16 GEMM issuing its MMA instructions (measure/kernels/quantization.py)
        eff = matmul_efficiency(cal, mma_equivalent_flops(pop.flops / groups, peak_flops(profile, "bf16"), peak), pop.op.dtype)
        if kind == OpKind.grouped_gemm:
            eff *= grouped_token_efficiency(cal, _grouped_tokens(pop))
        comp_s = pop.flops / (peak * eff)
    elif kind in _ATTENTION:
        eff = min(1.0, cal.attention_efficiency * attention_head_dim_factor(pop.op.shape[5])
                  * attention_length_factor(attention_mean_kv_tokens(pop.op.shape[3]), cal.attention_half_kv_tokens))
        # fp32 core attention runs unfused, as fp32 batched matmuls (measure/kernels/common.py act_dtype)
        comp_s = pop.flops / (peak_flops(profile, "fp32" if pop.op.dtype == "fp32" else "bf16") * eff)
        if pop.op.dtype == "fp8":  # FP8 dot-product attention: the MMA share at the fp8 rate
            comp_s *= fp8_attention_time_factor(pop.op.shape[5], peak_flops(profile, "bf16"), peak_flops(profile, "fp8"))
    else:
        comp_s = 0.0
    return max(comp_s, mem_s) + cal.kernel_launch_us * 1e-6


def op_time_s(pop: PhaseOp, profile: HardwareProfile, cost_table: Optional[CostLookup] = None,
              fingerprint: Optional[str] = None) -> float:
    """Measured seconds when the table has this op for this device, else the roofline. Without a table
    argument, the profile's bundled measured table (hardware/measured/<name>.json) is the table."""
    if cost_table is None:
        cost_table, fingerprint = bundled_table(profile.name)
    if cost_table is not None and fingerprint is not None:
        measured = cost_table.lookup(fingerprint, pop.key)
        if measured is not None:
            return measured
    return roofline_time_s(pop, profile)
