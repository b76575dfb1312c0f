"""Hardware profiles: one YAML per GPU or system under `hardware/profiles/`, validated here.

Why data and not code: peak rates, link bandwidths and calibration constants change per part and per
software release; keeping them in YAML (each number with its source) lets users add their own part
by passing a path, and lets calibration be refitted without touching code.

Units are in the field names: `_bytes`, `_gb_per_s` (gigabytes, 1e9 B, per second, one direction),
`_gbit_per_s` (gigabits per second), `_tflops` (1e12 FLOP/s, dense), `_us` (microseconds).
"""
from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Optional

from pydantic import ConfigDict, Field, ValidationError, field_validator

from boundary.errors import InputRefused, ShardplanError
from boundary.names import did_you_mean, looks_like_path, resolve_name
from boundary.numbers import NumbersAreNotBooleans
from boundary.parse import load_yaml
from boundary.read import note_read, read_text
from boundary.show import shown, validation_line
from hardware.aliases import other_part, profile_alias
from hardware.calibration import Calibration, Microbench, derive_calibration, load_software_constants
from hardware.typical_microbench import typical_microbench

__all__ = ["Calibration", "HardwareProfile", "Microbench", "PeakTflops", "ProfileError", "available_profiles", "load_profile"]

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"


class _Strict(NumbersAreNotBooleans):
    model_config = ConfigDict(extra="forbid", frozen=True)


# Physical ranges for profile numbers. They keep every time finite and every byte count inside int64: a peak of
# 1e-300 TFLOP/s made step times infinite and a 1e40-byte HBM overflowed CP-SAT's 64-bit coefficients (issue 17).
# The largest parts today: ~10 PFLOP/s dense FP4 (GB300), 288 GB HBM at 8 TB/s, 1.8 TB/s NVLink, 800 Gbit/s NICs,
# NVL576 scale-up domains; the bounds sit 100-1000x beyond, and 1e-3 below any real rate.
_PEAK = dict(ge=1e-3, le=1e6)            # TFLOP/s
_BANDWIDTH = dict(ge=1e-3, le=1e6)       # GB/s or Gbit/s
_LATENCY_US = dict(ge=1e-3, le=1e7)      # up to 10 s
_MAX_HBM_BYTES = 1 << 44                 # 16 TiB
_MAX_GPUS = 1 << 20                      # constraints.spec.MAX_WORLD_SIZE
_RATE_WHY = ("real parts run ~10 TFLOP/s to ~10 PFLOP/s (GB300 FP4); the 1 GFLOP/s-1 EFLOP/s bounds keep every "
             "time finite and non-zero")
BOUND_REASONS = {
    **{f: _RATE_WHY for f in ("bf16", "fp16", "fp8", "fp4", "fp32")},
    "hbm_capacity_bytes": "the largest HBM today is 288 GB; 16 TiB keeps per-rank bytes inside CP-SAT's 64-bit range",
    "gemm_efficiency": "an efficiency curve needs at least one (log2_flops, efficiency) point, efficiency in (0, 1]",
    **{f: "links run 1 MB/s to 1 PB/s; outside that transfer times become 0 or infinite" for f in (
        "hbm_bandwidth_gb_per_s", "scale_up_bandwidth_gb_per_s", "nic_bandwidth_gbit_per_s", "inter_pod_bandwidth_gb_per_s")},
    "gpus_per_node": "no server holds more than 1024 GPUs",
    "scale_up_domain_size": "no cluster has more than 2**20 GPUs",
}


class PeakTflops(_Strict):
    """Dense (no sparsity) peak tensor-core throughput per number format, TFLOP/s."""

    bf16: float = Field(**_PEAK)
    fp16: float = Field(**_PEAK)
    fp8: Optional[float] = Field(None, **_PEAK, description="None = no FP8 tensor cores (A100)")
    fp4: Optional[float] = Field(None, **_PEAK)
    fp32: Optional[float] = Field(None, **_PEAK, description="non-tensor FP32 vector rate, for element-wise ops")
    tf32: Optional[float] = Field(None, **_PEAK, description="dense TF32 tensor-core rate: the rate of fp32 GEMMs, which Transformer "
                                  "Engine runs in TF32 (measure/kernels/roofline.py peak_flops); None = not published or "
                                  "no TF32 (fp32 GEMMs then run at the fp32 rate)")


