"""Pipeline simulator vs closed forms (Narayanan et al. 2021; Qi et al. 2023) and the memory model's in-flight counts."""
import random

import pytest

from constraints.memory.in_flight import inflight_chunks
from constraints.spec import PipelineSchedule as S
from constraints.spec import Recipe
from measure.pipeline.simulator import closed_form_s, simulate


def _equal(p, v, f=1.0, b=2.0, w=0.0):
    return [[f / v] * v for _ in range(p)], [[b / v] * v for _ in range(p)], [[w / v] * v for _ in range(p)]


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (8, 32), (4, 3)])
def test_1f1b_matches_closed_form_exactly(p, m):
    f, b, w = _equal(p, 1)
    r = simulate(S.one_f_one_b, f, b, w, m)
    assert r.step_time_s == pytest.approx((m + p - 1) * 3.0)
    assert r.bubble_fraction == pytest.approx((p - 1) / (m + p - 1))


@pytest.mark.parametrize("p,v,m", [(4, 2, 8), (4, 4, 8), (8, 2, 32), (2, 3, 6)])
def test_interleaved_matches_closed_form(p, v, m):
    f, b, w = _equal(p, v)
    r = simulate(S.interleaved, f, b, w, m)
    assert r.step_time_s == pytest.approx(closed_form_s(S.interleaved, 1.0, 2.0, 0.0, p, v, m))


@pytest.mark.parametrize("p,m", [(4, 8), (8, 32)])
def test_zero_bubble_h1_closed_form(p, m):
    f, b, w = _equal(p, 1, 1.0, 1.0, 1.0)
    r = simulate(S.zb_h1, f, b, w, m)
    assert r.step_time_s == pytest.approx(closed_form_s(S.zb_h1, 1.0, 1.0, 1.0, p, 1, m))
    # strictly better than 1F1B with W folded into B
    assert r.step_time_s < (m + p - 1) * 3.0


@pytest.mark.parametrize("p,m", [(4, 8), (8, 32)])
def test_zbv_within_ten_percent_of_closed_form(p, m):
    """Stated tolerance: the greedy V schedule is within 10% of the V-shape closed form for m >= 2p."""
    f, b, w = _equal(p, 2, 1.0, 1.0, 1.0)
    r = simulate(S.zbv, f, b, w, m)
    assert r.step_time_s == pytest.approx(closed_form_s(S.zbv, 1.0, 1.0, 1.0, p, 2, m), rel=0.10)


@pytest.mark.parametrize("sched,p,v,m", [(S.one_f_one_b, 4, 1, 8), (S.one_f_one_b, 8, 1, 4), (S.interleaved, 4, 2, 8),
                                         (S.interleaved, 4, 4, 12), (S.zb_h1, 4, 1, 8), (S.zbv, 4, 2, 16)])
def test_inflight_counts_equal_memory_model(sched, p, v, m):
    f, b, w = _equal(p, v, 1.0, 1.0, 1.0)
    r = simulate(sched, f, b, w, m)
    recipe = Recipe(pp=p, vpp=v if sched == S.interleaved else 1, schedule=sched)
    assert list(r.peak_inflight) == [inflight_chunks(recipe, i, m) for i in range(p)]


def test_zbv_does_not_deadlock_when_the_turn_waits_on_p2p():
    """PP=1, two chunks, slow p2p: the second micro-batch's chunk-0 forward is ready before the first's
    chunk-1 forward; taking it used to fill the 2-chunk limit and leave the V's turn waiting on itself."""
    f, b, w = _equal(1, 2, 1.0, 1.0, 1.0)
    r = simulate(S.zbv, f, b, w, 2, p2p_s=0.5)
    assert list(r.peak_inflight) == [2]
    assert r.busy_s[0] == pytest.approx(2 * 3.0)


def _sweep_cases():
    rng = random.Random(7)
    for sched, v in ((S.zb_h1, 1), (S.zbv, 2)):
        for p in range(1, 7):
            for m in range(1, 13):
                for p2p in (0.0, 0.4):
                    times = [[[rng.uniform(0.1, 2.0) for _ in range(v)] for _ in range(p)] for _ in range(3)]
                    yield sched, p, v, m, p2p, times


def test_zero_bubble_sweep_finishes_within_the_memory_model():
    """Brute sweep over PP, M, p2p and random per-chunk times: every zero-bubble schedule completes, does all
    the work, and never holds more chunks than constraints.memory.in_flight.inflight_chunks (memory is never understated)."""
    for sched, p, _v, m, p2p, (f, b, w) in _sweep_cases():
        r = simulate(sched, f, b, w, m, p2p)
        for i in range(p):
            assert r.busy_s[i] == pytest.approx(m * (sum(f[i]) + sum(b[i]) + sum(w[i])))
            assert 1 <= r.peak_inflight[i] <= inflight_chunks(Recipe(pp=p, schedule=sched), i, m), (sched, p, m, p2p)


@pytest.mark.parametrize("p,m", [(4, 2), (4, 3), (4, 5), (8, 3), (8, 8), (8, 9), (6, 12)])
def test_zbv_inflight_below_two_pp_microbatches(p, m):
    """With equal times the V holds min(M + 1 + rank, 2M, 2PP) chunks on rank `rank`: every micro-batch's
    chunk-0 forward is in before the first backward returns, and the deeper ranks also hold chunk-1
    forwards. The memory model's min(2PP, 2M) equals it for M >= 2PP and bounds it from above below that."""
    f, b, w = _equal(p, 2, 1.0, 1.0, 1.0)
    r = simulate(S.zbv, f, b, w, m)
    assert list(r.peak_inflight) == [min(m + 1 + i, 2 * m, 2 * p) for i in range(p)]
