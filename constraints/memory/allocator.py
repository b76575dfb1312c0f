"""What "fits" means on a real allocator: the share of HBM a recipe's modelled peak may reach.

Why a share below 100 %: the modelled peak (constraints/memory/per_rank.py) is the bytes tensors hold at once plus the
framework reserve (hardware/calibration.py `framework_overhead_bytes`, 3 GiB: the CUDA context, 723 MiB in one
public measurement, https://discuss.pytorch.org/t/what-is-the-reason-for-pytorchs-gpu-memory-floor/73021, with NCCL's
and cuBLAS's workspaces). PyTorch's caching allocator then *reserves* more than it hands out: blocks are rounded up and
split, freed blocks stay cached for reuse, and a request that no cached block can serve fails although enough bytes are
free in total (https://pytorch.org/docs/stable/notes/cuda.html#memory-management: memory_reserved vs memory_allocated,
expandable_segments "to avoid fragmentation"; the PyTorch devlog "When does fragmentation occur in the CUDA caching
allocator?", https://raw.githubusercontent.com/pytorch/devlogs/main/content/eager/2026-06-01-cuda-caching-allocator.md).
Published runs measure that gap: Megatron-Bridge's Moonlight study allocated 36.6 GB and reserved near 40 GB
(bench/data/runs.csv MBSKILL-601 notes), and its Llama-3.1-70B study ran out of memory by fragmentation without
expandable segments (MBSKILL-514).

The share is learnt, not chosen: bench/fit_memory_fraction.py reads every published run of bench/data/runs.csv and
bench/data/memory_runs.csv with its outcome (ran / oom), prices its peak, and takes the share of HBM that best separates
the runs that ran from those that ran out of memory (ties: the smallest share, the safe side). Learnt on all 289 runs it
is 97.5 %; learnt with each publication held out in turn, it agrees with the published outcome on 97.2 % of them (97.6 %
with the cap below; 93.4 % before, at 100 % of HBM and without the recompute rule of bench/fit_memory_fraction.py).
The default is that share capped at 97 % (issue 31: no default answer may peak above 97 % of HBM), i.e. an allocator
reserve of 3 % of HBM beyond the framework reserve, 2.39 GiB on an H100. docs/memory.md has the table.

`--max-memory-fraction` overrides it. A calibration file (`shardplan calibrate LOG`) that measured this cluster's
allocator gap (max reserved - max allocated) already adds that gap in exact bytes to the framework reserve
(measure/calibration/factors.py); the learnt generic reserve then steps aside (the default becomes 100 %).
"""
from __future__ import annotations

from typing import Optional

from pydantic import Field

from constraints.spec import Strict

PPM = 1_000_000
# bench/fit_memory_fraction.py on bench/data/runs.csv + memory_runs.csv (289 runs, 10 publications): the share of HBM
# that best separates ran from OOM; tests/bench/test_memory_fraction_is_learnt.py re-learns it and compares
LEARNT_MEMORY_FRACTION_PPM = 975_000
# issue 31 "Done when": no default answer may peak above 97 % of HBM
DEFAULT_CAP_PPM = 970_000
DEFAULT_MEMORY_FRACTION = min(LEARNT_MEMORY_FRACTION_PPM, DEFAULT_CAP_PPM) / PPM
# an answer whose peak is within this share of HBM of its limit is flagged "near the limit": the ran and OOM runs of
# the learning set overlap over 97.1-98.9 % of HBM (bench/fit_memory_fraction.py prints them), 2-3 points wide
NEAR_LIMIT_FRACTION_PPM = 30_000


class MemoryFraction(Strict):
    """The share of HBM a verdict allowed, and where it came from (said in output and JSON)."""

    value: float = Field(ge=0.1, le=1.0, description="share of HBM a peak may reach")
    source: str = Field(description="learnt | --max-memory-fraction | calibration (measured allocator gap)")

    @property
    def margin(self) -> float:
        return 1.0 - self.value

    def describe(self) -> str:
        if self.source == "learnt":
            return (f"usable = {self.value:.0%} of HBM: allocator reserve learnt from published runs that ran or went "
                    "OOM (docs/memory.md); --max-memory-fraction overrides")
        if self.source == "calibration":
            return "usable = 100% of HBM: the calibration's measured allocator gap is in the framework reserve"
        return f"usable = {self.value:.0%} of HBM (--max-memory-fraction)"


def resolve_memory_fraction(given: Optional[float], measured_allocator_gap: bool = False) -> MemoryFraction:
    """The share of HBM a verdict uses: the user's --max-memory-fraction when given; else 100 % when a calibration
    measured this cluster's allocator gap (already priced in bytes); else the learnt default."""
    if given is not None:
        return MemoryFraction(value=given, source="--max-memory-fraction")
    if measured_allocator_gap:
        return MemoryFraction(value=1.0, source="calibration")
    return MemoryFraction(value=DEFAULT_MEMORY_FRACTION, source="learnt")


def near_limit(peak_bytes: int, usable_bytes: int, capacity_bytes: int) -> bool:
    """The peak fits but is within NEAR_LIMIT_FRACTION of HBM of the usable limit: published runs this close to their
    limit both ran and ran out of memory, so the verdict is uncertain there."""
    return usable_bytes - capacity_bytes * NEAR_LIMIT_FRACTION_PPM // PPM < peak_bytes <= usable_bytes
