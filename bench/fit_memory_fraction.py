"""Learn the share of HBM a run may fill (constraints/memory/allocator.py) from published runs that ran or went OOM.

Usage: python bench/fit_memory_fraction.py [--rows]

Every expressible row of bench/data/runs.csv and bench/data/memory_runs.csv (bench/runs.py) with its `outcome` column
is priced by constraints/memory/per_rank.py (framework reserve included); its peak as a share of HBM is compared with
a candidate share f: "fits" when peak <= f x HBM. The learnt share is the f of the grid (0.800 .. 1.000 by 0.005) that
agrees with the most outcomes; ties go to the smallest f (the safe side). Leave-one-source-out: each publication
(`source_id` prefix) is judged with the f learnt on the others, and the agreement over all rows is the held-out
figure. Both error directions count: a run that ran called OOM, and a run that went OOM called a fit.

A row that does not state its recompute (`RunCase.assumed` says "recompute none") is judged at the recompute that
saves the most memory (full, uniform, one layer per group): the row ran with some setting it did not publish, and
pricing it without recompute calls runs OOM that only needed the setting they used (NEMOLS-369, "impossible ... even
with full recompute", is the one such OOM, and it is judged exactly as its source states).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.runs import MEMORY_CSV, RUNS_CSV, RunCase, load_all  # noqa: E402
from constraints.memory.allocator import DEFAULT_CAP_PPM, PPM  # noqa: E402
from constraints.memory.per_rank import memory_report  # noqa: E402
from constraints.spec import Recipe, Recompute, RecomputeGranularity, RecomputeMethod  # noqa: E402
from constraints.stages import StageSplitError  # noqa: E402
from hardware.profile import load_profile  # noqa: E402

GRID_PPM = tuple(range(800_000, 1_000_001, 5_000))


class PricedRun(NamedTuple):
    source: str        # the publication (source_id prefix), the unit held out
    id: str
    peak_ppm: int      # modelled peak as parts per million of HBM
    ran: bool          # published outcome


def verdict_recipe(case: RunCase) -> Recipe:
    """The recipe a fit verdict prices: the row's, with full recompute where the row did not state its recompute."""
    if "recompute none" not in case.assumed:
        return case.recipe
    full = Recompute(granularity=RecomputeGranularity.full, method=RecomputeMethod.uniform, num_layers=1)
    return case.recipe.model_copy(update={"recompute": full})


def priced_runs(csv_paths=(RUNS_CSV, MEMORY_CSV)) -> list[PricedRun]:
    """Every expressible row with an outcome, priced (a row whose pipeline split cannot be built is left out)."""
    out = []
    for path in csv_paths:
        for case in load_all(path)[0]:
            profile = load_profile(case.hardware)
            cal = profile.calibration
            try:
                mem = memory_report(case.model, case.job, verdict_recipe(case), case.placement.world_size,
                                    profile.hbm_capacity_bytes, cal.framework_overhead_bytes,
                                    cal.activation_fragmentation_fraction, compute_capability=profile.compute_capability)
            except StageSplitError:
                continue
            out.append(PricedRun(case.id.split("-")[0], case.id, mem.peak_bytes * PPM // profile.hbm_capacity_bytes,
                                 case.outcome == "ran"))
    return out


def agreement(runs: list[PricedRun], fraction_ppm: int) -> int:
    """Rows whose verdict at this share (fits: peak <= share) matches the published outcome."""
    return sum((r.peak_ppm <= fraction_ppm) == r.ran for r in runs)


def learn_fraction_ppm(runs: list[PricedRun]) -> int:
    """The grid share agreeing with the most outcomes; the smallest of equals."""
    best = max(agreement(runs, f) for f in GRID_PPM)
    return min(f for f in GRID_PPM if agreement(runs, f) == best)


def held_out(runs: list[PricedRun], cap_ppm: int = 1_000_000) -> tuple[int, int, dict[str, int]]:
    """(rows agreeing, rows, {source: share learnt without it}) with each source judged by the share learnt on the
    others (capped at `cap_ppm`, as the shipped default is)."""
    agree, learnt = 0, {}
    for source in sorted({r.source for r in runs}):
        train = [r for r in runs if r.source != source]
        learnt[source] = min(learn_fraction_ppm(train), cap_ppm)
        agree += agreement([r for r in runs if r.source == source], learnt[source])
    return agree, len(runs), learnt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print the rows near the learnt share and every disagreement")
    args = ap.parse_args()
    runs = priced_runs()
    learnt = learn_fraction_ppm(runs)
    n = len(runs)
    print(f"runs with an outcome: {n} ({sum(not r.ran for r in runs)} OOM) from {len({r.source for r in runs})} publications")
    print(f"learnt share of HBM on all runs: {learnt / PPM:.3f} (agreement {100 * agreement(runs, learnt) / n:.1f} %); "
          f"at 100 % of HBM (no reserve): {100 * agreement(runs, PPM) / n:.1f} %")
    for label, cap in (("learnt", PPM), (f"learnt, capped at {DEFAULT_CAP_PPM / PPM:.2f} (the default)", DEFAULT_CAP_PPM)):
        agree, total, per_source = held_out(runs, cap)
        print(f"held out by publication ({label}): agreement {100 * agree / total:.1f} % ({agree} of {total}); "
              f"shares learnt without each: {', '.join(f'{s} {f / PPM:.3f}' for s, f in per_source.items())}")
    agree, total, _ = held_out(runs, PPM)
    ran_called_oom = [r.id for r in runs if r.ran and r.peak_ppm > min(learnt, DEFAULT_CAP_PPM)]
    oom_called_fit = [r.id for r in runs if not r.ran and r.peak_ppm <= min(learnt, DEFAULT_CAP_PPM)]
    print(f"at the default: ran & called OOM {len(ran_called_oom)} {ran_called_oom}; OOM & called fits {len(oom_called_fit)} {oom_called_fit}")
    if args.rows:
        for r in sorted(runs, key=lambda r: r.peak_ppm):
            if r.peak_ppm > 900_000 or not r.ran:
                print(f"  {r.id:<14} {'ran' if r.ran else 'OOM':<4} peak {r.peak_ppm / 1e4:6.2f} % of HBM")
    return 0


if __name__ == "__main__":
    sys.exit(main())
