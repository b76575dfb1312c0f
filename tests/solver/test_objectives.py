"""Objectives beyond throughput: memory headroom (exact peak) and fewest GPUs for a throughput target."""
from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.cpsat.solve import fitting_index, solve_cpsat
from solver.exhaustive import solve_exhaustive
from solver.space import build_space
from solver.tables.build import build_tables

PINS = {"vpp": [1, 2], "mbs": [1, 2], "cp": [1, 2], "recompute": ["none", "selective:core_attn", "full:uniform:1"]}


def _tables():
    job = JobSpec(seq_length=4096, global_batch_size=16)
    pl = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    return build_tables(build_space(load_model("Llama-3.1-8B"), job, pl, pins=PINS), load_profile("h100-sxm-80gb"))


def test_memory_objective_returns_smallest_exact_peaks_in_order():
    t = _tables()
    cp = solve_cpsat(t, k=4, objective="memory", cpsat_enumeration=True)
    ex = solve_exhaustive(t, k=4, objective="memory")
    assert [r.key for r in cp.ranked] == [r.key for r in ex.ranked] and cp.proven_optimal
    peaks = [r.check.memory.peak_bytes for r in cp.ranked]
    assert peaks == sorted(peaks)
    fit = t.cand_peak[t.cand_peak <= t.usable_bytes]
    assert peaks[0] == int(fit.min())  # memory_report's peak of the answer is the smallest any candidate has
    assert cp.stats["best_objective"] == peaks[0]


def test_throughput_and_memory_objectives_differ():
    t = _tables()
    fast = t.cand_time_us[fitting_index(t)[0]]
    lean = fitting_index(t, objective="memory")[0]
    assert t.cand_time_us[lean] > fast and t.cand_peak[lean] == t.cand_peak[t.cand_peak <= t.usable_bytes].min()


def test_cli_fewest_gpus_stops_at_first_node_count_reaching_target():
    from shardplan.cli.main import cli

    base = ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "3", "--seq-length", "4096",
            "--global-batch-size", "48", "--top", "2", "--vpp", "1..2", "--mbs", "1..2", "--cp", "1..2", "--pp", "1..2",
            "--proposer", "none", "--json"]
    one = json.loads(CliRunner().invoke(cli, base[:6] + ["1"] + base[7:]).output)
    per_node = one["recipes"][0]["projection"]["tokens_per_s_per_gpu"] * 8
    res = CliRunner().invoke(cli, base + ["--objective", "fewest-gpus", "--target-tokens-per-s", str(1.5 * per_node)])
    data = json.loads(res.output)
    tried = data["fewest_gpus"]["tried"]
    # 1 node is solved, or skipped because its throughput bound is already below the target
    assert tried[0]["nodes"] == 1 and (tried[0].get("skipped") == "throughput_bound" or np.isclose(tried[0]["tokens_per_s"], per_node))
    assert data["nodes"] == tried[-1]["nodes"] >= 2 and tried[-1]["tokens_per_s"] >= 1.5 * per_node
    assert all((t["tokens_per_s"] or 0.0) < 1.5 * per_node for t in tried[:-1])
    bad = CliRunner().invoke(cli, base + ["--objective", "fewest-gpus"])
    assert bad.exit_code == 2 and "--target-tokens-per-s" in bad.output


def test_cli_rejects_non_positive_sizes_in_one_line():
    from shardplan.cli.main import cli

    base = ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--seq-length", "4096",
            "--global-batch-size", "16", "--proposer", "none"]
    for bad in (["--tp", "0"], ["--pp", "-2"], ["--mbs", "0..4"]):
        res = CliRunner().invoke(cli, base + bad)
        assert res.exit_code == 2 and "positive integers" in res.output and res.output.count("\n") == 1, res.output


def test_full_model_is_valid_and_explains_memory_when_nothing_fits():
    """Many candidates that do not fit (Llama-3.1-70B on one node): the full CP-SAT model must stay a valid
    int64 model (an unpriced-candidate sentinel of 2^50 once overflowed its objective bound), and the
    explanation must name the memory limit, with more nodes as the remedy."""
    from solver.cpsat.model import build_model
    from solver.explain import explain_infeasible

    model = load_model("Llama-3.1-70B")
    job = JobSpec(seq_length=8192, global_batch_size=64)
    pl = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    prof = load_profile("h100-sxm-80gb")
    t = build_tables(build_space(model, job, pl), prof)
    assert t.counts["candidates"] > 8000 and t.counts["fitting"] == 0
    assert build_model(t).model.validate() == ""
    res = solve_cpsat(t, k=3)
    assert res.ranked == [] and res.proven_optimal
    out = explain_infeasible(model, job, pl, prof, {}, {}, 0.0)
    assert out["conflict"] == ["memory_fits"] and "use 2 nodes" in out["remedies"]
