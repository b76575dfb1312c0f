"""Fit the projection's constants on runs.csv: the shared software constants (default) or, for comparison, the
per-part constants this project used before (`--per-part`).

Usage: `.venv/bin/python -m bench.fit_calibration [--write] [--per-part]`.
- default: `bench.fit_software.SharedFit` fits one value of each `SoftwareConstants` field on every Megatron-stack
  row; each part's own numbers come from its profile's published microbenchmarks. `--write` stores the result in
  hardware/software_constants.yaml (atomically), which load_profile reads.
- `--per-part` (the model before the transfer model, kept so its cross-validated figures stay reproducible):
  coordinate descent per hardware on its own rows (GEMM curve scale, fp8 / grouped-GEMM / attention / HBM
  efficiency, host time per op) plus shared MoE and overlap constants; a part without rows keeps the defaults.
  Nothing is written.
Out-of-sample error of either: `python -m bench.cross_validate [--model per-part]`.
"""
from __future__ import annotations

import argparse
import math
import os
from collections import defaultdict
from pathlib import Path

import yaml

from bench.fit_software import SharedFit
from bench.run_slices import is_headline, throughput_cases
from bench.runs import RunCase
from hardware.calibration import SOFTWARE_CONSTANTS_PATH, SoftwareConstants
from hardware.profile import Calibration, HardwareProfile, load_profile
from measure.projection.project import project

BASE_CURVE = ((20.0, 0.05), (30.0, 0.45), (36.0, 0.70), (40.0, 0.75))
LOCAL = {
    # scale of BASE_CURVE, whose top (0.75 at 2^40 FLOPs) is a large bf16 GEMM sustained in training: the
    # datasheet peak assumes boost clock (H100: 528 tensor cores x 1024 dense bf16 FLOP/clk x 1.83 GHz = 989
    # TFLOP/s), and GEMM-bound training holds ~1.6-1.75 GHz under the power cap, so ~0.75 of peak is the
    # ceiling. Capped at 1.0 so the fit cannot hide missing costs in unreachable GEMM rates.
    "gemm_scale": [0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0],
    "fp8_gemm_relative_efficiency": [0.45, 0.55, 0.65, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0],
    "grouped_gemm_relative_efficiency": [0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0],
    "attention_efficiency": [0.2, 0.25, 0.35, 0.45, 0.55, 0.65],
    "memory_bound_efficiency": [0.5, 0.6, 0.7, 0.8, 0.9],
    # host per op: the system's CPU (Grace on GB200/GB300, x86 on HGX) and whether its published recipes
    # capture layers in CUDA graphs, so per system
    "host_time_per_op_us": [0.0, 20.0, 50.0, 100.0, 150.0, 200.0, 300.0],
}
SHARED = {
    "exposed_comm_fraction": [0.1, 0.2, 0.4, 0.7, 1.0],  # not 0: see bench/fit_software.py GRID
    "moe_load_imbalance": [1.0, 1.1, 1.25, 1.5],
    "grouped_gemm_half_tokens": [0.0, 64.0, 128.0, 256.0, 512.0, 1024.0],
    "moe_dispatch_overhead_us": [0.0, 50.0, 100.0, 200.0, 350.0, 500.0, 750.0, 1000.0],
}
MOE_ONLY = ("grouped_gemm_relative_efficiency", "moe_load_imbalance", "grouped_gemm_half_tokens", "moe_dispatch_overhead_us")


def calibration_from(params: dict, base: Calibration) -> Calibration:
    s = params["gemm_scale"]
    curve = tuple((x, round(min(y * s, 0.95), 4)) for x, y in BASE_CURVE)
    rest = {k: v for k, v in params.items() if k != "gemm_scale"}
    return base.model_copy(update={"gemm_efficiency": curve, **rest})


def _log_errs(cases: list[RunCase], profile: HardwareProfile, simulate: bool = False) -> list[float]:
    out = []
    for c in cases:
        p = project(c.model, c.job, c.recipe, c.placement, profile, simulate_pipeline=simulate, **c.run_options())
        out.append(abs(math.log(p.tokens_per_s_per_gpu / c.measured["tokens_per_s_per_gpu"])))
    return out


