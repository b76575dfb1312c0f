"""A report stays a few MiB whatever the job (issue 33): Llama-3.1-405B on 512 H100 simulates 10^5-10^6 ops per
recipe, which drawn one SVG element each made a 141-281 MiB page (`--top 20` held 3.9 GiB and crashed). The timeline
keeps a bounded sample of whole micro-batches plus every rank's busy spans, and the page says what it draws; the
figures (bubble, busy time) still come from every op."""
from __future__ import annotations

import json

import pytest

from hardware.profile import load_profile
from measure.projection.project import project
from shardplan.report.collect import recipe_view
from shardplan.report.model import JobView, Report
from shardplan.report.page import render_page
from shardplan.report.timeline import PAGE_MAX_OPS, chrome_trace, simulate_timeline
from tests.helpers.builders import make_case

MIB = 1 << 20


@pytest.fixture(scope="module")
def big_case():
    # the third answer `report solve --model Llama-3.1-405B --nodes 64 --seq-length 8192 --global-batch-size 2048`
    # gives (DP2): 1,024 micro-batches x 16 ranks x 8 chunks x (F, B) = 262,144 ops
    return make_case("Llama-3.1-405B", nodes=64, seq=8192, gbs=2048, tp=8, pp=16, vpp=8, cp=2, mbs=1,
                     sequence_parallel=True, schedule="interleaved", account_for_embedding_in_pipeline_split=True,
                     account_for_loss_in_pipeline_split=True)  # 126 layers + 2 = 128 slots = PP16 x VPP8


def test_a_405b_step_is_sampled_and_its_figures_come_from_every_op(big_case):
    profile = load_profile("h100-sxm-80gb")
    tl = simulate_timeline(big_case, profile)
    assert tl.num_microbatches == 1024 and tl.total_ops == 1024 * 16 * 8 * 2
    assert tl.sampled and 1 <= tl.sampled_microbatches < 1024
    drawn = [e for e in tl.events if e.microbatch is not None]
    assert len(drawn) <= PAGE_MAX_OPS and {e.microbatch for e in drawn} == set(range(tl.sampled_microbatches))
    # every op is in a span, and the spans hold each rank's whole busy time
    assert sum(s.ops for s in tl.spans) == tl.total_ops
    for r in range(tl.pp):
        assert sum(s.busy_s for s in tl.spans if s.rank == r) == pytest.approx(tl.rank_busy_s[r], rel=1e-9)
    proj = project(big_case.model, big_case.job, big_case.recipe, big_case.placement, profile)
    idle = 1 - sum(tl.rank_busy_s) / (tl.pp * tl.pipeline_s)
    assert idle == pytest.approx(proj.bubble_fraction, abs=1e-9)
    assert tl.shown().startswith(f"micro-batches 0-{tl.sampled_microbatches - 1} of 1,024 op by op")


def test_a_20_recipe_405b_page_stays_under_4_mib_and_says_what_it_draws(big_case):
    profile = load_profile("h100-sxm-80gb")
    k = 20  # `report solve --top 20`: the page splits its drawing budget between the recipes
    view = recipe_view(big_case, True, True, [], [], None, project(big_case.model, big_case.job, big_case.recipe,
                       big_case.placement, profile), dp=2, expert_dp=2, profile=profile, title="#1 TP8 PP16 VPP8",
                       share=k)
    job = JobView(model="Llama-3.1-405B", hardware="h100-sxm-80gb", nodes=64, gpus_per_node=8, world_size=512,
                  seq_length=8192, global_batch_size=2048, precision="bf16")
    page = render_page(Report(kind="solve", job=job, recipes=[view] * k))
    assert len(page.encode()) < 4 * MIB
    assert page.count("drawn: micro-batches 0-") == k and "busy (all ops, aggregated)" in page
    trace = json.dumps(chrome_trace([(f"#{i}", view.timeline) for i in range(k)]))
    assert len(trace.encode()) < 4 * MIB
    assert json.loads(trace)["otherData"]["shown"]["#0"] == view.timeline.shown()


def test_a_small_step_is_drawn_whole():
    tl = simulate_timeline(make_case("Llama-3.1-8B", tp=2, pp=4, gbs=32), load_profile("h100-sxm-80gb"))
    assert not tl.sampled and tl.spans == []
    assert sum(e.microbatch is not None for e in tl.events) == tl.total_ops == 4 * tl.num_microbatches * 2
    assert tl.shown() == f"every op of all {tl.num_microbatches} micro-batches"
