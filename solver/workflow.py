"""The solve workflow as plain functions: pins from option values, space + tables + the chosen method.

Why its own module: the API (`shardplan.solve`), the benches and the tests run the same workflow; none of it
depends on click. `shardplan/api.py` turns its answer into the typed result the CLI prints.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Callable, ContextManager

from boundary.errors import ShardplanError
from solver.explain_why import flag_of
from solver.objective import Objective
from solver.request import SolveRequest
from solver.space import build_space, parse_range, recompute_choices, recompute_name
from solver.tables.build import build_tables

RANGE_AXES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs")


class PinError(ShardplanError):
    """A pin or bound that cannot be read (one line naming the option and the fix)."""


def collect_pins(ranges: dict, schedule=None, recompute=None, no_recompute=False, sp=None, dp_sharding=None, tp_comm_overlap=None,
                 moe_dispatcher=None, ep_comm_overlap=None, uneven_stages=None) -> tuple[dict, dict]:
    """(pins axis -> allowed values, ranges axis -> (lo, hi)) from option values; a range is N, 'N', 'LO..HI' or (lo, hi)."""
    pins, bounds = {}, {}
    for axis, text in ranges.items():
        if text is None:
            continue
        if isinstance(text, tuple) and len(text) == 2:
            lo, hi = text
        else:
            try:
                lo, hi = parse_range(str(text))
            except ValueError:
                raise PinError(f"--{axis} {text!r}: give N or LO..HI, e.g. --{axis} 2..8") from None
        if lo is not None and lo == hi:
            pins[axis] = [lo]
        else:
            bounds[axis] = (lo, hi)
    if schedule:
        pins["schedule"] = [schedule]
    if no_recompute:
        pins["recompute"] = ["none"]
    elif recompute:
        pins["recompute_kind"] = recompute
    if sp is not None:
        pins["sp"] = [sp]
    if dp_sharding:
        pins["dp_sharding"] = [dp_sharding]
    for axis, value in (("tp_comm_overlap", tp_comm_overlap), ("moe_dispatcher", moe_dispatcher),
                        ("ep_comm_overlap", ep_comm_overlap), ("uneven_stages", uneven_stages)):
        if value is not None:
            pins[axis] = [value]
    return pins, bounds


# pins that only an MoE model reads: a dense model has no dispatcher, no EP overlap and no expert TP to set
_MOE_ONLY_PINS = ("moe_dispatcher", "ep_comm_overlap", "etp")


def inapplicable_pins(model, pins: dict) -> list[str]:
    """The pins this model does not read, each as 'option value: why' in the options solve takes
    (solver.explain_why.flag_of), so that solve says it did not follow them instead of answering as if it had (a dense
    model's recipes carry no dispatcher, EP overlap or expert TP)."""
    if model.is_moe:
        return []
    out = []
    for axis in (a for a in _MOE_ONLY_PINS if a in pins):
        flag, value = flag_of(axis), pins[axis][0]
        if isinstance(value, bool):  # a switch: --ep-comm-overlap / --no-ep-comm-overlap
            option = flag if value else flag.replace("--", "--no-", 1)
        else:
            option = f"{flag} {value}"
        out.append(f"{option}: not applied: {model.name} has no MoE layers")
    return out


def resolve_recompute_kind(model, pins: dict) -> dict:
    """--recompute full|selective (pins['recompute_kind']) as a pin on every recompute choice of that granularity,
    so the solve and the explanation see one ordinary pin."""
    kind = pins.pop("recompute_kind", None)
    if kind:
        pins["recompute"] = [n for n in map(recompute_name, recompute_choices(model)) if n.split(":")[0] == kind]
    return pins


def solve_case(model, job, placement, profile, pins, bounds, k, margin, method, time_limit_s):
    """Build space and tables, run the chosen method; returns (SolveResult, Tables). (The benches' and tests' entry:
    the same workflow as `solve_request`, without a proposer.)"""
    request = SolveRequest(model=model, job=job, placement=placement, profile=profile, pins=pins, bounds=bounds, top=k,
                           margin=margin, method=method, time_limit_s=time_limit_s)
    result, tables, _ = solve_request(request)
    return result, tables


def solve_request(request: SolveRequest, step: Callable[[str], ContextManager] | None = None):
    """Build the request's space and tables and run its method, steered by the proposer (solver/proposer) when
    `request.proposer` asks for one (throughput objective only); returns (SolveResult, Tables, HintReport or None).
    The answer is always the full solve, re-verified. `step(label)`, when given, wraps each phase (the CLI shows
    progress with it)."""
    # lazy: solver.cpsat.solve (and solver.exhaustive, which imports it) load OR-Tools (~0.2 s), and this module is on
    # the start-up path of every command (shardplan.api, the `solve` options); `--help` and `models` must not pay it
    from solver.cpsat.solve import solve_cpsat
    from solver.exhaustive import solve_exhaustive

    step = step or (lambda label: nullcontext())
    r = request
    space = build_space(r.model, r.job, r.placement, pins=resolve_recompute_kind(r.model, dict(r.pins)), ranges=r.bounds)
    with step("building tables"):
        tables = build_tables(space, r.profile, r.margin, prune_k=r.prune_k)
    if r.method == "exhaustive":
        with step("scanning the tables"):
            return solve_exhaustive(tables, r.top, margin_fraction=r.margin, objective=r.objective), tables, None
    if r.proposer is not None and r.proposer.kind != "none" and r.objective == Objective.throughput:
        from solver.proposer.loop import solve_with_proposer  # lazy: imports OR-Tools (see solve_cpsat above)

        result, report = solve_with_proposer(tables, r.top, margin_fraction=r.margin, max_time_s=r.time_limit_s, config=r.proposer,
                                             step=step)
        return result, tables, report
    with step("CP-SAT solve"):
        return solve_cpsat(tables, r.top, margin_fraction=r.margin, max_time_s=r.time_limit_s, objective=r.objective), tables, None


def bound_fields(result, objective: Objective, placement) -> dict:
    """`bound` in the objective's own unit: the proven lower bound on the ranking time (s), on the peak (bytes), or the
    node count that fewest-gpus proved smallest; plus the best ranking time, whatever the objective."""
    best_s = result.ranked[0].rank_time_us / 1e6 if result.ranked else None
    if objective == Objective.fewest_gpus:
        bound, unit = (placement.num_nodes if result.ranked else None), "nodes (smaller counts proven unable to reach the target)"
    elif objective == Objective.memory:
        bound, unit = result.bound, "bytes (peak per-GPU memory)"
    else:
        bound, unit = (result.bound / 1e6 if result.bound is not None else None), "s (iteration time, closed-form ranking projection)"
    return {"bound": bound, "bound_unit": unit, "best_ranking_time_s": best_s}

