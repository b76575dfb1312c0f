"""What the rules proposer adds when nothing fits, as a ratio against the table build of the same run (a script, not a
timed test; tests/solver/test_nothing_fits_explanation.py holds the behaviour: no rounds, no sub-searches).

Scenario: DeepSeek-V3 on 8 H800 nodes (64 GPUs), seq 4096, GBS 512: ~12 TB of weights and optimizer state, nothing
fits. The proposer used to run 4 sub-searches and a CP-SAT infeasibility proof over ~1.1 M candidates (~180 s on 2
cores); now the tables say nothing fits and it stops. Target: proposer / table build <= 1.0 (it used to be ~40x).
Run: .venv/bin/python bench/speed/nothing_fits.py
"""
from __future__ import annotations

import time

from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.heap import keep_heap
from solver.proposer.loop import ProposerConfig, solve_with_proposer
from solver.space import build_space
from solver.tables.build import build_tables

TARGET_RATIO = 1.0


def main() -> int:
    keep_heap()
    model, prof = load_model("DeepSeek-V3"), load_profile("h800-sxm-80gb")
    job, pl = JobSpec(seq_length=4096, global_batch_size=512), Placement(hardware="h800-sxm-80gb", num_nodes=8, gpus_per_node=8)
    t0 = time.perf_counter()
    tables = build_tables(build_space(model, job, pl), prof, 0.0)
    t1 = time.perf_counter()
    result, report = solve_with_proposer(tables, 8, config=ProposerConfig(kind="rules", max_rounds=1, max_subsearches_per_round=1))
    t2 = time.perf_counter()
    build_s, proposer_s = t1 - t0, t2 - t1
    ratio = proposer_s / build_s
    print(f"table build {build_s:.2f} s (baseline), proposer on nothing-fits {proposer_s:.2f} s: ratio {ratio:.2f} "
          f"(target <= {TARGET_RATIO}); answers {len(result.ranked)}, stopped: {report.stopped}")
    return 0 if ratio <= TARGET_RATIO and not result.ranked else 1


if __name__ == "__main__":
    raise SystemExit(main())
