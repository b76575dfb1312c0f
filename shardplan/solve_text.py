"""The text `solve` prints: the ranked table, the notes under it (ranking gap, uncalibrated part, column legends)
and a readable nothing-fits explanation. JSON is the result itself (shardplan.results.SolveResult.to_json)."""
from __future__ import annotations

from constraints.memory.allocator import NEAR_LIMIT_FRACTION_PPM, PPM, MemoryFraction
from constraints.models.params import parameters_phrase
from hardware.profile import load_profile, profile_label, uncalibrated_reason
from shardplan.formats import to_table
from shardplan.software_input import SoftwareUsed
from solver.explain_why import format_explanation
from solver.objective import Objective

GIB = 1024 ** 3


def format_solve(payload: dict, model, placement, job) -> str:
    objective = payload.get("objective", Objective.throughput.value)
    head = (f"{model.name} ({parameters_phrase(model)}) on {placement.world_size} x {profile_label(placement.hardware)}, "
            f"seq {job.seq_length}, GBS {job.global_batch_size}: ")
    if not payload["recipes"]:
        lines = [head + "no recipe"]
    else:
        best = (f"smallest peak {payload['best_objective'] / GIB:.2f} GiB" if objective == Objective.memory and payload.get("best_objective")
                else f"best ranking step {payload['best_ranking_time_s']} s")
        lines = [head + f"{len(payload['recipes'])} recipe(s), {'proven optimal' if payload['proven_optimal'] else 'not proven optimal'} "
                 f"for objective {objective} ({best})"]
    if payload["recipes"]:
        lines.append(to_table(solve_rows(payload, model), SOLVE_COLUMNS))  # rich: fits the terminal, long names fold
    if any(ranking_gap(r) > RANKING_GAP_NOTE for r in payload["recipes"]):
        lines.append(f"* the ranking closed form and the simulated step differ by more than {RANKING_GAP_NOTE:.0%} here (interleaved "
                     "schedules with unequal stages); the order follows the closed form, the step column the simulator")
    ranges = range_line(payload)
    if ranges:
        lines.append(ranges)
    thin = thin_headroom_line(payload)
    if thin:
        lines.append(thin)
    if payload["recipes"] and payload.get("memory_fraction"):  # what "fits" meant (constraints/memory/allocator.py)
        lines.append(f"memory limit: {MemoryFraction(**payload['memory_fraction']).describe()}")
    if payload["recipes"] and payload.get("projection_calibrated") is False:
        lines.append(uncalibrated_note(placement.hardware))
    lines += [f"! model config: {note}" for note in payload.get("model_notes", [])]
    if payload.get("software"):  # the stack generation the search kept to (shardplan/software_input.py)
        lines.append(SoftwareUsed(**payload["software"]).line())
    lines += [f"warning: {w}" for w in payload.get("job_warnings", [])]
    lines += [f"note: {p}" for p in payload.get("ignored_pins", [])]
    if any(r["parallel"]["tp_comm_overlap"] for r in payload["recipes"]):
        lines.append("SP 'ovl': sequence parallel with --tp-comm-overlap")
    if "explanation" in payload:
        lines += format_explanation(payload["explanation"])
    space = payload.get("space") or {}
    if payload["recipes"] and space.get("pruned_lower_bound_s") is not None:
        lines.append(f"searched: {space['structural_rows_expanded']:,} of {space['structural_rows']:,} structural layouts "
                     f"expanded exactly; every recipe of the others is bounded at >= {space['pruned_lower_bound_s']:.3f} s "
                     "ranking step (branch and bound)")
    if payload["recipes"]:
        lines.append("split/MoE: 'acc' account-for-embedding/loss, 'fN/lM' first/last stage layers"
                     + (", 'pipes' '|' segments of --hybrid-layer-pattern" if model.is_hybrid else "")
                     + "; MoE dispatcher, '+ovl' --overlap-moe-expert-parallel-comm")
    return "\n".join(lines)


RANKING_GAP_NOTE = 0.02  # flag answers whose ranking time and displayed (simulated) step differ by more than this


def range_line(payload: dict) -> str | None:
    """The tokens/s/GPU range of each answer (measure/projection/error_band.py), and what the range means."""
    spans = [(i, (r.get("projection") or {}).get("tokens_per_s_per_gpu_range")) for i, r in enumerate(payload["recipes"], 1)]
    spans = [(i, s) for i, s in spans if s]
    if not spans:
        return None
    calibrated = payload.get("calibration") is not None and not any(w.startswith("calibration_other_model") for w in payload.get("job_warnings", []))
    shown_spans = ", ".join(f"#{i} {low:,.0f}-{high:,.0f}" for i, (low, high) in spans[:5]) + (" ..." if len(spans) > 5 else "")
    return (f"tok/s/GPU range ({'calibrated' if calibrated else 'uncalibrated'}; 80 % of held-out runs measured inside it): "
            f"{shown_spans}")


