"""Event simulator of pipeline schedules over per-chunk forward (F), dgrad (B) and wgrad (W) times.

Why simulate: uneven stages (embedding, loss, MTP on the ends), p2p latency and zero-bubble W placement
make closed forms inexact; the closed forms stay for fast ranking (`closed_form_s`), and a test keeps
the two within a stated tolerance where the closed form is exact.

Schedules (rank i, 0-based, PP = p, chunks per rank v, micro-batches m):
- 1F1B (Narayanan et al. 2021, PipeDream-flush): p-i-1 warm-up forwards, then F/B pairs, then B drain;
  W runs right after its B.
- interleaved 1F1B (Megatron `schedules.py`): forwards in groups of N micro-batches (N =
  --microbatch-group-size-per-virtual-pipeline-stage, default p) per chunk, chunk by chunk; backwards the
  same with chunks reversed; warm-up (p-i-1)*2 + (v-1)*N chunks, capped at m*v.
- ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", sec. 3): B as soon as ready, F while
  fewer than p-i micro-batches are in flight (1F1B's memory), W deferred into idle time.
- ZBV (Qi et al. 2024, V-shape): 2 chunks, chunk 0 on rank s for virtual stage s < p and chunk 1 on
  rank 2p-1-s; greedy B > F (chunk 1 first) > W with at most 2p chunks in flight per rank.
Virtual stage s = chunk * p + rank (interleaved) as in Megatron.
"""
from __future__ import annotations

from dataclasses import dataclass

from constraints.spec import PipelineSchedule


@dataclass(frozen=True)
class SimResult:
    step_time_s: float
    bubble_fraction: float
    peak_inflight: tuple[int, ...]  # per rank, in chunks (micro-batches when v = 1)
    busy_s: tuple[float, ...]


def _stage_of(schedule: PipelineSchedule, p: int, rank: int, chunk: int) -> int:
    if schedule == PipelineSchedule.zbv:
        return rank if chunk == 0 else 2 * p - 1 - rank
    return chunk * p + rank


def _place(schedule: PipelineSchedule, p: int, stage: int) -> tuple[int, int]:
    if schedule == PipelineSchedule.zbv:
        return (stage, 0) if stage < p else (2 * p - 1 - stage, 1)
    return stage % p, stage // p


def _fixed_order(schedule: PipelineSchedule, p: int, v: int, m: int, rank: int, group: int) -> list[tuple[str, int, int]]:
    """Megatron's per-rank op order for 1F1B / interleaved: list of (F|B, micro-batch, chunk)."""
    fwd, bwd = [], []
    for g0 in range(0, m, group):
        for c in range(v):
            for mb in range(g0, min(g0 + group, m)):
                fwd.append((mb, c))
                bwd.append((mb, v - 1 - c))
    total = m * v
    if v == 1:
        warm = min(p - rank - 1, m)
    else:
        warm = min((p - rank - 1) * 2 + (v - 1) * group, total)
    order = [("F", *fwd[k]) for k in range(warm)]
    fi, bi = warm, 0
    while fi < total:
        order.append(("F", *fwd[fi]))
        fi += 1
        order.append(("B", *bwd[bi]))
        bi += 1
    order += [("B", *bwd[k]) for k in range(bi, total)]
    return order


def simulate(schedule: PipelineSchedule, f_s: list[list[float]], b_s: list[list[float]], w_s: list[list[float]],
             num_microbatches: int, p2p_s: float = 0.0, microbatch_group_size: int | None = None) -> SimResult:
    """f_s[rank][chunk] etc. are per-micro-batch times of one chunk. Returns step time, bubble, in-flight."""
    p, v, m = len(f_s), len(f_s[0]), num_microbatches
    n_stages = p * v
    done: dict[tuple[str, int, int], float] = {}  # (kind, mb, stage) -> finish time
    free = [0.0] * p
    busy = [0.0] * p
    inflight = [0] * p
    peak = [0] * p
    split_w = schedule in (PipelineSchedule.zb_h1, PipelineSchedule.zbv)

    def ready(kind: str, mb: int, stage: int) -> float | None:
        """Earliest start of op (kind, mb, stage) from its dependencies, None if not yet satisfiable."""
        if kind == "F":
            if stage == 0:
                return 0.0
            t = done.get(("F", mb, stage - 1))
            return None if t is None else t + p2p_s
        if kind == "B":
            own = done.get(("F", mb, stage))
            if own is None:
                return None
            if stage == n_stages - 1:
                return own
            t = done.get(("B", mb, stage + 1))
            return None if t is None else max(own, t + p2p_s)
        return done.get(("B", mb, stage))

    def run(rank: int, kind: str, mb: int, chunk: int, start: float) -> None:
        stage = _stage_of(schedule, p, rank, chunk)
        dur = {"F": f_s, "B": b_s, "W": w_s}[kind][rank][chunk]
        if kind == "B" and not split_w:
            dur += w_s[rank][chunk]
        end = start + dur
        done[(kind, mb, stage)] = end
        free[rank] = end
        busy[rank] += dur
        if kind == "F":
            inflight[rank] += 1
            peak[rank] = max(peak[rank], inflight[rank])
        elif kind == "B":
            inflight[rank] -= 1

    if not split_w:
        group = microbatch_group_size or p
        orders = [_fixed_order(schedule, p, v, m, r, group) for r in range(p)]
        pos = [0] * p
        remaining = sum(len(o) for o in orders)
        while remaining:
            progressed = False
            for r in range(p):
                while pos[r] < len(orders[r]):
                    kind, mb, c = orders[r][pos[r]]
                    t = ready(kind, mb, _stage_of(schedule, p, r, c))
                    if t is None:
                        break
                    run(r, kind, mb, c, max(t, free[r]))
                    pos[r] += 1
                    remaining -= 1
                    progressed = True
            if not progressed:
                raise RuntimeError("pipeline schedule deadlocked (internal error)")
    else:
        _greedy(schedule, p, v, m, ready, run, free, inflight)
    step = max(free)
    bubble = 1.0 - sum(busy) / (p * step) if step > 0 else 0.0
    return SimResult(step, bubble, tuple(peak), tuple(busy))


