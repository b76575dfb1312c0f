"""The text `check` prints (`--format table`): verdict, violations and warnings with their fixes, memory by term,
projection by part, and `--suggest`'s answer. JSON is the result itself (shardplan.results.CheckResult.to_json).

Why tables: like `solve`'s view (shardplan/solve_text.py), each list is drawn by rich through formats.to_table, so it
fits the terminal's width (long messages fold inside their cell, numbers never wrap) and the one-line facts (recipe,
verdict, peak, step time) stay plain lines above their table.
"""
from __future__ import annotations

from typing import Optional

from boundary.show import shown
from constraints.memory.allocator import MemoryFraction
from constraints.models.params import parameters_phrase
from hardware.profile import profile_label
from shardplan.formats import to_table
from shardplan.software_input import SoftwareUsed

GIB = 1024 ** 3

REASON_COLUMNS = (("kind", "kind", "{}"), ("rule", "rule", "{}"), ("what", "message", "{}"), ("fix", "fix", "{}"))
MEMORY_COLUMNS = (("memory term", "term", "{}"), ("GiB", "gib", "{:.2f}"), ("bytes", "bytes", "{:,}"))
TIME_COLUMNS = (("time part", "part", "{}"), ("s/iteration", "s", "{:.3f}"))


def format_check(result, width: Optional[int] = None, suggestion_table: bool = True) -> str:
    """The human view of a shardplan.results.CheckResult: verdict, reasons with fixes, memory by term, projection;
    tables fit `width` (default: the terminal's, formats.to_table). `suggestion_table` (`check --suggest`): also the
    nearest recipe's changed fields as a table; without it the violations' fixes alone quote it."""
    case, report = result.case, result
    r = case.recipe
    lines = [
        f"{case.model.name} ({parameters_phrase(case.model)}) on {case.world_size} x {profile_label(case.placement.hardware)} "
        f"({case.placement.num_nodes} node{'' if case.placement.num_nodes == 1 else 's'} x {case.placement.gpus_per_node}), "
        f"seq {case.job.seq_length}, "
        f"GBS {case.job.global_batch_size}, {case.job.precision.value}",
        f"recipe: TP={r.tp} PP={r.pp} VPP={r.vpp} CP={r.cp} EP={r.ep} "
        + (f"ETP={r.etp_effective} " if case.model.is_moe else "")  # a dense model has no expert grid
        # no data-parallel size exists when TP*PP*CP does not divide the world (the world_divisible violation says so)
        + f"DP={report.dp if case.world_size % (r.tp * r.pp * r.cp) == 0 else 'n/a'} "
        # nor an expert-DP size when EP*ETP*PP does not divide it (the expert_grid violation says so)
        + (f"expert-DP={report.expert_dp if case.world_size % (r.ep * r.etp_effective * r.pp) == 0 else 'n/a'} "
           if case.model.is_moe else "")
        + f"MBS={r.mbs} SP={'on' if r.sp_active else 'off'} "
        f"recompute={r.recompute.granularity.value}{'(' + ','.join(m.value for m in r.recompute.modules) + ')' if r.recompute.modules else ''} "
        f"sharding={r.dp_sharding.value} schedule={r.schedule.value}",
        f"verdict: {'LEGAL' if report.legal else 'ILLEGAL'}, "
        f"{'FITS' if report.fits else 'DOES NOT FIT' if report.memory is not None else 'FIT UNKNOWN (no layer split to price)'}",
    ]
    reasons = reason_rows(report.violations, report.warnings)
    if reasons:
        lines.append(to_table(reasons, REASON_COLUMNS, width=width))
    if result.unknown_flags:
        lines.append("! not understood by shardplan (not modelled): " + " ".join(result.unknown_flags))
    if result.software:  # which stack generation was priced, and the knobs it set (shardplan/software_input.py)
        used = SoftwareUsed(**result.software)
        lines += [used.line()] + [f"  {note}" for note in used.notes]
    mem = report.memory
    if mem is not None:
        lines.append(f"memory (pipeline rank {mem.stage}, M={mem.num_microbatches} micro-batches): "
                     f"peak {mem.peak_bytes / GIB:.2f} GiB of {mem.usable_bytes / GIB:.2f} GiB usable "
                     f"({mem.capacity_bytes / GIB:.2f} GiB HBM)" + ("; near the limit" if mem.near_limit else ""))
        fraction = result.to_json().get("memory_fraction")
        if fraction:  # what "usable" is (constraints/memory/allocator.py)
            lines.append(f"memory limit: {MemoryFraction(**fraction).describe()}")
        lines.append(to_table([{"term": name, "gib": value / GIB, "bytes": value} for name, value in mem.terms.items() if value],
                              MEMORY_COLUMNS, width=width))
    proj = result.to_json()["projection"]
    if proj:
        lines.append(f"projection: {proj['iteration_time_s']:.3f} s/iteration, {proj['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU, "
                     f"MFU {100 * proj['mfu']:.1f}%, {proj['model_tflops_per_gpu']:.0f} model TFLOP/s/GPU"
                     + (f" (CUDA graphs: {', '.join(result.cuda_graph_scope)})" if result.cuda_graph_scope else "")
                     + (f", calibrated by {shown(result.calibration)}" if result.calibration else ""))
        if proj.get("tokens_per_s_per_gpu_range"):
            low, high = proj["tokens_per_s_per_gpu_range"]
            lines.append(f"range: {low:,.0f}-{high:,.0f} tokens/s/GPU (80 % of held-out runs measured inside it)")
        lines.append(to_table([{"part": part, "s": seconds} for part, seconds in proj["breakdown"].items()], TIME_COLUMNS, width=width))
    if result.measured is not None:
        lines += measured_lines(result.measured, result.measured_vs_projected, width)
    if result.suggestion is not None and suggestion_table:
        lines += format_suggestion(result.suggestion, width)
    return "\n".join(lines)


