"""The `shardplan` command line: a thin click layer (parse options -> call shardplan.api -> format the result).

Exit status: 0 success (check: legal and fits; solve: a recipe), 1 a verdict of no (illegal, does not fit, nothing
fits), 2 unusable input (ShardplanError or a click usage error: one line `error: ...`), 3 an internal error (any other
exception: a bug in shardplan, reported with its type and the place it was raised, never as unusable input),
130 interrupted (Ctrl-C), 143 terminated (SIGTERM; shardplan/cli/termination.py), both with nothing half-written left.
"""
from __future__ import annotations

import sys
import traceback

import click

from boundary.errors import InternalError, ShardplanError
from boundary.read import reads_recorded
from boundary.show import bounded_line
from boundary.terminal import control_free_streams
from shardplan import api
from shardplan.api_arguments.bounds import MAX_MEMORY_FRACTION, MIN_MEMORY_FRACTION
from shardplan.check_text import format_check
from shardplan.cli.calibrate import calibrate_command
from shardplan.cli.completion import complete_hardware, complete_model
from shardplan.cli.errors import first_line, unusable_input
from shardplan.cli.measure import measure_command
from shardplan.cli.render import render_command
from shardplan.cli.report import report_command
from shardplan.cli.software_option import software_option
from shardplan.cli.solve import solve_command
from shardplan.cli.sweep import sweep_command
from shardplan.cli.termination import EXIT_TERMINATED, exit_status, terminate_like_interrupt
from shardplan.formats import emit, format_option, resolve_format
from shardplan.progress import configure
from shardplan.result_schemas import schemas
from solver.heap import keep_heap

EXIT_INTERNAL = 3


class ShardplanGroup(click.Group):
    """Turns ShardplanError from any subcommand into UnusableInput, so `main` and click's test runner agree, and records
    the files the command reads, so none of its outputs replaces one."""

    def invoke(self, ctx):
        with reads_recorded(), unusable_input():  # one record of the files read per command (boundary/write.py)
            return super().invoke(ctx)


