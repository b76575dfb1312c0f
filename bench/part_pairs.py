"""Does the projection tell two parts apart as the measurements do? Measured against projected speed ratio of two parts
on the same published configuration, each row projected with constants fitted without its publication.

Usage: `.venv/bin/python -m bench.part_pairs gb300-nvl72 gb200-nvl72 [--any-ep]`.

Why a ratio of pairs: a row's held-out error mixes everything the projection misses for its model and recipe; two rows
of one release that publish the same model, precision, sequence, batch, GPU count and parallel layout on two parts
(`bench.release_spread.configuration` with the part left out) share all of that, so their measured ratio isolates what
depends on the part (clocks, attention units, links), and the projected ratio says how much of it the projection has.
Issue 32 reads the split this way (GB300 / GB200 on GPT-OSS-120B: 1.23 measured, about 1.0 projected). `--any-ep`
also pairs rows that differ in expert parallelism only: the performance summary runs the 8-GPU HGX parts at EP 8 where
the NVL72 racks run EP 64, so without it no HGX / NVL72 pair of the MoE rows exists.

Every row is projected as `bench.cross_validate` projects it held out by source: with the software constants fitted on
the headline rows of the other publications, less every row that publishes one of the held-out configurations
(`bench.cross_validate.training_rows`). One fit per publication, so a run takes a few fits, not one per pair.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict

from bench.cross_validate import training_rows
from bench.fit_software import fit_transfer_profiles
from bench.release_spread import configuration
from bench.run_slices import is_headline, source_group, throughput_cases
from bench.runs import RunCase, project_case

_EP_FIELD = 10  # index of the expert-parallel size in bench.release_spread.configuration


class PartPair(BaseModel):
    """Two rows of one release that differ in the part (and, under `any_ep`, in EP); ratios are a's over b's."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    a_id: str
    b_id: str
    release: str
    model: str
    precision: str
    layout: str
    measured_ratio: float
    projected_ratio: Optional[float] = None


def pair_key(case: RunCase, any_ep: bool = False) -> tuple:
    """What two rows must share to be a pair: release and the published configuration without the part (and without
    EP under `any_ep`)."""
    conf = list(configuration(case))
    conf[1] = None  # the part
    if any_ep:
        conf[_EP_FIELD] = None
    return (case.bridge_release or source_group(case),) + tuple(conf)


def _layout(case: RunCase) -> str:
    r = case.recipe
    return f"{case.placement.world_size} GPUs tp{r.tp} pp{r.pp} vpp{r.vpp} cp{r.cp} ep{r.ep} mbs{r.mbs}"


def find_pairs(cases: list[RunCase], part_a: str, part_b: str, any_ep: bool = False) -> list[tuple[RunCase, RunCase]]:
    """(row on part_a, row on part_b) for every key both parts publish once; headline rows only (a publisher-flagged
    regression measures the release, not the part). A key a part publishes twice is skipped (no single pair)."""
    by_key: dict[tuple, dict[str, list[RunCase]]] = defaultdict(lambda: defaultdict(list))
    for c in cases:
        if c.hardware in (part_a, part_b) and is_headline(c):
            by_key[pair_key(c, any_ep)][c.hardware].append(c)
    out = []
    for key in sorted(by_key, key=str):
        rows = by_key[key]
        if len(rows[part_a]) == 1 and len(rows[part_b]) == 1:
            out.append((rows[part_a][0], rows[part_b][0]))
    return out


def held_out_ratios(pairs: list[tuple[RunCase, RunCase]], cases: list[RunCase],
                    fit: Callable = fit_transfer_profiles) -> list[PartPair]:
    """Each pair with its measured ratio and its ratio projected held out by source (see the module doc)."""
    fits: dict[str, Callable] = {}
    out = []
    for a, b in pairs:
        projected = []
        for c in (a, b):
            group = source_group(c)
            if group not in fits:
                fits[group] = fit(training_rows(cases, source_group, group))
            projected.append(project_case(c, fits[group](c.hardware)).tokens_per_s_per_gpu)
        out.append(PartPair(a_id=a.id, b_id=b.id, release=a.bridge_release or source_group(a), model=a.model.name,
                            precision=a.job.precision.value, layout=_layout(a) if a.recipe.ep == b.recipe.ep
                            else f"{_layout(a)} / ep{b.recipe.ep}",
                            measured_ratio=a.measured["tokens_per_s_per_gpu"] / b.measured["tokens_per_s_per_gpu"],
                            projected_ratio=projected[0] / projected[1]))
    return out


def report(pairs: list[PartPair], part_a: str, part_b: str) -> list[str]:
    """A markdown table, one line per pair, then the medians."""
    lines = [f"**{part_a} / {part_b}, tokens/s/GPU on the same configuration** (projected held out by source)", "",
             "| rows | release | model | precision | layout | measured | projected | projected / measured |",
             "|---|---|---|---|---|---:|---:|---:|"]
    for p in pairs:
        lines.append(f"| {p.a_id} / {p.b_id} | {p.release} | {p.model} | {p.precision} | {p.layout} | "
                     f"{p.measured_ratio:.3f} | {p.projected_ratio:.3f} | {p.projected_ratio / p.measured_ratio:.3f} |")
    if pairs:
        lines += ["", f"{len(pairs)} pairs: median measured ratio {statistics.median(p.measured_ratio for p in pairs):.3f}, "
                  f"median projected {statistics.median(p.projected_ratio for p in pairs):.3f}, median projected / measured "
                  f"{statistics.median(p.projected_ratio / p.measured_ratio for p in pairs):.3f}"]
    else:
        lines += ["", "no pairs: the two parts publish no common configuration (try --any-ep)"]
    return lines


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part_a")
    ap.add_argument("part_b")
    ap.add_argument("--any-ep", action="store_true", help="also pair rows that differ only in expert parallelism")
    args = ap.parse_args(argv)
    cases = throughput_cases()
    known = {c.hardware for c in cases}
    bad = [p for p in (args.part_a, args.part_b) if p not in known]
    if bad:
        print(f"error: part: no runs.csv row on {', '.join(bad)}; use one of {', '.join(sorted(known))}", file=sys.stderr)
        sys.exit(2)
    pairs = held_out_ratios(find_pairs(cases, args.part_a, args.part_b, args.any_ep), cases)
    print("\n".join(report(pairs, args.part_a, args.part_b)))


if __name__ == "__main__":
    main()
