"""`sweep` states the baseline its efficiency column divides by, and no row reads above 100 %.

Found by QA (issue 31): Llama-3.1-70B on 2..16 H100 nodes read 132 % because the baseline, the smallest size that
fits (2 nodes), needs full recompute to fit, which repeats the forward pass. The baseline is now each hardware's size
with the most tokens/s/GPU, printed under the table and kept in the JSON (shardplan/sweep.py efficiency_baseline).
"""
from __future__ import annotations

import json

import pytest

from tests.helpers.builders import run_cli


def _sweep(model: str, hardware: str, seq: str, gbs: str, fmt: str = "json", *more: str) -> tuple[int, str, str]:
    return run_cli("sweep", "--model", model, "--hardware", hardware, "--nodes", "1..16", "--seq-length", seq,
                   "--global-batch-size", gbs, "--format", fmt, *more, env={"COLUMNS": "250"})


def test_llama_70b_no_longer_reads_132_percent_and_names_its_baseline():
    # the case was judged at 100 % of HBM (before the learnt 97 % limit, docs/memory.md); it is kept at that share
    code, out, _ = _sweep("Llama-3.1-70B", "h100-sxm-80gb", "8192", "128", "json", "--max-memory-fraction", "1.0")
    assert code == 0
    data = json.loads(out)
    solved = [p for p in data["points"] if p["status"] == "solved"]
    # the case: the smallest size that fits needs full recompute, the next one does not and is faster per GPU
    assert solved[0]["recipe"]["recompute"]["granularity"] == "full"
    assert solved[1]["recipe"]["recompute"]["granularity"] != "full"
    best = max(solved, key=lambda p: p["tokens_per_s_per_gpu"])
    base = data["efficiency_baselines"]["h100-sxm-80gb"]
    assert (base["nodes"], base["recipe_label"]) == (best["nodes"], best["recipe_label"])
    for p in solved:
        assert p["scaling_efficiency"] == pytest.approx(p["tokens_per_s_per_gpu"] / best["tokens_per_s_per_gpu"], rel=1e-12)
        assert p["scaling_efficiency"] <= 1.0
    assert solved[0]["scaling_efficiency"] < 0.8  # full recompute: the forward pass runs twice
    code, text, _ = _sweep("Llama-3.1-70B", "h100-sxm-80gb", "8192", "128", "table", "--max-memory-fraction", "1.0")
    assert code == 0
    line = next(ln for ln in text.splitlines() if ln.startswith("efficiency % (h100-sxm-80gb)"))
    assert f"against {base['nodes']} nodes ({base['gpus']} GPUs, {base['recipe_label']}: " in line
    cells = [ln.split()[-2] for ln in text.splitlines() if ln.startswith("h100-sxm-80gb ") and "fit" not in ln]
    assert cells and all(float(c) <= 100.0 for c in cells)


@pytest.mark.parametrize("model, hardware, seq, gbs", [
    # each smallest fitting size is memory-bound: CP 2 for Mixtral on 2 H100 nodes, MBS 1 for Llama-3.1-70B on 1 B200
    # node; both read above 100 % against it
    ("Mixtral-8x7B-v0.1", "h100-sxm-80gb", "4096", "256"), ("Llama-3.1-70B", "b200", "8192", "128")])
def test_no_row_reads_above_100_percent_when_the_smallest_size_is_memory_bound(model, hardware, seq, gbs):
    code, out, _ = _sweep(model, hardware, seq, gbs)
    assert code == 0
    data = json.loads(out)
    solved = [p for p in data["points"] if p["status"] == "solved"]
    assert max(p["tokens_per_s_per_gpu"] for p in solved) > solved[0]["tokens_per_s_per_gpu"]  # the case this is about
    assert max(p["scaling_efficiency"] for p in solved) == 1.0
    assert data["efficiency_baselines"][data["points"][0]["hardware"]]["nodes"] != solved[0]["nodes"]


def test_csv_keeps_stdout_to_the_rows_and_says_the_baseline_on_stderr():
    code, out, err = _sweep("Llama-3.1-70B", "h100-sxm-80gb", "8192", "128", fmt="csv")
    assert code == 0 and "efficiency %" in out.splitlines()[0] and "against" not in out
    assert any(ln.startswith("efficiency % (h100-sxm-80gb): tokens/s/GPU against") for ln in err.splitlines())
