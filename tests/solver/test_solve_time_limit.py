"""`--max-time`: one wall-clock limit for the whole solve; past it the solve stops and says so in one line."""
from __future__ import annotations

import math
import threading
import time

import pytest

import shardplan
from boundary.errors import InputRefused
from solver.deadline import SolveTimeLimit, remaining_s, wall_clock_limit

BIG = dict(model="Qwen3-235B-A22B", hardware="h100-sxm-80gb", nodes=32, gpus_per_node=8, seq_length=4096,
           global_batch_size=1024, top=3)


def test_a_long_solve_stops_at_the_limit_with_the_reason():
    start = time.monotonic()
    with pytest.raises(SolveTimeLimit, match=r"--max-time: the solve did not finish within 0.3 s"):
        shardplan.solve(**BIG, max_time_s=0.3)
    assert time.monotonic() - start < 0.3 + 2.0  # model and profile loading come before the limit starts


def test_a_solve_inside_the_limit_answers():
    result = shardplan.solve(model="Llama-3.1-8B", hardware="h100-sxm-80gb", nodes=1, seq_length=4096,
                             global_batch_size=64, top=1, proposer="none", max_time_s=120)
    assert result.ok


@pytest.mark.parametrize("bad", [math.nan, math.inf, 0.0, -1.0])
def test_max_time_must_be_finite_and_positive(bad):
    with pytest.raises(InputRefused, match="--max-time"):
        with wall_clock_limit(bad):
            pass


def test_the_time_left_is_known_inside_the_limit_only():
    # solver/cpsat/solve.py gives CP-SAT remaining_s() as its wall-clock limit (its C++ search ignores the alarm)
    assert remaining_s() == math.inf
    with wall_clock_limit(5.0):
        assert 0 < remaining_s() <= 5.0
        with wall_clock_limit(60.0):  # an inner limit never extends the outer one
            assert remaining_s() <= 5.0
    assert remaining_s() == math.inf


def test_outside_the_main_thread_the_limit_is_still_reported():
    errors = []

    def run():
        try:
            with wall_clock_limit(0.05):
                time.sleep(0.2)  # no alarm off the main thread: the overrun is caught when the body ends
        except SolveTimeLimit as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    assert len(errors) == 1