MEASURED_COLUMNS = (("timer", "timer", "{}"), ("measured s", "measured_s", "{:.3f}"), ("projected s", "projected_s", "{:.3f}"),
                    ("measured / projected", "ratio", "{:.2f}"), ("projection terms", "covers", "{}"))


def measured_lines(measured: dict, versus, width: int) -> list[str]:
    """What a training log measured, and the same quantities projected: where the run is slower than planned."""
    line = (f"measured ({measured['iterations_used']} steady iterations): {measured['iteration_time_s']:.3f} s/iteration, "
            f"{measured['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU")
    if measured.get("tflops_per_gpu") is not None:
        line += f", {measured['tflops_per_gpu']:.0f} TFLOP/s/GPU (as the log counts them)"
    out = [line]
    if measured.get("max_allocated_bytes") is not None:
        estimate = measured.get("estimated_peak_bytes")
        out.append(f"measured memory: max allocated {measured['max_allocated_bytes'] / GIB:.2f} GiB, max reserved "
                   f"{measured['max_reserved_bytes'] / GIB:.2f} GiB"
                   + (f" (estimated peak {estimate / GIB:.2f} GiB)" if estimate is not None else ""))
    if versus:
        step = versus["iteration_time_s"]
        out.append(f"measured / projected step: {step['ratio']:.2f} ({step['measured']:.3f} s vs {step['projected']:.3f} s)")
        if versus["terms"]:
            out.append(to_table([{**term, "ratio": term["measured_s"] / term["projected_s"] if term["projected_s"] else float("nan"),
                                  "covers": " + ".join(term["covers"])} for term in versus["terms"]], MEASURED_COLUMNS, width=width))
    return out


def reason_rows(violations, warnings) -> list[dict]:
    """One row per violation, then per warning: kind, rule, what is wrong, the fix."""
    return ([{"kind": "violation", "rule": v.rule, "message": v.message, "fix": v.fix} for v in violations]
            + [{"kind": "warning", "rule": v.rule, "message": v.message, "fix": v.fix} for v in warnings])


