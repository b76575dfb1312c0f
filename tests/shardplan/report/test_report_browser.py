"""The HTML report, opened in headless Chromium: its charts are drawn (SVG boxes of non-zero size, one memory
bar and one timeline row per pipeline rank, one block per simulated op), the console shows no errors, and a
full-page screenshot is kept under pytest's tmp folder.

Locally without chromium / chromedriver the test skips with the reason; CI (.ci/run) installs both and sets
SHARDPLAN_REQUIRE_BROWSER=1, so there a missing browser fails instead.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from shardplan.report.browser import find_browser, inspect_page
from shardplan.report.collect import check_report, solve_report
from shardplan.report.page import render_page
from tests.helpers.builders import REPO

EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"


@pytest.fixture(scope="module")
def browser():
    binary, driver = find_browser()
    if binary is None or driver is None:
        if os.environ.get("SHARDPLAN_REQUIRE_BROWSER") == "1":
            pytest.fail("SHARDPLAN_REQUIRE_BROWSER=1 but chromium / chromedriver are missing (apt-get install chromium chromium-driver)")
        pytest.skip("chromium and chromium-driver are not installed (apt-get install -y chromium chromium-driver)")
    pytest.importorskip("selenium", reason="selenium is in the test extra: pip install -e '.[test]'")
    return binary, driver


def _open(report, tmp_path: Path, name: str):
    html = tmp_path / f"{name}.html"
    html.write_text(render_page(report))
    facts = inspect_page(html, tmp_path / f"{name}.png")
    assert facts.screenshot.exists() and facts.screenshot.stat().st_size > 10_000
    assert facts.severe == [], facts.severe
    return facts


def test_check_report_draws_every_rank_and_op(browser, tmp_path):
    report = check_report(str(EXAMPLE))
    view = report.recipes[0]
    pp = view.recipe["pp"]
    assert pp == 4 and view.timeline is not None
    facts = _open(report, tmp_path, "check")
    # memory, time breakdown, timeline, and a close-up on the pipeline fill (64 x 5 chunks x 2 ops per rank)
    assert facts.counts["svg.chart"] == 4 and facts.empty["svg.chart"] == 0
    assert facts.counts["svg.timeline-zoom g.tl-row"] == pp and facts.empty["svg.timeline-zoom g.tl-row"] == 0
    assert facts.counts["svg.memory-chart g.mem-bar"] == pp and facts.empty["svg.memory-chart g.mem-bar"] == 0
    assert facts.counts["svg.memory-chart line.usable-line"] == 1
    assert facts.counts["svg.time-chart g.time-bar"] == 1 and facts.empty["svg.time-chart g.time-bar"] == 0
    assert facts.counts["svg.timeline-chart g.tl-row"] == pp and facts.empty["svg.timeline-chart g.tl-row"] == 0
    # every simulated op is a block: M micro-batches x VPP chunks x (F, B) per rank, plus the tail: the optimizer on
    # every rank and the exposed DP communication where there is any (shardplan/report/timeline.py)
    m, vpp = view.memory["num_microbatches"], view.recipe["vpp"]
    tail = [e for e in view.timeline.events if e.kind in ("dp", "optimizer")]
    assert sum(e.kind == "optimizer" for e in tail) == pp and sum(e.kind == "dp" for e in tail) in (0, pp)
    assert facts.counts["svg.timeline-chart rect.ev"] == len(view.timeline.events) == pp * 2 * m * vpp + len(tail)
    assert facts.empty["svg.timeline-chart rect.ev"] == 0


def test_solve_report_shows_top_k_side_by_side(browser, tmp_path):
    k = 3
    report = solve_report("Llama-3.1-8B", "h100-sxm-80gb", 1, top=k, seq_length=4096, global_batch_size=32)
    assert len(report.recipes) == k
    facts = _open(report, tmp_path, "solve")
    ranks = sum(v.recipe["pp"] for v in report.recipes)
    # side by side: one bar per recipe on the shared breakdown, plus each recipe's own; memory grid + each recipe's chart
    assert facts.counts["svg.time-chart g.time-bar"] == 2 * k and facts.empty["svg.time-chart g.time-bar"] == 0
    assert facts.counts["svg.memory-chart g.mem-bar"] == 2 * ranks and facts.empty["svg.memory-chart g.mem-bar"] == 0
    assert facts.counts["svg.timeline-chart"] == k
    assert facts.counts["svg.timeline-chart g.tl-row"] == ranks


def test_sweep_page_draws_a_point_per_solved_size(browser, tmp_path):
    from shardplan.report.sweep_page import sweep_page
    from shardplan.sweep import sweep

    result = sweep("Llama-3.1-70B", ["h100-sxm-80gb", "b200"], [1, 2, 4], seq_length=8192, global_batch_size=128)
    solved = sum(p.status == "solved" for p in result.points)
    status = {(p.hardware, p.nodes): p.status for p in result.points}
    # 70B does not fit on one 8 x H100 node; it does on 8 x B200 (how many larger sizes fit follows the memory share)
    assert status[("h100-sxm-80gb", 1)] == "no_memory_fit" and status[("b200", 1)] == "solved" and solved >= 4
    html = tmp_path / "sweep.html"
    html.write_text(sweep_page(result))
    facts = inspect_page(html, tmp_path / "sweep.png")
    assert facts.severe == [], facts.severe
    assert facts.counts["svg.sweep-chart"] == 2 and facts.empty["svg.sweep-chart"] == 0   # throughput, efficiency
    assert facts.counts["svg.sweep-chart g.series"] == 2 * 2                              # one line per hardware
    assert facts.counts["svg.sweep-chart circle.point"] == 2 * solved and facts.empty["svg.sweep-chart circle.point"] == 0


def test_a_sampled_405b_timeline_draws_its_spans_and_sampled_ops(browser, tmp_path):
    """Llama-3.1-405B on 512 H100 (262,144 ops a step): the whole-step chart draws each rank's busy spans, the
    close-up the sampled micro-batches' ops (shardplan/report/timeline.py), every one of them a visible box."""
    from hardware.profile import load_profile
    from measure.projection.project import project
    from shardplan.report.collect import recipe_view
    from shardplan.report.model import JobView, Report
    from tests.helpers.builders import make_case

    case = make_case("Llama-3.1-405B", nodes=64, seq=8192, gbs=2048, tp=8, pp=16, vpp=8, cp=2, mbs=1,
                     sequence_parallel=True, schedule="interleaved", account_for_embedding_in_pipeline_split=True,
                     account_for_loss_in_pipeline_split=True)
    profile = load_profile("h100-sxm-80gb")
    view = recipe_view(case, True, True, [], [], None, project(case.model, case.job, case.recipe, case.placement, profile),
                       dp=2, expert_dp=2, profile=profile, title="#1 TP8 PP16 VPP8")
    job = JobView(model="Llama-3.1-405B", hardware="h100-sxm-80gb", nodes=64, gpus_per_node=8, world_size=512,
                  seq_length=8192, global_batch_size=2048, precision="bf16")
    tl = view.timeline
    assert tl.sampled
    facts = _open(Report(kind="check", job=job, recipes=[view]), tmp_path, "sampled")
    assert facts.counts["svg.timeline-chart g.tl-row"] == 16 and facts.counts["svg.timeline-zoom g.tl-row"] == 16
    assert facts.counts["svg.timeline-chart rect.span"] == len(tl.spans) and facts.empty["svg.timeline-chart rect.span"] == 0
    tail = sum(e.microbatch is None for e in tl.events)
    assert facts.counts["svg.timeline-chart rect.ev"] == tail  # the whole step: spans and the DP / optimizer tail only
    assert 0 < facts.counts["svg.timeline-zoom rect.ev"] <= len(tl.events) - tail
