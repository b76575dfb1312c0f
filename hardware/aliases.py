"""What people call the bundled parts, and the parts they may mean that are not bundled.

Why: `--hardware h100-80gb` or `dgx-b200` names one bundled profile as plainly as `h100-sxm-80gb` does, but no prefix
rule finds it (boundary/names.py); and `a100-40gb` or `h100-pcie` are other parts (half the HBM, a PCIe card's lower
clocks and no NVLink switch), so a nearest-name guess would silently judge the wrong memory. The names are NVIDIA's and
AMD's own product names (NVIDIA H100 / A100 / H200 / B200 datasheets and DGX system names, AMD Instinct MI300X /
MI325X / MI355X data sheets; the sources each profile cites in hardware/profiles/*.yaml).
"""
from __future__ import annotations

# lower-case spelling -> bundled profile name
PROFILE_ALIASES = {
    "h100-80gb": "h100-sxm-80gb", "h100-sxm": "h100-sxm-80gb", "h100-sxm5": "h100-sxm-80gb", "h100-sxm5-80gb": "h100-sxm-80gb",
    "dgx-h100": "h100-sxm-80gb", "hgx-h100": "h100-sxm-80gb",
    "h200-141gb": "h200-sxm-141gb", "dgx-h200": "h200-sxm-141gb", "hgx-h200": "h200-sxm-141gb",
    "h800-80gb": "h800-sxm-80gb", "h800-sxm": "h800-sxm-80gb",
    "a100-80gb": "a100-sxm-80gb", "a100-sxm": "a100-sxm-80gb", "a100-sxm4-80gb": "a100-sxm-80gb", "dgx-a100": "a100-sxm-80gb",
    "b200-sxm": "b200", "dgx-b200": "b200", "hgx-b200": "b200", "b300-sxm": "b300", "dgx-b300": "b300", "hgx-b300": "b300",
    "gb200": "gb200-nvl72", "gb200-nvl": "gb200-nvl72", "gb300": "gb300-nvl72", "gb300-nvl": "gb300-nvl72",
    "mi300": "mi300x", "mi300x-oam": "mi300x", "mi325": "mi325x", "mi355": "mi355x",
}
# lower-case spelling -> why it is not a bundled profile (the fix is the same for all: a profile YAML of that part)
OTHER_PARTS = {
    "a100-40gb": "the A100 40GB has half the HBM of a100-sxm-80gb",
    "a100-sxm4-40gb": "the A100 40GB has half the HBM of a100-sxm-80gb",
    "a100-pcie": "a PCIe A100 has no NVLink switch (a100-sxm-80gb is the SXM part)",
    "a100-pcie-40gb": "a PCIe A100 40GB has half the HBM and no NVLink switch",
    "h100-pcie": "the H100 PCIe has 114 SMs, lower clocks and no NVLink switch (h100-sxm-80gb is the SXM5 part)",
    "h100-nvl": "the H100 NVL has 94 GB HBM and NVLink bridges in pairs, not the SXM5 part's switch",
    "h20": "the H20 has far lower compute than h100-sxm-80gb",
    "l40s": "the L40S has GDDR6 and no NVLink",
}


def profile_alias(typed: str) -> str:
    """The bundled profile a common spelling means, or the spelling itself."""
    return PROFILE_ALIASES.get(typed.strip().lower(), typed)


def other_part(typed: str) -> str | None:
    """Why a spelling names a part that is not bundled, or None."""
    return OTHER_PARTS.get(typed.strip().lower())
