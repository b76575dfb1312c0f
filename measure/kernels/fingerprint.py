"""Which device a measurement ran on: a fingerprint string (the cost-table key) and its environment.

Why a fingerprint and not the profile name: the same part measures differently under another torch
or another arch, and a table measured on a CPU must never be mistaken for GPU numbers. The string
joins device type, device name, arch and torch version, e.g.
`cuda:NVIDIA H100 80GB HBM3:sm90:torch2.13.0` or `cpu:AMD EPYC:avx2-t8:torch2.13.0+cpu`.
torch is imported inside the functions so that importing this module costs nothing without torch.
"""
from __future__ import annotations

import platform
import socket
import subprocess
from pathlib import Path
from typing import Optional

from boundary.errors import ShardplanError
from measure.kernels.cost_table import Environment


class DeviceUnavailable(ShardplanError):
    """The requested --device is not present; one line for the user."""


def resolve_device(device: str):
    """Return a torch.device for `cpu` or `cuda` (ROCm builds answer as cuda), or raise one line."""
    import torch

    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only torch build" if torch.version.cuda is None and torch.version.hip is None else "no visible GPU"
            raise DeviceUnavailable(f"--device cuda: CUDA/ROCm is not available ({build}, torch {torch.__version__}); use --device cpu")
        return torch.device("cuda", torch.cuda.current_device())
    raise DeviceUnavailable(f"--device: unknown device {device!r}; use cpu or cuda")


def cpu_model_name() -> str:
    """The CPU model as /proc/cpuinfo names it (Linux), else platform.processor()."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown-cpu"


def _arch_tag(dev) -> str:
    """sm90 on NVIDIA, the gfx arch on ROCm, the SIMD level on CPU (AVX2/AVX512/AMX change CPU GEMMs)."""
    import torch

    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        gcn = getattr(props, "gcnArchName", None)
        if torch.version.hip is not None and gcn:
            return gcn.split(":")[0]
        return f"sm{props.major}{props.minor}"
    try:
        return torch.backends.cpu.get_cpu_capability().lower()
    except AttributeError:  # very old torch
        return platform.machine().lower()


def device_name(dev) -> str:
    import torch

    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return cpu_model_name()


def device_fingerprint(dev) -> str:
    """`<type>:<name>:<arch>:torch<version>`; on CPU the intra-op thread count joins the arch
    (`avx2-t8`), since CPU kernel times scale with it. Colons inside the name become dashes."""
    import torch

    name = device_name(dev).replace(":", "-")
    arch = _arch_tag(dev) if dev.type == "cuda" else f"{_arch_tag(dev)}-t{torch.get_num_threads()}"
    return f"{dev.type}:{name}:{arch}:torch{torch.__version__}"


def _driver_version() -> Optional[str]:
    """NVIDIA driver from nvidia-smi, AMD from rocm-smi; None when neither answers within 5 s."""
    for cmd in (["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], ["rocm-smi", "--showdriverversion"]):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=5, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if out:
            return out.splitlines()[0].strip()[:120]
    return None


def device_environment(dev) -> Environment:
    """The environment record stored with a fingerprint's entries."""
    import torch

    capability = None
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        capability = getattr(props, "gcnArchName", None) if torch.version.hip else f"{props.major}.{props.minor}"
    return Environment(
        device_name=device_name(dev),
        device_type=dev.type,
        compute_capability=capability,
        driver_version=_driver_version() if dev.type == "cuda" else None,
        cuda_version=torch.version.cuda,
        hip_version=torch.version.hip,
        torch_version=torch.__version__,
        host=socket.gethostname(),
        num_threads=torch.get_num_threads(),
    )
