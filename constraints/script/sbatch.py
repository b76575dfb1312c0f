"""The `#SBATCH` lines of a job script that sbatch reads, and a warning for each one it ignores.

Why its own module: sbatch does not read every `#SBATCH` line. Slurm's src/sbatch/opt.c (`_opt_batch_script`,
"Stop parsing script if not a comment") reads a line as a directive only when it starts with `#SBATCH` in
column 0, skips comments and blank lines, and stops at the first other line; the sbatch man page: "sbatch will
stop processing further #SBATCH directives once the first non-comment non-whitespace line has been reached in
the script." A `#SBATCH --nodes=8` below `module load cuda` is therefore a comment to sbatch, and reading it
would judge a different world size from the one the job gets. Lines inside here-document bodies are text some
command reads (e.g. the job script of `sbatch <<EOF`, read on its own), not lines of this script: no warning.
Which lines those are comes from the statements the caller already lexed (shell_lex.statements), so the script is
lexed once.
"""
from __future__ import annotations

from typing import Sequence

from constraints.script.lex import Stmt
from constraints.script.notes import LineNote

MAGIC = "#SBATCH"


def _heredoc_lines(stmts: Sequence[Stmt]) -> set[int]:
    """Script lines inside here-document bodies (their closing delimiter line included); the bodies are shared by all
    statements of one text (Stmt.heredocs)."""
    bodies = stmts[0].heredocs if stmts else []
    return {ln for body in bodies for ln in range(body.line, body.line + body[0].count("\n") + 1)}


def sbatch_directives(text: str, stmts: Sequence[Stmt], where: str = "") -> tuple[list[str], list[LineNote]]:
    """(the option text after `#SBATCH` of each line sbatch reads, in order; a note for each `#SBATCH` line it
    ignores). `stmts` are the statements of `text` (shell_lex.statements), which say where here-documents lie;
    `where` names the file of a child script in the notes (e.g. "conf/job.sh:")."""
    if MAGIC not in text:
        return [], []
    read: list[str] = []
    warnings: list[LineNote] = []
    heredoc: set[int] | None = None
    first_cmd = 0  # the line sbatch stopped reading at (0: not yet)
    for n, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not first_cmd:
            if line.startswith(MAGIC):
                read.append(line[len(MAGIC):].strip())
            elif stripped.startswith(MAGIC):
                warnings.append(_ignored(where, n, stripped, "it is indented, and sbatch reads #SBATCH only at the "
                                         "start of a line; remove the indentation"))
            elif stripped and not stripped.startswith("#"):
                first_cmd = n
            continue
        if stripped.startswith(MAGIC):
            heredoc = _heredoc_lines(stmts) if heredoc is None else heredoc
            if n not in heredoc:
                warnings.append(_ignored(where, n, stripped, f"it comes after the first command (line {first_cmd}), "
                                         f"where sbatch stops reading #SBATCH lines; move it above line {first_cmd}"))
    return read, warnings


def _ignored(where: str, n: int, line: str, why: str) -> LineNote:
    return LineNote(line=n, where=where, message=f"`{' '.join(line.split())[:60]}` is ignored by sbatch: {why}")


__all__ = ["sbatch_directives"]


def slurm_output_env(sizes: dict) -> dict[str, str]:
    """The allocation variables sbatch sets in the job's environment from the job's size options (`sizes`: the
    #SBATCH options as launch_script reads them: nodes, ntasks, ntasks_per_node, gpus_per_node). The sbatch man page,
    "OUTPUT ENVIRONMENT VARIABLES": SLURM_JOB_NUM_NODES (and SLURM_NNODES for backwards compatibility), SLURM_NTASKS
    (and SLURM_NPROCS), SLURM_NTASKS_PER_NODE (only with --ntasks-per-node), SLURM_GPUS_PER_NODE (only with
    --gpus-per-node). A range (`--nodes=2-4`) or a value held in a variable says no one number: nothing is set."""
    def count(key: str):
        value = sizes.get(key)
        if isinstance(value, str) and ":" in value and key == "gpus_per_node":  # --gpus-per-node=h100:4
            value = value.rsplit(":", 1)[1]
        return int(value) if isinstance(value, int) or (isinstance(value, str) and value.isdigit()) else None

    nodes, per_node, tasks, gpus = count("nodes"), count("ntasks_per_node"), count("ntasks"), count("gpus_per_node")
    out: dict[str, str] = {}
    if nodes:
        out["SLURM_NNODES"] = out["SLURM_JOB_NUM_NODES"] = str(nodes)
    if per_node:
        out["SLURM_NTASKS_PER_NODE"] = str(per_node)
    total = tasks or (nodes * per_node if nodes and per_node else None)
    if total:
        out["SLURM_NTASKS"] = out["SLURM_NPROCS"] = str(total)
    if gpus:
        out["SLURM_GPUS_PER_NODE"] = str(gpus)
    return out
