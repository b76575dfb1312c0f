"""Why the publication fold that holds out the Megatron-Bridge performance summary (MBR) misses: what its 38 training
rows can and cannot tell.

Usage: `.venv/bin/python -m bench.source_fold_shift [--group MBR]`.

Why: leave-one-source-out holds the whole performance summary out at once (bench/cross_validate.py), so its fit sees
only the other publications' rows. This prints, for that fold (closed-form schedule, as the fit itself prices rows):

1. the software constants each inner leave-one-publication-out fit of those rows picks: if every inner fit agrees,
   the miss is not one publication pulling the fit, it is what the rows say;
2. the held-out error with the fold's own fit, and with one constant at a time set to the fit on every row (a
   diagnosis, never a fit: it reads the held-out rows, so no figure here is a held-out result), showing which constants
   the training rows cannot identify;
3. the fold's fit on dense rows only and on MoE rows only of the whole file: where the element-wise constant sits
   for each kind of model.
"""
from __future__ import annotations

import argparse
import statistics

from bench.cross_validate import pct, training_rows
from bench.fit_software import SharedFit
from bench.run_slices import is_headline, source_group, throughput_cases
from hardware.calibration import SoftwareConstants, load_software_constants
from measure.projection.project import project

SHOWN = ("gemm_scale", "memory_scale", "host_time_per_op_us", "moe_dispatch_overhead_us", "gemm_launch_host_us")


def held_out_stats(fit: SharedFit, sw: SoftwareConstants, rows) -> tuple[float, float]:
    """(median, p90) |error| % of tokens/s/GPU on `rows` under `sw` (closed-form schedule)."""
    errs = []
    for c in rows:
        p = project(c.model, c.job, c.recipe, c.placement, fit.profile(c.hardware, sw), simulate_pipeline=False, **c.run_options())
        errs.append(100 * abs(p.tokens_per_s_per_gpu / c.measured["tokens_per_s_per_gpu"] - 1))
    return statistics.median(errs), pct(errs, 0.9)


def constants(sw: SoftwareConstants) -> str:
    return ", ".join(f"{k} {getattr(sw, k):g}" for k in SHOWN)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", default="MBR", help="the publication held out (source_id prefix)")
    args = ap.parse_args(argv)
    cases = throughput_cases()
    train = training_rows(cases, source_group, args.group)
    held = [c for c in cases if source_group(c) == args.group and is_headline(c)]
    moe = sum(c.model.is_moe for c in train)
    print(f"{args.group} held out: {len(held)} rows; the fold fits on {len(train)} rows ({moe} MoE) of "
          f"{', '.join(sorted({source_group(c) for c in train}))}\n")
    print("1. inner fits, each leaving one more publication out:")
    for s in sorted({source_group(c) for c in train}):
        inner = SharedFit([c for c in train if source_group(c) != s])
        inner.run()
        print(f"   without {s:<9} ({len(inner.cases)} rows): {constants(inner.sw)}")
    fold = SharedFit(train)
    fold.run()
    everything = load_software_constants()
    med, p90 = held_out_stats(fold, fold.sw, held)
    print(f"\n2. the fold's fit: {constants(fold.sw)}\n   held out: median {med:.1f} %, p90 {p90:.1f} %")
    for k in SHOWN:
        if getattr(fold.sw, k) != getattr(everything, k):
            med, p90 = held_out_stats(fold, fold.sw.model_copy(update={k: getattr(everything, k)}), held)
            print(f"   with {k} {getattr(everything, k):g} (the fit on every row): median {med:.1f} %, p90 {p90:.1f} %")
    print("\n3. fits on one kind of model (every headline row of that kind):")
    for label, keep in (("dense", lambda c: not c.model.is_moe), ("MoE", lambda c: c.model.is_moe)):
        part = SharedFit([c for c in cases if is_headline(c) and keep(c)])
        part.run()
        print(f"   {label:<5} ({len(part.cases)} rows): {constants(part.sw)}")


if __name__ == "__main__":
    main()