def _greedy(schedule, p, v, m, ready, run, free, inflight) -> None:
    """Zero-bubble list scheduling: at each step the rank that can start earliest runs its best op."""
    limit = [min(2 * p, 2 * m) if schedule == PipelineSchedule.zbv else min(p - r, m) for r in range(p)]
    next_f = [[0] * v for _ in range(p)]
    next_b = [[0] * v for _ in range(p)]
    pending_w: list[list[tuple[int, int]]] = [[] for _ in range(p)]
    total = 3 * m * v * p
    executed = 0
    chunk_pref = list(range(v - 1, -1, -1))
    while executed < total:
        best = None
        for r in range(p):
            cands = []
            for c in chunk_pref:
                mb = next_b[r][c]
                if mb < m:
                    t = ready("B", mb, _stage_of(schedule, p, r, c))
                    if t is not None:
                        cands.append((max(t, free[r]), 0, "B", mb, c))
            if inflight[r] < limit[r]:
                for c in chunk_pref:
                    mb = next_f[r][c]
                    if mb < m:
                        t = ready("F", mb, _stage_of(schedule, p, r, c))
                        if t is not None:
                            cands.append((max(t, free[r]), 1, "F", mb, c))
            if pending_w[r]:
                mb, c = pending_w[r][0]
                cands.append((free[r], 2, "W", mb, c))
            if not cands:
                continue
            start = min(x[0] for x in cands)
            # prefer B, then F, among ops startable now; W only fills time before the next B/F
            now = [x for x in cands if x[0] <= start + 1e-15]
            pick = min(now, key=lambda x: (x[1], -x[4]))
            if pick[2] == "W" and len(cands) > 1:
                other = min((x for x in cands if x[2] != "W"), key=lambda x: x[0])
                if other[0] <= free[r] + 1e-15:
                    pick = other
            if best is None or (pick[0], r) < (best[0], best[5]):
                best = (*pick, r)
        if best is None:
            raise RuntimeError("zero-bubble schedule deadlocked (internal error)")
        start, _, kind, mb, c, r = best
        run(r, kind, mb, c, start)
        if kind == "F":
            next_f[r][c] += 1
        elif kind == "B":
            next_b[r][c] += 1
            pending_w[r].append((mb, c))
        else:
            pending_w[r].pop(0)
        executed += 1


def closed_form_s(schedule: PipelineSchedule, f: float, b: float, w: float, p: int, v: int, m: int) -> float:
    """Step time for equal stages, no p2p: f, b, w are one rank's per-micro-batch times summed over its chunks.
    1F1B: (m + p - 1)(f+b+w); interleaved: (m + (p-1)/v)(f+b+w) (Narayanan et al. 2021, eq. 2-3);
    ZB-H1: m(f+b+w) + (p-1)(f+b-w) (Qi et al. 2023, sec. 3.1, bubble (p-1)(F+B-W));
    ZBV: m(f+b+w) + (p-1)(f+b-2w)/2 (Qi et al. 2024, V-shape halves the warm-up, floor at 0)."""
    t = f + b + w
    if schedule == PipelineSchedule.interleaved and v > 1:
        return (m + (p - 1) / v) * t
    if schedule == PipelineSchedule.zb_h1:
        return m * t + (p - 1) * max(f + b - w, 0.0)
    if schedule == PipelineSchedule.zbv:
        return m * t + (p - 1) * max(f + b - 2 * w, 0.0) / 2
    return (m + p - 1) * t