@click.group(cls=ShardplanGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option("0.1.0", prog_name="shardplan")
@click.option("--progress/--no-progress", default=None,
              help="progress of long steps on stderr (default: only when stderr is a terminal)")
def cli(progress) -> None:
    """Find, check and render Megatron-LM parallelism recipes with exact memory legality.

    \b
    Example:
      shardplan check constraints/examples/llama3-70b-h100.yaml
      shardplan solve --model Llama-3.1-70B --hardware h100-sxm-80gb --nodes 8 --gpus-per-node 8 \\
                      --seq-length 8192 --global-batch-size 128
    """
    configure(progress)


def _kind(row: dict) -> str:
    """dense / MoE (with MLA), or for a hybrid model its layer counts per pattern symbol (M Mamba-2, * attention,
    - MLP, E MoE), e.g. 'hybrid Mamba-2: 24 M, 4 *, 24 -'."""
    moe = "MoE %dx top-%d" % (row["num_experts"], row["topk"]) if row["moe"] else ""
    pattern = row.get("hybrid_layer_pattern")
    if pattern:
        counts = ", ".join(f"{pattern.count(s)} {s}" for s in "M*-E" if s in pattern)
        return f"hybrid Mamba-2{' + ' + moe if moe else ''}: {counts}"
    return (moe or "dense") + (" MLA" if row["mla"] else "")


MODEL_COLUMNS = (("model", "name", "{}"), ("total params", "total_params", "{:,}"), ("active params", "active_params", "{:,}"),
                 ("layers", "layers", "{}"), ("hidden", "hidden_size", "{}"), ("kind", "kind", "{}"))


@cli.command("models")
@format_option
def models_command(fmt: str, as_json: bool) -> None:
    """List bundled models with exact total and active parameter counts.

    \b
    Example:
      shardplan models --format markdown
      shardplan models --json
    """
    items = api.models()
    data = [m.to_json() for m in items]
    emit([{**row, "kind": _kind(row)} for row in data], resolve_format(fmt, as_json), MODEL_COLUMNS, json_data=data)


HARDWARE_COLUMNS = (("name", "name", "{}"), ("bf16 TFLOP/s", "bf16_tflops", "{:.1f}"), ("fp8 TFLOP/s", "fp8_tflops", "{:.1f}"),
                    ("HBM GiB", "hbm_gib", "{:.1f}"), ("HBM TB/s", "hbm_tb_per_s", "{:.2f}"),
                    ("domain", "scale_up_domain_size", "{}"), ("GPUs/node", "gpus_per_node", "{}"),
                    ("scale-up GB/s", "scale_up_gb_per_s", "{:.1f}"), ("scale-out GB/s", "scale_out_gb_per_s", "{:.1f}"))


@cli.command("hardware")
@format_option
def hardware_command(fmt: str, as_json: bool) -> None:
    """List the bundled hardware profiles (dense peak TFLOP/s, HBM, links per GPU, one direction).

    \b
    Example:
      shardplan hardware
      shardplan hardware --json | jq '.[] | select(.name == "h100-sxm-80gb")'

    Pass a profile's name, or a path to your own YAML, as --hardware to other commands.
    """
    data = [h.to_json() for h in api.hardware()]
    emit(data, resolve_format(fmt, as_json), HARDWARE_COLUMNS)


CHECK_COLUMNS = (("model", "model", "{}"), ("hardware", "hardware", "{}"), ("GPUs", "world_size", "{}"), ("legal", "legal", "{}"),
                 ("fits", "fits", "{}"), ("violations", "violations", "{}"), ("peak GiB", "peak_gib", "{:.2f}"),
                 ("usable GiB", "usable_gib", "{:.2f}"), ("step s", "step_s", "{:.3f}"), ("tok/s/GPU", "tokens_per_s_per_gpu", "{:.0f}"),
                 ("MFU", "mfu", "{:.3f}"))


def _launch_env(ctx, param, pairs) -> dict | None:
    """--env NAME=VALUE, repeated: the launch environment (None when not given: unknown for an argument file)."""
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.isidentifier() or not name.isascii():
            raise click.BadParameter(f"{pair[:60]!r} is not NAME=VALUE; write --env CUDA_DEVICE_MAX_CONNECTIONS=1",
                                     ctx, param)
        env[name] = value
    return env if pairs else None


@cli.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("script_args", nargs=-1, metavar="[-- ARG...]")
@click.option("--env", "launch_env", multiple=True, callback=_launch_env, metavar="NAME=VALUE",
              help="the launch environment, repeatable: the script inherits it and the rules judge it (an argument file "
                   "has none otherwise)")
@click.option("--hardware", help="hardware profile name or YAML path (overrides the file)", shell_complete=complete_hardware)
@click.option("--nodes", type=click.IntRange(min=1), help="number of nodes (overrides the file)")
@click.option("--gpus-per-node", type=click.IntRange(min=1), help="GPUs per node (overrides the file)")
@click.option("--model", help="model name or path, when the arguments lack the model flags", shell_complete=complete_model)
@click.option("--max-memory-fraction", type=click.FloatRange(MIN_MEMORY_FRACTION, MAX_MEMORY_FRACTION), default=None,
              help="share of HBM the peak may use (default: learnt from published runs, 0.97; see docs/memory.md)")
@click.option("--no-projection", is_flag=True, help="skip the throughput projection")
@click.option("--suggest", is_flag=True, help="when illegal, search the nearest legal recipe")
@click.option("--calibration", type=click.Path(dir_okay=False), default=None,
              help="a file `shardplan calibrate` wrote for this hardware: project with this cluster's factors")
@software_option
@format_option
def check_command(file, script_args, launch_env, hardware, nodes, gpus_per_node, model, max_memory_fraction, no_projection,
                  suggest, calibration, software, fmt, as_json) -> None:
    """Judge a recipe: a YAML recipe file, a Megatron launch script or argument file, a stack config, or a Megatron-LM
    training log (its argument dump is the recipe; what it measured is shown beside the projection).

    Exit status: 0 legal and fits, 1 illegal or does not fit, 2 unusable input.

    \b
    Example:
      shardplan check constraints/examples/llama3-70b-h100.yaml
      shardplan check train_llama3_70b.sh --hardware h100-sxm-80gb --nodes 8 --gpus-per-node 8 --json
      shardplan check run.log --hardware h100-sxm-80gb --calibration h100-cluster.json
      shardplan check train_mixtral_8x7b.sh --hardware h100-sxm-80gb -- /ckpt /data/tokenizer.model
      shardplan check flags.args --hardware h100-sxm-80gb --env CUDA_DEVICE_MAX_CONNECTIONS=1
    """
    result = api.check(file, hardware=hardware, nodes=nodes, gpus_per_node=gpus_per_node, model=model,
                       max_memory_fraction=max_memory_fraction, project=not no_projection, suggest=suggest,
                       calibration=calibration, script_args=script_args, env=launch_env, software=software)
    data = result.to_json()
    if suggest and "suggestion" not in data:
        data["suggestion"] = None
    fmt = resolve_format(fmt, as_json)
    emit([check_row(data)], fmt, CHECK_COLUMNS, json_data=data, text=format_check(result, suggestion_table=suggest) if fmt == "table" else None)
    sys.exit(0 if result.ok else 1)


@cli.command("schema")
@click.argument("name", required=False, type=click.Choice(["check", "solve", "render", "models", "hardware", "sweep"]))
def schema_command(name) -> None:
    """Print the JSON Schema of a command's JSON result (all of them, keyed by command, without NAME).

    \b
    Example:
      shardplan schema solve > solve.schema.json
    """
    import json


    all_schemas = schemas()
    click.echo(json.dumps(all_schemas[name] if name else all_schemas, indent=2))


def check_row(data: dict) -> dict:
    """One flat row of a check result for csv / markdown."""
    mem, proj = data.get("memory") or {}, data.get("projection") or {}
    gib = 1024 ** 3
    return {"model": data["model"], "hardware": data["hardware"], "world_size": data["world_size"], "legal": data["legal"],
            "fits": data["fits"], "violations": " ".join(v["rule"] for v in data["violations"]) or None,
            "peak_gib": mem["peak_bytes"] / gib if mem else None, "usable_gib": mem["usable_bytes"] / gib if mem else None,
            "step_s": proj.get("iteration_time_s"), "tokens_per_s_per_gpu": proj.get("tokens_per_s_per_gpu"), "mfu": proj.get("mfu")}


# Commands living in their own modules (one owner each), imported explicitly so a moved module fails loudly at
# start-up instead of silently dropping its command. They keep ortools and torch lazy inside their functions.
cli.add_command(render_command, "render")
cli.add_command(measure_command, "measure")
cli.add_command(solve_command, "solve")
cli.add_command(report_command, "report")
cli.add_command(sweep_command, "sweep")
cli.add_command(calibrate_command, "calibrate")


def _internal(exc: BaseException) -> str:
    """One line for a bug: the exception, and where it was raised."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return (f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}{where} "
            "(a bug in shardplan, not your input; please report it with the command line)")


def _exit_interrupted(word: str, exc: BaseException) -> None:
    """Exit 130 after Ctrl-C, without the interpreter's own shutdown. Why: a CP-SAT search stopped mid-way can leave
    one of OR-Tools' C++ threads joinable (seen with ortools 9.15), and a normal exit then dies in its destructor
    ("terminate called without an active exception", exit 134). The interrupt has already unwound every `finally`
    on its way here (temporary files removed, nothing half-renamed), so only the streams are left to flush."""
    import os

    status = exit_status(exc)
    click.echo("terminated" if status == EXIT_TERMINATED else word, err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def main(argv=None) -> None:
    keep_heap()
    terminate_like_interrupt()
    with control_free_streams():  # no value a user gave reaches the terminal as control codes (boundary/terminal.py)
        _run(argv)


def _run(argv) -> None:
    try:
        cli.main(args=argv, standalone_mode=False)
    except click.exceptions.Abort as exc:
        _exit_interrupted("aborted", exc)
    except click.ClickException as exc:
        if isinstance(exc, click.UsageError):
            click.echo(f"error: {bounded_line(exc.format_message())}", err=True)
            sys.exit(2)
        exc.show()
        sys.exit(exc.exit_code)
    except InternalError as exc:  # the API's edge wrapped a bug (shardplan/api_arguments/edge.py): the bug's own type and place
        click.echo(_internal(exc.__cause__ or exc), err=True)
        sys.exit(EXIT_INTERNAL)
    except ShardplanError as exc:
        click.echo(f"error: {bounded_line(first_line(exc))}", err=True)
        sys.exit(2)
    except KeyboardInterrupt as exc:
        _exit_interrupted("interrupted", exc)
    except Exception as exc:  # noqa: BLE001 - the one place a bug becomes exit 3 instead of a traceback
        click.echo(_internal(exc), err=True)
        sys.exit(EXIT_INTERNAL)


if __name__ == "__main__":
    main()
