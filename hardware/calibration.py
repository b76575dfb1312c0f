"""A part's projection constants, derived from what is published about it before anyone trains on it.

Why derived and not fitted per part: constants fitted on one part's published training runs are only as
good as those runs, and a part nobody has published runs for (A100 clusters, H200, H800, AMD) then has
nothing. So a profile carries `microbench:` (published microbenchmarks of the part: the best achieved
matmul rate per precision, in-step flash-attention rate, ring all-reduce bus bandwidth, achieved HBM
bandwidth, each cited in the profile's `sources`), and the training stack's own behaviour (how far
training-shaped GEMMs fall below the best matmul, host time per op, MoE dispatch, overlap) is a small set of
`SoftwareConstants` fitted ONCE on every published run of every part (bench/fit_calibration.py, stored in
hardware/software_constants.yaml). `derive_calibration` combines the two into the `Calibration` that the
roofline, collectives and layer-cost modules read.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field

SOFTWARE_CONSTANTS_PATH = Path(__file__).resolve().parent / "software_constants.yaml"
_MAX_HBM_BYTES = 1 << 44  # 16 TiB, as hardware/profile.py bounds hbm_capacity_bytes (int64-safe byte counts)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Calibration(_Strict):
    """The constants the projection reads; derived by `derive_calibration` for bundled profiles, or given
    in full by a user's profile. Defaults: AMD Primus projection defaults where it has one (collective 0.70,
    point-to-point 0.80, kernel launch ~3 us; docs/facts/hardware.md), else neutral values.

    gemm_efficiency: piecewise-linear curve of achieved/peak vs log2(GEMM FLOPs): pairs (log2_flops, eff).
    """

    # at least one point (an empty curve has no efficiency to read); log2 FLOPs 0..128, efficiency (0, 1]
    gemm_efficiency: tuple[tuple[Annotated[float, Field(ge=0, le=128)], Annotated[float, Field(gt=0, le=1)]], ...] = Field(
        ((20.0, 0.05), (30.0, 0.45), (36.0, 0.70), (40.0, 0.75)), min_length=1, max_length=256)
    fp8_gemm_relative_efficiency: float = Field(0.75, gt=0, le=1, description="fp8 GEMM achieved/peak(fp8) over bf16's achieved/peak(bf16)")
    grouped_gemm_relative_efficiency: float = Field(0.85, gt=0, le=1, description="MoE grouped GEMM vs a plain GEMM of the same per-group size, "
                                                    "many tokens per expert")
    grouped_gemm_half_tokens: float = Field(0.0, ge=0, le=1e12,
                                            description="tokens per expert at which the grouped GEMM reaches half that (0 = no token dependence)")
    host_time_per_op_us: float = Field(0.0, ge=0, le=1e7, description="host (Python, framework, launch) time per listed op of a layer; "
                                       "a layer pass takes at least its ops' host time (CPU-bound small kernels)")
    moe_dispatch_overhead_us: float = Field(0.0, ge=0, le=1e7, description="per MoE layer, micro-batch and pass (fwd, bwd): host sync of the "
                                            "per-expert token counts and the launch gap behind it")
    gemm_launch_host_us: float = Field(0.0, ge=0, le=1e7, description="host time of one GEMM a grouped GEMM launches per local expert "
                                       "(Transformer Engine's multi-stream cuBLAS loop: measure/kernel_ops.grouped_gemm_ops)")
    attention_efficiency: float = Field(0.5, gt=0, le=1, description="flash attention achieved/peak(bf16), executed FLOPs "
                                        "(backward 2.5x forward), at the reference kernel length ATTENTION_REFERENCE_KV_TOKENS")
    attention_half_kv_tokens: float = Field(0.0, ge=0, le=1e9, description="mean K/V tokens per query at which flash attention "
                                            "reaches half its long-sequence rate (0 = the rate does not depend on length; "
                                            "measure/kernels/roofline.py attention_length_factor)")
    memory_bound_efficiency: float = Field(0.7, gt=0, le=1, description="achieved/peak HBM bandwidth")
    ssd_scan_memory_efficiency: Optional[float] = Field(
        None, gt=0, le=1, description="achieved/peak HBM bandwidth of mamba_ssm's Triton SSD scan kernels "
        "(measure/kernels/mamba_ssd.py); None = memory_bound_efficiency")
    collective_bandwidth_efficiency: float = Field(0.7, gt=0, le=1)
    p2p_bandwidth_efficiency: float = Field(0.8, gt=0, le=1)
    collective_fixed_overhead_us: float = Field(20.0, ge=0, le=1e7)
    kernel_launch_us: float = Field(3.0, ge=0, le=1e7)
    moe_load_imbalance: float = Field(1.0, ge=1.0, le=1 << 16, description="max/mean expert load factor")
    exposed_comm_fraction: float = Field(0.2, ge=0, le=1, description="share of an overlapped collective that still shows (imperfect overlap)")
    step_overhead_s: float = Field(0.0, ge=0, le=86400, description="fixed per-iteration time: data loading, logging, launch gaps")
    framework_overhead_bytes: int = Field(3 * 1024**3, ge=0, le=_MAX_HBM_BYTES, description="CUDA context, NCCL, allocator reserve")
    activation_fragmentation_fraction: float = Field(0.0, ge=0, le=1, description="extra fraction of activations lost to fragmentation")


class Microbench(_Strict):
    """Published microbenchmarks of one part (per GPU), each cited under `sources: microbench.<field>`."""

    matmul_bf16_tflops: float = Field(gt=0, description="maximum achievable bf16 matmul TFLOP/s (best shape, no sparsity)")
    matmul_fp8_tflops: Optional[float] = Field(None, gt=0, description="same for float8_e4m3 inputs; None = not published")
    attention_fraction: float = Field(gt=0, le=1, description="flash-attention fwd+bwd achieved TFLOP/s over the bf16 dense peak, "
                                      "counted in executed FLOPs (backward = 2.5x forward) at an 8k causal sequence")
    attention_half_kv_tokens: float = Field(0.0, ge=0, le=1e9, description="mean K/V tokens per query at which the same kernel "
                                            "reaches half its long-sequence rate, from its published rates at 8k and >= 128k "
                                            "(0 = not published: a flat rate)")
    hbm_fraction: float = Field(gt=0, le=1, description="achieved device-memory copy bandwidth over the datasheet HBM bandwidth")
    allreduce_ring_busbw_gb_per_s: float = Field(gt=0, description="ring all-reduce bus bandwidth over the whole scale-up "
                                                 "group (8 GPUs), large payload, in-switch reduction (NVLS) off")


class SoftwareConstants(_Strict):
    """Properties of the training software stack (Megatron-LM / Transformer Engine / NCCL), one value for every
    part, fitted by bench/fit_calibration.py on all rows of runs.csv. The `*_scale` factors map a
    microbenchmark onto the same kernel class inside a training step (shapes, fusions, clocks under load)."""

    gemm_scale: float = Field(0.85, gt=0, le=1.2, description="GEMM achieved/peak at 2^40 FLOPs over the best-matmul fraction")
    fp8_scale: float = Field(1.0, gt=0, le=1.5, description="fp8-over-bf16 relative efficiency over the microbenchmark's")
    # 1.0, not fitted (bench/fit_software.py GRID says why): attention runs at the microbenchmark's executed-FLOP rate
    attention_scale: float = Field(1.0, gt=0, le=2.0)
    memory_scale: float = Field(0.8, gt=0, le=1.2, description="element-wise kernels' achieved bandwidth over a plain copy")
    # The Mamba-2 scan's kernels (mamba_ssm's Triton chunked SSD: fp32 partial sums, tl.dot over 128-token chunks, grids
    # of batch x chunks x heads; measure/kernels/mamba_ssd.py) are not plain streaming kernels, and no achieved rate of
    # them on any part is published in what this project cites. Sharing `memory_scale` tied them to whatever rows fix
    # that constant: fitted without the hybrid rows (leave the Megatron-Bridge summary out) it rose from 0.5 to 0.8 and
    # the hybrid rows read +25 % too fast. So the scan has its own scale, fitted only on rows of hybrid models
    # (bench/fit_software.py HYBRID_ONLY); None (no hybrid row in the fit) keeps `memory_scale`.
    ssd_scan_scale: Optional[float] = Field(None, gt=0, le=1.2, description="Mamba-2 SSD scan kernels' achieved "
                                            "bandwidth over a plain copy; None = memory_scale")
    host_time_per_op_us: float = Field(0.0, ge=0)
    # Set from sources, not fitted (bench/fit_software.py GRID leaves them out). A Transformer Engine grouped GEMM outside
    # the fused grouped MLP is one cuBLASLt GEMM per local expert (GroupedLinear -> general_grouped_gemm ->
    # nvte_multi_tensor_gemm -> multi_stream_cublas_gemm, measure/kernels/common.py grouped_gemm_ops), so each expert's
    # GEMM runs at the plain GEMM rate of its own shape (the GEMM curve prices small per-expert GEMMs, the per-launch
    # host time is gemm_launch_host_us): relative efficiency 1.0, no extra token dependence (0)
    grouped_gemm_relative_efficiency: float = Field(1.0, gt=0, le=1)
    grouped_gemm_half_tokens: float = Field(0.0, ge=0)
    moe_dispatch_overhead_us: float = Field(0.0, ge=0)
    gemm_launch_host_us: float = Field(0.0, ge=0)
    # max/mean tokens per expert: 1.0 under forced-balanced routing (Megatron --moe-router-force-load-balancing), which
    # 134 of runs.csv's 158 MoE headline rows state and none contradicts; a run with natural routing states its own
    # value (an input of the run, never fitted: bench/fit_software.py GRID)
    moe_load_imbalance: float = Field(1.0, ge=1.0)
    exposed_comm_fraction: float = Field(0.2, ge=0, le=1)


# Shape of the achieved/peak curve vs log2(GEMM FLOPs), normalised to 1 at 2^40 FLOPs (a large training GEMM):
# small GEMMs leave SMs idle (wave quantisation, tile padding, launch). The points are the curve this project
# fitted on runs.csv before the transfer model (0.05, 0.45, 0.70, 0.75), divided by its top.
CURVE_SHAPE: tuple[tuple[float, float], ...] = ((20.0, 0.05 / 0.75), (30.0, 0.45 / 0.75), (36.0, 0.70 / 0.75), (40.0, 1.0))
_MAX_EFF = 0.95


def derive_calibration(peak_bf16_tflops: float, peak_fp8_tflops: Optional[float], hbm_gb_per_s: float,
                       scale_up_gb_per_s: float, mb: Microbench, sw: SoftwareConstants) -> Calibration:
    """The part's Calibration from its microbenchmarks and the shared software constants (see module doc)."""
    bf16_frac = mb.matmul_bf16_tflops / peak_bf16_tflops
    top = min(_MAX_EFF, bf16_frac * sw.gemm_scale)
    curve = tuple((x, round(y * top, 4)) for x, y in CURVE_SHAPE)
    fp8_rel = 1.0
    if peak_fp8_tflops and mb.matmul_fp8_tflops:
        fp8_rel = (mb.matmul_fp8_tflops / peak_fp8_tflops) / bf16_frac
    return Calibration(
        gemm_efficiency=curve,
        fp8_gemm_relative_efficiency=round(min(1.0, fp8_rel * sw.fp8_scale), 4),
        attention_efficiency=round(min(1.0, mb.attention_fraction * sw.attention_scale), 4),
        attention_half_kv_tokens=mb.attention_half_kv_tokens,
        memory_bound_efficiency=round(min(1.0, mb.hbm_fraction * sw.memory_scale), 4),
        ssd_scan_memory_efficiency=None if sw.ssd_scan_scale is None else round(min(1.0, mb.hbm_fraction * sw.ssd_scan_scale), 4),
        collective_bandwidth_efficiency=round(min(1.0, mb.allreduce_ring_busbw_gb_per_s / scale_up_gb_per_s), 4),
        host_time_per_op_us=sw.host_time_per_op_us,
        grouped_gemm_relative_efficiency=sw.grouped_gemm_relative_efficiency,
        grouped_gemm_half_tokens=sw.grouped_gemm_half_tokens,
        moe_dispatch_overhead_us=sw.moe_dispatch_overhead_us,
        gemm_launch_host_us=sw.gemm_launch_host_us,
        moe_load_imbalance=sw.moe_load_imbalance,
        exposed_comm_fraction=sw.exposed_comm_fraction,
    )


_SW_CACHE: dict = {}


def load_software_constants(path: Path = SOFTWARE_CONSTANTS_PATH) -> SoftwareConstants:
    """The fitted shared constants, parsed once per file version. A missing file is a broken install (every
    projection would silently take the unfitted defaults, ~12 % fast on Llama-3.1-8B / H100), so it is an error."""
    if not path.exists():
        raise RuntimeError(f"{path} is missing: the fitted software constants ship with shardplan (package data); "
                           "reinstall shardplan, or run `python -m bench.fit_calibration --write` in a checkout")
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _SW_CACHE:
        data = yaml.safe_load(path.read_text()) or {}
        _SW_CACHE[key] = SoftwareConstants(**data.get("constants", {}))
    return _SW_CACHE[key]
