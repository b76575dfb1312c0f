"""A sweep over a part that cannot run the job at any size (FP8 on A100) says which rule refuses it and the fix, as
`solve` does, instead of a bare "nothing fits" on every row; the other parts are still solved."""
from __future__ import annotations

import subprocess
import sys

from shardplan.sweep import sweep


def test_fp8_on_a100_is_refused_with_the_rule_and_the_fix():
    result = sweep("Llama-3.1-8B", ["a100-sxm-80gb", "h100-sxm-80gb"], [1], seq_length=4096, global_batch_size=64,
                   precision="fp8-tensorwise")
    a100, h100 = result.points
    assert a100.status == "refused" and "precision_supported" in a100.reason and "--precision bf16" in a100.reason
    assert h100.status == "solved" and h100.reason is None


def test_the_cli_prints_the_reason_once_per_part_on_stderr():
    out = subprocess.run([sys.executable, "-m", "shardplan", "--no-progress", "sweep", "--model", "Llama-3.1-8B",
                          "--hardware", "a100-sxm-80gb", "--nodes", "1,2", "--seq-length", "4096", "--global-batch-size", "64",
                          "--precision", "nvfp4"], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stdout.count("refused") == 2
    lines = [ln for ln in out.stderr.splitlines() if "nvfp4_hardware" in ln]
    assert len(lines) == 1 and lines[0].startswith("a100-sxm-80gb:") and "--precision bf16" in lines[0]
