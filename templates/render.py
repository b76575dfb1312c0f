"""Render a case (model, job, recipe, placement) as a ready-to-run Megatron-LM launch script.

Why the quoting happens here and not in the template: every value that reaches the script passes
through `shlex.quote` in one place, so a model name or path holding spaces, `$()`, backticks or `;`
stays one literal word; the templates only lay out already-safe words (loops and ifs, no logic).
Comments get a printable, single-line form of any user text, so a newline cannot end a comment either.
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Literal

import jinja2

from boundary.errors import ShardplanError
from constraints.case import Case
from constraints.models.mamba import entry_script
from constraints.spec import PipelineSchedule
from hardware.profile import ProfileError, load_profile
from templates.escape import UnwritableValue, comment_safe, name_safe
from templates.placeholders import header_block, rendered_placeholders
from templates.recipe_args import (
    GROUPS,
    RenderPaths,
    TrialRun,
    megatron_arg_groups,
    needs_cuda_device_max_connections_1,
    uses_fsdp,
)
from templates.slurm_options import SlurmOptions, slurm_context
from templates.stack_render import STACK_FORMATS, StackRenderError, render_stack

Format = Literal["torchrun", "slurm"]
FORMATS: tuple[str, ...] = ("torchrun", "slurm")  # launch scripts
RENDER_FORMATS: tuple[str, ...] = FORMATS + STACK_FORMATS  # and stack configs (templates.stack_render)
TEMPLATE_FILES = {"torchrun": "torchrun.sh.j2", "slurm": "slurm.sbatch.j2"}
TEMPLATES_DIR = Path(__file__).resolve().parent

# bash array names, in the order Megatron-LM's examples pass them to pretrain_gpt.py
ARRAY_NAMES = {
    "model": "MODEL_ARGS", "training": "TRAINING_ARGS", "parallelism": "PARALLEL_ARGS", "moe": "MOE_ARGS",
    "precision": "PRECISION_ARGS", "data": "DATA_ARGS", "logging": "LOGGING_ARGS", "checkpointing": "CHECKPOINT_ARGS",
}


class RenderError(ShardplanError):
    """A render request that cannot be honoured; one line for the user."""


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), undefined=jinja2.StrictUndefined,
        autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )


def slurm_job_name(name: str) -> str:
    """`#SBATCH --job-name` is read by sbatch, not bash; keep it to characters no tool interprets."""
    return name_safe(name)


def arg_lines(args: list[str]) -> list[str]:
    """Shell-quoted words, one flag with its values per line (how Megatron-LM's examples read)."""
    lines: list[list[str]] = []
    for arg in args:
        if arg.startswith("--") or not lines:
            lines.append([])
        lines[-1].append(shlex.quote(arg))
    return [" ".join(words) for words in lines]


def _compute_capability(hardware: str) -> float | None:
    try:
        return load_profile(hardware).compute_capability
    except ProfileError:
        return None  # unknown profile: treated as pre-Blackwell, where the setting is required


def unsupported_features(case: Case) -> list[str]:
    """Recipe choices pretrain_gpt.py has no flag for: the script would run another schedule than the one ranked, so
    render refuses it unless forced, and says so."""
    if case.recipe.schedule in (PipelineSchedule.zb_h1, PipelineSchedule.zbv):
        fallback = "interleaved 1F1B" if case.recipe.vpp > 1 else "1F1B"
        return [f"schedule {case.recipe.schedule.value} has no Megatron-LM pretrain_gpt.py flag; a script for it runs {fallback}"]
    return []


def _header(case: Case, placeholders: list[tuple[str, str, str]] = ()) -> list[str]:
    r, world = case.recipe, case.world_size
    layout = f"layout {r.pipeline_layout}" if r.pipeline_layout else f"VPP={r.vpp}"
    parallel = (f"TP={r.tp} PP={r.pp} {layout} CP={r.cp} EP={r.ep} ETP={r.etp_effective} DP={r.dp(world)} "
                f"MBS={r.mbs} GBS={case.job.global_batch_size}")
    return [comment_safe(line) for line in (
        f"model: {case.model.name}",
        f"hardware: {case.placement.hardware}, {case.placement.num_nodes} node(s) x {case.placement.gpus_per_node} GPU(s)"
        f" = {world} ranks",
        f"recipe: {parallel}, seq {case.job.seq_length}, {case.job.precision.value}",
        *[f"NOTE: {note}" for note in unsupported_features(case)],
        *header_block(list(placeholders)),
    )]


def _cuda_max_connections(case: Case) -> str:
    """'1' (export it), 'unset' (FSDP asserts it is not 1) or 'leave' for this recipe's launch environment."""
    written = case.recipe  # MoE flags are not written for a dense model, so they cannot relax the env either
    if not case.model.is_moe:
        written = written.model_copy(update={"overlap_moe_expert_parallel_comm": False})
    if needs_cuda_device_max_connections_1(written, _compute_capability(case.placement.hardware)):
        return "1"
    return "unset" if uses_fsdp(written) else "leave"


def launch_env(case: Case) -> dict:
    """The environment the rendered scripts set that Megatron's validation reads: {name: value}, None = must be unset.
    `solve --json` carries it next to `megatron_args`, so the two together pass `check`."""
    mode = _cuda_max_connections(case)
    return {"CUDA_DEVICE_MAX_CONNECTIONS": "1"} if mode == "1" else {"CUDA_DEVICE_MAX_CONNECTIONS": None} if mode == "unset" else {}


def render_context(case: Case, fmt: Format, paths: RenderPaths | None = None, trial: TrialRun | None = None,
                   slurm: SlurmOptions | None = None) -> dict:
    """Everything the template sees; every word that reaches bash is already shell-quoted."""
    paths = paths or RenderPaths()
    groups = megatron_arg_groups(case.model, case.job, case.recipe, paths, trial)
    cuda_max_connections = _cuda_max_connections(case)
    return {
        "header": _header(case, rendered_placeholders(case, paths, trial)),
        "slurm": slurm_context(slurm or SlurmOptions()),
        "entry_script": entry_script(case.model),  # pretrain_hybrid.py for a hybrid pattern (constraints/models/mamba.py)
        "job_name": slurm_job_name(case.model.name),
        "cuda_max_connections": cuda_max_connections,
        "megatron_path": shlex.quote(paths.megatron_path),
        "num_nodes": shlex.quote(str(case.placement.num_nodes)),
        "gpus_per_node": shlex.quote(str(case.placement.gpus_per_node)),
        "groups": [{"name": ARRAY_NAMES[key], "lines": arg_lines(groups[key])} for key in GROUPS if groups[key]],
    }


def render_script(case: Case, fmt: Format = "torchrun", paths: RenderPaths | None = None, trial: TrialRun | None = None,
                  slurm: SlurmOptions | None = None) -> str:
    """The launch script text for `fmt` ("torchrun": run per node; "slurm": an sbatch file); `trial`: a short
    measuring run (templates.recipe_args.TrialRun) instead of a training run; `slurm`: the sbatch options of the
    cluster (templates.slurm_options), read only by the slurm format."""
    if fmt in STACK_FORMATS:  # a stack's config file, not a launch script (templates.stack_render)
        try:
            return render_stack(case, fmt, paths)
        except (StackRenderError, UnwritableValue) as exc:
            raise RenderError(str(exc)) from None
    if fmt not in TEMPLATE_FILES:
        raise RenderError(f"--format: unknown format {fmt!r}; use one of {', '.join(RENDER_FORMATS)}")
    template = _environment().get_template(TEMPLATE_FILES[fmt])
    return template.render(**render_context(case, fmt, paths, trial, slurm)).rstrip("\n") + "\n"


def placeholders_of(case: Case, fmt: str, paths: RenderPaths | None = None) -> list[tuple[str, str, str]]:
    """The placeholders `render_script(case, fmt, paths)` writes (templates.placeholders): a stack config names no
    Megatron checkout."""
    return rendered_placeholders(case, paths, launch_script=fmt in TEMPLATE_FILES)
