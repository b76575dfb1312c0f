"""Check + projection as one verdict, and its table view.

Why in solver/: constraints/ may not import measure/ (dependencies flow hardware -> constraints ->
measure -> solver), but `check` shows the projection; this module joins them for the CLI and the
solver's re-verification.
"""
from __future__ import annotations

from typing import Any

from constraints.check import check_case
from hardware.profile import load_profile

GIB = 1024 ** 3


def check_and_project(loaded, margin_fraction: float = 0.0, project: bool = True, profile=None) -> dict[str, Any]:
    """{'ok', 'report', 'json'} for a LoadedCase (solver.inputs) — the JSON is what `check --json` prints."""
    case = loaded.case
    profile = profile or load_profile(case.placement.hardware)
    report = check_case(case, profile, flags=loaded.flags, env=loaded.env, margin_fraction=margin_fraction)
    # violations the input reader found before a Case existed (e.g. a --num-layers-per-virtual-pipeline-stage that
    # does not divide the layers per stage: Megatron's validate_args refuses it, so it is an illegal recipe, not bad input)
    early = list(getattr(loaded, "preflight_violations", None) or [])
    if early:
        report = report.model_copy(update={"violations": early + list(report.violations), "legal": False})
    projection = None
    if project and report.legal and report.memory is not None:
        from measure.project import project as run_projection

        projection = run_projection(case.model, case.job, case.recipe, case.placement, profile).model_dump(mode="json")
    report = report.model_copy(update={"projection": projection, "unknown_flags": list(loaded.unknown_flags),
                                       "ignored_flags": list(loaded.ignored_flags),
                                       "warnings": list(report.warnings) + list(getattr(loaded, "warnings", None) or [])})
    data = report.model_dump(mode="json")
    data["recipe"] = case.recipe.model_dump(mode="json")
    data["model"] = case.model.name
    data["hardware"] = profile.name
    return {"ok": report.ok, "report": report, "json": data, "profile": profile}


def _gib(n: int) -> str:
    return f"{n / GIB:8.2f} GiB"


def format_check(loaded, result: dict[str, Any]) -> str:
    """The human table: verdict, violations with fixes, memory by term, projection."""
    case, report = loaded.case, result["report"]
    r = case.recipe
    lines = [
        f"{case.model.name} on {case.world_size} x {result['profile'].name} "
        f"({case.placement.num_nodes} nodes x {case.placement.gpus_per_node}), seq {case.job.seq_length}, "
        f"GBS {case.job.global_batch_size}, {case.job.precision.value}",
        f"recipe: TP={r.tp} PP={r.pp} VPP={r.vpp} CP={r.cp} EP={r.ep} ETP={r.etp_effective} DP={report.dp} "
        f"expert-DP={report.expert_dp} MBS={r.mbs} SP={'on' if r.sp_active else 'off'} "
        f"recompute={r.recompute.granularity.value}{'(' + ','.join(m.value for m in r.recompute.modules) + ')' if r.recompute.modules else ''} "
        f"sharding={r.dp_sharding.value} schedule={r.schedule.value}",
        f"verdict: {'LEGAL' if report.legal else 'ILLEGAL'}, "
        f"{'FITS' if report.fits else 'DOES NOT FIT' if report.memory is not None else 'FIT UNKNOWN (no layer split to price)'}",
    ]
    for v in report.violations:
        lines.append(f"  x {v.rule}: {v.message}\n      fix: {v.fix}")
    for v in report.warnings:
        lines.append(f"  ! {v.rule}: {v.message}  ({v.fix})")
    if loaded.unknown_flags:
        lines.append("  ! not understood by shardplan (not modelled): " + " ".join(loaded.unknown_flags))
    mem = report.memory
    if mem is not None:
        lines.append(f"memory (pipeline rank {mem.stage}, M={mem.num_microbatches} micro-batches): "
                     f"peak {mem.peak_bytes / GIB:.2f} GiB of {mem.usable_bytes / GIB:.2f} GiB usable "
                     f"({mem.capacity_bytes / GIB:.2f} GiB HBM)")
        for name, value in mem.terms.items():
            if value:
                lines.append(f"  {name:<24}{_gib(value)}  ({value:,} B)")
    proj = report.projection
    if proj:
        lines.append(f"projection: {proj['iteration_time_s']:.3f} s/iteration, {proj['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU, "
                     f"MFU {100 * proj['mfu']:.1f}%, {proj['model_tflops_per_gpu']:.0f} model TFLOP/s/GPU")
        lines.append("  " + "  ".join(f"{k}={v:.3f}s" for k, v in proj["breakdown"].items()))
    if "suggestion" in result:
        lines += format_suggestion(result["suggestion"])
    return "\n".join(lines)


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


def format_suggestion(sug) -> list[str]:
    """`check --suggest` in text mode: the nearest legal recipe as one line per changed field, with its peak and step
    time (solver.suggest.suggest_fix), or why none was found."""
    if not sug:
        return []
    if not sug.get("found"):
        return [f"suggestion: none ({sug.get('message', 'no legal recipe found')})"]
    changes = sug.get("changes") or {}
    n = sug.get("changed_axes", len(changes))
    head = f"suggestion: nearest legal recipe changes {n} axis" + ("" if n == 1 else "es")
    proj, peak = sug.get("projection"), sug.get("peak_bytes")
    tail = []
    if peak is not None:
        tail.append(f"peak {peak / GIB:.2f} GiB")
    if proj:
        tail.append(f"{proj['iteration_time_s']:.3f} s/iteration, MFU {100 * proj['mfu']:.1f}%")
    lines = [head + (" (" + ", ".join(tail) + ")" if tail else "")]
    for field, ch in changes.items():
        note = f"  ({ch['note']}: the suggestion is priced with the default)" if ch.get("note") else ""
        lines.append(f"  {field} ({_SUGGEST_FLAGS.get(field, field)}): {_value(ch['from'])} -> {_value(ch['to'])}{note}")
    return lines