def thin_headroom_line(payload: dict) -> str | None:
    """The note for answers near the memory limit (constraints/memory/allocator.py near_limit: within a few percent of
    HBM of the usable limit, which also covers every answer with under that share of HBM free), or None: the table
    prints it under the rows, csv / markdown on stderr (shardplan/cli/solve.py)."""
    thin = [str(i) for i, r in enumerate(payload["recipes"], start=1) if r["memory"].get("near_limit")]
    if not thin:
        return None
    return (f"note: rank {', '.join(thin[:8])}{' ...' if len(thin) > 8 else ''}: near the memory limit (within "
            f"{NEAR_LIMIT_FRACTION_PPM / PPM:.0%} of HBM of it); published runs this close both ran and ran out of memory "
            "(docs/memory.md); a lower --max-memory-fraction keeps a wider margin")


def ranking_gap(r: dict) -> float:
    """|simulated step / ranking closed form - 1| of one answer (0 where either is missing)."""
    step, rank = r.get("step_time_us"), r.get("ranking_time_us")
    return abs(step / rank - 1.0) if step and rank else 0.0


def _segments(layout: str, pp: int) -> str:
    """A hybrid model's `|` segments (the recipe's pipeline_layout): 'pipes' and the layers per rank when uneven."""
    counts = [seg.count("t") for seg in layout.split("|")]
    per_rank = [sum(counts[r::pp]) for r in range(pp)]
    return "pipes" if len(set(counts)) == 1 else f"pipes f{per_rank[0]}/l{per_rank[-1]}"


def _extras(p: dict, model, layout: str | None = None) -> str:
    """Pipeline split and MoE communication choices of one answer, in a few characters."""
    split = ("acc" if p["account_for_embedding_and_loss_in_pipeline_split"] else
             _segments(layout, p["pp"]) if layout else
             f"f{p['first_stage_layers']}/l{p['last_stage_layers']}" if p["first_stage_layers"] else "even")
    if not model.is_moe:
        return split
    return f"{split} {p['moe_dispatcher'].replace('alltoall', 'a2a')}{'+ovl' if p['ep_comm_overlap'] else ''}"


SOLVE_COLUMNS = (("#", "rank", "{}"), ("TP", "tp", "{}"), ("PP", "pp", "{}"), ("VPP", "vpp", "{}"), ("CP", "cp", "{}"), ("EP", "ep", "{}"),
                 ("ETP", "etp", "{}"), ("DP", "dp", "{}"), ("MBS", "mbs", "{}"), ("SP", "sp", "{}"), ("recompute", "recompute", "{}"),
                 ("sharding", "dp_sharding", "{}"), ("schedule", "schedule", "{}"), ("split/MoE", "split", "{}"),
                 ("tok/s/GPU", "tokens_per_s_per_gpu", "{:.0f}"), ("MFU", "mfu", "{:.3f}"), ("step s", "step_s", "{}"),
                 ("bubble", "bubble", "{:.3f}"), ("peak GiB", "peak_gib", "{:.2f}"), ("free GiB", "free_gib", "{:.2f}"))


def solve_rows(payload: dict, model) -> list[dict]:
    """One flat row per ranked recipe (csv / markdown), the same cells as the text table."""
    rows = []
    for i, r in enumerate(payload["recipes"], 1):
        p, m, pr = r["parallel"], r["memory"], r["projection"] or {}
        rc = r["recipe"]["recompute"]
        rows.append({"rank": i, **{k: p[k] for k in ("tp", "pp", "vpp", "cp", "ep", "dp", "mbs", "dp_sharding", "schedule")},
                     "etp": p["etp"] if model.is_moe else None,
                     "sp": ("ovl" if p["tp_comm_overlap"] else "on") if p["sequence_parallel"] else "off",
                     "recompute": rc["granularity"] + ("(" + ",".join(rc["modules"]) + ")" if rc["modules"] else "")
                     + (f"({rc['method']},{rc['num_layers']})" if rc["method"] else ""),
                     "split": _extras(p, model, r["recipe"].get("pipeline_layout")),
                     "tokens_per_s_per_gpu": pr.get("tokens_per_s_per_gpu"), "mfu": pr.get("mfu"),
                     # '*': ranking closed form and simulated step differ by more than RANKING_GAP_NOTE (see the note)
                     "step_s": None if pr.get("iteration_time_s") is None
                     else f"{pr['iteration_time_s']:.3f}" + (" *" if ranking_gap(r) > RANKING_GAP_NOTE else ""),
                     "bubble": pr.get("bubble_fraction"),
                     "peak_gib": m["peak_bytes"] / GIB, "free_gib": (m["usable_bytes"] - m["peak_bytes"]) / GIB})
    return rows


def uncalibrated_note(hardware: str) -> str:
    """Why this part's projection is less certain (hardware.profile.uncalibrated_reason), as a note line."""
    return f"note: {hardware} {uncalibrated_reason(load_profile(hardware))}"
