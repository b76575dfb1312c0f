"""Benchmark `shardplan sweep` against one `solve` per cluster size, in the same run (a script, not a timed test).

For each scenario, three measurements, each in a fresh Python process so neither side inherits the other's caches:
- sweep: shardplan.sweep.sweep_specs over every size (screens, pruned K=1 tables, numpy scan), imports excluded;
- solves: the `solve --top 1` path per size (solver.workflow.solve_request: pruned tables, CP-SAT listing,
  the default rules proposer), imports excluded; the ratio sweep / solves is the figure;
- plain solves: the same without the proposer (`--proposer none`), which shows how much of the gain is the proposer's
  sub-searches (they only steer: the answer is the same) and how much the sharing;
- CLI: wall clock of one `shardplan sweep` process against one `shardplan solve --top 1 --json` process per size
  (start-up included, and `solve`'s nothing-fits explanation where a size has no recipe).
It also checks that both give the same best tokens/s/GPU at every size.
Run: .venv/bin/python bench/speed/sweep.py [scenario-name ...]
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# (name, model, hardware, node counts, seq, global batch)
SCENARIOS = [
    ("llama70b-h100", "Llama-3.1-70B", "h100-sxm-80gb", [1, 2, 4, 8, 16, 32], 8192, 128),
    ("mixtral8x7b-h100", "Mixtral-8x7B-v0.1", "h100-sxm-80gb", [1, 2, 4, 8, 16, 32], 4096, 256),
    ("qwen3-235b-h100", "Qwen3-235B-A22B", "h100-sxm-80gb", [4, 8, 16, 32, 64], 4096, 1024),
]


def child(kind: str, model_name: str, hw: str, nodes: list[int], seq: int, gbs: int) -> dict:
    """Run one side in this process; returns {total_s, best: tokens/s/GPU per size (None when nothing fits)}."""
    from constraints.models.load import load_model
    from constraints.spec import JobSpec, Placement
    from hardware.profile import load_profile
    from solver.heap import keep_heap

    keep_heap()  # as the CLI does
    model, job = load_model(model_name), JobSpec(seq_length=seq, global_batch_size=gbs)
    t0 = time.perf_counter()
    if kind == "sweep":
        from shardplan.sweep import sweep_specs

        result = sweep_specs(model, job, [hw], nodes)
        best = [p.tokens_per_s_per_gpu for p in result.points]
    else:
        from solver.proposer.config import ProposerConfig
        from solver.request import SolveRequest
        from solver.workflow import solve_request

        profile, best = load_profile(hw), []
        for n in nodes:
            request = SolveRequest(model=model, job=job, placement=Placement(hardware=hw, num_nodes=n, gpus_per_node=8), profile=profile,
                                   pins={}, bounds={}, top=1, margin=0.0, method="cpsat", time_limit_s=60.0,
                                   proposer=ProposerConfig(kind="rules" if kind == "solves" else "none"))
            res, _, _ = solve_request(request)
            best.append(res.ranked[0].projection.tokens_per_s_per_gpu if res.ranked else None)
    return {"total_s": time.perf_counter() - t0, "best": best}


def _in_fresh_process(kind: str, sc: tuple) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, json.dumps(sc[1:])], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cli_wall_s(sc: tuple) -> tuple[float, float]:
    _, model, hw, nodes, seq, gbs = sc
    exe = str(Path(sys.executable).parent / "shardplan")
    job = ["--model", model, "--hardware", hw, "--seq-length", str(seq), "--global-batch-size", str(gbs)]
    t0 = time.perf_counter()
    subprocess.run([exe, "sweep", *job, "--nodes", ",".join(map(str, nodes))], capture_output=True, cwd=ROOT)
    t1 = time.perf_counter()
    for n in nodes:
        subprocess.run([exe, "solve", *job, "--nodes", str(n), "--top", "1", "--json"], capture_output=True, cwd=ROOT)
    return t1 - t0, time.perf_counter() - t1


def run(sc: tuple) -> None:
    sweep_r, solves_r, plain_r = (_in_fresh_process(k, sc) for k in ("sweep", "solves", "plain"))
    same = all((a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-9 * b)
               for r in (solves_r, plain_r) for a, b in zip(sweep_r["best"], r["best"]))
    cli_sweep, cli_solves = _cli_wall_s(sc)
    fits = sum(b is not None for b in sweep_r["best"])
    print(f"| {sc[0]} | {','.join(map(str, sc[3]))} | {fits} | {sweep_r['total_s']:.2f} | {solves_r['total_s']:.2f} | "
          f"{sweep_r['total_s'] / solves_r['total_s']:.2f} | {plain_r['total_s']:.2f} | {sweep_r['total_s'] / plain_r['total_s']:.2f} | "
          f"{cli_sweep:.1f} | {cli_solves:.1f} | {cli_sweep / cli_solves:.2f} | "
          f"{'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2], *json.loads(sys.argv[3]))))
        sys.exit(0)
    chosen = set(sys.argv[1:])
    print("| scenario | nodes | sizes with a recipe | sweep s | N solves s | sweep / solves | N plain solves s | sweep / plain |"
          " CLI sweep s | CLI N solves s | CLI ratio | same best |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for sc in SCENARIOS:
        if not chosen or sc[0] in chosen:
            run(sc)
