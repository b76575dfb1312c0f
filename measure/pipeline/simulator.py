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
  rank 2p-1-s; greedy B > F (chunk 1 first) > W with at most 2p chunks in flight per rank, one slot kept
  for a resident micro-batch's chunk-1 forward (`measure.pipeline.greedy`).
Virtual stage s = chunk * p + rank (interleaved) as in Megatron.
"""
from __future__ import annotations

from dataclasses import dataclass

from constraints.spec import PipelineSchedule
from measure.pipeline.greedy import greedy
from measure.pipeline.state import SimState


@dataclass(frozen=True)
class SimResult:
    step_time_s: float
    bubble_fraction: float
    peak_inflight: tuple[int, ...]  # per rank, in chunks (micro-batches when v = 1)
    busy_s: tuple[float, ...]


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
             num_microbatches: int, p2p_s: float = 0.0, microbatch_group_size: int | None = None,
             events: list | None = None) -> SimResult:
    """f_s[rank][chunk] etc. are per-micro-batch times of one chunk. Returns step time, bubble, in-flight.
    `events`, when given, receives every op as (rank, 'F'|'B'|'W', micro-batch, chunk, start_s, end_s) (B holds W
    outside the zero-bubble schedules): the per-rank timeline `shardplan report` draws."""
    st = SimState(schedule, f_s, b_s, w_s, num_microbatches, p2p_s)
    st.events = events
    p = st.p
    if st.split_w:
        greedy(st)
    else:
        _replay(st, microbatch_group_size or p)
    step = max(st.free)
    bubble = 1.0 - sum(st.busy) / (p * step) if step > 0 else 0.0
    return SimResult(step, bubble, tuple(st.peak), tuple(st.busy))


def _replay(st: SimState, group: int) -> None:
    """Run each rank's fixed order; a rank advances until its next op waits on another rank, and is woken
    when a neighbouring stage finishes an op. Every op starts at max(dependencies, rank free), which does
    not depend on the order ranks are visited, so this equals a round-robin replay, in O(ops)."""
    p, last, p2p = st.p, st.n_stages - 1, st.p2p
    f_end, b_end, rank_of = st.f_end, st.b_end, st.rank_of
    dur, inflight, peak, busy = st.dur, st.inflight, st.peak, st.busy
    orders = [_fixed_order(st.schedule, p, st.v, st.m, r, group) for r in range(p)]
    pos = [0] * p
    work = list(range(p - 1, -1, -1))
    queued = [True] * p
    while work:
        r = work.pop()
        queued[r] = False
        order, stages, n = orders[r], st.stage[r], len(orders[r])
        i = pos[r]
        while i < n:
            kind, mb, c = order[i]
            s = stages[c]
            if kind == "F":  # inline of SimState.ready: NaN (x != x) = not yet run
                if s == 0:
                    t = 0.0
                else:
                    t = f_end[s - 1][mb]
                    if t != t:
                        break
                    t += p2p
            else:
                t = f_end[s][mb]
                if t != t:
                    break
                if s != last:
                    u = b_end[s + 1][mb]
                    if u != u:
                        break
                    u += p2p
                    if u > t:
                        t = u
            free = st.free[r]  # inline of SimState.run
            end = (t if t > free else free) + dur[kind][r][c]
            if kind == "F":
                f_end[s][mb] = end
                inflight[r] += 1
                if inflight[r] > peak[r]:
                    peak[r] = inflight[r]
            else:
                b_end[s][mb] = end
                inflight[r] -= 1
            st.free[r] = end
            busy[r] += dur[kind][r][c]
            if st.events is not None:
                st.events.append((r, kind, mb, c, end - dur[kind][r][c], end))
            i += 1
            for q in (rank_of[s - 1] if s > 0 else r, rank_of[s + 1] if s < last else r):
                if not queued[q] and q != r:
                    queued[q] = True
                    work.append(q)
        pos[r] = i
    if any(pos[r] < len(orders[r]) for r in range(p)):
        raise RuntimeError("pipeline schedule deadlocked (internal error)")


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


def bubble_share_s(schedule: PipelineSchedule, f: float, b: float, w: float, v: int) -> float:
    """What one rank adds to another rank's fill and drain: the per-rank bubble term of `closed_form_s`
    ((p - 1) of them in a pipeline of equal stages)."""
    if schedule == PipelineSchedule.interleaved and v > 1:
        return (f + b + w) / v
    if schedule == PipelineSchedule.zb_h1:
        return max(f + b - w, 0.0)
    if schedule == PipelineSchedule.zbv:
        return max(f + b - 2 * w, 0.0) / 2
    return f + b + w


def staged_closed_form_s(schedule: PipelineSchedule, f: list[float], b: list[float], w: list[float], v: int, m: int) -> float:
    """Step time with unequal stages, no p2p: f, b, w hold each rank's per-micro-batch times summed over its
    chunks. Every rank r is busy m * t_r, and waits while the fill and drain pass once through each other rank:
    max over r of m * t_r + sum over q != r of bubble_share_s(q). Equal stages give `closed_form_s` exactly; with
    the embedding and loss on the end stages it stays within 1 % of the event simulator on 1F1B, where the
    equal-stage form (the slowest rank's time for every stage) was up to 7.5 % high. Interleaved schedules with
    unequal stages (explicit first/last layers, few micro-batches) can still be 3-12 % off (docs/limits.md)."""
    share = [bubble_share_s(schedule, fr, br, wr, v) for fr, br, wr in zip(f, b, w)]
    total = sum(share)
    return max(m * (fr + br + wr) + total - g for fr, br, wr, g in zip(f, b, w, share))


def p2p_units(schedule: PipelineSchedule, p: int, v: int, m: int) -> int:
    """How many p2p transfer times a step exposes, as the event simulator schedules them (exact on equal stages,
    checked in tests; interleaved at the default micro-batch group size PP).
    - interleaved: 2(pv - 1), only the first forward's and the last backward's crossings of the pv - 1 virtual-stage
      boundaries (steady-state sends hide behind other micro-batches);
    - 1F1B: 2(m + p - 2 - ceil((m - 1) / p)), each micro-batch's sends on the critical path except once per group of p;
    - zero-bubble schedules keep the conservative 2(mv + p - 1), one per chunk pass and per fill/drain hop."""
    if p <= 1:
        return 0
    if schedule == PipelineSchedule.interleaved and v > 1:
        return 2 * (p * v - 1)
    if schedule == PipelineSchedule.one_f_one_b:
        return 2 * (m + p - 2 - -(-(m - 1) // p))
    return 2 * (m * v + p - 1)
