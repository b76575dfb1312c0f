"""`shardplan render`: a recipe (YAML, or any file `check` reads) -> a Megatron-LM launch script or stack config.

A thin click layer over shardplan.api.render (parse options, call, print), so the command and the API share one
render flow and write the same bytes. Exit status: 0 rendered; 1 the recipe is illegal or not expressible (every
problem listed) and --force was not given; 2 unusable input (one line `error: ...`).
"""
from __future__ import annotations

import sys
from typing import Optional

import click

from boundary.read import reads_recorded
from boundary.write import check_output_file
from shardplan import api
from shardplan.cli.completion import complete_hardware
from shardplan.cli.errors import UnusableInput, unusable_input
from templates.recipe_args import CHECKPOINT_DIR_PLACEHOLDER, DATA_PATH_PLACEHOLDER, MEGATRON_PATH_PLACEHOLDER
from templates.render import RENDER_FORMATS
from templates.render_files import write_script
from templates.render_input import RenderRefused


@click.command("render")
@click.argument("recipe_file", metavar="RECIPE.yaml|SCRIPT", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(RENDER_FORMATS), default="torchrun", show_default=True,
              help="torchrun: a per-node launch script; slurm: an sbatch file running srun torchrun; primus / bridge / "
                   "bridge-overrides: the config file of that stack on Megatron-LM (yaml-cfg is refused: Megatron-LM's "
                   "yaml loader cannot run a file of the recipe's own settings)")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="write here (atomically) instead of stdout")
@click.option("--force", is_flag=True, help="render even when check finds the recipe illegal")
@click.option("--data-path", default=DATA_PATH_PLACEHOLDER, show_default=True, help="Megatron --data-path prefix")
@click.option("--tokenizer-model", default=None,
              help="HF tokenizer name or path; needed with a real --data-path (else a placeholder, listed)")
@click.option("--mock-data", is_flag=True, default=None,
              help="train on Megatron's synthetic batches (--mock-data, NullTokenizer): no data path, no tokenizer")
@click.option("--checkpoint-dir", default=CHECKPOINT_DIR_PLACEHOLDER, show_default=True, help="--save/--load directory")
@click.option("--megatron-path", default=MEGATRON_PATH_PLACEHOLDER, show_default=True,
              help="Megatron-LM checkout holding pretrain_gpt.py (env MEGATRON_PATH overrides it at run time)")
@click.option("--hardware", default=None, shell_complete=complete_hardware,
              help="hardware profile name or YAML path (overrides the file, as in `check`)")
@click.option("--nodes", type=click.IntRange(min=1), default=None, help="number of nodes (overrides the file)")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=None, help="GPUs per node (overrides the file)")
@click.option("--slurm-config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="YAML of sbatch settings (partition, account, time, output, error, container_image, "
                   "container_mounts); the flags below override it. --format slurm only")
@click.option("--partition", default=None, help="#SBATCH --partition (--format slurm)")
@click.option("--account", default=None, help="#SBATCH --account (--format slurm)")
@click.option("--time", default=None, help="#SBATCH --time, e.g. 4:00:00 or 2-00:00:00 (--format slurm)")
@click.option("--slurm-output", "output_log", default=None, help="#SBATCH --output [default: %x-%j.out] (--format slurm)")
@click.option("--slurm-error", "error_log", default=None, help="#SBATCH --error [default: %x-%j.err] (--format slurm)")
@click.option("--container-image", default=None, help="pyxis srun --container-image, e.g. nvcr.io#nvidia/pytorch:25.01-py3")
@click.option("--container-mounts", default=None, help="pyxis srun --container-mounts, e.g. /lustre:/lustre")
def render_command(recipe_file: str, fmt: str, output: Optional[str], force: bool, data_path: str,
                   tokenizer_model: Optional[str], mock_data: Optional[bool], checkpoint_dir: str, megatron_path: str,
                   hardware: Optional[str] = None, nodes: Optional[int] = None, gpus_per_node: Optional[int] = None,
                   output_log: Optional[str] = None, error_log: Optional[str] = None, **slurm_flags: Optional[str]) -> None:
    """Render a recipe as a ready-to-run Megatron-LM launch script.

    The recipe is checked first; an illegal one is refused (exit 1) unless --force. RECIPE may also be a
    Megatron launch script, argument file or stack config, read as `check` reads it (with --hardware/--nodes/--gpus-per-node).

    \b
    Example:
      shardplan render constraints/examples/llama3-70b-h100.yaml --format slurm -o train.sbatch \\
          --data-path /data/fineweb_text_document --tokenizer-model meta-llama/Llama-3.1-70B \\
          --megatron-path /opt/Megatron-LM --partition batch --time 4:00:00
    """
    # a ShardplanError (unusable input) leaves as one line, exit 2, even without the group; the files read are recorded
    with reads_recorded(), unusable_input():
        try:
            if output is not None:  # before any work: writable, and none of the files named to read
                check_output_file(output, "-o", inputs=[recipe_file, hardware])
            slurm = {k: v for k, v in {**slurm_flags, "output": output_log, "error": error_log}.items() if v is not None}
            result = api.render(recipe_file, format=fmt, force=force, hardware=hardware, nodes=nodes,
                                gpus_per_node=gpus_per_node, data_path=data_path, tokenizer_model=tokenizer_model,
                                checkpoint_dir=checkpoint_dir, megatron_path=megatron_path, mock_data=mock_data,
                                slurm=slurm)
        except RenderRefused as refused:  # a verdict of no, not unusable input: every problem listed, exit 1
            click.echo(f"error: {recipe_file}: the recipe is illegal or not expressible ({len(refused.problems)} "
                       "problem(s)); fix it or pass --force:", err=True)
            for line in refused.problems:
                click.echo(f"  - {line}", err=True)
            sys.exit(1)
        if output is not None:  # again, now that every file it read is known (a profile the recipe names, a sourced
            check_output_file(output, "-o")  # script): refused in one line, before any note is printed
        for line in result.problems:  # only with --force: without it any problem was refused above
            click.echo(f"warning (--force): {line}", err=True)
        for note in result.model_notes:  # what the HF config reader did not follow is rendered as read: say so
            click.echo(f"warning: model config: {note}", err=True)
        for note in result.not_carried:  # the source script's flags the rendered one does not write as it did
            click.echo(f"note: from the script, {note}", err=True)
        for line in result.placeholders:  # a path left to fill in: never silent (the script's header lists them too)
            click.echo(line, err=True)
        if output is None:
            click.echo(result.script, nl=False)
            return
        try:
            write_script(output, result.script)
        except OSError as exc:
            raise UnusableInput(f"-o: cannot write {output}: {exc.strerror}") from None
        click.echo(f"wrote {output}", err=True)
