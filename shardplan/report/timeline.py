"""The simulated pipeline step of one recipe as per-rank events, and its Chrome-trace export.

Why re-run the projection: `check` and `solve` keep only the step's totals; the timeline is the event
simulator's op list (measure.pipeline.simulator, the same run that gives the displayed step time), followed by
the data-parallel gradient traffic and the optimizer step that measure.projection.project adds after the pipeline.

Why bounded: a 405B job on 512 GPUs simulates ~10^5 ops per recipe, and one SVG element per op made a 141-281 MiB
page (`--top 20` held 3.9 GiB of events and crashed; issue 33). A timeline keeps every op only up to `max_ops`;
past it, the ops of the first micro-batches (a bounded sample, `sampled_microbatches` of `num_microbatches`) plus
the whole step aggregated into each rank's busy spans (ops that touch merged into one span, at most `max_spans`
spans in all), and each rank's exact busy time over every op. The figures (step, bubble) always come from every op.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from measure.projection.project import project

# ops and spans one report page draws in all, shared by its timelines (shardplan/report/collect.py): ~200 bytes of
# SVG per op, drawn in the whole-step chart and again in the close-up, keep a page's timelines near 2 MiB whatever
# the job; 6,000 ops draws a single 70B interleaved step (2,564 ops, constraints/examples/llama3-70b-h100.yaml) whole
PAGE_MAX_OPS = 6_000
PAGE_MAX_SPANS = 4_000
MIN_OPS_PER_TIMELINE = 240
MIN_SPANS_PER_TIMELINE = 160
KINDS = ("F", "B", "W", "dp", "optimizer")
KIND_LABEL = {"F": "forward", "B": "backward", "W": "weight-gradient", "dp": "DP comm (exposed)", "optimizer": "optimizer + step overhead"}


class TimelineEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rank: int = Field(description="pipeline rank (0-based)")
    kind: Literal["F", "B", "W", "dp", "optimizer"] = Field(
        description="F forward, B backward (holds the weight gradient outside zero-bubble schedules), W weight gradient, "
                    "dp exposed data-parallel traffic, optimizer the optimizer step and fixed step overhead")
    microbatch: Optional[int] = None
    chunk: Optional[int] = Field(None, description="model chunk on this rank (virtual pipeline stage index on the rank)")
    start_s: float
    end_s: float


class BusySpan(BaseModel):
    """A run of one rank's ops with no idle time between them (gaps under the merge resolution), drawn as one block."""
    model_config = ConfigDict(extra="forbid")
    rank: int
    start_s: float
    end_s: float
    ops: int = Field(description="ops merged into the span")
    busy_s: float = Field(description="the ops' own time inside the span (end - start less the merged gaps)")