class _Fit:
    """Parameters per hardware plus shared ones; `profile(hw)` is the hardware's profile under them."""

    def __init__(self, by_hw: dict[str, list[RunCase]], from_defaults: bool = False) -> None:
        """`from_defaults` starts the descent from `Calibration()` instead of the stored (whole-file) fit, so a
        held-out fit never starts from constants that saw the held-out rows."""
        self.by_hw = by_hw
        self.base = {hw: load_profile(hw) for hw in by_hw}
        start = {hw: Calibration() if from_defaults or b.microbench is not None else b.calibration for hw, b in self.base.items()}
        self.local = {hw: {"gemm_scale": 1.0, **{k: getattr(start[hw], k) for k in LOCAL if k != "gemm_scale"}}
                      for hw in self.base}
        first = next(iter(start.values()))
        self.shared = {k: getattr(first, k) for k in SHARED}

    def profile(self, hw: str, local: dict | None = None, shared: dict | None = None) -> HardwareProfile:
        """The per-part model: fitted constants over the defaults (never the microbenchmark-derived calibration)."""
        b = self.base[hw]
        params = {**(local or self.local[hw]), **(shared or self.shared)}
        return b.model_copy(update={"calibration": calibration_from(params, Calibration())})

    def hw_loss(self, hw: str, local: dict | None = None, shared: dict | None = None) -> float:
        return sum(_log_errs(self.by_hw[hw], self.profile(hw, local, shared)))

    def total(self, shared: dict | None = None) -> float:
        n = sum(len(v) for v in self.by_hw.values())
        return sum(self.hw_loss(hw, shared=shared) for hw in self.by_hw) / n

    def run(self, rounds: int = 2) -> tuple[float, float]:
        start = self.total()
        uses_moe = any(c.model.is_moe for v in self.by_hw.values() for c in v)
        for _ in range(rounds):
            for hw, cases in self.by_hw.items():
                fp8, moe = any(c.job.precision.is_fp8 for c in cases), any(c.model.is_moe for c in cases)
                best = self.hw_loss(hw)
                for key, grid in LOCAL.items():
                    if (key.startswith("fp8") and not fp8) or (key in MOE_ONLY and not moe):
                        continue
                    for val in grid:
                        trial = {**self.local[hw], key: val}
                        score = self.hw_loss(hw, local=trial)
                        if score < best - 1e-9:
                            best, self.local[hw] = score, trial
            best = self.total()
            for key, grid in SHARED.items():
                if key in MOE_ONLY and not uses_moe:
                    continue
                for val in grid:
                    trial = {**self.shared, key: val}
                    score = self.total(shared=trial)
                    if score < best - 1e-9:
                        best, self.shared = score, trial
        return start, self.total()


def _by_hw(cases: list[RunCase]) -> dict[str, list[RunCase]]:
    out: dict[str, list[RunCase]] = defaultdict(list)
    for c in cases:
        out[c.hardware].append(c)
    return dict(sorted(out.items()))


def fit_profiles(cases: list[RunCase]):
    """Fit on `cases` only (from the default constants) and return hw name -> profile: a fitted part gets its own
    constants; a part without rows in `cases` gets the defaults plus the fitted shared constants, as a part
    nobody has published runs for does in the shipped profiles."""
    fit = _Fit(_by_hw(cases), from_defaults=True)
    fit.run()

    def profile_for(hw: str) -> HardwareProfile:
        if hw in fit.base:
            return fit.profile(hw)
        base = load_profile(hw)
        return base.model_copy(update={"calibration": Calibration().model_copy(update=fit.shared)})
    return profile_for


def write_software_constants(sw: SoftwareConstants, note: str, path: Path = SOFTWARE_CONSTANTS_PATH) -> None:
    """hardware/software_constants.yaml, written to a temp file and renamed (a Ctrl-C never leaves half a file)."""
    body = yaml.safe_dump({"constants": sw.model_dump(mode="json")}, sort_keys=False)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(f"# {note}\n# Read by hardware/calibration.py; refit with: python -m bench.fit_calibration --write\n{body}")
    os.replace(tmp, path)


def training_cases() -> list[RunCase]:
    """The rows every fit uses: ran, measured tokens/s/GPU, Megatron stack, not a publisher-flagged regression
    (torch-native and flagged rows are separate slices, bench/run_slices.py)."""
    return [c for c in throughput_cases() if is_headline(c)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store the fitted software constants")
    ap.add_argument("--per-part", action="store_true", help="fit the earlier per-part model instead (prints only)")
    args = ap.parse_args()
    cases = training_cases()
    if args.per_part:
        fit = _Fit(_by_hw(cases), from_defaults=True)
        before, after = fit.run()
        print(f"per-part model, {len(cases)} rows: mean |log err| {before:.3f} -> {after:.3f}; shared {fit.shared}")
        for hw, rows in fit.by_hw.items():
            print(f"{hw}: {len(rows)} rows, mean |log err| {fit.hw_loss(hw) / len(rows):.3f}; {fit.local[hw]}")
        return
    fit = SharedFit(cases)
    before, after = fit.run()
    print(f"software constants, {len(cases)} rows of {len({c.hardware for c in cases})} parts: mean |log err| "
          f"{before:.3f} -> {after:.3f}")
    print(fit.sw.model_dump())
    if args.write:
        write_software_constants(fit.sw, f"fitted by bench/fit_calibration.py on {len(cases)} Megatron-stack rows of runs.csv "
                                         f"(mean |log err| {after:.3f}); one value per constant for every part")


if __name__ == "__main__":
    main()
