"""Benchmark `solve` on the five scenarios of issue 5 and two hybrid Mamba ones of issue 16 (a script, not a timed test).

Reports declared space size, legal candidates, fitting candidates, the structural rows `solve` expands (solver/prune.py
bounds the rest), its pruned table build and CP-SAT solve, the exhaustive run (every row's exact tables, then a scan),
their ratio, and whether the two top-K lists agree (same recipes, same ranking times, same order).
Run: .venv/bin/python bench/speed/solve.py [scenario-name ...]
"""
from __future__ import annotations

import sys
import time

from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.cpsat.solve import solve_cpsat
from solver.exhaustive import solve_exhaustive
from solver.heap import keep_heap
from solver.space import build_space
from solver.tables.build import build_tables

# (name, model, hardware, nodes, gpus/node, seq, global batch); batch sizes as in the published recipes' ranges
SCENARIOS = [
    ("llama70b-64xh100", "Llama-3.1-70B", "h100-sxm-80gb", 8, 8, 8192, 128),
    ("mixtral8x22b-64xmi300x", "Mixtral-8x22B-v0.1", "mi300x", 8, 8, 4096, 256),
    ("qwen3-235b-256xh100", "Qwen3-235B-A22B", "h100-sxm-80gb", 32, 8, 4096, 1024),
    ("deepseekv3-1024xh800", "DeepSeek-V3", "h800-sxm-80gb", 128, 8, 4096, 4096),
    ("llama405b-16384xh100", "Llama-3.1-405B", "h100-sxm-80gb", 2048, 8, 8192, 2048),
    # hybrid Mamba-2 / attention: four layer kinds, splits as '|' segments of the pattern
    ("nemotronh56b-64xh100", "Nemotron-H-56B-Base-8K", "h100-sxm-80gb", 8, 8, 8192, 768),
    ("nemotron3nano-64xh100", "Nemotron-3-Nano-30B-A3B", "h100-sxm-80gb", 8, 8, 8192, 1024),
]


def run(name, model, hw, nodes, gpn, seq, gbs, k=10):
    m, prof = load_model(model), load_profile(hw)
    job, pl = JobSpec(seq_length=seq, global_batch_size=gbs), Placement(hardware=hw, num_nodes=nodes, gpus_per_node=gpn)
    t0 = time.perf_counter()
    pruned = build_tables(build_space(m, job, pl), prof, prune_k=k)  # what `solve` builds (solver/prune.py)
    t1 = time.perf_counter()
    cp = solve_cpsat(pruned, k)
    t2 = time.perf_counter()
    full = build_tables(build_space(m, job, pl), prof)
    ex = solve_exhaustive(full, k)
    t3 = time.perf_counter()
    same = [(r.rank_time_us, r.recipe) for r in cp.ranked] == [(r.rank_time_us, r.recipe) for r in ex.ranked]
    c, p = full.counts, pruned.counts
    rows = f"{p.get('structural_rows_expanded', p['structural_rows']):,} / {c['structural_rows']:,}"
    print(f"| {name} | {c['declared']:,} | {c['candidates']:,} | {c['fitting']:,} | {rows} | {t1 - t0:.2f} | {t2 - t1:.2f} | "
          f"{t2 - t0:.2f} | {t3 - t2:.1f} | {(t2 - t0) / max(t3 - t2, 1e-9):.2f} | {cp.proven_optimal} | {same} |", flush=True)


if __name__ == "__main__":
    keep_heap()  # as the CLI does (solver/heap.py)
    chosen = set(sys.argv[1:])
    print("| scenario | declared points | legal candidates | fitting | rows expanded / structural rows | tables s | CP-SAT s |"
          " solve total s | exhaustive total s | solve / exhaustive | proven | same top-K |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for sc in SCENARIOS:
        if not chosen or sc[0] in chosen:
            run(*sc)
