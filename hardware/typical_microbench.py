"""Microbenchmarks for a part whose profile has none: the median, over the bundled parts of the same vendor, of each
published microbenchmark as a fraction of its datasheet peak, applied to this part's own datasheet peaks.

Why: a user's profile for a part nobody has published numbers for (an L40S, an H20, next year's part) holds only
datasheet peaks. The projection's bare defaults (hardware/calibration.py `Calibration`) assume no host time and
software-neutral efficiencies, and read tens of percent fast. The fractions of datasheet peak that real kernels reach
are a property of a vendor's architecture and software more than of one SKU (bf16 matmul 73-80 % of peak on every
NVIDIA part since A100, hbm copy 75-84 %), so the median of the siblings is the best estimate before anyone measures
the part; the fitted software constants then apply as to any part. `bench/datasheet_transfer.py` measures what this
costs: each part with training rows projected from its siblings' medians instead of its own microbenchmarks.
"""
from __future__ import annotations

import statistics
from typing import Iterable, Optional

from hardware.calibration import Microbench


def _median(values: list[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def typical_microbench(part, siblings: Iterable) -> tuple[Microbench, tuple[str, ...]]:
    """(microbenchmarks for `part` from the median fractions of `siblings` of its vendor, the siblings' names).
    `part` and `siblings` are hardware.profile.HardwareProfile; siblings without microbenchmarks are skipped, and
    when none shares the part's vendor every sibling is used."""
    with_mb = [s for s in siblings if s.microbench is not None and s.name != part.name]
    same = [s for s in with_mb if s.vendor == part.vendor] or with_mb
    if not same:
        raise ValueError("no bundled profile has microbenchmarks to take typical fractions from")
    bf16 = _median([s.microbench.matmul_bf16_tflops / s.peak_tflops.bf16 for s in same])
    fp8 = _median([s.microbench.matmul_fp8_tflops / s.peak_tflops.fp8 for s in same
                   if s.microbench.matmul_fp8_tflops and s.peak_tflops.fp8])
    peak = part.peak_tflops
    mb = Microbench(
        matmul_bf16_tflops=round(bf16 * peak.bf16, 3),
        matmul_fp8_tflops=round(fp8 * peak.fp8, 3) if (fp8 and peak.fp8 and part.supports_fp8) else None,
        attention_fraction=round(_median([s.microbench.attention_fraction for s in same]), 4),
        attention_half_kv_tokens=round(_median([s.microbench.attention_half_kv_tokens for s in same]), 1),
        hbm_fraction=round(_median([s.microbench.hbm_fraction for s in same]), 4),
        allreduce_ring_busbw_gb_per_s=round(part.scale_up_bandwidth_gb_per_s * _median(
            [s.microbench.allreduce_ring_busbw_gb_per_s / s.scale_up_bandwidth_gb_per_s for s in same]), 3),
    )
    return mb, tuple(sorted(s.name for s in same))
