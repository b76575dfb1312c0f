"""Out-of-sample throughput error: every row projected with constants fitted WITHOUT its group.

Usage: `.venv/bin/python -m bench.cross_validate [--by source,hardware,family,release] [--model transfer|per-part]
[--in-sample] [--rows] [--jobs N]`.

Why: the judged use of shardplan is a part, a model or a publication nobody fitted on. An error measured
on the rows the constants were fitted to says little about that, so each grouping below leaves one group
out in turn, refits on the rest (from the default constants, never from the stored whole-file fit) and
projects the left-out rows. Groupings (bench/run_slices.py):

- source: the publication (`source_id` prefix). All releases of the Megatron-Bridge performance summary
  (MBR) are one publication: its releases re-measure the same configurations, so leaving out one release
  would leave its configurations in the fit. NeMo documentation releases (NEMO2407 ... NEMO2507), the
  model verification cards (MBCARD), the perf skills (MBSKILL) and the long-sequence tables (NEMOLS) are
  one group each.
- hardware: the profile a row runs on. Under the transfer model the held-out part keeps its own published
  microbenchmarks (they are known before anyone trains on it); only the software constants are refitted.
- family: the model family.
- release: the source, with the performance summary split by release, as the issue's "every publication or
  release" also reads. A fold fits on no row that publishes one of its held-out configurations (`training_rows`), so
  a left-out release's configurations do not come back into the fit through the releases that re-measured them.
  Reported beside the source fold, never instead of it: its fits keep the performance summary's other
  configurations, so it tests transfer across releases and configurations, not across publishers.

Every grouping purges the held-out configurations the same way (the NeMo documentation releases re-measure some of
each other's configurations too; a part or a model family holds all of its own).

Above the tables, the release-blind reference (bench/release_spread.py): how far the same configuration moves between
Megatron-Bridge releases, which no projection from the configuration alone can remove.

Each table also gives one line per software generation (bench/run_slices.py software_generation: stack and release
year), issue 16's families as slices (NVFP4, hybrid Mamba, sliding-window, Llama 4 rows: bench/family_slices.py), the
MoE rows (`moe`, and `moe in MBR`: bench/run_slices.py moe_slices), one slice per precision recipe
(bench/run_slices.py precision_slice) and issue 32's long-context slices (`seq>=16k` and
each length from 16k on: bench/run_slices.py sequence_slices), every row at its held-out error under that table's
grouping.

Models: `transfer` (default; per-part microbenchmarks + shared software constants, bench.fit_software) and
`per-part` (the earlier per-part fit, bench.fit_calibration._Fit; a held-out part falls back to the defaults).
Rows from torch-native stacks are a separate slice that the headline excludes (see bench/run_slices.py), priced by
their own step model (measure/torch_native/step.py, `bench.runs.project_case`); no fold fits on them, and that model
has no constant fitted on them, so their error is out of sample under every grouping.
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Optional

from bench.family_slices import family_slices
from bench.fit_calibration import fit_profiles
from bench.fit_software import fit_transfer_profiles
from bench.release_spread import configuration, summary_line
from bench.run_slices import (
    is_headline,
    is_torch_native,
    model_family,
    moe_slices,
    precision_slice,
    published_regression,
    release_group,
    sequence_slices,
    software_generation,
    source_group,
    throughput_cases,
)
from bench.runs import RunCase, project_case

GROUPINGS: dict[str, Callable[[RunCase], str]] = {"source": source_group, "hardware": lambda c: c.hardware,
                                                  "family": model_family, "release": release_group}
MODELS = {"transfer": fit_transfer_profiles, "per-part": fit_profiles}


def _err(case: RunCase, profile) -> float:
    p = project_case(case, profile)  # torch-native rows by their own step model (measure/torch_native)
    return p.tokens_per_s_per_gpu / case.measured["tokens_per_s_per_gpu"] - 1.0


_FOLD: dict = {}  # what the forked fold workers read: cases, key, fit


def training_rows(cases: list[RunCase], key: Callable[[RunCase], str], group: str) -> list[RunCase]:
    """The rows a fold that leaves `group` out may fit on: headline rows of the other groups, less every row that
    publishes one of the held-out rows' configurations (bench.release_spread.configuration: the same model, system,
    precision, GPUs, batch and parallel layout). Without that purge, a configuration re-measured in another release or
    another publication would carry the held-out figure into the fit."""
    held = {configuration(c) for c in cases if key(c) == group}
    return [c for c in cases if is_headline(c) and key(c) != group and configuration(c) not in held]


def _fold(group: str) -> dict[str, float]:
    """Fit without `group`, its configurations and the torch-native or publisher-flagged rows; project the group's rows."""
    cases, key, fit = _FOLD["cases"], _FOLD["key"], _FOLD["fit"]
    profile_for = fit(training_rows(cases, key, group))
    return {c.id: _err(c, profile_for(c.hardware)) for c in cases if key(c) == group}


def held_out(cases: list[RunCase], key: Callable[[RunCase], str], fit=fit_transfer_profiles, jobs: int = 1) -> dict[str, float]:
    """Row id -> signed error of tokens/s/GPU, each group projected with constants fitted without it and without any
    other row of its configurations (`training_rows`). Torch-native and publisher-flagged rows are never fitted on;
    they are projected in the fold of their own group. `jobs` > 1 runs the folds in forked worker processes (each fold
    is independent; results are identical)."""
    _FOLD.update(cases=cases, key=key, fit=fit)
    groups = sorted({key(c) for c in cases})
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(_fold, groups))
    else:
        parts = [_fold(g) for g in groups]
    return {k: v for part in parts for k, v in part.items()}


