"""`shardplan render`: a recipe YAML -> a Megatron-LM launch script; plus the writer behind `solve --render DIR`.

A thin click layer over `templates.render`: the recipe is judged by `constraints.check.check_case` first,
and an illegal one is refused (exit 1, the violations listed) unless `--force`. User mistakes are one
line on stderr and exit 2. The lead registers `render_command` on the `shardplan` group.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Optional, Sequence

import click

from constraints.case import Case, atomic_write_text, load_case_yaml
from constraints.stack_configs import is_stack_file
from templates.megatron_args import CHECKPOINT_DIR_PLACEHOLDER, DATA_PATH_PLACEHOLDER, MEGATRON_PATH_PLACEHOLDER, RenderPaths
from templates.render import RENDER_FORMATS, Format, render_script, unsupported_features

SUFFIX = {"torchrun": ".sh", "slurm": ".sbatch"}


class _UserError(click.ClickException):
    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {self.message}", err=True)


def case_violations(case: Case, flags=None, env=None) -> list[str]:
    """One line per error-severity violation (rules and memory) from `check_case`, as `rule: message (fix: ...)`;
    `flags`/`env` are a launch script's raw Megatron flags and environment, judged as `check` judges them."""
    from constraints.check import check_case
    from hardware.profile import load_profile

    report = check_case(case, load_profile(case.placement.hardware), flags=flags, env=env)
    lines = [f"{v.rule}: {v.message} (fix: {v.fix})" for v in report.violations]
    return lines + [f"render: {note}" for note in unsupported_features(case)]


def write_script(path: str | Path, text: str) -> None:
    """Atomic write of an executable launch script, so `./script.sh` works."""
    atomic_write_text(path, text, executable=True)


@click.command("render")
@click.argument("recipe_file", metavar="RECIPE.yaml|SCRIPT", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(RENDER_FORMATS), default="torchrun", show_default=True,
              help="torchrun: a per-node launch script; slurm: an sbatch file running srun torchrun; primus / bridge / "
                   "bridge-overrides / yaml-cfg: the config file of that stack on Megatron-LM")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="write here (atomically) instead of stdout")
@click.option("--force", is_flag=True, help="render even when check finds the recipe illegal")
@click.option("--data-path", default=DATA_PATH_PLACEHOLDER, show_default=True, help="Megatron --data-path prefix")
@click.option("--tokenizer-model", default=None,
              help="HF tokenizer name or path; default: NullTokenizer with the model's --vocab-size")
@click.option("--checkpoint-dir", default=CHECKPOINT_DIR_PLACEHOLDER, show_default=True, help="--save/--load directory")
@click.option("--megatron-path", default=MEGATRON_PATH_PLACEHOLDER, show_default=True,
              help="Megatron-LM checkout holding pretrain_gpt.py (env MEGATRON_PATH overrides it at run time)")
@click.option("--hardware", default=None, help="for a launch script: hardware profile (as `check`)")
@click.option("--nodes", type=click.IntRange(min=1), default=None, help="for a launch script: nodes (as `check`)")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=None, help="for a launch script: GPUs per node")
def render_command(recipe_file: str, fmt: Format, output: Optional[str], force: bool, data_path: str,
                   tokenizer_model: Optional[str], checkpoint_dir: str, megatron_path: str,
                   hardware: Optional[str] = None, nodes: Optional[int] = None, gpus_per_node: Optional[int] = None) -> None:
    """Render a recipe as a ready-to-run Megatron-LM launch script.

    The recipe is checked first; an illegal one is refused (exit 1) unless --force. RECIPE may also be a
    Megatron launch script or argument file, read as `check` reads it (with --hardware/--nodes/--gpus-per-node).

    \b
    Example:
      shardplan render constraints/examples/llama3-70b-h100.yaml --format slurm -o train.sbatch \\
          --data-path /data/fineweb_text_document --megatron-path /opt/Megatron-LM
    """
    flags = env = None
    early: list[str] = []
    try:
        if Path(recipe_file).suffix in (".yaml", ".yml") and not is_stack_file(recipe_file):  # stack hook (configs)
            case = load_case_yaml(recipe_file)
        else:  # a launch script or argument file: the recipe `check` reads from it
            from solver.inputs import load_check_input

            loaded = load_check_input(recipe_file, hardware, nodes, gpus_per_node)
            case, flags, env = loaded.case, loaded.flags, loaded.env
            early = [f"{v.rule}: {v.message} (fix: {v.fix})" for v in loaded.preflight_violations]
    except ValueError as exc:
        raise _UserError(str(exc).splitlines()[0]) from None
    try:
        paths = RenderPaths(data_path=data_path, tokenizer_model=tokenizer_model, checkpoint_dir=checkpoint_dir,
                            megatron_path=megatron_path)
    except ValueError as exc:
        raise _UserError(str(exc)) from None
    try:
        violations = early + case_violations(case, flags, env)
    except ValueError as exc:  # e.g. an unknown hardware profile: nothing to check against
        if not force:
            raise _UserError(str(exc).splitlines()[0]) from None
        violations = [f"not checked: {str(exc).splitlines()[0]}"]
    if violations and not force:
        click.echo(f"error: {recipe_file}: the recipe is illegal or not expressible ({len(violations)} problem(s)); "
                   "fix it or pass --force:", err=True)
        for line in violations:
            click.echo(f"  - {line}", err=True)
        sys.exit(1)
    for line in violations:
        click.echo(f"warning (--force): {line}", err=True)
    for note in case.model.config_notes:  # what the HF config reader did not follow is rendered as read: say so
        click.echo(f"warning: model config: {note}", err=True)
    text = render_script(case, fmt, paths)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        write_script(output, text)
    except OSError as exc:
        raise _UserError(f"-o: cannot write {output}: {exc.strerror}") from None
    click.echo(f"wrote {output}", err=True)


