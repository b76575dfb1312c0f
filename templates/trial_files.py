"""The folder `solve --trials K -o DIR` writes: one short measuring run per chosen answer, a script that runs them all
and saves their logs, and TRIALS.md saying what each run is for and how to feed the logs back.

Why a folder of short runs: the projection's constants were fitted on other people's clusters and software; a few
minutes of the user's own cluster (measured step, memory, per-phase timers: templates.recipe_args.TrialRun) is the
evidence `shardplan calibrate` fits, after which `solve --calibration` re-ranks. Written all or nothing
(boundary.write.atomic_write_folder), like `solve --render`.
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Sequence

from boundary.write import atomic_write_folder
from constraints.case import Case
from templates.escape import comment_safe, markdown_text
from templates.recipe_args import RenderPaths, TrialRun
from templates.render import render_script
from templates.render_files import script_name


def _in_code_span(text: str) -> str:
    """A shell word inside a Markdown code span, where backslash escapes do not apply: printable ASCII without a
    backtick (which would end the span), shell-quoted for the user who pastes it."""
    return shlex.quote(comment_safe(text).replace("`", "?"))


def _cell(text: str) -> str:
    """Text as data in a markdown line or table cell (templates.escape.markdown_text)."""
    return markdown_text(text, 120)


def run_all_script(names: Sequence[str], fmt: str, hardware: str) -> str:
    """Runs every trial in turn, each log into logs/, then says how to calibrate from them."""
    quoted = " ".join(shlex.quote(n) for n in names)
    run = ('sbatch --wait --output="logs/${script%.*}.log" "$script"' if fmt == "slurm"
           else 'bash "$script" 2>&1 | tee "logs/${script%.*}.log"')
    return "\n".join([
        "#!/usr/bin/env bash",
        "# shardplan trials: run each short measuring run in turn; its log lands in logs/ for `shardplan calibrate`.",
        "set -uo pipefail",
        'cd "$(dirname "$0")"',
        "mkdir -p logs",
        f"for script in {quoted}; do",
        f"    {run} || echo \"trial $script failed (its log says why); the others still run\" >&2",
        "done",
        # the whole message one single-quoted word: inside double quotes a `$(...)` in a hardware path would run
        "echo " + shlex.quote(f"next: shardplan calibrate logs/*.log --hardware {shlex.quote(comment_safe(hardware))} "
                              "-o calibration.json"),
        ""])


def write_trials(cases: Sequence[Case], ranks: Sequence[int], reasons: Sequence[str], projected_s: Sequence[float],
                 directory: str | Path, trial: TrialRun = TrialRun(), paths: RenderPaths | None = None) -> list[str]:
    """Write the trial folder for the chosen answers (`ranks`: their rank in the solve, from 1). Returns script names."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fmt = "slurm" if cases and cases[0].placement.num_nodes > 1 else "torchrun"
    files, names = [], []
    for rank, case in zip(ranks, cases):
        name = script_name(rank, case, fmt)
        files.append((name, render_script(case, fmt, paths, trial=trial), True))
        names.append(name)
    hardware = cases[0].placement.hardware if cases else ""
    files.append(("run_trials.sh", run_all_script(names, fmt, hardware), True))
    rows = ["| solve rank | script | projected s/iter | why this one |", "|---|---|---|---|"]
    rows += [f"| {rank} | {name} | {t:.3f} | {_cell(why)} |" for rank, name, t, why in zip(ranks, names, projected_s, reasons)]
    c = cases[0] if cases else None
    head = [f"# shardplan trials: {len(names)} short run(s) of {trial.train_iters} iterations", ""]
    if c is not None:
        head += [f"Model {_cell(c.model.name)} on {c.placement.num_nodes} x {c.placement.gpus_per_node} {_cell(c.placement.hardware)}, "
                 f"seq {c.job.seq_length}, global batch {c.job.global_batch_size}, {c.job.precision.value}.", ""]
    tail = ["", "Each run logs every iteration with its throughput, per-phase timers and the memory report, evaluates",
            "nothing and saves no checkpoint" + (" and trains on Megatron's synthetic batches (--mock-data)"
                                                 if (paths or RenderPaths()).data_path == RenderPaths().data_path else "") + ".",
            "", "1. `./run_trials.sh` (set MEGATRON_PATH to your Megatron-LM checkout first)",
            f"2. `shardplan calibrate logs/*.log --hardware {_in_code_span(hardware)} -o calibration.json`",
            "3. run the same `shardplan solve` again with `--calibration calibration.json`: it ranks with this cluster's",
            "   factors, and a measured answer is ranked by its measurement.", ""]
    atomic_write_folder(directory, files + [("TRIALS.md", "\n".join(head + rows + tail), False)])
    return names
