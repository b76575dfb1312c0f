"""The bundled hardware profiles as flat rows (what `shardplan hardware` and `shardplan.hardware()` list).

Why a separate module: the listing is a thin view over `hardware.profile`; the command itself lives in
shardplan/cli.py, above every library layer.
"""
from __future__ import annotations

from hardware.profile import HardwareProfile, available_profiles, load_profile

_GIB = 1024**3

# (column header, key in profiles_table rows, format) for the plain-text table.
_COLUMNS = (
    ("name", "name", "{}"),
    ("bf16 TFLOP/s", "bf16_tflops", "{:.1f}"),
    ("fp8 TFLOP/s", "fp8_tflops", "{:.1f}"),
    ("HBM GiB", "hbm_gib", "{:.1f}"),
    ("HBM TB/s", "hbm_tb_per_s", "{:.2f}"),
    ("domain", "scale_up_domain_size", "{}"),
    ("GPUs/node", "gpus_per_node", "{}"),
    ("scale-up GB/s", "scale_up_gb_per_s", "{:.1f}"),
    ("scale-out GB/s", "scale_out_gb_per_s", "{:.1f}"),
)


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


def _format_cell(value, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def render_table(rows: list[dict]) -> str:
    """Plain aligned text: a header line, then one line per profile."""
    cells = [[header for header, _, _ in _COLUMNS]]
    cells += [[_format_cell(row[key], fmt) for _, key, fmt in _COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS))]
    lines = []
    for line in cells:
        first = line[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(line[1:], widths[1:])]
        lines.append("  ".join([first, *rest]))
    return "\n".join(lines)
