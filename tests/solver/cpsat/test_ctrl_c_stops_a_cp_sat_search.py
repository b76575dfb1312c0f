"""Ctrl-C during a CP-SAT search was caught by CP-SAT itself (sat_parameters catch_sigint_signal), which ends the search
"as if a time limit was reached": `solve` went on, said "proven optimal" and exited 0 (found by QA). The search now runs
in a worker thread with CP-SAT's handler off (solver/cpsat_solve.solve_model), so the interrupt lands in Python at once,
the search is stopped and the interrupt goes on up (the CLI exits 130)."""
from __future__ import annotations

import signal
import threading
import time

import pytest

from solver.cpsat.backend import cp_model
from solver.cpsat.solve import new_cp_solver, solve_model


class _Model:
    """A model CP-SAT cannot close within its 5 s limit (what solve_model reads: .model)."""

    def __init__(self) -> None:
        m = cp_model.CpModel()
        xs = [m.new_int_var(0, 60, f"x{i}") for i in range(70)]
        for a, b in zip(xs, xs[1:]):
            m.add(a != b)
        m.add_all_different(xs[:45])
        m.maximize(sum((i % 7 + 1) * x for i, x in enumerate(xs)))
        self.model = m


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs POSIX timers to raise the interrupt")
def test_an_interrupt_stops_the_search_and_is_not_read_as_a_time_limit():
    solver = new_cp_solver(5.0)
    solver.parameters.max_time_in_seconds = 5.0
    assert solver.parameters.catch_sigint_signal is False

    def ctrl_c(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            solve_model(_Model(), solver)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - start < 2.5  # stopped, not run to its 5 s limit
    assert not [t for t in threading.enumerate() if t.name == "cp-sat" and t.is_alive()]


def test_an_uninterrupted_search_still_answers():
    m = cp_model.CpModel()
    x = m.new_int_var(0, 5, "x")
    m.maximize(x)

    class One:
        model = m

    solver = new_cp_solver(5.0)
    assert solve_model(One(), solver) == cp_model.OPTIMAL and solver.value(x) == 5
