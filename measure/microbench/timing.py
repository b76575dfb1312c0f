"""Timing one kernel call properly: warm-up, repetitions, median, device synchronisation.

Why not a plain perf_counter: GPU kernels are asynchronous, so a host clock measures the launch, not
the kernel. On CUDA/ROCm each repetition is bracketed by `torch.cuda.Event(enable_timing=True)`
records on the current stream and read after one synchronize (the method torch.utils.benchmark and
triton.testing.do_bench use). On CPU torch runs ops synchronously, so perf_counter around the call
is the kernel time. The median (not the mean) resists the odd preempted repetition; the
interquartile range is kept as the spread.

Forward and backward are timed apart: `backward_call` builds the graph once (untimed) and times only
`torch.autograd.grad` with respect to the chosen inputs, so dgrad (w.r.t. activations) and wgrad
(w.r.t. weights) of a GEMM can be timed separately, as zero-bubble schedules need.
torch is imported inside the functions.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence


@dataclass(frozen=True)
class Timing:
    """Summary of the timed repetitions of one call."""

    median_s: float
    spread_s: float  # interquartile range p75 - p25
    num_reps: int


def summarize(samples_s: Sequence[float]) -> Timing:
    """Median and interquartile range of per-call times (seconds)."""
    if not samples_s:
        raise ValueError("summarize: no samples")
    ordered = sorted(samples_s)
    if len(ordered) >= 4:
        q1, _, q3 = statistics.quantiles(ordered, n=4)
        spread = max(0.0, q3 - q1)
    else:
        spread = ordered[-1] - ordered[0]
    return Timing(median_s=statistics.median(ordered), spread_s=spread, num_reps=len(ordered))


def time_call(
    fn: Callable[[], object],
    device_type: str,
    warmup: int = 3,
    reps: int = 10,
    setup: Optional[Callable[[], object]] = None,
    budget_s: Optional[float] = None,
) -> Timing:
    """Time `fn()`: `warmup` untimed calls, then `reps` timed ones; `setup()` (untimed) runs before each.

    `budget_s` caps a slow call's warm-up (at least one call) and timed repetitions (at least 3) so a
    big op on a CPU does not take minutes; the number actually timed is in `Timing.num_reps`.
    """
    if reps < 1 or warmup < 0:
        raise ValueError(f"time_call: reps must be >= 1 and warmup >= 0 (got reps={reps}, warmup={warmup})")
    if device_type == "cuda":
        return _time_cuda(fn, warmup, reps, setup, budget_s)
    return _time_host(fn, warmup, reps, setup, budget_s)


def _over_budget(call_s: float, num_calls: int, budget_s: Optional[float]) -> bool:
    return budget_s is not None and call_s * num_calls > budget_s


def _reps_within_budget(first_call_s: float, reps: int, budget_s: Optional[float]) -> int:
    if budget_s is None or first_call_s <= 0:
        return reps
    return max(min(reps, 3), min(reps, int(budget_s / first_call_s)))


def _time_host(fn, warmup, reps, setup, budget_s) -> Timing:
    first_s = None
    for _ in range(warmup):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        first_s = time.perf_counter() - t0 if first_s is None else first_s
        if _over_budget(first_s, warmup + reps, budget_s):
            break  # one warm call is enough for a kernel this slow
    reps = _reps_within_budget(first_s or 0.0, reps, budget_s)
    samples = []
    for _ in range(reps):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return summarize(samples)


def _time_cuda(fn, warmup, reps, setup, budget_s) -> Timing:
    import torch

    first_s = None
    for _ in range(warmup):
        if setup is not None:
            setup()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        first_s = time.perf_counter() - t0 if first_s is None else first_s
        if _over_budget(first_s, warmup + reps, budget_s):
            break
    reps = _reps_within_budget(first_s or 0.0, reps, budget_s)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if setup is not None:
            setup()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    # Event.elapsed_time is in milliseconds (torch.cuda.Event docs).
    return summarize([s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends)])


def backward_call(forward: Callable[[], object], wrt: Sequence[object]) -> Callable[[], object]:
    """A callable that runs only the backward of `forward()` w.r.t. the tensors `wrt`.

    The forward runs once here (untimed); the graph is retained so the returned callable can be
    timed many times. Choosing `wrt` = activations gives dgrad only, = weights gives wgrad only.
    """
    import torch

    out = forward()
    if isinstance(out, (tuple, list)):
        out = out[0]
    grad_out = torch.randn_like(out) if out.dim() > 0 else torch.ones_like(out)
    wrt = tuple(wrt)

    def run() -> object:
        return torch.autograd.grad(out, wrt, grad_out, retain_graph=True)

    return run
