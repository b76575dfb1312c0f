"""Projected vs measured throughput over every expressible row of runs.csv.

Usage: `.venv/bin/python -m bench.validate_projection [--csv PATH] [--rows]`. Prints a markdown summary:
median / mean / p90 / worst absolute % error of tokens/s/GPU and TFLOP/s/GPU by hardware and precision,
Spearman's rho on groups of rows that differ only in recipe, and the skipped rows with reasons.
Constants come from the hardware profiles: each part's published microbenchmarks plus the software constants fitted
on the whole file (bench/fit_calibration.py), so these figures are IN-SAMPLE; the out-of-sample figures are
`python -m bench.cross_validate` (leave one source / part / model family out).
On top of bench.runs' assumptions (which take Megatron-Bridge rows' unstated MoE fields from their release's
benchmark preset, bench/mbridge_presets.py), other MoE rows get a dispatcher (`assume_moe_dispatcher`).
"""
from __future__ import annotations

import argparse
import csv
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Optional

from bench.family_slices import family_slices  # noqa: E402
from bench.runs import RUNS_CSV, RunCase, load_all, project_case
from constraints.spec import MoeDispatcher
from hardware.profile import HardwareProfile, load_profile
from measure.comm.topology import recipe_groups as rank_groups

METRICS = ("tokens_per_s_per_gpu", "tflops_per_gpu")
_NODE_AWARE = re.compile(r"hybrid-?ep|deepep|flex", re.I)
_PLAIN_A2A = re.compile(r"alltoall dispatcher|a2a dispatcher", re.I)


def _row_notes(csv_path: str | Path) -> dict[str, str]:
    with open(csv_path, newline="") as fh:
        return {r["source_id"]: r.get("notes", "") for r in csv.DictReader(fh)}


def assume_moe_dispatcher(cases: list[RunCase], csv_path: str | Path = RUNS_CSV) -> list[RunCase]:
    """Fill the MoE dispatcher a row leaves unstated (bench.runs takes alltoall for all): flex (DeepEP /
    HybridEP) when the notes name it, or when the EP group spans more than one scale-up domain, as NVIDIA's
    tuned cross-node EP recipes do (yanring/Megatron-MoE-ModelZoo best_practice/Qwen3: "Cross-node EP
    strategy ... DeepEP"; DeepSeek-V3 likewise); alltoall when the notes say so or EP stays in one domain.
    Rows whose dispatcher bench.runs took from their release's Megatron-Bridge preset keep it."""
    notes = _row_notes(csv_path)
    out = []
    for c in cases:
        text = notes.get(c.id, "")
        if not c.model.is_moe or _PLAIN_A2A.search(text) or any(a.startswith("moe_dispatcher=") for a in c.assumed):
            out.append(c)
            continue
        span = rank_groups(c.recipe, load_profile(c.hardware), c.placement).ep
        if _NODE_AWARE.search(text) or span.num_domains > 1:
            c = c.model_copy(update={"recipe": c.recipe.model_copy(update={"moe_dispatcher": MoeDispatcher.flex}),
                                     "assumed": c.assumed + ("moe_dispatcher=flex",)})
        out.append(c)
    return out


