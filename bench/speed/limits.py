"""Time and memory of `solve` on the largest inputs it accepts, against its stated limits.

    nice python -m bench.speed.limits [--max-time 300]

Each scenario runs as its own `shardplan solve` process (start-up included) and reports its wall clock and peak
RSS (getrusage of the child), next to the same run's baseline: `shardplan models` (imports + one listing), so
the figures read as ratios on any machine. Limits stated by the code: `--max-time` (default 300 s) bounds a
solve's wall clock after its inputs are loaded; the peak-RSS budget below is this bench's claim, checked here.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

RSS_BUDGET_MIB = 2048  # the stated budget for any accepted solve (bench asserts it; tests never time anything)

BASE = ["--proposer", "rules", "--top", "10", "--format", "json"]
SCENARIOS = {
    "Llama-3.1-70B, 64 H100 (bench_solve)": ["--model", "Llama-3.1-70B", "--hardware", "h100-sxm-80gb", "--nodes", "8",
                                              "--gpus-per-node", "8", "--seq-length", "8192", "--global-batch-size", "128"],
    "Qwen3-235B-A22B, 256 H100 (bench_solve)": ["--model", "Qwen3-235B-A22B", "--hardware", "h100-sxm-80gb", "--nodes", "32",
                                                "--gpus-per-node", "8", "--seq-length", "4096", "--global-batch-size", "1024"],
    "DeepSeek-V3, 1024 H800 (bench_solve)": ["--model", "DeepSeek-V3", "--hardware", "h800-sxm-80gb", "--nodes", "128",
                                             "--gpus-per-node", "8", "--seq-length", "4096", "--global-batch-size", "4096"],
    "Llama-3.1-8B, every range pin widened to 10^11": [
        "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8", "--seq-length",
        "4096", "--global-batch-size", "64", "--tp", "1..100000000000", "--pp", "1..100000000000", "--vpp",
        "1..100000000", "--mbs", "1..100000000000", "--cp", "1..100000000000"],
    "Llama-3.1-405B, 2^20 GPUs (the world-size cap)": [
        "--model", "Llama-3.1-405B", "--hardware", "h100-sxm-80gb", "--nodes", "131072", "--gpus-per-node", "8",
        "--seq-length", "4096", "--global-batch-size", "262144"],
    "Qwen3-235B-A22B, 256 H100, --method exhaustive": [
        "--model", "Qwen3-235B-A22B", "--hardware", "h100-sxm-80gb", "--nodes", "32", "--gpus-per-node", "8",
        "--seq-length", "4096", "--global-batch-size", "1024", "--method", "exhaustive"],
    "Mixtral-8x22B, 64 MI300X, --method exhaustive --objective memory": [
        "--model", "Mixtral-8x22B-v0.1", "--hardware", "mi300x", "--nodes", "8", "--gpus-per-node", "8", "--seq-length",
        "4096", "--global-batch-size", "256", "--method", "exhaustive", "--objective", "memory"],
}


def measure(argv: list[str], timeout_s: float) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MiB, exit status, last stderr line) of one shardplan process (os.wait4: its own rusage)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "shardplan", *argv], stdout=out, stderr=err)
        deadline = start + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.monotonic() - start
        err.seek(0)
        last = (err.read().decode(errors="replace").strip().splitlines() or [""])[-1][:100]
    rc = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, rc, last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-time", type=float, default=300.0)
    args = ap.parse_args()
    base_wall, base_rss, _, _ = measure(["models"], 120)
    print(f"baseline `shardplan models`: {base_wall:.2f} s, {base_rss:.0f} MiB")
    print("| scenario | exit | wall s | x baseline | peak RSS MiB | x baseline | within --max-time | within RSS budget |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    worst = 0.0
    for name, argv in SCENARIOS.items():
        wall, rss, rc, last = measure(["solve", *argv, *BASE, "--max-time", str(args.max_time)], args.max_time + 120)
        worst = max(worst, rss)
        note = f" ({last})" if rc == 2 else ""
        print(f"| {name}{note} | {rc} | {wall:.2f} | {wall / base_wall:.1f} | {rss:.0f} | {rss / base_rss:.1f} | "
              f"{'yes' if wall <= args.max_time + 30 else 'NO'} | {'yes' if rss <= RSS_BUDGET_MIB else 'NO'} |")
    print(f"peak RSS over all scenarios: {worst:.0f} MiB (budget {RSS_BUDGET_MIB} MiB)")


if __name__ == "__main__":
    main()
