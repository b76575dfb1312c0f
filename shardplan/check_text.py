"""The text `check` prints: verdict, violations with fixes, memory by term, projection, and `--suggest`'s answer.
JSON is the result itself (shardplan.results.CheckResult.to_json)."""
from __future__ import annotations

GIB = 1024 ** 3


def _gib(n: int) -> str:
    return f"{n / GIB:8.2f} GiB"


def format_check(result) -> str:
    """The human table of a shardplan.results.CheckResult: verdict, violations with fixes, memory by term, projection."""
    case, report = result.case, result
    r = case.recipe
    lines = [
        f"{case.model.name} on {case.world_size} x {result.hardware} "
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
    if result.unknown_flags:
        lines.append("  ! not understood by shardplan (not modelled): " + " ".join(result.unknown_flags))
    mem = report.memory
    if mem is not None:
        lines.append(f"memory (pipeline rank {mem.stage}, M={mem.num_microbatches} micro-batches): "
                     f"peak {mem.peak_bytes / GIB:.2f} GiB of {mem.usable_bytes / GIB:.2f} GiB usable "
                     f"({mem.capacity_bytes / GIB:.2f} GiB HBM)")
        for name, value in mem.terms.items():
            if value:
                lines.append(f"  {name:<24}{_gib(value)}  ({value:,} B)")
    proj = result.to_json()["projection"]
    if proj:
        lines.append(f"projection: {proj['iteration_time_s']:.3f} s/iteration, {proj['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU, "
                     f"MFU {100 * proj['mfu']:.1f}%, {proj['model_tflops_per_gpu']:.0f} model TFLOP/s/GPU")
        lines.append("  " + "  ".join(f"{k}={v:.3f}s" for k, v in proj["breakdown"].items()))
    if result.suggestion is not None:
        lines += format_suggestion(result.suggestion)
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
    head = f"suggestion: nearest legal recipe changes {n} field" + ("" if n == 1 else "s")
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
