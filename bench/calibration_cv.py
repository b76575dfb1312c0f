"""How well a calibration on a user's own runs projects their other runs: one-shot and three-shot, out of sample.

Usage: `.venv/bin/python -m bench.calibration_cv [--jobs N] [--rows] [--check]` (runs in CI; `--check` exits 1 when the
one-shot target, median <= 5 % and p90 <= 12 %, is missed).

Why this protocol: a user's cluster and container are never in shardplan's fit, and they calibrate on the runs they
made on that cluster. So each group of runs.csv rows measured together (the same publication and release, part and
precision: `measured_together`) plays one user's cluster in turn:
1. the shipped constants are refitted WITHOUT the group's whole publication and without any other row of its
   configurations (bench.cross_validate.training_rows, source grouping: stricter than leaving out the group alone, and
   one fit serves every group of that publication), as for a cluster and software nobody published;
2. one run of the group (one-shot; every run in turn) or three (three-shot, where the group has four or more) is the
   evidence that `shardplan calibrate` fits (measure/calibration/fit.py: the step time = global batch x sequence /
   (tokens/s/GPU x GPUs));
3. every other run of the group is projected with the calibrated profile and compared with its measurement.
The uncalibrated error of the same held-out projections (step 1's constants alone) is reported beside it.
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Optional

from bench.cross_validate import pct, training_rows
from bench.fit_software import fit_transfer_profiles
from bench.run_slices import is_headline, release_group, source_group, throughput_cases
from bench.runs import RunCase
from measure.calibration.factors import apply_factors
from measure.calibration.fit import Evidence, fit_factors, step_time_s

TARGET_MEDIAN_PCT, TARGET_P90_PCT = 5.0, 12.0
MAX_SHOTS_PER_ROW = 6  # one-shot: each held-out row is projected from at most this many single calibrating runs


def measured_together(case: RunCase) -> tuple:
    """The rows one user would have measured on one cluster and software: publication and release, part, precision."""
    return (release_group(case), case.hardware, case.job.precision.value)


def evidence_of(case: RunCase) -> Evidence:
    step_s = case.job.global_batch_size * case.job.seq_length / (case.measured["tokens_per_s_per_gpu"] * case.placement.world_size)
    return Evidence(label=case.id, model=case.model, job=case.job, recipe=case.recipe, placement=case.placement,
                    run_options=case.run_options(), iteration_time_s=step_s)


def _err(case: RunCase, profile) -> float:
    """Signed error of tokens/s/GPU (projected / measured - 1)."""
    return evidence_of(case).iteration_time_s / step_time_s(evidence_of(case), profile) - 1.0


_STATE: dict = {}


def _source(source: str) -> list[dict]:
    """Every measured-together group of one publication, projected from constants fitted without that publication."""
    cases: list[RunCase] = _STATE["cases"]
    profile_for = fit_transfer_profiles(training_rows(cases, source_group, source))
    keys = sorted({measured_together(c) for c in cases if source_group(c) == source})
    return [r for key in keys for r in _group(key, cases, profile_for(key[1]))]


def _group(key: tuple, cases: list[RunCase], base) -> list[dict]:
    rows = sorted((c for c in cases if measured_together(c) == key), key=lambda c: c.id)
    if len(rows) < 2:
        return []
    uncal = {c.id: _err(c, base) for c in rows}
    out = []
    fits: dict[tuple[str, ...], object] = {}

    def calibrated(ids: tuple[str, ...]):
        if ids not in fits:
            fit = fit_factors(base, [evidence_of(c) for c in rows if c.id in ids])
            fits[ids] = apply_factors(base, fit.factors)
        return fits[ids]

    for j, held in enumerate(rows):
        others = [c for c in rows if c.id != held.id]
        near = sorted(others, key=lambda c: abs(rows.index(c) - j))  # the runs measured nearest to it in the table
        for shot in near[:MAX_SHOTS_PER_ROW]:
            out.append({"group": " / ".join(key), "row": held.id, "shots": 1, "calibrated_on": shot.id,
                        "err": _err(held, calibrated((shot.id,))), "uncalibrated": uncal[held.id]})
        if len(others) >= 3:
            ids = tuple(sorted(c.id for c in near[:3]))
            out.append({"group": " / ".join(key), "row": held.id, "shots": 3, "calibrated_on": ",".join(ids),
                        "err": _err(held, calibrated(ids)), "uncalibrated": uncal[held.id]})
    return out


def run(jobs: int = 1) -> list[dict]:
    cases = [c for c in throughput_cases() if is_headline(c)]
    sources = sorted({source_group(c) for c in cases})
    _STATE["cases"] = cases
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(_source, sources))
    else:
        parts = [_source(s) for s in sources]
    return [r for part in parts for r in part]


def _line(label: str, errs: list[float]) -> str:
    a = [100 * abs(e) for e in errs]
    return f"| {label} | {len(a)} | {statistics.median(a):.1f} | {pct(a, 0.9):.1f} | {max(a):.1f} |"


def summary(records: list[dict]) -> tuple[str, dict[int, tuple[float, float]]]:
    lines = ["| projection of the group's other runs | n | median % | p90 % | worst % |", "|---|---:|---:|---:|---:|"]
    figures = {}
    for shots in (1, 3):
        rs = [r for r in records if r["shots"] == shots]
        if not rs:
            continue
        lines.append(_line("uncalibrated (same projections, constants fitted without the group)", [r["uncalibrated"] for r in rs]))
        lines.append(_line(f"calibrated on {shots} run{'s' if shots > 1 else ''} of the group", [r["err"] for r in rs]))
        a = [100 * abs(r["err"]) for r in rs]
        figures[shots] = (statistics.median(a), pct(a, 0.9))
    groups = len({r["group"] for r in records})
    lines.append(f"\n{groups} groups measured together (publication and release, part, precision) with 2 or more runs.")
    return "\n".join(lines), figures


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--rows", action="store_true", help="print every projection")
    ap.add_argument("--check", action="store_true", help="exit 1 when the one-shot target is missed")
    args = ap.parse_args(argv)
    records = run(args.jobs)
    if args.rows:
        for r in records:
            print(f"{r['group']}\t{r['row']}\t{r['shots']}\t{r['calibrated_on']}\t{100 * r['err']:+.1f}\t{100 * r['uncalibrated']:+.1f}")
    text, figures = summary(records)
    print(text)
    median, p90 = figures.get(1, (float("inf"), float("inf")))
    print(f"\none-shot target: median <= {TARGET_MEDIAN_PCT:.0f} %, p90 <= {TARGET_P90_PCT:.0f} %: "
          f"{'met' if median <= TARGET_MEDIAN_PCT and p90 <= TARGET_P90_PCT else 'MISSED'} ({median:.1f} / {p90:.1f})")
    if args.check and not (median <= TARGET_MEDIAN_PCT and p90 <= TARGET_P90_PCT):
        sys.exit(1)


if __name__ == "__main__":
    main()
