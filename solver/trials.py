"""Which ranked answers to run as short trials (`solve --trials K`): the best, and the ones that teach the most.

Why not simply the K best: a trial is evidence for `calibrate`, and K runs of nearly the same layout tell one thing K
times. One run moves one direction of the factors (mostly a common scale, tilted toward what its step is made of:
measure/calibration/fit.py); the least certain part of a projection is how its time splits between compute and
communication, which one run cannot tell apart. So the best answers go
first (the run the user will most likely launch is measured, and `solve --calibration` then ranks it by its
measurement), and the last trial is the answer, among the remaining ones, whose communication share of the step
differs most from the chosen ones': its measurement pulls compute and communication apart, and the answers whose
ranking hinges on that split are the ones it re-orders.
"""
from __future__ import annotations

from typing import Sequence

COMM_TERMS = ("tp_comm", "cp_comm", "ep_comm", "dp_comm", "pp_comm")


def communication_share(breakdown: dict, iteration_time_s: float) -> float:
    """The share of a projected step spent in communication (the projection's breakdown, seconds)."""
    return sum(breakdown.get(k, 0.0) for k in COMM_TERMS) / iteration_time_s if iteration_time_s > 0 else 0.0


def choose_trials(shares: Sequence[float], k: int) -> list[int]:
    """Indices (into the ranked list, best first) of the K answers to run: the K-1 best, then the most informative.
    `shares`: each answer's communication share of its projected step (`communication_share`)."""
    n = len(shares)
    if k <= 0 or n == 0:
        return []
    if k >= n:
        return list(range(n))
    chosen = list(range(k - 1))
    base = sum(shares[i] for i in chosen) / len(chosen) if chosen else shares[0]
    rest = [i for i in range(n) if i not in chosen]
    if not chosen:  # one trial: the best answer
        return [0]
    # ties go to the better-ranked answer (max keeps the first)
    chosen.append(max(rest, key=lambda i: abs(shares[i] - base)))
    return chosen