class Timeline(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schedule: str
    pp: int
    vpp: int
    num_microbatches: int
    pipeline_s: float = Field(description="end of the last pipeline op (the simulated step, before DP and optimizer)")
    iteration_s: float = Field(description="the projection's iteration time")
    events: list[TimelineEvent] = Field(description="every op, or (sampled) the ops of micro-batches "
                                                    "0..sampled_microbatches-1; then the DP and optimizer tail per rank")
    total_ops: int = Field(description="pipeline ops simulated (F, B, W), drawn or not")
    sampled_microbatches: int = Field(description="micro-batches whose ops `events` holds (num_microbatches: all)")
    rank_busy_s: list[float] = Field(description="each rank's time in ops, over every op")
    spans: list[BusySpan] = Field([], description="(sampled only) every rank's ops merged into busy spans")

    @property
    def sampled(self) -> bool:
        return self.sampled_microbatches < self.num_microbatches

    def shown(self) -> str:
        """What the drawing holds, in words (said on the page and in the trace)."""
        if not self.sampled:
            return f"every op of all {self.num_microbatches:,} micro-batches"
        drawn = sum(1 for e in self.events if e.microbatch is not None)
        return (f"micro-batches 0-{self.sampled_microbatches - 1} of {self.num_microbatches:,} op by op ({drawn:,} of "
                f"{self.total_ops:,} ops); all {self.total_ops:,} ops as {len(self.spans):,} busy spans")


def busy_spans(raw: list, pp: int, max_spans: int, resolution_s: float) -> list[BusySpan]:
    """Each rank's ops merged where the gap between them is under `resolution_s`, doubled until at most `max_spans`
    spans remain (a rank has at most step / resolution spans, so this ends)."""
    per_rank: list[list[tuple[float, float]]] = [[] for _ in range(pp)]
    for r, _, _, _, start, end in raw:
        per_rank[r].append((start, end))
    for ops in per_rank:
        ops.sort()
    while True:
        spans: list[BusySpan] = []
        for r, ops in enumerate(per_rank):
            cur = None
            for start, end in ops:
                if cur is not None and start - cur[1] < resolution_s:
                    cur = [cur[0], max(cur[1], end), cur[2] + 1, cur[3] + end - start]
                else:
                    if cur is not None:
                        spans.append(BusySpan(rank=r, start_s=cur[0], end_s=cur[1], ops=cur[2], busy_s=cur[3]))
                    cur = [start, end, 1, end - start]
            if cur is not None:
                spans.append(BusySpan(rank=r, start_s=cur[0], end_s=cur[1], ops=cur[2], busy_s=cur[3]))
            if len(spans) > max_spans:
                break
        if len(spans) <= max_spans or resolution_s <= 0:
            return spans
        resolution_s *= 2


def simulate_timeline(case, profile, cuda_graph_scope: frozenset = frozenset(), fused_grouped_mlp: bool = False,
                      max_ops: int = PAGE_MAX_OPS, max_spans: int = PAGE_MAX_SPANS) -> Timeline:
    """Timeline of a legal, fitting case: the projection's simulated ops plus its DP and optimizer tail on every rank
    (the breakdown prices both on the heaviest rank; measure.projection.project adds them after the pipeline). Past
    `max_ops` ops, a sample of whole micro-batches and the busy spans (module docstring)."""
    raw: list = []
    proj = project(case.model, case.job, case.recipe, case.placement, profile, timeline=raw, cuda_graph_scope=cuda_graph_scope,
                   fused_grouped_mlp=fused_grouped_mlp)
    pp = case.recipe.pp
    pipeline_s = max((e for *_, e in raw), default=0.0)
    m = max((mb for _, _, mb, _, _, _ in raw if mb is not None), default=-1) + 1
    rank_busy_s = [0.0] * pp
    for r, _, _, _, start, end in raw:
        rank_busy_s[r] += end - start
    keep_mb, spans = m, []
    if len(raw) > max_ops and m > 0:
        keep_mb = max(1, max_ops * m // len(raw))  # whole micro-batches: each holds len(raw) / m ops
        spans = busy_spans(raw, pp, max_spans, proj.iteration_time_s / 2000)
    events = [TimelineEvent(rank=r, kind=k, microbatch=mb, chunk=c, start_s=s, end_s=e) for r, k, mb, c, s, e in raw
              if mb is None or mb < keep_mb]
    dp_s, opt_s = proj.breakdown.dp_comm, proj.breakdown.optimizer
    for rank in range(pp):
        if dp_s > 0:
            events.append(TimelineEvent(rank=rank, kind="dp", start_s=pipeline_s, end_s=pipeline_s + dp_s))
        if opt_s > 0:
            events.append(TimelineEvent(rank=rank, kind="optimizer", start_s=pipeline_s + dp_s, end_s=pipeline_s + dp_s + opt_s))
    return Timeline(schedule=case.recipe.schedule.value, pp=pp, vpp=case.recipe.vpp, num_microbatches=m,
                    pipeline_s=pipeline_s, iteration_s=proj.iteration_time_s, events=events, total_ops=len(raw),
                    sampled_microbatches=keep_mb, rank_busy_s=rank_busy_s, spans=spans)


def event_name(ev: TimelineEvent, vpp: int) -> str:
    """'F3' / 'B3.c1' style label: kind, micro-batch, and the chunk when the rank holds several."""
    if ev.microbatch is None:
        return KIND_LABEL[ev.kind]
    return f"{ev.kind}{ev.microbatch}" + (f".c{ev.chunk}" if vpp > 1 else "")


def chrome_trace(timelines: list[tuple[str, Timeline]]) -> dict:
    """Chrome trace-event JSON (the `traceEvents` format Perfetto and chrome://tracing open): one process per recipe,
    one thread per pipeline rank, one complete ('X') event per op, times in microseconds. A sampled timeline adds a
    thread per rank of its busy spans, and `otherData.shown` says per recipe what the trace holds."""
    out: list[dict] = []
    for pid, (title, tl) in enumerate(timelines, start=1):
        out.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": title}})
        out.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": pid}})
        for rank in range(tl.pp):
            out.append({"ph": "M", "pid": pid, "tid": rank, "name": "thread_name", "args": {"name": f"PP rank {rank}"}})
            out.append({"ph": "M", "pid": pid, "tid": rank, "name": "thread_sort_index", "args": {"sort_index": rank}})
        for ev in tl.events:
            args = {k: v for k, v in (("microbatch", ev.microbatch), ("chunk", ev.chunk)) if v is not None}
            out.append({"ph": "X", "pid": pid, "tid": ev.rank, "name": event_name(ev, tl.vpp), "cat": KIND_LABEL[ev.kind],
                        "ts": round(ev.start_s * 1e6, 3), "dur": round((ev.end_s - ev.start_s) * 1e6, 3), "args": args})
        for span in tl.spans:  # a sampled timeline: the whole step, aggregated, on a thread of its own per rank
            out.append({"ph": "X", "pid": pid, "tid": tl.pp + span.rank, "name": f"busy ({span.ops} ops)",
                        "cat": "busy span", "ts": round(span.start_s * 1e6, 3),
                        "dur": round((span.end_s - span.start_s) * 1e6, 3), "args": {"ops": span.ops, "busy_s": span.busy_s}})
        if tl.sampled:
            for rank in range(tl.pp):
                out.append({"ph": "M", "pid": pid, "tid": tl.pp + rank, "name": "thread_name",
                            "args": {"name": f"PP rank {rank} (all ops, aggregated)"}})
                out.append({"ph": "M", "pid": pid, "tid": tl.pp + rank, "name": "thread_sort_index",
                            "args": {"sort_index": tl.pp + rank}})
    shown = {title: tl.shown() for title, tl in timelines}
    return {"traceEvents": out, "displayTimeUnit": "ms", "otherData": {"shown": shown}}
