"""One wall-clock limit for a whole solve (`--max-time`): tables, CP-SAT, proposer rounds, fewest-gpus scans
and explanations together. Past it the solve stops and says so in one line.

Why a process alarm and not checks sprinkled through the code: the long steps are numpy table builds and
CP-SAT calls spread over many modules; SIGALRM interrupts any Python step at the limit, and CP-SAT, which
the alarm cannot interrupt inside C++, gets the time left as its own wall-clock limit (`remaining_s`, read by
solver/cpsat/solve.py). Where no alarm can be set (not the main thread, or no SIGALRM), CP-SAT still gets
the time left, and the limit is checked between steps only; the result says nothing false either way.
"""
from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from typing import Optional

from boundary.errors import LimitExceeded
from boundary.numbers import bounded_float

DEFAULT_MAX_TIME_S = 300.0  # the largest bench scenario (DeepSeek-V3 fewest-gpus over 64 nodes) takes ~20 s
MAX_MAX_TIME_S = 86_400.0

_deadline: Optional[float] = None  # time.monotonic() at which the running solve must stop


class SolveTimeLimit(LimitExceeded):
    """The solve ran past --max-time; one line with the limit and what to narrow."""


class _Alarm(BaseException):
    """Raised by SIGALRM; a BaseException so no `except Exception` on the way swallows it."""


def remaining_s() -> float:
    """Seconds left before the running solve's limit (inf when none is set)."""
    return math.inf if _deadline is None else max(0.0, _deadline - time.monotonic())


def _message(max_time_s: float) -> str:
    return (f"--max-time: the solve did not finish within {max_time_s:g} s; narrow the space (pin --tp / --pp / "
            "--mbs, fewer --nodes, --proposer none) or raise --max-time")


@contextlib.contextmanager
def wall_clock_limit(max_time_s: float):
    """Run the body under a `max_time_s` wall-clock limit; raises SolveTimeLimit when it passes."""
    global _deadline
    max_time_s = bounded_float(max_time_s, "--max-time", 0.0, MAX_MAX_TIME_S,
                               "give the seconds a solve may take in all", lo_open=True)
    outer = _deadline
    mine = time.monotonic() + max_time_s
    _deadline = mine if outer is None else min(outer, mine)
    use_alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread() and outer is None
    previous, earlier_timer_s, started = None, 0.0, time.monotonic()
    if use_alarm:
        def _on_alarm(signum, frame):
            # re-armed first: an exception raised while Python runs a GC callback or a __del__ is printed and dropped
            # (seen with hypothesis's gc callback in the full suite), so the next alarm raises again until one lands
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            raise _Alarm()
        earlier_timer_s = signal.getitimer(signal.ITIMER_REAL)[0]  # a caller's own alarm (a test harness), re-armed after
        previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        if use_alarm:  # armed inside the try: a limit of 1e-9 s fires at once, and must land in the except below
            signal.setitimer(signal.ITIMER_REAL, max_time_s)
        yield
    except _Alarm:
        signal.setitimer(signal.ITIMER_REAL, 0)  # no re-armed alarm may interrupt the one-line report
        raise SolveTimeLimit(_message(max_time_s)) from None
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if earlier_timer_s > 0:
                signal.setitimer(signal.ITIMER_REAL, max(0.001, earlier_timer_s - (time.monotonic() - started)))
        _deadline = outer
    if not use_alarm and time.monotonic() > mine:  # no alarm could be set, and the body overran
        raise SolveTimeLimit(_message(max_time_s))