def evaluate(cases: list[RunCase], profiles: Optional[dict[str, HardwareProfile]] = None) -> list[dict]:
    """One record per ran row with a measured throughput: projected and measured values per metric."""
    profiles = profiles or {}
    out = []
    for c in cases:
        if c.outcome != "ran" or not any(k in c.measured for k in METRICS):
            continue
        prof = profiles.get(c.hardware) or load_profile(c.hardware)
        p = project_case(c, prof)
        rec = {"id": c.id, "model": c.model.name, "hardware": c.hardware, "precision": c.job.precision.value, "case": c,
               "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu, "tflops_per_gpu": p.model_tflops_per_gpu}
        for k in METRICS:
            if k in c.measured:
                rec[f"measured_{k}"] = c.measured[k]
                rec[f"err_{k}"] = rec[k] / c.measured[k] - 1.0
        out.append(rec)
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    i = q * (len(xs) - 1)
    lo = int(i)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


def stats(errs: list[float]) -> dict[str, float]:
    a = [abs(e) * 100 for e in errs]
    return {"n": len(a), "median": statistics.median(a) if a else float("nan"), "mean": statistics.mean(a) if a else float("nan"),
            "p90": _pct(a, 0.9), "worst": max(a) if a else float("nan")}


def _ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float("nan")


def recipe_groups(records: list[dict]) -> dict[tuple, list[dict]]:
    """Rows with the same model, hardware, GPUs, precision, sequence and global batch: only the recipe differs."""
    g: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        c = r["case"]
        if "measured_tokens_per_s_per_gpu" in r:
            g[(c.model.name, c.hardware, c.placement.world_size, c.job.precision.value, c.job.seq_length, c.job.global_batch_size)].append(r)
    return {k: v for k, v in g.items() if len({x["case"].recipe for x in v}) >= 3}


def summary(records: list[dict], skips: list) -> str:
    lines = ["| metric | slice | n | median % | mean % | p90 % | worst % |", "|---|---|---:|---:|---:|---:|---:|"]
    for k in METRICS:
        rows = [r for r in records if f"err_{k}" in r]
        slices = [("all", rows)]
        slices += [(f"hw={h}", [r for r in rows if r["hardware"] == h]) for h in sorted({r["hardware"] for r in rows})]
        slices += [(f"prec={p}", [r for r in rows if r["precision"] == p]) for p in sorted({r["precision"] for r in rows})]
        fams = {r["id"]: family_slices(r["case"].model, r["case"].job) for r in rows}
        slices += [(f"family={f}", [r for r in rows if f in fams[r["id"]]]) for f in sorted({f for v in fams.values() for f in v} - {"nvfp4"})]
        for name, sub in slices:
            s = stats([r[f"err_{k}"] for r in sub])
            lines.append(f"| {k} | {name} | {s['n']} | {s['median']:.1f} | {s['mean']:.1f} | {s['p90']:.1f} | {s['worst']:.1f} |")
    groups = recipe_groups(records)
    lines += ["", "Spearman rho, projected vs measured tokens/s/GPU, groups differing only in recipe (>= 3 distinct recipes):", ""]
    lines += ["| model | hardware | GPUs | precision | n | distinct recipes | rho |", "|---|---|---:|---|---:|---:|---:|"]
    rhos = []
    for k, v in sorted(groups.items(), key=lambda kv: str(kv[0])):
        rho = spearman([x["tokens_per_s_per_gpu"] for x in v], [x["measured_tokens_per_s_per_gpu"] for x in v])
        rhos.append(rho)
        distinct = len({x["case"].recipe for x in v})
        lines.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {len(v)} | {distinct} | {rho:.2f} |")
    if rhos:
        lines.append(f"\nmedian rho over {len(rhos)} groups: {statistics.median(rhos):.2f} (rows with equal recipes, e.g. one "
                     "recipe re-measured across software releases, tie in the projection, so rho also counts release-to-release spread)")
    reasons: dict[str, int] = defaultdict(int)
    for s in skips:
        reasons[s.reason if "not bundled" not in s.reason else "model not bundled (hybrid Mamba/other) and row has no shape"] += 1
    lines += ["", f"Skipped rows: {len(skips)}", ""] + [f"- {n} x {r}" for r, n in sorted(reasons.items(), key=lambda x: -x[1])]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=str(RUNS_CSV))
    ap.add_argument("--rows", action="store_true", help="also print every row")
    args = ap.parse_args(argv)
    cases, skips = load_all(args.csv)
    records = evaluate(assume_moe_dispatcher(cases, args.csv))
    if args.rows:
        print("| id | model | hardware | precision | tok/s/GPU proj | meas | err % |\n|---|---|---|---|---:|---:|---:|")
        for r in records:
            if "err_tokens_per_s_per_gpu" in r:
                print(f"| {r['id']} | {r['model']} | {r['hardware']} | {r['precision']} | {r['tokens_per_s_per_gpu']:.0f} | "
                      f"{r['measured_tokens_per_s_per_gpu']:.0f} | {100 * r['err_tokens_per_s_per_gpu']:+.1f} |")
        print()
    print(summary(records, skips))


if __name__ == "__main__":
    main()
