"""Rendered scripts as files: one executable script (`write_script`), and the folder `solve --render DIR` writes
(one script per ranked answer plus SUMMARY.md, `render_solutions`).

Why apart from templates/render.py: that module turns a case into text and touches no file; this one owns the
names, modes and atomic writes of what lands on disk. The single-recipe flow (read, check, refuse or warn, render)
is shardplan.api.render, which `shardplan render` calls.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from boundary.write import atomic_write_folder
from constraints.case import Case, atomic_write_text
from templates.escape import markdown_text
from templates.placeholders import placeholder_lines
from templates.recipe_args import RenderPaths
from templates.render import Format, placeholders_of, render_script, unsupported_features
from templates.render_manifest import manifest_file, refuse_foreign, removable

SUFFIX = {"torchrun": ".sh", "slurm": ".sbatch"}


def write_script(path: str | Path, text: str) -> None:
    """Atomic write of an executable launch script, so `./script.sh` works."""
    atomic_write_text(path, text, executable=True)


def script_name(rank: int, case: Case, fmt: Format) -> str:
    """e.g. `01-Llama-3.1-70B-tp8-pp4-vpp5-cp1-ep1-mbs1.sh`: sortable by rank, safe in any shell."""
    r = case.recipe
    model = re.sub(r"[^A-Za-z0-9._-]", "_", case.model.name)[:48] or "model"
    return f"{rank:02d}-{model}-tp{r.tp}-pp{r.pp}-vpp{r.vpp}-cp{r.cp}-ep{r.ep}-mbs{r.mbs}{SUFFIX[fmt]}"


def not_rendered(cases: Sequence[Case]) -> dict[int, list[str]]:
    """Rank (from 1) -> why `render_solutions` writes no script for that answer (what pretrain_gpt.py cannot run):
    the caller says it where the user looks, since SUMMARY.md alone is easy to miss."""
    return {i: why for i, case in enumerate(cases, start=1) if (why := unsupported_features(case))}


def render_solutions(cases: Sequence[Case], directory: str | Path, fmt: Format = "torchrun",
                     paths: RenderPaths | None = None, notes: Sequence[str] | None = None) -> list[Path]:
    """One script per case (in the given rank order) plus SUMMARY.md; `notes` adds one free-text column per
    case (e.g. the projected step time). Returns the script paths. Cases are assumed already checked.

    A case pretrain_gpt.py cannot express (a zero-bubble schedule) gets no script, only a SUMMARY row saying
    why: the script would run another schedule, whose memory and time were never checked (it may not fit).
    The folder's MANIFEST records what this render wrote; the next render removes those files it does not write
    again, and only while they are unchanged (templates.render_manifest): never a file it did not write."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if notes is not None and len(notes) != len(cases):
        raise ValueError(f"render_solutions: {len(notes)} notes for {len(cases)} cases; give one per case")
    files: list[tuple[str, str, bool]] = []
    written: list[Path] = []
    rows = ["| rank | script | TP | PP | VPP | CP | EP | ETP | DP | MBS | SP | recompute | DP sharding | note |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    skipped = not_rendered(cases)
    for i, case in enumerate(cases, start=1):
        note = "; ".join(n for n in [notes[i - 1] if notes is not None else "", *skipped.get(i, [])] if n)
        if i in skipped:
            script = "not rendered"
        else:
            path = directory / script_name(i, case, fmt)
            files.append((path.name, render_script(case, fmt, paths), True))
            written.append(path)
            script = f"`{path.name}`"  # script_name keeps to [A-Za-z0-9._-]: a code span holds it literally
        r = case.recipe
        rows.append(f"| {i} | {script} | {r.tp} | {r.pp} | {r.vpp} | {r.cp} | {r.ep} | {r.etp_effective} | "
                    f"{r.dp(case.world_size)} | {r.mbs} | {'yes' if r.sp_active else 'no'} | {r.recompute.granularity.value} | "
                    f"{r.dp_sharding.value} | {markdown_text(note, 400)} |")
    header = [f"# shardplan: {len(written)} of {len(cases)} recipe(s) rendered, format {fmt}", ""]
    if cases:
        c = cases[0]
        header += [f"Model {markdown_text(c.model.name)} on {c.placement.num_nodes} x {c.placement.gpus_per_node} "
                   f"{markdown_text(c.placement.hardware)}, seq {c.job.seq_length}, global batch {c.job.global_batch_size}, "
                   f"{c.job.precision.value}.", ""]
        found = placeholders_of(c, fmt, paths) if written else []
        if found:
            header += [f"Each script holds {len(found)} placeholder(s) to replace before launching (listed in its header):",
                       *[f"- {markdown_text(line, 400)}" for line in placeholder_lines(found)], ""]
    files.append(("SUMMARY.md", "\n".join(header + rows) + "\n", False))
    earlier = removable(directory)
    refuse_foreign(directory, [name for name, _, _ in files], earlier, "--render")
    # the scripts, SUMMARY.md and the manifest land together or not at all, and an earlier render's unchanged scripts
    # this one does not write again go with them: never a stale answer, nor a folder half new
    # (boundary.write.atomic_write_folder); the manifest, last, names what this render wrote
    atomic_write_folder(directory, files + [manifest_file(files)],
                        remove=set(earlier) - {name for name, _, _ in files})
    return written