def in_sample(cases: list[RunCase], fit=fit_transfer_profiles) -> dict[str, float]:
    """Row id -> signed error with constants fitted on every headline row (what the stored profiles hold)."""
    profile_for = fit([c for c in cases if is_headline(c)])
    return {c.id: _err(c, profile_for(c.hardware)) for c in cases}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    i = q * (len(xs) - 1)
    lo, hi = int(i), min(int(i) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


def stat_row(label: str, errs: list[float]) -> str:
    a = [100 * abs(e) for e in errs]
    if not a:
        return f"| {label} | 0 | | | | | |"
    bias = 100 * statistics.median(errs)
    return (f"| {label} | {len(a)} | {statistics.median(a):.1f} | {statistics.mean(a):.1f} | {pct(a, 0.9):.1f} | "
            f"{max(a):.1f} | {bias:+.1f} |")


HEADER = ["| slice | n | median % | mean % | p90 % | worst % | median signed % |", "|---|---:|---:|---:|---:|---:|---:|"]


def table(cases: list[RunCase], errs: dict[str, float], key: Callable[[RunCase], str], title: str,
          label: str = "held out: ") -> list[str]:
    """Headline (Megatron rows) then one line per group (`label` + group), then the excluded slices: torch-native
    rows and rows whose publisher flags a known regression (bench/run_slices.py)."""
    meg = [c for c in cases if is_headline(c)]
    lines = [f"**{title}**", ""] + HEADER + [stat_row("all Megatron-stack rows", [errs[c.id] for c in meg])]
    groups: dict[str, list[float]] = defaultdict(list)
    for c in meg:
        groups[key(c)].append(errs[c.id])
    lines += [stat_row(f"{label}{g}", v) for g, v in sorted(groups.items())]
    # issue 16's families (bench/family_slices.py) and the MoE rows (bench/run_slices.py moe_slices), each row at its
    # held-out error under this grouping
    slices: dict[str, list[float]] = defaultdict(list)
    for c in meg:
        for s in family_slices(c.model, c.job) + moe_slices(c) + sequence_slices(c) + [precision_slice(c)]:
            slices[s].append(errs[c.id])
    lines += [stat_row(f"slice: {s}", v) for s, v in sorted(slices.items())]
    generations: dict[str, list[float]] = defaultdict(list)  # bench/run_slices.py software_generation
    for c in meg:
        generations[software_generation(c)].append(errs[c.id])
    lines += [stat_row(f"software: {g}", v) for g, v in sorted(generations.items())]
    native = [errs[c.id] for c in cases if c.torch_native is not None]  # is_torch_native holds for every such row
    if native:
        lines.append(stat_row("torch-native rows (measure/torch_native step model), excluded above", native))
    # fully sharded rows of a stack with no step model of its own: priced by Megatron's projection with FSDP sharding,
    # reported apart from both (DeepSpeed's ZeRO-3 rows are refused by name: measure/deepspeed/engine.py)
    sharded_other = [errs[c.id] for c in cases if is_torch_native(c) and c.torch_native is None]
    if sharded_other:
        lines.append(stat_row("ZeRO-3 / FSDP rows of other stacks, priced as Megatron FSDP, excluded above", sharded_other))
    flagged = [errs[c.id] for c in cases if not is_torch_native(c) and published_regression(c)]
    if flagged:
        lines.append(stat_row("publisher-flagged regressions, excluded above", flagged))
    return lines + [""]


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--by", default="source,hardware,family,release", help="comma-separated groupings: source, hardware, family, release")
    ap.add_argument("--model", default="transfer", choices=sorted(MODELS), help="which constants to refit per fold")
    ap.add_argument("--in-sample", action="store_true", help="also print the in-sample table (fitted on every row)")
    ap.add_argument("--rows", action="store_true", help="print every row's held-out error")
    ap.add_argument("--jobs", type=int, default=1, help="folds fitted in parallel (forked processes)")
    args = ap.parse_args(argv)
    cases = throughput_cases()
    names = [b.strip() for b in args.by.split(",") if b.strip()]
    bad = [b for b in names if b not in GROUPINGS]
    if bad:
        raise SystemExit(f"error: --by: unknown grouping ({','.join(bad)}); use any of {', '.join(GROUPINGS)}")
    fit = MODELS[args.model]
    print(f"Model: {args.model}. Held-out |error| of tokens/s/GPU (simulated schedule); every row projected with "
          "constants fitted without its group.\n", flush=True)
    print(summary_line(cases) + "\n", flush=True)
    for name in names:
        key = GROUPINGS[name]
        errs = held_out(cases, key, fit, max(args.jobs, 1))
        print("\n".join(table(cases, errs, key, f"leave-one-{name}-out")), flush=True)
        if args.rows:
            for c in cases:
                print(f"  {c.id:<16} {key(c):<16} {c.model.name:<20} {c.hardware:<15} {100 * errs[c.id]:+.1f}%")
    if args.in_sample:
        errs = in_sample(cases, fit)
        print("\n".join(table(cases, errs, GROUPINGS["hardware"], "in-sample (fitted on every Megatron row)", label="part: ")))


if __name__ == "__main__":
    main()