def script_name(rank: int, case: Case, fmt: Format) -> str:
    """e.g. `01-Llama-3.1-70B-tp8-pp4-vpp5-cp1-ep1-mbs1.sh`: sortable by rank, safe in any shell."""
    r = case.recipe
    model = re.sub(r"[^A-Za-z0-9._-]", "_", case.model.name)[:48] or "model"
    return f"{rank:02d}-{model}-tp{r.tp}-pp{r.pp}-vpp{r.vpp}-cp{r.cp}-ep{r.ep}-mbs{r.mbs}{SUFFIX[fmt]}"


def render_solutions(cases: Sequence[Case], directory: str | Path, fmt: Format = "torchrun",
                     paths: RenderPaths | None = None, notes: Sequence[str] | None = None) -> list[Path]:
    """One script per case (in the given rank order) plus SUMMARY.md; `notes` adds one free-text column per
    case (e.g. the projected step time). Returns the script paths. Cases are assumed already checked.

    A case pretrain_gpt.py cannot express (a zero-bubble schedule) gets no script, only a SUMMARY row saying
    why: the script would run another schedule, whose memory and time were never checked (it may not fit)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if notes is not None and len(notes) != len(cases):
        raise ValueError(f"render_solutions: {len(notes)} notes for {len(cases)} cases; give one per case")
    written: list[Path] = []
    rows = ["| rank | script | TP | PP | VPP | CP | EP | ETP | DP | MBS | SP | recompute | DP sharding | note |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, case in enumerate(cases, start=1):
        note = (notes[i - 1] if notes is not None else "").replace("|", "/").replace("\n", " ")
        unsupported = unsupported_features(case)
        if unsupported:
            script = "not rendered"
            note = "; ".join([note] * bool(note) + [u.replace("|", "/") for u in unsupported])
        else:
            path = directory / script_name(i, case, fmt)
            write_script(path, render_script(case, fmt, paths))
            written.append(path)
            script = path.name
        r = case.recipe
        rows.append(f"| {i} | {script} | {r.tp} | {r.pp} | {r.vpp} | {r.cp} | {r.ep} | {r.etp_effective} | "
                    f"{r.dp(case.world_size)} | {r.mbs} | {'yes' if r.sp_active else 'no'} | {r.recompute.granularity.value} | "
                    f"{r.dp_sharding.value} | {note} |")
    header = [f"# shardplan: {len(written)} of {len(cases)} recipe(s) rendered, format {fmt}", ""]
    if cases:
        c = cases[0]
        header += [f"Model {c.model.name} on {c.placement.num_nodes} x {c.placement.gpus_per_node} "
                   f"{c.placement.hardware}, seq {c.job.seq_length}, global batch {c.job.global_batch_size}, "
                   f"{c.job.precision.value}.", ""]
    atomic_write_text(directory / "SUMMARY.md", "\n".join(header + rows) + "\n")
    return written
