"""How far one configuration's throughput moves between software releases: a reference for any release-blind projection.

Usage: `.venv/bin/python -m bench.release_spread [--rows]`.

Why: the Megatron-Bridge performance summary re-measures the same configuration (model, system, precision, GPUs,
global and micro batch, TP/PP/VP/CP/EP) in release after release, and the figure moves as kernels, presets and
libraries change. shardplan's inputs are the configuration and the hardware, not the container version, so this
spread is error no projection of ours can remove. It is measured here as a predictor that knows everything but
the release: each row is predicted by the median of the same configuration's measurements in the other releases
(leave-one-release-out inside a configuration). It is a reference, not a bound: it covers only the configurations
measured twice, and a model could beat it on some. Only headline rows take part (bench/run_slices.py is_headline):
a publisher-flagged regression would inflate its twins' errors. bench.cross_validate prints it above its tables.
"""
from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from typing import Optional

from bench.run_slices import bridge_release, is_headline, throughput_cases
from bench.runs import RunCase


def configuration(case: RunCase) -> tuple:
    """What a performance-summary table publishes for a row, the release aside."""
    r, job = case.recipe, case.job
    return (case.model.name, case.hardware, job.precision.value, job.seq_length, job.global_batch_size,
            case.placement.world_size, r.tp, r.pp, r.vpp, r.cp, r.ep, r.mbs)


def release_blind_errors(cases: list[RunCase]) -> dict[str, float]:
    """Row id -> signed error of predicting the row by the median of its configuration's other releases
    (performance-summary rows whose configuration was measured in two releases or more)."""
    groups: dict[tuple, list[RunCase]] = defaultdict(list)
    for c in cases:
        if bridge_release(c) is not None and is_headline(c):
            groups[configuration(c)].append(c)
    out: dict[str, float] = {}
    for rows in groups.values():
        if len({bridge_release(c) for c in rows}) < 2:
            continue
        for c in rows:
            others = [o.measured["tokens_per_s_per_gpu"] for o in rows if bridge_release(o) != bridge_release(c)]
            out[c.id] = statistics.median(others) / c.measured["tokens_per_s_per_gpu"] - 1
    return out


def summary_line(cases: list[RunCase]) -> str:
    """One line for bench.cross_validate's header: rows, configurations, median / p90 / worst release-blind error."""
    errs = release_blind_errors(cases)
    if not errs:
        return "Release-blind reference: no configuration is measured in two releases."
    a = sorted(100 * abs(e) for e in errs.values())
    # interpolated between ranks over n - 1 intervals, as bench.cross_validate's pct
    p90 = statistics.quantiles(a, n=10, method="inclusive")[8] if len(a) > 1 else a[0]
    n_cfg = len({configuration(c) for c in cases if c.id in errs})
    return (f"Release-blind reference (bench.release_spread): {len(a)} performance-summary rows in {n_cfg} configurations "
            f"measured in two releases or more, each predicted by the median of its configuration's other releases: "
            f"median {statistics.median(a):.1f} %, p90 {p90:.1f} %, worst {a[-1]:.1f} %.")


def split_line(cases: list[RunCase]) -> str:
    """The same reference for MoE and dense configurations apart (issue 32: how much of the MoE rows' held-out tail is
    release-to-release movement of the published figure, which no release-blind projection removes)."""
    errs, by_id = release_blind_errors(cases), {c.id: c for c in cases}
    parts = []
    for label, moe in (("MoE", True), ("dense", False)):
        a = sorted(100 * abs(e) for k, e in errs.items() if by_id[k].model.is_moe == moe)
        if a:
            p90 = statistics.quantiles(a, n=10, method="inclusive")[8] if len(a) > 1 else a[0]
            parts.append(f"{label} {len(a)} rows: median {statistics.median(a):.1f} %, p90 {p90:.1f} %, worst {a[-1]:.1f} %")
    return "Release-blind reference by layer type: " + "; ".join(parts) + "."


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print every row's release-blind error")
    args = ap.parse_args(argv)
    cases = throughput_cases()
    print(summary_line(cases))
    print(split_line(cases))
    if args.rows:
        errs = release_blind_errors(cases)
        for c in sorted((c for c in cases if c.id in errs), key=configuration):
            print(f"  {c.id:<10} {bridge_release(c):<9} {c.model.name:<26} {c.hardware:<14} "
                  f"{c.measured['tokens_per_s_per_gpu']:>9.0f} {100 * errs[c.id]:+.1f}%")


if __name__ == "__main__":
    main()
