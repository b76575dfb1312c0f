"""QA findings on `solve`'s own output: `bound` in the objective's unit, option names in schema errors, and a target
that no objective reads."""
from __future__ import annotations

import json

from click.testing import CliRunner

from solver.cli import cli

BASE = ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--seq-length", "4096",
        "--global-batch-size", "16", "--proposer", "none", "--pp", "1..2", "--vpp", "1", "--mbs", "1..2", "--cp", "1"]


def _json(args):
    res = CliRunner().invoke(cli, BASE + args + ["--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_memory_bound_is_in_bytes_and_equals_the_smallest_peak():
    d = _json(["--objective", "memory", "--top", "2"])
    assert d["bound_unit"].startswith("bytes") and d["proven_optimal"]
    assert d["bound"] == d["best_objective"] == d["recipes"][0]["memory"]["peak_bytes"]
    thr = _json(["--top", "1"])
    assert thr["bound_unit"].startswith("s ") and thr["bound"] == thr["best_ranking_time_s"]
    assert thr["bound"] <= d["best_ranking_time_s"]  # the throughput optimum bounds every recipe's ranking time


def test_schema_limits_name_the_option():
    res = CliRunner().invoke(cli, ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1",
                                   "--seq-length", "4096", "--global-batch-size", "1000000000"])
    assert res.exit_code != 0
    assert "--global-batch-size" in res.output and "16777216" in res.output and "validation error" not in res.output


def test_target_without_fewest_gpus_is_refused():
    res = CliRunner().invoke(cli, BASE + ["--target-tokens-per-s", "1000"])
    assert res.exit_code != 0 and "--objective fewest-gpus" in res.output
