"""`shardplan calibrate`: fit this cluster's factors from the Megatron-LM logs of runs made on it, and seal them in a file.

Why from logs: a log holds the whole recipe (its argument dump) and what the run measured (step times, memory), so the
user hands over nothing they have not already got. Each log is read as `check LOG` reads it (constraints/read.py), its
steady-state step time becomes one piece of evidence, and measure/calibration/fit.py moves as many factors as the
evidence can tell apart. The file records the evidence, the residuals, the part and the software versions; it is
written whole or not at all and never over one of the logs.
"""
from __future__ import annotations

import hashlib
from typing import Optional, Sequence

from boundary.errors import ShardplanError
from boundary.read import recording_reads
from boundary.write import atomic_write_text, check_output_file, refuse_overwriting_input
from constraints.read import load_check_input
from hardware.profile import load_profile
from measure.calibration.fit import Evidence, fit_factors
from measure.calibration.store import CalibrationFile, EvidenceRecord, model_key
from shardplan.api_arguments.bounds import MAX_LOGS
from shardplan.api_arguments.edge import api_edge
from shardplan.api_arguments.models import CalibrateArguments
from shardplan.verdict import run_options
from templates.recipe_args import megatron_arg_groups

# the argument groups that say how a run is laid out and executed (not how long it trains, on what data, or what it logs)
LAYOUT_GROUPS = ("model", "parallelism", "moe", "precision")


def recipe_key(case) -> str:
    """A run's layout as Megatron-LM reads it (the rendered model / parallel / MoE / precision arguments, the micro-batch,
    the cluster size), hashed: a trial script read back from its log and the solve answer it was rendered from give
    the same key, whatever fields a dense model leaves at their defaults."""
    groups = megatron_arg_groups(case.model, case.job, case.recipe)
    words = [w for g in LAYOUT_GROUPS for w in groups[g]] + ["mbs", str(case.recipe.mbs), "gbs", str(case.job.global_batch_size),
                                                          "world", str(case.placement.world_size),
                                                          "recompute", case.recipe.recompute.model_dump_json()]
    return hashlib.sha256("\0".join(words).encode()).hexdigest()[:16]


def recipe_summary(case) -> str:
    r, j = case.recipe, case.job
    return (f"tp{r.tp} pp{r.pp} vpp{r.vpp} cp{r.cp} ep{r.ep} mbs{r.mbs} gbs{j.global_batch_size} seq{j.seq_length} "
            f"{j.precision.value}")


@api_edge(CalibrateArguments)
@recording_reads  # -o never replaces a log or model file it read (boundary/write.py)
def calibrate(logs: Sequence[str], hardware: str, nodes: Optional[int] = None, gpus_per_node: Optional[int] = None,
              model: Optional[str] = None, output: Optional[str] = None) -> CalibrationFile:
    """Fit and (when `output` is given) write a calibration from training logs of one cluster."""
    if not logs:
        raise ShardplanError("calibrate: no log given; pass one or more Megatron-LM training logs")
    if len(logs) > MAX_LOGS:
        raise ShardplanError(f"calibrate: {len(logs)} logs, at most {MAX_LOGS}; pass the runs that differ")
    if output is not None:
        check_output_file(output, "-o")
        for log in logs:
            refuse_overwriting_input(log, output, "-o")
    profile = load_profile(hardware)
    evidence, measured = [], []
    for path in logs:
        try:
            loaded = load_check_input(path, hardware, nodes, gpus_per_node, model)
        except ShardplanError as exc:  # with several logs, say which one (the reader's own message may not name it)
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ShardplanError(message if str(path) in message else f"{path}: {message}") from None
        run = loaded.measured
        if run is None:
            raise ShardplanError(f"{path}: not a training log (a recipe or script measures nothing); pass the log a run printed")
        c = loaded.case
        evidence.append(Evidence(label=path, model=c.model, job=c.job, recipe=c.recipe, placement=c.placement,
                                 run_options=run_options(loaded), iteration_time_s=run.iteration_time_s,
                                 allocator_gap_bytes=run.allocator_gap_bytes))
        measured.append((c, run))
    fit = fit_factors(profile, evidence)
    by_model: dict[str, list[int]] = {}
    for i, ev in enumerate(evidence):
        by_model.setdefault(model_key(ev.model), []).append(i)
    # each model fitted on its own runs: what --calibration applies to that model, and so each run's calibrated step
    model_fits = {key: fit_factors(profile, [evidence[i] for i in runs]) for key, runs in by_model.items()}
    before, after = [0.0] * len(evidence), [0.0] * len(evidence)
    for key, runs in by_model.items():
        for i, b, a in zip(runs, model_fits[key].projected_before_s, model_fits[key].projected_after_s):
            before[i], after[i] = b, a
    records = tuple(EvidenceRecord(label=ev.label, model=c.model.name, model_key=model_key(c.model), world_size=c.placement.world_size,
                                   recipe_key=recipe_key(c), recipe=recipe_summary(c),
                                   measured_iteration_time_s=run.iteration_time_s, projected_before_s=before[i],
                                   projected_after_s=after[i], residual=after[i] / run.iteration_time_s - 1.0,
                                   iterations_used=run.iterations_used, max_allocated_bytes=run.max_allocated_bytes,
                                   max_reserved_bytes=run.max_reserved_bytes)
                    for i, (ev, (c, run)) in enumerate(zip(evidence, measured)))
    software: dict[str, str] = {}
    for _, run in measured:
        for name, version in run.versions.items():
            software.setdefault(name, version)
    result = CalibrationFile(hardware=profile.name, factors=fit.factors, model_factors={key: f.factors for key, f in model_fits.items()},
                             free_factors=fit.free, evidence=records,
                             software=software).sealed()
    if output is not None:
        atomic_write_text(output, result.to_text(), "-o")
    return result
