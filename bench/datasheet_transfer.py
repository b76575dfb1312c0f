"""Leave-one-hardware-out with the held-out part's microbenchmarks unknown too: what a user gets for a part that has
only a datasheet.

Usage: `.venv/bin/python -m bench.datasheet_transfer [--jobs N] [--rows]`.

Why: bench.cross_validate's hardware fold keeps the held-out part's own published microbenchmarks (they exist before
anyone trains on it). A part a user brings may have none; load_profile then takes its bundled siblings' median
fractions of peak (hardware/typical_microbench.py). Here every part with training rows is projected that way: the
software constants are refitted without the part's rows (bench.fit_software, as in cross_validate), and its
microbenchmarks are replaced by the median fractions of the other bundled parts of its vendor. The same fold with
the bare default constants (no microbenchmarks, no software constants) is printed beside it, which is what such a
profile got before.
"""
from __future__ import annotations

import argparse
from typing import Optional

from bench.cross_validate import GROUPINGS, held_out, table
from bench.fit_software import SharedFit, profile_with
from bench.run_slices import is_headline, throughput_cases
from hardware.calibration import Calibration
from hardware.profile import bundled_profiles, load_profile
from hardware.typical_microbench import typical_microbench


def fit_from_siblings(cases):
    """Software constants fitted on `cases`; a part with no row among them is priced from its siblings' medians."""
    fit = SharedFit(cases)
    fit.run()
    seen = {c.hardware for c in cases}
    siblings = bundled_profiles()

    def profile_for(hw: str):
        if hw in seen:
            return fit.profile(hw)
        own = load_profile(hw)
        mb, _ = typical_microbench(own, [s for s in siblings if s.name != hw])
        return profile_with(own.model_copy(update={"microbench": mb}), fit.sw)

    return profile_for


def fit_bare(cases):
    """No fit at all: the held-out part on Calibration's defaults (a profile with only datasheet numbers, before)."""
    def profile_for(hw: str):
        return load_profile(hw).model_copy(update={"calibration": Calibration()})

    return profile_for


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1, help="folds fitted in parallel (forked processes)")
    ap.add_argument("--rows", action="store_true", help="print every row's held-out error")
    args = ap.parse_args(argv)
    cases = throughput_cases()
    key = GROUPINGS["hardware"]
    for title, fit in (("leave-one-hardware-out, the part's microbenchmarks from its siblings' medians", fit_from_siblings),
                       ("the part on the bare default constants (datasheet only, before)", fit_bare)):
        errs = held_out(cases, key, fit, max(args.jobs, 1))
        print("\n".join(table(cases, errs, key, title)), flush=True)
        if args.rows:
            for c in cases:
                if is_headline(c):
                    print(f"  {c.id:<16} {c.hardware:<15} {c.model.name:<20} {100 * errs[c.id]:+.1f}%")


if __name__ == "__main__":
    main()
