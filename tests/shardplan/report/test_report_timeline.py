"""The report's pipeline timeline is the projection's own simulated step: its ops end where the simulated step
ends, its idle share is the projection's bubble fraction, dependencies hold, and the Chrome trace carries every op."""
from __future__ import annotations

import json

import pytest

from constraints.case import Case
from constraints.models.load import load_model
from constraints.read import load_check_input
from constraints.spec import JobSpec, Placement, Recipe
from hardware.profile import load_profile
from measure.projection.project import project
from shardplan.report.timeline import chrome_trace, simulate_timeline
from tests.helpers.builders import REPO

EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"


def _case(model: str, recipe: Recipe, nodes: int = 1, gbs: int = 32, hw: str = "h100-sxm-80gb") -> Case:
    return Case(model=load_model(model), job=JobSpec(seq_length=4096, global_batch_size=gbs), recipe=recipe,
                placement=Placement(hardware=hw, num_nodes=nodes, gpus_per_node=8))


CASES = {
    "interleaved example": lambda: load_check_input(str(EXAMPLE), None, None, None).case,
    "1f1b pp4": lambda: _case("Llama-3.1-8B", Recipe(tp=2, pp=4, schedule="1f1b")),
    "zb-h1 pp2": lambda: _case("Llama-3.1-8B", Recipe(tp=4, pp=2, schedule="zb-h1")),
    "no pipeline": lambda: _case("Llama-3.1-8B", Recipe(tp=8, pp=1)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_timeline_is_the_projections_simulated_step(name):
    case = CASES[name]()
    profile = load_profile(case.placement.hardware)
    proj = project(case.model, case.job, case.recipe, case.placement, profile)
    tl = simulate_timeline(case, profile)
    b = proj.breakdown
    assert tl.iteration_s == pytest.approx(proj.iteration_time_s, rel=1e-12)
    assert tl.pipeline_s + b.dp_comm + b.optimizer == pytest.approx(proj.iteration_time_s, rel=1e-9)
    ops = [e for e in tl.events if e.kind in ("F", "B", "W")]
    busy = sum(e.end_s - e.start_s for e in ops)
    assert 1 - busy / (case.recipe.pp * tl.pipeline_s) == pytest.approx(proj.bubble_fraction, abs=1e-9)
    m = tl.num_microbatches
    n_ops_per_rank = m * case.recipe.vpp * (3 if case.recipe.schedule.value == "zb-h1" else 2)
    assert len(ops) == case.recipe.pp * n_ops_per_rank
    for r in range(case.recipe.pp):  # a rank runs one op at a time
        mine = sorted((e for e in ops if e.rank == r), key=lambda e: e.start_s)
        assert all(a.end_s <= b.start_s + 1e-12 for a, b in zip(mine, mine[1:]))
    # 1F1B / ZB: micro-batch i's forward on rank r+1 starts after it ends on rank r; its backward the other way
    if case.recipe.vpp == 1 and case.recipe.pp > 1:
        end = {(e.kind, e.rank, e.microbatch): e for e in ops}
        for (kind, r, mb), e in end.items():
            if kind == "F" and r > 0:
                assert e.start_s >= end[("F", r - 1, mb)].end_s
            if kind == "B" and r < case.recipe.pp - 1:
                assert e.start_s >= end[("B", r + 1, mb)].end_s


def test_chrome_trace_holds_every_op_in_microseconds():
    case = CASES["1f1b pp4"]()
    tl = simulate_timeline(case, load_profile("h100-sxm-80gb"))
    trace = json.loads(json.dumps(chrome_trace([("Llama-3.1-8B TP2 PP4", tl)])))
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(tl.events)
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {r: f"PP rank {r}" for r in range(4)}
    last = max(xs, key=lambda e: e["ts"] + e["dur"])
    assert (last["ts"] + last["dur"]) / 1e6 == pytest.approx(tl.iteration_s, rel=1e-6)
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in xs)
    assert {e["cat"] for e in xs} >= {"forward", "backward"}
