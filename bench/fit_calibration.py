"""Fit each hardware profile's `calibration:` block on the whole of runs.csv (never per row).

Usage: `.venv/bin/python -m bench.fit_calibration [--write]`. Per hardware profile, coordinate descent
over small grids of six constants (GEMM efficiency-curve scale, fp8 and grouped-GEMM relative
efficiency, attention efficiency, exposed share of overlapped comm, MoE load imbalance), minimising the
mean |log(projected / measured)| of tokens/s/GPU over every expressible row on that hardware. The fit
uses the closed-form schedule (fast); validation then uses the simulator. `--write` rewrites only the
`calibration:` block of hardware/profiles/<name>.yaml.
"""
from __future__ import annotations

import argparse
import math
import re
from collections import defaultdict

import yaml

from bench.runs import RunCase, load_runs
from bench.validate_projection import assume_moe_dispatcher
from hardware.profile import PROFILES_DIR, Calibration, HardwareProfile, load_profile
from measure.project import project

BASE_CURVE = ((20.0, 0.05), (30.0, 0.45), (36.0, 0.70), (40.0, 0.75))
GRIDS = {
    "gemm_scale": [0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2],
    "fp8_gemm_relative_efficiency": [0.45, 0.55, 0.65, 0.75, 0.85, 1.0],
    "grouped_gemm_relative_efficiency": [0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0],
    "attention_efficiency": [0.25, 0.35, 0.45, 0.55, 0.65],
    "exposed_comm_fraction": [0.0, 0.1, 0.2, 0.4, 0.7, 1.0],
    "moe_load_imbalance": [1.0, 1.1, 1.25, 1.5, 2.0],
    "grouped_gemm_half_tokens": [0.0, 128.0, 256.0, 512.0, 1024.0, 2048.0],
    "moe_dispatch_overhead_us": [0.0, 100.0, 250.0, 500.0, 1000.0, 2000.0],
}
MOE_ONLY = ("grouped_gemm_relative_efficiency", "moe_load_imbalance", "grouped_gemm_half_tokens", "moe_dispatch_overhead_us")


def calibration_from(params: dict, base: Calibration) -> Calibration:
    s = params["gemm_scale"]
    curve = tuple((x, round(min(y * s, 0.95), 4)) for x, y in BASE_CURVE)
    rest = {k: v for k, v in params.items() if k != "gemm_scale"}
    return base.model_copy(update={"gemm_efficiency": curve, **rest})


def loss(cases: list[RunCase], profile: HardwareProfile) -> float:
    errs = []
    for c in cases:
        p = project(c.model, c.job, c.recipe, c.placement, profile, simulate_pipeline=False)
        errs.append(abs(math.log(p.tokens_per_s_per_gpu / c.measured["tokens_per_s_per_gpu"])))
    return sum(errs) / len(errs)


def fit_one(name: str, cases: list[RunCase], rounds: int = 2) -> tuple[Calibration, float, float]:
    base = load_profile(name)
    params = {"gemm_scale": 1.0, **{k: getattr(base.calibration, k) for k in GRIDS if k != "gemm_scale"}}
    uses_fp8 = any(c.job.precision.is_fp8 for c in cases)
    uses_moe = any(c.model.is_moe for c in cases)

    def evaluate(p: dict) -> float:
        return loss(cases, base.model_copy(update={"calibration": calibration_from(p, base.calibration)}))

    start = best = evaluate(params)
    for _ in range(rounds):
        for key, grid in GRIDS.items():
            if (key.startswith("fp8") and not uses_fp8) or (key in MOE_ONLY and not uses_moe):
                continue
            for val in grid:
                trial = {**params, key: val}
                score = evaluate(trial)
                if score < best - 1e-6:
                    best, params = score, trial
    return calibration_from(params, base.calibration), start, best


def write_block(name: str, cal: Calibration, note: str) -> None:
    path = PROFILES_DIR / f"{name}.yaml"
    text = path.read_text()
    data = cal.model_dump(mode="json")
    data["gemm_efficiency"] = [list(p) for p in data["gemm_efficiency"]]
    body = yaml.safe_dump({"calibration": data}, sort_keys=False, default_flow_style=None).rstrip("\n")
    block = f"# calibration: {note}\n{body}\n"
    pattern = re.compile(r"(?m)^(# calibration:.*\n)?calibration:.*\n(?:[ #].*\n|\n)*")
    if not pattern.search(text):
        raise SystemExit(f"{path}: no calibration block to replace")
    path.write_text(pattern.sub(block, text, count=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    by_hw: dict[str, list[RunCase]] = defaultdict(list)
    for c in assume_moe_dispatcher(load_runs()):
        if c.outcome == "ran" and "tokens_per_s_per_gpu" in c.measured:
            by_hw[c.hardware].append(c)
    for name, cases in sorted(by_hw.items()):
        cal, before, after = fit_one(name, cases)
        print(f"{name}: {len(cases)} rows, mean |log err| {before:.3f} -> {after:.3f}")
        if args.write:
            write_block(name, cal, f"fitted by bench/fit_calibration.py on {len(cases)} rows of runs.csv "
                                   f"(mean |log err| {after:.3f}); load_profile validates it")


if __name__ == "__main__":
    main()