# recipe axis -> the Megatron-LM flag a user edits in the script (solver.suggest.AXES names)
_SUGGEST_FLAGS = {"tp": "--tensor-model-parallel-size", "pp": "--pipeline-model-parallel-size", "vpp": "virtual pipeline size",
                  "cp": "--context-parallel-size", "ep": "--expert-model-parallel-size", "etp": "--expert-tensor-parallel-size",
                  "mbs": "--micro-batch-size", "sp": "--sequence-parallel", "recompute": "recompute",
                  "schedule": "schedule", "dp_sharding": "DP sharding", "acc_split": "--account-for-embedding/loss-in-pipeline-split",
                  "uneven_stages": "uneven first/last stages", "tp_comm_overlap": "--tp-comm-overlap",
                  "moe_dispatcher": "--moe-token-dispatcher-type", "overlap_moe_expert_parallel_comm": "--overlap-moe-expert-parallel-comm",
                  "first_stage_layers": "--decoder-first-pipeline-num-layers", "last_stage_layers": "--decoder-last-pipeline-num-layers"}


def _value(v) -> str:
    return {True: "on", False: "off", None: "unset"}.get(v, str(v)) if isinstance(v, (bool, type(None))) else str(v)


SUGGEST_COLUMNS = (("field", "field", "{}"), ("Megatron flag", "flag", "{}"), ("now", "from", "{}"), ("suggested", "to", "{}"))
NOTE_COLUMN = ("note", "note", "{}")


def format_suggestion(sug, width: Optional[int] = None) -> list[str]:
    """`check --suggest` in text mode: the nearest legal recipe as a table of changed fields under a line with its peak
    and step time (solver.suggest.suggest_fix), or why none was found."""
    if not sug:
        return []
    if not sug.get("found"):
        line = f"suggestion: none ({sug.get('message', 'no legal recipe found')})"
        if "fewest_nodes" not in sug:
            return [line]
        if sug["fewest_nodes"] is None:
            return [line[:-1] + f"; none on any node count up to {sug['max_nodes']} tried: `shardplan solve` says why)"]
        there = sug.get("at_fewest_nodes") or {}
        line = line[:-1] + f"; the fewest nodes that fit: {sug['fewest_nodes']} ({sug['fewest_gpus']} GPUs))"
        return [line] + (_changes_lines(there, width, f"on {sug['fewest_nodes']} nodes, the nearest legal recipe")
                         if there.get("found") else [])
    return _changes_lines(sug, width, "nearest legal recipe")


def _changes_lines(sug: dict, width: Optional[int], what: str) -> list[str]:
    """A found answer: a line with its peak and step time, then its changed fields as a table."""
    changes = sug.get("changes") or {}
    n = sug.get("changed_axes", len(changes))
    head = f"suggestion: {what} changes {n} field" + ("" if n == 1 else "s")
    proj, peak = sug.get("projection"), sug.get("peak_bytes")
    tail = []
    if peak is not None:
        tail.append(f"peak {peak / GIB:.2f} GiB")
    if proj:
        tail.append(f"{proj['iteration_time_s']:.3f} s/iteration, MFU {100 * proj['mfu']:.1f}%")
    lines = [head + (" (" + ", ".join(tail) + ")" if tail else "")]
    rows = [{"field": field, "flag": _SUGGEST_FLAGS.get(field, field), "from": _value(ch["from"]), "to": _value(ch["to"]),
             "note": f"{ch['note']}: the suggestion is priced with the default" if ch.get("note") else None}
            for field, ch in changes.items()]
    if rows:
        columns = SUGGEST_COLUMNS + ((NOTE_COLUMN,) if any(row["note"] for row in rows) else ())
        lines.append(to_table(rows, columns, width=width))
    return lines