class HardwareProfile(_Strict):
    """One accelerator (or system) and its links. The scale-up domain (NVLink / xGMI) is a property of
    the part and system, not of --gpus-per-node: GB200 NVL72 has 4 GPUs per tray and 72 per domain."""

    name: str = Field(max_length=256)
    description: str = Field(max_length=4096)
    vendor: str = Field(max_length=64, description="nvidia | amd")
    compute_capability: Optional[float] = Field(None, ge=0, le=100, description="CUDA arch (8.0, 9.0, 10.0); None for AMD")
    peak_tflops: PeakTflops
    hbm_capacity_bytes: int = Field(gt=0, le=_MAX_HBM_BYTES, description="usable device memory as torch reports it")
    hbm_bandwidth_gb_per_s: float = Field(**_BANDWIDTH)
    gpus_per_node: int = Field(gt=0, le=1024, description="GPUs per server / compute tray")
    scale_up_domain_size: int = Field(gt=0, le=_MAX_GPUS, description="GPUs in one NVLink/xGMI domain")
    scale_up_bandwidth_gb_per_s: float = Field(**_BANDWIDTH, description="per GPU, one direction")
    scale_up_latency_us: float = Field(**_LATENCY_US)
    nics_per_gpu: float = Field(ge=1e-3, le=64)
    nic_bandwidth_gbit_per_s: float = Field(**_BANDWIDTH, description="per NIC, one direction")
    scale_out_latency_us: float = Field(**_LATENCY_US)
    pod_size_gpus: Optional[int] = Field(None, gt=0, le=_MAX_GPUS, description="GPUs under one leaf/spine pod; None = flat")
    inter_pod_bandwidth_gb_per_s: Optional[float] = Field(None, **_BANDWIDTH, description="per GPU across pods")
    inter_pod_latency_us: Optional[float] = Field(None, **_LATENCY_US)
    supports_fp8: bool
    supports_mxfp8: bool = False
    microbench: Optional[Microbench] = Field(None, description="published microbenchmarks; when given and `calibration` "
                                             "is not, load_profile derives the calibration from them (hardware/calibration.py)")
    microbench_from: tuple[str, ...] = Field((), max_length=64, description="set by load_profile when the file has no "
                                             "microbench: the bundled parts whose median fractions of peak stand in for it "
                                             "(hardware/typical_microbench.py)")
    calibration: Calibration = Calibration()
    sources: dict[str, str] = Field(description="field name -> where the number comes from")

    @field_validator("vendor")
    @classmethod
    def _vendor_lower(cls, value: str) -> str:
        """Vendors compare in lower case (`nvidia`, `amd`): `NVIDIA` in a user's file is the same vendor, whose bundled
        parts lend it their microbenchmark fractions (hardware/typical_microbench.py) and its rules."""
        return value.strip().lower()

    @property
    def calibrated(self) -> bool:
        """Whether the projection constants come from something measured (published microbenchmarks of this part,
        or a calibration block the user fitted) instead of the bare defaults: projections on a part with neither
        are less certain, and the output says so. Microbenchmarks taken from sibling parts (`microbench_from`) are not
        this part's own, so they do not count."""
        if self.microbench_from:
            return False
        return self.microbench is not None or self.calibration != Calibration()

    def derived(self) -> "HardwareProfile":
        """This profile with its calibration derived from `microbench` and the fitted software constants."""
        if self.microbench is None:
            return self
        p = self.peak_tflops
        cal = derive_calibration(p.bf16, p.fp8, self.hbm_bandwidth_gb_per_s, self.scale_up_bandwidth_gb_per_s,
                                 self.microbench, load_software_constants())
        return self.model_copy(update={"calibration": cal})

    @property
    def scale_out_bandwidth_gb_per_s(self) -> float:
        """Per-GPU scale-out bandwidth in GB/s (NICs x Gbit/s / 8)."""
        return self.nics_per_gpu * self.nic_bandwidth_gbit_per_s / 8.0


# Below these no accelerator anyone trains on sits (the smallest bundled part has 80 GB of HBM at 2 TB/s), and a
# value this small is a unit slip: GB written where bytes go, TB/s where GB/s go.
MIN_PLAUSIBLE_HBM_BYTES = 1 << 30
MIN_PLAUSIBLE_HBM_GB_PER_S = 100.0


def implausible_units(profile: "HardwareProfile") -> Optional[str]:
    """`field: why, with the unit it takes` for a value inside the fields' bounds that no real part has and a unit slip
    explains; None for a plausible profile. The bounds themselves only keep times finite (BOUND_REASONS)."""
    p = profile.peak_tflops
    if profile.hbm_capacity_bytes < MIN_PLAUSIBLE_HBM_BYTES:
        return (f"hbm_capacity_bytes: {profile.hbm_capacity_bytes:,} bytes is under 1 GiB, below any training "
                "accelerator; the field is in bytes (80 GiB = 85899345920)")
    if profile.hbm_bandwidth_gb_per_s < MIN_PLAUSIBLE_HBM_GB_PER_S:
        return (f"hbm_bandwidth_gb_per_s: {profile.hbm_bandwidth_gb_per_s:g} GB/s is below any training accelerator's "
                "HBM; the field is in GB/s (3.35 TB/s = 3350)")
    if p.fp8 is not None and p.fp8 < p.bf16:
        return (f"peak_tflops.fp8: {p.fp8:g} TFLOP/s is below bf16's {p.bf16:g}; FP8 tensor cores run at least the "
                "bf16 rate (dense, no sparsity), so one of them is in other units")
    if max(p.bf16, p.fp16) > 2 * min(p.bf16, p.fp16):
        return (f"peak_tflops.bf16: {p.bf16:g} and fp16 {p.fp16:g} TFLOP/s differ by more than 2x; tensor cores run "
                "both at the same dense rate, so one of them is in other units")
    return None


