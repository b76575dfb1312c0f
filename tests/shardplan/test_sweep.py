"""`shardplan sweep`: at every size its best recipe is the one `solve` ranks first (same recipe, same ranking time),
sizes proven empty by the screens are ones where `solve` finds nothing too, and the efficiency and training-budget
columns follow from the projected throughput."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from constraints.memory.allocator import DEFAULT_MEMORY_FRACTION
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from shardplan.sweep import SweepResult, parse_nodes, sweep
from solver.workflow import solve_case
from tests.helpers.builders import REPO

ROOT = REPO


# the NVL72 rows change the scale-up domain with the size (4, 8, 16 GPUs), which keys the layer costs the sweep shares
@pytest.mark.parametrize("model_name, hw, gpn, seq, gbs, nodes", [
    ("Llama-3.1-70B", "h100-sxm-80gb", 8, 8192, 128, [1, 2, 4, 8]),
    ("Mixtral-8x7B-v0.1", "h100-sxm-80gb", 8, 4096, 64, [1, 2, 4]),
    ("Qwen3-30B-A3B", "gb200-nvl72", 4, 4096, 64, [1, 2, 4])])
def test_sweep_best_is_the_solves_first_answer_at_every_size(model_name, hw, gpn, seq, gbs, nodes):
    model, job = load_model(model_name), JobSpec(seq_length=seq, global_batch_size=gbs)
    result = sweep(model_name, hw, nodes, seq_length=seq, global_batch_size=gbs, gpus_per_node=gpn)
    assert [p.nodes for p in result.points] == nodes
    for p in result.points:
        solved, _ = solve_case(model, job, Placement(hardware=hw, num_nodes=p.nodes, gpus_per_node=gpn), load_profile(hw),
                               {}, {}, 1, 1.0 - DEFAULT_MEMORY_FRACTION, "cpsat", 60.0)  # sweep's default limit
        if p.status != "solved":
            assert solved.ranked == [], (p.nodes, p.status)
            continue
        best = solved.ranked[0]
        assert p.recipe == best.recipe.model_dump(mode="json")
        assert p.tokens_per_s_per_gpu == pytest.approx(best.projection.tokens_per_s_per_gpu, rel=1e-12)
        assert p.peak_bytes == best.check.memory.peak_bytes and p.peak_bytes <= p.usable_bytes
    # Llama-3.1-70B's 18 B/parameter of static state cannot fit on 8 x 80 GB: proven without tables
    if model_name == "Llama-3.1-70B":
        assert result.points[0].status == "no_memory_fit"


def test_efficiency_and_budget_follow_from_throughput():
    tokens, usd = 1e12, 2.5
    import shardplan

    result = shardplan.sweep("Llama-3.1-8B", "h100-sxm-80gb", "1..4", seq_length=8192, global_batch_size=64, train_tokens=tokens,
                   usd_per_gpu_hour=usd)
    solved = [p for p in result.points if p.status == "solved"]
    best = max(p.tokens_per_s_per_gpu for p in solved)  # the efficiency baseline: the size with the most tokens/s/GPU
    assert len(solved) == 3 and max(p.scaling_efficiency for p in solved) == 1.0
    for p in solved:
        assert p.tokens_per_s == pytest.approx(p.tokens_per_s_per_gpu * p.gpus, rel=1e-12)
        assert p.scaling_efficiency == pytest.approx(p.tokens_per_s_per_gpu / best, rel=1e-12)
        assert p.train_time_s == pytest.approx(tokens / p.tokens_per_s, rel=1e-12)
        assert p.gpu_hours == pytest.approx(p.train_time_s * p.gpus / 3600, rel=1e-12)
        assert p.cost_usd == pytest.approx(p.gpu_hours * usd, rel=1e-12)
        # the step moves GBS x seq tokens on the whole cluster
        assert p.step_time_s * p.tokens_per_s == pytest.approx(64 * 8192, rel=1e-9)


@pytest.mark.parametrize("text, nodes", [("1..64", [1, 2, 4, 8, 16, 32, 64]), ("3..20", [3, 6, 12, 20]),
                                         ("8..32+8", [8, 16, 24, 32]), ("4,1,2,2", [1, 2, 4]), ("5", [5])])
def test_parse_nodes(text, nodes):
    assert parse_nodes(text) == nodes


@pytest.mark.parametrize("text", ["0..8", "8..4", "a,b", "", "1..8+0", "1..100000+1"])
def test_parse_nodes_refuses_with_the_fix(text):
    with pytest.raises(ValueError, match="^--nodes: "):
        parse_nodes(text)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shardplan.cli.main", "sweep", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb",
                           "--seq-length", "8192", "--global-batch-size", "64", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_sweep_cli_formats(tmp_path):
    js = _cli("--nodes", "1,2", "--format", "json", "--train-tokens", "1e11", "--usd-per-gpu-hour", "2")
    assert js.returncode == 0, js.stderr
    result = SweepResult.model_validate(json.loads(js.stdout))
    schema = json.loads(subprocess.run([sys.executable, "-m", "shardplan.cli.main", "schema", "sweep"], capture_output=True, text=True,
                                       cwd=ROOT, timeout=120, check=True).stdout)
    assert schema["title"] == "SweepResult" and set(json.loads(js.stdout)) <= set(schema["properties"])
    assert [p.gpus for p in result.points] == [8, 16] and all(p.cost_usd > 0 for p in result.points)
    out = _cli("--nodes", "1,2", "--format", "csv", "--report", str(tmp_path / "s.html"))
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [int(r["GPUs"]) for r in rows] == [8, 16]
    assert float(rows[1]["tokens/s/GPU"]) == pytest.approx(result.points[1].tokens_per_s_per_gpu, abs=0.5)
    page = (tmp_path / "s.html").read_text()
    assert page.count("class='series'") == 2 and "<script" not in page  # throughput and efficiency, one hardware


def test_sweep_cli_refuses_bad_input_with_one_line():
    res = _cli("--nodes", "8..2")
    assert res.returncode == 2 and res.stderr.startswith("error: --nodes: ") and len(res.stderr.strip().splitlines()) == 1
    res = _cli("--nodes", "1", "--usd-per-gpu-hour", "2")
    assert res.returncode == 2 and res.stderr.startswith("error: --usd-per-gpu-hour: ")
