"""Write hardware/measured/<profile>.json cost tables reconstructed from published matmul microbenchmarks.

Usage: `.venv/bin/python -m bench.published.tables [--check]` (`--check`: exit 1 if a stored table differs).

Why: a measured cost-table entry replaces the roofline for that exact kernel (measure/kernels/roofline.py), and until a
GPU runs bench/gpu_check.sh on a part, the published measurements are the only measured kernel times there are.
The one public source that reports exact shapes with times for most bundled parts is the Maximum Achievable
Matmul FLOPS table of stas00/ml-engineering (compute/accelerator/README.md @744d01e, 2026-08-22): per part the
best `torch.matmul` shape M x N x K and its mean TFLOP/s over 100 timed iterations after 50 warm-up. Each
becomes one forward GEMM entry, `fwd/gemm:MxNxK:<dtype>`, of 2*M*N*K / TFLOP/s seconds, with the row cited in
the entry's `source`. Parts whose row is not published (GB300, H800, A100 fp8, AMD fp8) get no entry for it.
Such an entry changes a projection only where a model runs that exact shape; the same microbenchmarks enter
every projection of the part through the profile's `microbench:` block (hardware/calibration.py).
"""
from __future__ import annotations

import argparse
import sys

from measure.kernels.cost_table import CostTable, Entry, Environment
from measure.kernels.measured_tables import table_path

SOURCE = ("stas00/ml-engineering compute/accelerator/README.md @744d01e (2026-08-22), Maximum Achievable Matmul FLOPS "
          "comparison table, {dtype} row '{device}': {tflops} TFLOP/s at best shape {shape}, torch {torch}")
# profile -> (device as published, compute capability, [(dtype, tflops, (M, N, K), torch version)])
PUBLISHED = {
    "a100-sxm-80gb": ("NVIDIA A100 SXM", "8.0", [("bf16", 271.2, (1024, 10240, 5120), "2.6.0+cu126")]),
    "h100-sxm-80gb": ("NVIDIA H100 SXM", "9.0", [("bf16", 794.5, (2048, 2048, 13312), "2.7.0+cu126"),
                                                 ("fp8", 1402.6, (1024, 9216, 14336), "2.7.0+cu126")]),
    "h200-sxm-141gb": ("NVIDIA H200 SXM", "9.0", [("fp8", 1453.4, (1280, 4096, 12032), "2.7.1+cu128")]),
    "b200": ("NVIDIA B200 SXM", "10.0", [("bf16", 1745.0, (1792, 16128, 3072), "2.7.1+cu128"),
                                         ("fp8", 3432.5, (15360, 4096, 3072), "2.7.1+cu128")]),
    "b300": ("NVIDIA B300 SXM", "10.3", [("bf16", 1769.0, (12288, 18432, 1024), "2.9.1+cu130"),
                                         ("fp8", 3353.3, (3072, 6144, 7168), "2.9.1+cu130")]),
    "gb200-nvl72": ("NVIDIA GB200 SXM", "10.0", [("bf16", 1822.0, (4096, 9728, 2048), "2.10.0.dev20250916+cu130"),
                                                 ("fp8", 3615.6, (19456, 5120, 1536), "2.10.0.dev20250916+cu130")]),
    "mi300x": ("AMD MI300X", "gfx942", [("bf16", 668.4, (10240, 15360, 8192), "2.5.1+6.3.42131")]),
    "mi325x": ("AMD MI325X", "gfx942", [("bf16", 784.9, (13312, 10240, 8192), "2.6.0+6.2.4")]),
    "mi355x": ("AMD MI355X", "gfx950", [("bf16", 1565.0, (12288, 8192, 8192), "2.8.0+rocm7.0.2.git245bf6ed")]),
}


def fingerprint(device: str, torch_version: str) -> str:
    """A fingerprint that can never collide with a device measured here (those start with cuda: / cpu:)."""
    return f"published:{device}:torch{torch_version}"


def build(profile: str) -> CostTable:
    device, arch, rows = PUBLISHED[profile]
    table = CostTable()
    fp = fingerprint(device, rows[0][3])
    env = Environment(device_name=device, device_type="cuda", compute_capability=arch, torch_version=rows[0][3],
                      host="published (not measured by shardplan)")
    for dtype, tflops, (m, n, k), torch_version in rows:
        seconds = 2.0 * m * n * k / (tflops * 1e12)
        entry = Entry(median_s=seconds, num_reps=100, spread_s=0.0, dtype_used=dtype, impl="torch.matmul (mamf-finder.py)",
                      source=SOURCE.format(dtype=dtype, device=device, tflops=tflops, shape=f"{m}x{n}x{k}", torch=torch_version))
        table.add(fp, f"fwd/gemm:{m}x{n}x{k}:{dtype}", entry, environment=env)
    return table


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the stored tables instead of writing")
    args = ap.parse_args(argv)
    stale = []
    for profile in PUBLISHED:
        table, path = build(profile), table_path(profile)
        if args.check:
            if not path.exists() or CostTable.load(path) != table:
                stale.append(str(path))
        else:
            table.save(path)
            print(f"{path}: {table.num_entries()} entries")
    if stale:
        print("stale or missing: " + ", ".join(stale))
        sys.exit(1)


if __name__ == "__main__":
    main()
