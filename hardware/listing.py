"""The bundled hardware profiles as flat rows (what `shardplan hardware` and `shardplan.hardware()` list).

Why a separate module: the listing is a thin view over `hardware.profile`; the command itself lives in
shardplan/cli/main.py, above every library layer.
"""
from __future__ import annotations

from hardware.profile import HardwareProfile, available_profiles, load_profile

_GIB = 1024**3


def profile_row(profile: HardwareProfile) -> dict:
    """One profile as a flat dict; bandwidths are per GPU, one direction."""
    return {
        "name": profile.name,
        "description": profile.description,
        "bf16_tflops": profile.peak_tflops.bf16,
        "fp8_tflops": profile.peak_tflops.fp8,
        "hbm_capacity_bytes": profile.hbm_capacity_bytes,
        "hbm_gib": profile.hbm_capacity_bytes / _GIB,
        "hbm_tb_per_s": profile.hbm_bandwidth_gb_per_s / 1000.0,
        "gpus_per_node": profile.gpus_per_node,
        "scale_up_domain_size": profile.scale_up_domain_size,
        "scale_up_gb_per_s": profile.scale_up_bandwidth_gb_per_s,
        "scale_out_gb_per_s": profile.scale_out_bandwidth_gb_per_s,
    }


def profiles_table() -> list[dict]:
    """Every bundled profile, sorted by name, as rows for a table or JSON."""
    return [profile_row(load_profile(name)) for name in available_profiles()]
