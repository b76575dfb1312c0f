"""The simulated pipeline step of one recipe as per-rank events, and its Chrome-trace export.

Why re-run the projection: `check` and `solve` keep only the step's totals; the timeline is the event
simulator's op list (measure.pipeline.simulator, the same run that gives the displayed step time), followed by
the data-parallel gradient traffic and the optimizer step that measure.projection.project adds after the pipeline.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from measure.projection.project import project

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


class Timeline(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schedule: str
    pp: int
    vpp: int
    num_microbatches: int
    pipeline_s: float = Field(description="end of the last pipeline op (the simulated step, before DP and optimizer)")
    iteration_s: float = Field(description="the projection's iteration time")
    events: list[TimelineEvent]


def simulate_timeline(case, profile, cuda_graph_scope: frozenset = frozenset(), fused_grouped_mlp: bool = False) -> Timeline:
    """Timeline of a legal, fitting case: the projection's simulated ops plus its DP and optimizer tail on every rank
    (the breakdown prices both on the heaviest rank; measure.projection.project adds them after the pipeline)."""
    raw: list = []
    proj = project(case.model, case.job, case.recipe, case.placement, profile, timeline=raw, cuda_graph_scope=cuda_graph_scope,
                   fused_grouped_mlp=fused_grouped_mlp)
    events = [TimelineEvent(rank=r, kind=k, microbatch=mb, chunk=c, start_s=s, end_s=e) for r, k, mb, c, s, e in raw]
    pipeline_s = max((e.end_s for e in events), default=0.0)
    dp_s, opt_s = proj.breakdown.dp_comm, proj.breakdown.optimizer
    for rank in range(case.recipe.pp):
        if dp_s > 0:
            events.append(TimelineEvent(rank=rank, kind="dp", start_s=pipeline_s, end_s=pipeline_s + dp_s))
        if opt_s > 0:
            events.append(TimelineEvent(rank=rank, kind="optimizer", start_s=pipeline_s + dp_s, end_s=pipeline_s + dp_s + opt_s))
    m = max((e.microbatch for e in events if e.microbatch is not None), default=-1) + 1
    return Timeline(schedule=case.recipe.schedule.value, pp=case.recipe.pp, vpp=case.recipe.vpp, num_microbatches=m,
                    pipeline_s=pipeline_s, iteration_s=proj.iteration_time_s, events=events)


def event_name(ev: TimelineEvent, vpp: int) -> str:
    """'F3' / 'B3.c1' style label: kind, micro-batch, and the chunk when the rank holds several."""
    if ev.microbatch is None:
        return KIND_LABEL[ev.kind]
    return f"{ev.kind}{ev.microbatch}" + (f".c{ev.chunk}" if vpp > 1 else "")


def chrome_trace(timelines: list[tuple[str, Timeline]]) -> dict:
    """Chrome trace-event JSON (the `traceEvents` format Perfetto and chrome://tracing open): one process per recipe,
    one thread per pipeline rank, one complete ('X') event per op, times in microseconds."""
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
    return {"traceEvents": out, "displayTimeUnit": "ms"}
