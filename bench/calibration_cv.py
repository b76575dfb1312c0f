"""How well a calibration on a user's own runs projects their other runs: one-shot and three-shot, out of sample.

Usage: `.venv/bin/python -m bench.calibration_cv [--jobs N] [--rows] [--write-bands] [--check]` (runs in CI). `--check`
exits 1 when measure/projection/error_bands.json differs from what this run measures (the projection ranges shipped
with shardplan); `--write-bands` writes that file. The one-shot target (median <= 5 %, p90 <= 12 %) is printed as met
or missed.

Why this protocol: a user's cluster and container are never in shardplan's fit, and they calibrate on the runs they
made on that cluster. So each group of runs.csv rows measured together (the same publication and release, part and
precision: `measured_together`) plays one user's cluster in turn:
1. the shipped constants are refitted WITHOUT the group's whole publication and without any other row of its
   configurations (bench.cross_validate.training_rows, source grouping: stricter than leaving out the group alone, and
   one fit serves every group of that publication), as for a cluster and software nobody published;
2. one run of the group (one-shot; every run in turn) or three (three-shot, where the group has four or more) is the
   evidence that `shardplan calibrate` fits (measure/calibration/fit.py: the step time = global batch x sequence /
   (tokens/s/GPU x GPUs));
3. every other run of the group is projected as `--calibration` projects it and compared with its measurement: a run
   of the same model with the fitted factors, a run of another model with the shipped speed constants.
The uncalibrated error of the same held-out projections (step 1's constants alone) is reported beside it. Then each run
is projected from a one-run calibration on up to four runs of OTHER models of its group: factors carried whole (worse
than uncalibrated), and by each carry rule of measure/calibration/carry.py, the rule for each publication chosen on the
other publications (leave one publication out); `--calibration` carries CARRIED_RULE, the rule chosen on them all.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Optional

from bench.cross_validate import pct, training_rows
from bench.fit_software import fit_transfer_profiles
from bench.run_slices import is_headline, release_group, source_group, throughput_cases
from bench.runs import RunCase
from measure.calibration.carry import CARRY_RULES, carried_factors
from measure.calibration.factors import ClusterFactors, apply_factors
from measure.calibration.fit import Evidence, fit_factors, step_time_s
from measure.projection.error_band import BANDS_PATH

TARGET_MEDIAN_PCT, TARGET_P90_PCT = 5.0, 12.0
MAX_SHOTS_PER_ROW = 4  # one-shot: each held-out row is projected from at most this many single calibrating runs


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
    """Within one measured-together group, each run of a model projected from a calibration on another run (one-shot)
    or three other runs (three-shot) of the same model. A calibration applies its speed factors only to the models it
    measured (measure/calibration/store.py factors_for), so a run of another model is projected as uncalibrated: its
    error is the uncalibrated one by construction and is counted in the all-runs line without a fit."""
    rows = sorted((c for c in cases if measured_together(c) == key), key=lambda c: c.id)
    if len(rows) < 2:
        return []
    out = []
    fits: dict[tuple[str, ...], ClusterFactors] = {}

    def fitted(ids: tuple[str, ...]) -> ClusterFactors:
        if ids not in fits:
            fits[ids] = fit_factors(base, [evidence_of(c) for c in rows if c.id in ids]).factors
        return fits[ids]

    def calibrated(ids: tuple[str, ...]):
        return apply_factors(base, fitted(ids))

    for j, held in enumerate(rows):
        uncal = _err(held, base)
        same = [c for c in rows if c.id != held.id and c.model == held.model]
        near = sorted(same, key=lambda c: abs(rows.index(c) - j))[:MAX_SHOTS_PER_ROW]  # the runs nearest in the table
        record = {"group": " / ".join(key), "source": source_group(held), "row": held.id, "uncalibrated": uncal, "other_models": len(rows) - 1 - len(same)}
        for shot in near:
            out.append({**record, "shots": 1, "calibrated_on": shot.id, "err": _err(held, calibrated((shot.id,)))})
        if len(same) >= 3:
            ids = tuple(sorted(c.id for c in near[:3]))
            out.append({**record, "shots": 3, "calibrated_on": ",".join(ids), "err": _err(held, calibrated(ids))})
        if len(rows) - 1 > len(same):  # calibrated on another model's run: the shipped speed constants, unchanged
            out.append({**record, "shots": 0, "calibrated_on": "another model", "err": uncal})
            others = sorted((c for c in rows if c.model != held.model), key=lambda c: abs(rows.index(c) - j))
            for shot in others[:MAX_SHOTS_PER_ROW]:  # carrying the factors across models: whole, and as each carry rule would
                factors = fitted((shot.id,))
                rules = {name: _err(held, apply_factors(base, carried_factors(factors, rule)))
                         for name, rule in CARRY_RULES.items()}
                out.append({**record, "shots": -1, "calibrated_on": shot.id, "err": _err(held, calibrated((shot.id,))),
                            "carried": rules})
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
    lines = ["| projection of a group's other runs | n | median % | p90 % | worst % |", "|---|---:|---:|---:|---:|"]
    figures = {}
    for shots, label in ((1, "calibrated on 1 run of the same model"), (3, "calibrated on 3 runs of the same model")):
        rs = [r for r in records if r["shots"] == shots]
        if not rs:
            continue
        lines.append(_line("uncalibrated, the same projections (constants fitted without the publication)", [r["uncalibrated"] for r in rs]))
        lines.append(_line(label, [r["err"] for r in rs]))
        a = [100 * abs(r["err"]) for r in rs]
        figures[shots] = (statistics.median(a), pct(a, 0.9))
    other = [r for r in records if r["shots"] == 0]
    if other:
        lines.append(_line("uncalibrated, each run that has another model in its group", [r["err"] for r in other]))
    carried = [r for r in records if r["shots"] == -1]
    if carried:
        lines.append(_line("uncalibrated, the same projections", [r["uncalibrated"] for r in carried]))
        lines.append(_line("calibrated on 1 run of another model, factors carried whole", [r["err"] for r in carried]))
        held, chosen = carry_rule_held_out(carried)
        lines.append(_line("calibrated on 1 run of another model, carried by the rule chosen without its publication", held))
        for name in CARRY_RULES:
            lines.append(_line(f"  carry rule '{name}' (every publication)",
                               [r["carried"][name] for r in carried]))
        lines.append(f"\ncarry rule chosen on every publication (measure/calibration/carry.py CARRIED_RULE): '{chosen}'")
    groups = len({r["group"] for r in records})
    lines.append(f"\n{groups} groups measured together (publication and release, part, precision) with 2 or more runs; "
                 f"{len({r['row'] for r in records if r['shots'] == 1})} runs have another run of the same model in their group.")
    return "\n".join(lines), figures


def _mean_abs(records: list[dict], rule: str) -> float:
    return statistics.fmean(abs(r["carried"][rule]) for r in records)


def carry_rule_held_out(carried: list[dict]) -> tuple[list[float], str]:
    """(each other-model projection's error under the carry rule that did best, by mean absolute error, on every OTHER
    publication's other-model projections; the rule that does best on all of them): leave one publication out, so the
    reported figure never saw the publication whose runs it projects (measure/calibration/carry.py)."""
    held = []
    for source in sorted({r["source"] for r in carried}):
        rest = [r for r in carried if r["source"] != source]
        rule = min(CARRY_RULES, key=lambda n: _mean_abs(rest, n)) if rest else "none"
        held += [r["carried"][rule] for r in carried if r["source"] == source]
    return held, min(CARRY_RULES, key=lambda n: _mean_abs(carried, n))


def bands(records: list[dict]) -> dict:
    """The 10th / 90th percentiles of the signed held-out error, uncalibrated (one per run) and calibrated (one-shot)."""
    uncal = {r["row"]: r["uncalibrated"] for r in records}
    cal = [r["err"] for r in records if r["shots"] == 1]
    cmd = "python -m bench.calibration_cv --write-bands"
    return {"bands": {
        "uncalibrated": {"low_error": round(pct(list(uncal.values()), 0.1), 4), "high_error": round(pct(list(uncal.values()), 0.9), 4),
                         "num_runs": len(uncal), "measured_by": cmd + " (constants refitted without the run's publication)"},
        "calibrated": {"low_error": round(pct(cal, 0.1), 4), "high_error": round(pct(cal, 0.9), 4), "num_runs": len(cal),
                       "measured_by": cmd + " (one-shot, another run of the same model calibrates)"}}}


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--rows", action="store_true", help="print every projection")
    ap.add_argument("--check", action="store_true", help="exit 1 when the shipped error bands differ from this run's")
    ap.add_argument("--write-bands", action="store_true", help="write measure/projection/error_bands.json")
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
    measured = bands(records)
    if args.write_bands:
        BANDS_PATH.write_text(json.dumps(measured, indent=2) + "\n")
        print(f"wrote {BANDS_PATH}")
    if args.check and json.loads(BANDS_PATH.read_text()) != measured:
        print(f"{BANDS_PATH} differs from this run's bands: {measured}; rerun with --write-bands", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
