"""Zero-bubble schedules (ZB-H1, ZBV) as greedy list scheduling over a pipeline_sim state.

Why greedy: zero-bubble schedules place W (weight-gradient) work into idle time and run B as soon as it
is ready, so no fixed per-rank order exists; each step the rank that can start earliest runs its best op
(B > F > W), under the in-flight limit the memory model assumes (Qi et al. 2023 sec. 3; 2024 V-shape).
"""
from __future__ import annotations

import heapq
from collections import deque

from constraints.spec import PipelineSchedule
from measure.pipeline.state import SimState


def greedy(st: SimState) -> None:
    """Zero-bubble list scheduling: at each step the rank that can start earliest runs its best op.

    Each rank's best op is cached and recomputed only when that rank or a rank holding a neighbouring
    stage ran an op (nothing else changes its candidates); a heap with stale-entry skipping finds the
    earliest rank (ties: lowest rank). ZBV keeps one in-flight slot free of first-chunk forwards, so a
    micro-batch that entered a rank can always take its second-chunk forward (else a rank full of
    first-chunk forwards waits on itself: the V turns at the last stage)."""
    p, v, m, schedule = st.p, st.v, st.m, st.schedule
    zbv = schedule == PipelineSchedule.zbv
    limit = [min(2 * p, 2 * m) if zbv else min(p - r, m) for r in range(p)]
    next_f = [[0] * v for _ in range(p)]
    next_b = [[0] * v for _ in range(p)]
    pending_w: list[deque] = [deque() for _ in range(p)]
    first_only = [0] * p  # ZBV: micro-batches whose chunk-0 forward ran here but not yet their chunk-1 forward
    chunk_pref = list(range(v - 1, -1, -1))
    ready = st.ready

    def best_of(r: int):
        """(start, priority, kind, mb, chunk) of rank r's next op, or None."""
        free = st.free[r]
        cands = []
        for c in chunk_pref:
            mb = next_b[r][c]
            if mb < m:
                t = ready("B", mb, st.stage[r][c])
                if t is not None:
                    cands.append((t if t > free else free, 0, "B", mb, c))
        if st.inflight[r] < limit[r]:
            for c in chunk_pref:
                mb = next_f[r][c]
                if mb < m and not (zbv and c == 0 and first_only[r] + 1 >= limit[r]):
                    t = ready("F", mb, st.stage[r][c])
                    if t is not None:
                        cands.append((t if t > free else free, 1, "F", mb, c))
        if pending_w[r]:
            mb, c = pending_w[r][0]
            cands.append((free, 2, "W", mb, c))
        if not cands:
            return None
        if len(cands) == 1:
            return cands[0]
        start = min(x[0] for x in cands)
        # prefer B, then F, among ops startable now; W only fills time before the next B/F
        pick = None
        for x in cands:
            if x[0] <= start + 1e-15 and (pick is None or (x[1], -x[4]) < (pick[1], -pick[4])):
                pick = x
        if pick[2] == "W":
            other = None
            for x in cands:
                if x[2] != "W" and (other is None or x[0] < other[0]):
                    other = x
            if other[0] <= free + 1e-15:
                pick = other
        return pick

    cache = [best_of(r) for r in range(p)]
    version = [0] * p
    heap = [(x[0], r, 0) for r, x in enumerate(cache) if x is not None]
    heapq.heapify(heap)

    def refresh(q: int) -> None:
        cache[q] = best_of(q)
        version[q] += 1
        if cache[q] is not None:
            heapq.heappush(heap, (cache[q][0], q, version[q]))

    for _ in range(3 * m * v * p):
        while heap and heap[0][2] != version[heap[0][1]]:
            heapq.heappop(heap)
        if not heap:
            raise RuntimeError("zero-bubble schedule deadlocked (internal error)")
        r = heap[0][1]
        start, _, kind, mb, c = cache[r]
        stage = st.run(r, kind, mb, c, start)
        if kind == "F":
            next_f[r][c] += 1
            if zbv:
                first_only[r] += 1 if c == 0 else -1
        elif kind == "B":
            next_b[r][c] += 1
            pending_w[r].append((mb, c))
        else:
            pending_w[r].popleft()
        refresh(r)
        for q in st.neighbours(stage):
            if q != r:
                refresh(q)