def uncalibrated_reason(profile: "HardwareProfile") -> str:
    """Why a part's projection is less certain, after its name: no microbenchmarks of its own (sibling parts' median
    fractions of peak stand in, hardware/typical_microbench.py) or, for a bundled profile without them, the bare
    defaults. Shared by `solve`'s note and `check`'s warning."""
    if profile.microbench_from:
        mb, peak = profile.microbench, profile.peak_tflops
        return (f"has no microbenchmarks of its own in its profile; its projection takes the median fractions of peak "
                f"of {', '.join(profile.microbench_from)} (bf16 matmul {mb.matmul_bf16_tflops / peak.bf16:.0%}, "
                f"attention {mb.attention_fraction:.0%}, HBM {mb.hbm_fraction:.0%}) and is less certain; add a "
                "`microbench:` block with the part's measured numbers")
    return ("has neither published microbenchmarks nor a calibration block in its profile; its projections use the "
            "default constants and are less certain")


class ProfileError(ShardplanError):
    """A profile that cannot be found or does not validate; message is one line for the user."""


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


_PARSED: dict = {}  # (path, mtime_ns, size) -> parsed YAML


def _parsed_yaml(path: Path):
    """The file's YAML, parsed once per (path, mtime, size): `solve` asks for the same profile once per answer
    (launch environment, checks), and parsing a profile costs ~25 ms."""
    try:
        st = path.stat()
    except OSError as exc:
        raise ProfileError(f"--hardware: cannot read {path} ({exc.strerror}); give a readable profile YAML") from None
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    note_read(path, st)  # read now or from the cache: no output of this command may replace it (boundary/write.py)
    if key not in _PARSED:
        try:
            _PARSED[key] = load_yaml(read_text(path, "hardware profile", f"--hardware: {path}"), "hardware profile",
                                     f"--hardware: {path}")
        except InputRefused as exc:
            raise ProfileError(str(exc)) from None
    return copy.deepcopy(_PARSED[key])


def _is_profile_file(name_or_path: str) -> bool:
    """Whether --hardware names a user's YAML file (else a bundled profile by name)."""
    path = Path(name_or_path)
    return path.suffix in (".yaml", ".yml") and os.path.exists(path)


def profile_label(name_or_path: str) -> str:
    """How a result names the hardware it was given: the profile's own name (whatever the spelling of a bundled one),
    with the file beside it for a user's YAML, which may reuse a bundled name with other numbers."""
    profile = load_profile(name_or_path)
    return f"{profile.name} ({name_or_path})" if _is_profile_file(name_or_path) else profile.name


def load_profile(name_or_path: str) -> HardwareProfile:
    """Load a bundled profile by name (case-insensitive) or a user's YAML by path."""
    path = Path(name_or_path)
    if not _is_profile_file(name_or_path):
        names = available_profiles()
        meant = resolve_name(profile_alias(name_or_path), names)
        if meant is None:
            if other_part(name_or_path):
                raise ProfileError(f"--hardware: {shown(name_or_path)} is not a bundled profile: {other_part(name_or_path)}; "
                                   "write a profile YAML of that part (docs/hardware-model.md) and pass its path")
            if looks_like_path(name_or_path):
                raise ProfileError(f"--hardware: no file {shown(name_or_path)}; check the path, or name a bundled profile "
                                   "(`shardplan hardware` lists them)")
            raise ProfileError(f"--hardware: unknown profile {shown(name_or_path)}{did_you_mean(name_or_path, names)} "
                               "(`shardplan hardware` lists the bundled ones; or give a path to a profile YAML)")
        path = PROFILES_DIR / f"{meant}.yaml"
    data = _parsed_yaml(path)
    if not isinstance(data, dict):
        raise ProfileError(f"--hardware: {path} must hold a mapping of profile fields")
    explicit_calibration = bool(data.get("calibration"))
    try:
        prof = HardwareProfile(**data)
    except ValidationError as exc:
        raise ProfileError(f"--hardware: {path}: field {validation_line(exc, reasons=BOUND_REASONS)}") from None
    unit_error = implausible_units(prof)
    if unit_error:
        raise ProfileError(f"--hardware: {path}: field {unit_error}")
    # a calibration block given in the file wins (a user's own fit); otherwise derive it from the microbenchmarks,
    # the part's own or, when the file has none, its bundled siblings' median fractions of peak
    if explicit_calibration:
        return prof
    if prof.microbench is None and path.resolve().parent != PROFILES_DIR:
        mb, names = typical_microbench(prof, bundled_profiles())
        prof = prof.model_copy(update={"microbench": mb, "microbench_from": names})
    return prof.derived()


_BUNDLED: dict = {}  # (file, mtime, size) per bundled profile -> the loaded profiles


def bundled_profiles() -> list[HardwareProfile]:
    """Every bundled profile, loaded (each has its own microbenchmarks: tests/hardware/test_transfer_calibration.py)."""
    paths = sorted(PROFILES_DIR.glob("*.yaml"))
    key = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths)
    if key not in _BUNDLED:
        _BUNDLED.clear()
        _BUNDLED[key] = [load_profile(str(p)) for p in paths]
    return _BUNDLED[key]
