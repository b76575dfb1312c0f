"""The `shardplan` command line: a thin click layer over the library.

Every library error a user can cause is a ValueError subclass with a one-line message; `main` turns
it into `error: ...` on stderr and exit status 2, never a traceback.
"""
from __future__ import annotations

import json
import sys

import click

from constraints.models import bundled_models, load_model
from constraints.params import param_counts
from solver.heap import keep_heap
from solver.report import check_and_project, format_check

GIB = 1024 ** 3


class UserError(click.ClickException):
    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {self.message}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option("0.1.0", prog_name="shardplan")
def cli() -> None:
    """Find, check and render Megatron-LM parallelism recipes with exact memory legality.

    \b
    Example:
      shardplan check constraints/examples/llama3-70b-h100.yaml
      shardplan solve --model Llama-3.1-70B --hardware h100-sxm-80gb --nodes 8 --gpus-per-node 8 \\
                      --seq-length 8192 --global-batch-size 128
    """


@cli.command("models")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
def models_command(as_json: bool) -> None:
    """List bundled models with exact total and active parameter counts.

    \b
    Example:
      shardplan models --json
    """
    rows = []
    for name in bundled_models():
        m = load_model(name)
        c = param_counts(m)
        rows.append({"name": name, "total_params": c.total, "active_params": c.active if c.active is not None else c.total,
                     "layers": m.num_layers, "hidden_size": m.hidden_size, "moe": m.is_moe, "mla": m.multi_latent_attention,
                     "num_experts": m.num_experts, "topk": m.moe_router_topk})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'model':<22} {'total params':>18} {'active params':>18} {'layers':>6} {'hidden':>6}  kind")
    for r in rows:
        kind = ("MoE %dx top-%d" % (r["num_experts"], r["topk"]) if r["moe"] else "dense") + (" MLA" if r["mla"] else "")
        click.echo(f"{r['name']:<22} {r['total_params']:>18,} {r['active_params']:>18,} {r['layers']:>6} {r['hidden_size']:>6}  {kind}")


@cli.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--hardware", help="hardware profile name or YAML path (overrides the file)")
@click.option("--nodes", type=click.IntRange(min=1), help="number of nodes (overrides the file)")
@click.option("--gpus-per-node", type=click.IntRange(min=1), help="GPUs per node (overrides the file)")
@click.option("--model", help="model name or path, when the arguments lack the model flags")
@click.option("--max-memory-fraction", type=click.FloatRange(0.1, 1.0), default=1.0, show_default=True,
              help="fraction of HBM the peak may use")
@click.option("--no-projection", is_flag=True, help="skip the throughput projection")
@click.option("--suggest", is_flag=True, help="when illegal, search the nearest legal recipe")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def check_command(file, hardware, nodes, gpus_per_node, model, max_memory_fraction, no_projection, suggest, as_json) -> None:
    """Judge a recipe: a YAML recipe file, a Megatron launch script or an argument file.

    Exit status: 0 legal and fits, 1 illegal or does not fit, 2 unusable input.

    \b
    Example:
      shardplan check constraints/examples/llama3-70b-h100.yaml
      shardplan check train_llama3_70b.sh --hardware h100-sxm-80gb --nodes 8 --gpus-per-node 8 --json
    """
    from solver.inputs import load_check_input

    loaded = load_check_input(file, hardware, nodes, gpus_per_node, model)
    result = check_and_project(loaded, margin_fraction=1.0 - max_memory_fraction, project=not no_projection)
    if suggest and not result["ok"]:
        from solver.suggest import suggest_fix

        result["suggestion"] = suggest_fix(loaded.case, margin_fraction=1.0 - max_memory_fraction)
    if as_json:
        click.echo(json.dumps(result["json"] | ({"suggestion": result.get("suggestion")} if suggest else {}), indent=2))
    else:
        click.echo(format_check(loaded, result))
    sys.exit(0 if result["ok"] else 1)


def _register_optional() -> None:
    """Commands living in their own modules (one owner each)."""
    from hardware.listing import hardware_command

    cli.add_command(hardware_command, "hardware")
    for module, attr, name in (("templates.cli_render", "render_command", "render"),
                               ("measure.cli_measure", "measure_command", "measure"),
                               ("solver.cli_solve", "solve_command", "solve"),
                               ("shardplan.report.cli", "report_command", "report")):
        try:
            mod = __import__(module, fromlist=[attr])
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        cli.add_command(getattr(mod, attr), name)


_register_optional()


def main() -> None:
    keep_heap()
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if isinstance(exc, click.UsageError):
            click.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(2)
        exc.show()
        sys.exit(exc.exit_code)
    except ValueError as exc:
        click.echo(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
