"""The state of one pipeline simulation: where each stage runs, finish times of every op, rank clocks and in-flight
counts; shared by the fixed-order schedules (measure/pipeline/simulator.py) and the zero-bubble greedy scheduler
(measure/pipeline/greedy.py), which both drive it.
"""
from __future__ import annotations

from constraints.spec import PipelineSchedule


def _stage_of(schedule: PipelineSchedule, p: int, rank: int, chunk: int) -> int:
    if schedule == PipelineSchedule.zbv:
        return rank if chunk == 0 else 2 * p - 1 - rank
    return chunk * p + rank


def _place(schedule: PipelineSchedule, p: int, stage: int) -> tuple[int, int]:
    if schedule == PipelineSchedule.zbv:
        return (stage, 0) if stage < p else (2 * p - 1 - stage, 1)
    return stage % p, stage // p


class SimState:
    """Finish times per (stage, micro-batch) for F and B (NaN = not run), rank clocks, busy time, in-flight."""

    def __init__(self, schedule: PipelineSchedule, f_s, b_s, w_s, m: int, p2p_s: float) -> None:
        p, v = len(f_s), len(f_s[0])
        self.schedule, self.p, self.v, self.m, self.p2p = schedule, p, v, m, p2p_s
        self.n_stages = p * v
        self.split_w = schedule in (PipelineSchedule.zb_h1, PipelineSchedule.zbv)
        nan = float("nan")
        self.f_end = [[nan] * m for _ in range(self.n_stages)]
        self.b_end = [[nan] * m for _ in range(self.n_stages)]
        self.rank_of = [_place(schedule, p, s)[0] for s in range(self.n_stages)]
        self.stage = [[_stage_of(schedule, p, r, c) for c in range(v)] for r in range(p)]
        b_dur = [[b_s[r][c] + (0.0 if self.split_w else w_s[r][c]) for c in range(v)] for r in range(p)]
        self.dur = {"F": f_s, "B": b_dur, "W": w_s}
        self.free = [0.0] * p
        self.busy = [0.0] * p
        self.inflight = [0] * p
        self.peak = [0] * p
        self.events: list | None = None  # (rank, kind, micro-batch, chunk, start_s, end_s) when a caller asks for them

    def ready(self, kind: str, mb: int, stage: int) -> float | None:
        """Earliest start of op (kind, mb, stage) from its dependencies, None if not yet satisfiable."""
        if kind == "F":
            if stage == 0:
                return 0.0
            t = self.f_end[stage - 1][mb]
            return None if t != t else t + self.p2p
        if kind == "B":
            own = self.f_end[stage][mb]
            if own != own:
                return None
            if stage == self.n_stages - 1:
                return own
            t = self.b_end[stage + 1][mb]
            return None if t != t else max(own, t + self.p2p)
        t = self.b_end[stage][mb]
        return None if t != t else t

    def run(self, rank: int, kind: str, mb: int, chunk: int, start: float) -> int:
        """Run the op from `start`; returns its stage."""
        stage = self.stage[rank][chunk]
        dur = self.dur[kind][rank][chunk]
        end = start + dur
        if kind == "F":
            self.f_end[stage][mb] = end
            self.inflight[rank] += 1
            if self.inflight[rank] > self.peak[rank]:
                self.peak[rank] = self.inflight[rank]
        elif kind == "B":
            self.b_end[stage][mb] = end
            self.inflight[rank] -= 1
        self.free[rank] = end
        self.busy[rank] += dur
        if self.events is not None:
            self.events.append((rank, kind, mb, chunk, start, end))
        return stage

    def neighbours(self, stage: int) -> tuple[int, ...]:
        """Ranks whose next op may have waited on an op of this stage (the stages either side)."""
        out = ()
        if stage > 0:
            out += (self.rank_of[stage - 1],)
        if stage + 1 < self.n_stages:
            out += (self.rank_of[stage + 1],)
        return out
