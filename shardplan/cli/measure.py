"""`shardplan measure`: benchmark one model's per-rank kernels on this device into a cost table.

Why a separate command: measuring needs torch and the target device; projecting does not. The op
list comes from `measure.kernels.layer_ops` (the same list the roofline prices), for one recipe file or for
a small search space of the slicing factors that change kernel shapes (TP, CP, EP, ETP, MBS, SP).
The table is saved atomically after every entry or second, so Ctrl-C loses at most one entry and a
second run measures only what is missing. torch is imported only when measuring starts.
"""
from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path
from typing import Iterable, Optional

import click
from pydantic import ValidationError

from boundary.numbers import bounded_float, bounded_int
from boundary.show import bounded_line
from boundary.terminal import unfiltered
from boundary.write import check_output_file
from constraints.case import CaseError, load_case_yaml
from constraints.models.load import ModelError, load_model
from constraints.spec import JobSpec, ModelSpec, Precision, Recipe
from hardware.profile import ProfileError, load_profile
from measure.kernels.cost_table import CostTable, CostTableError
from measure.kernels.fingerprint import DeviceUnavailable, device_environment, device_fingerprint, resolve_device
from measure.kernels.layer_ops import LayerKind, head_ops, layer_ops, layer_weight_elems, optimizer_ops
from measure.kernels.measured_tables import MEASURED_DIR
from measure.kernels.quantization import is_kernel_of_its_own
from measure.microbench.kernels import measure_key, op_num_elements, split_key

TORCH_MISSING = "torch is not installed; install the measure extra: pip install 'shardplan[measure]' torch==2.13.0"


class MeasureInputError(click.ClickException):
    """Unusable input: `error: <option>: ...` on stderr and exit status 2, the house rule (as shardplan.cli.main)."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {bounded_line(self.message)}", err=True)


# JobSpec / Recipe field -> the option that set it (global_batch_size is max(--mbs) without --recipe)
_OPTION_OF_FIELD = {"seq_length": "--seq-length", "global_batch_size": "--mbs", "precision": "--precision",
                    "tp": "--tp", "cp": "--cp", "ep": "--ep", "etp": "--etp", "mbs": "--mbs"}


def _int_list(option: str, text: Optional[str]) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4); a one-line error naming the option otherwise."""
    if text is None:
        return ()
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers like 1,2,4, got {text!r}", param_hint=option) from None
    if not values or min(values) < 1:
        raise click.BadParameter(f"expected positive integers, got {text!r}", param_hint=option)
    return values


def shape_incompatibility(model: ModelSpec, job: JobSpec, recipe: Recipe) -> Optional[tuple[str, str]]:
    """(the option to change, why) when this slicing cannot shape the model's kernels; None if it can.
    Only the divisibility that the per-rank shapes need; full legality is `shardplan check`'s job."""
    if model.num_attention_heads % recipe.tp:
        return "--tp", f"num_attention_heads={model.num_attention_heads} not divisible by tp={recipe.tp}"
    if job.seq_length % (recipe.cp * (2 if recipe.cp > 1 else 1)):
        return "--cp", f"seq_length={job.seq_length} not divisible by 2*cp={2 * recipe.cp}"
    if recipe.sp_active and (recipe.mbs * job.seq_length // recipe.cp) % recipe.tp:
        return "--tp", f"tokens per rank not divisible by tp={recipe.tp} under sequence parallel"
    if model.is_moe and model.num_experts % recipe.ep:
        return "--ep", f"num_experts={model.num_experts} not divisible by ep={recipe.ep}"
    if not model.is_moe and recipe.ep > 1:
        return "--ep", f"ep={recipe.ep} on a dense model"
    return None


def shape_compatible(model: ModelSpec, job: JobSpec, recipe: Recipe) -> Optional[str]:
    """Why this slicing cannot shape the model's kernels (None if it can)."""
    found = shape_incompatibility(model, job, recipe)
    return None if found is None else found[1]


def recipes_from_space(tps, cps, eps, etps, mbss, sequence_parallel: bool) -> list[Recipe]:
    """Every combination of the shape-changing factors (ETP empty = ETP follows TP)."""
    out = []
    for tp, cp, ep, etp, mbs in itertools.product(tps, cps, eps, etps or (None,), mbss):
        out.append(Recipe(tp=tp, cp=cp, ep=ep, etp=etp, mbs=mbs, sequence_parallel=sequence_parallel and tp > 1))
    return out


def keys_for(model: ModelSpec, job: JobSpec, recipes: Iterable[Recipe]) -> tuple[list[str], list[str]]:
    """(ordered unique cost-table keys to measure, reasons for recipes that were left out)."""
    kinds = sorted({LayerKind.moe if m else LayerKind.dense for m in model.moe_layers}, key=lambda k: k.value)
    keys: dict[str, None] = {}
    excluded = []
    for recipe in recipes:
        reason = shape_compatible(model, job, recipe)
        if reason is not None:
            excluded.append(f"tp={recipe.tp} cp={recipe.cp} ep={recipe.ep} mbs={recipe.mbs}: {reason}")
            continue
        for kind in kinds:
            ops = layer_ops(model, job, recipe, kind)
            # optimizer: one layer's weights on this rank; the projection scales it per parameter
            ops += optimizer_ops(model, recipe, layer_weight_elems(model, recipe, kind))
            keys.update((p.key, None) for p in ops if is_kernel_of_its_own(p.op))
        keys.update((p.key, None) for p in head_ops(model, job, recipe) if is_kernel_of_its_own(p.op))
    return list(keys), excluded


def _load_inputs(model_name, hardware, recipe_file, seq_length, precision, space) -> tuple[ModelSpec, JobSpec, list[Recipe]]:
    """Model, job and recipes from a recipe file, or from --model/--seq-length and the search space."""
    if recipe_file is not None:
        case = load_case_yaml(recipe_file)
        model, job, recipes = case.model, case.job, [case.recipe]
        hardware = hardware or case.placement.hardware
    else:
        if model_name is None or seq_length is None:
            raise click.UsageError("give --recipe FILE, or --model and --seq-length (with --tp/--cp/--ep/--mbs lists)")
        model = load_model(model_name)
        job = JobSpec(seq_length=seq_length, global_batch_size=max(space["mbs"]), precision=Precision(precision))
        recipes = recipes_from_space(space["tp"], space["cp"], space["ep"], space["etp"], space["mbs"], space["sp"])
    if job.precision.value == "nvfp4":  # bench_ops has no fp4 GEMM to time (torch has no NVFP4 matmul to call)
        raise click.UsageError("--precision nvfp4: measure times bf16, fp16 and fp8 kernels; NVFP4 GEMMs have no "
                               "benchmark here; measure --precision mxfp8 or bf16 (the projection prices NVFP4 from the "
                               "part's FP4 peak)")
    if hardware is not None:
        profile = load_profile(hardware)
        if job.precision.is_fp8 and not profile.supports_fp8:
            raise click.UsageError(f"--precision {job.precision.value}: hardware {profile.name} has no FP8 support; use bf16")
    return model, job, recipes


EPILOG = """\b
Examples:
  shardplan measure --model Llama-3.1-8B --hardware h100-sxm-80gb --seq-length 8192 \\
      --tp 1,2,4,8 --mbs 1 --device cuda --out hardware/measured/h100-sxm-80gb.json
  shardplan measure --recipe constraints/examples/llama3-70b-h100.yaml --device cuda --out table.json
  shardplan measure --model tiny.yaml --seq-length 128 --device cpu --max-elements 1000000 --out cpu.json
A second run with the same --out measures only the entries that are missing."""


@click.command("measure", epilog=EPILOG)
@click.option("--model", "model_name", help="bundled model name or path to an HF config.json / model YAML")
@click.option("--hardware", help="hardware profile name or YAML (checks FP8 support)")
@click.option("--recipe", "recipe_file", type=click.Path(dir_okay=False), help="recipe YAML: measure exactly its shapes")
@click.option("--seq-length", type=int, help="tokens per sample (without --recipe)")
@click.option("--precision", type=click.Choice([p.value for p in Precision]), default="bf16", show_default=True)
@click.option("--tp", default="1", show_default=True, help="tensor-parallel sizes, comma-separated")
@click.option("--cp", default="1", show_default=True, help="context-parallel sizes")
@click.option("--ep", default="1", show_default=True, help="expert-parallel sizes")
@click.option("--etp", default=None, help="expert-TP sizes (default: follow TP)")
@click.option("--mbs", default="1", show_default=True, help="micro-batch sizes")
@click.option("--sequence-parallel/--no-sequence-parallel", default=True, show_default=True, help="SP when TP>1")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cuda", show_default=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False), help="cost-table JSON (created or resumed); not needed with --list")
@click.option("--reps", type=click.IntRange(1), default=20, show_default=True, help="timed repetitions per kernel")
@click.option("--warmup", type=click.IntRange(0), default=3, show_default=True, help="untimed calls first")
@click.option("--max-elements", type=click.IntRange(1), default=None, help="skip kernels whose largest tensor is bigger")
@click.option("--budget-s", type=click.FloatRange(min=0, min_open=True), default=5.0, show_default=True,
              help="cap on timed seconds per kernel (fewer reps, at least 3, for slow ones)")
@click.option("--threads", type=click.IntRange(1), default=None, help="torch CPU threads (part of the CPU fingerprint)")
@click.option("--list", "list_only", is_flag=True, help="print the keys that would be measured and stop")
def measure_command(model_name, hardware, recipe_file, seq_length, precision, tp, cp, ep, etp, mbs, sequence_parallel,
                    device, out_path, reps, warmup, max_elements, budget_s, threads, list_only):
    """Measure the per-rank kernels of MODEL's layers on this device into a cost table."""
    check_measure_limits(budget_s, threads, reps, warmup)
    if not list_only:
        if out_path is None:
            raise click.UsageError("Missing option '--out': give the cost-table JSON to create or resume (--list needs none)")
        check_output_file(out_path, "--out")  # before loading and measuring: a doomed write fails now
        refuse_cpu_into_part_tables(device, out_path)
    space = {"tp": _int_list("--tp", tp), "cp": _int_list("--cp", cp), "ep": _int_list("--ep", ep),
             "etp": _int_list("--etp", etp), "mbs": _int_list("--mbs", mbs), "sp": sequence_parallel}
    try:
        model, job, recipes = _load_inputs(model_name, hardware, recipe_file, seq_length, precision, space)
        keys, excluded = keys_for(model, job, recipes)
        table = CostTable.load(out_path, missing_ok=True) if out_path is not None else None
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise MeasureInputError(f"{_OPTION_OF_FIELD.get(field, field)}: {err['msg']} (got {err.get('input')!r})") from None
    except (CaseError, ModelError, ProfileError, CostTableError, ValueError) as exc:
        raise MeasureInputError(str(exc).splitlines()[0]) from None
    for reason in excluded:
        click.echo(f"skipped recipe {reason}", err=True)
    if not keys:
        option, reason = next((found for r in recipes if (found := shape_incompatibility(model, job, r))),
                              ("--tp/--cp/--ep", "no kernels"))
        raise MeasureInputError(f"{option}: no recipe in the space can shape this model's kernels ({reason}); "
                                f"give {option} values that divide the model's sizes")
    if list_only:
        for key in keys:
            click.echo(key)
        return
    _measure_keys(table, keys, device, out_path, reps, warmup, max_elements, budget_s, threads, op_num_elements, split_key)


def refuse_cpu_into_part_tables(device: str, out_path: str) -> None:
    """A CPU measurement written into hardware/measured/ would sit where every projection of a GPU profile looks
    (measure/kernels/measured_tables.py ignores it there, so it would only be lost work): refused before measuring."""
    try:
        inside = Path(out_path).resolve().parent == MEASURED_DIR.resolve()
    except OSError:
        return
    if device == "cpu" and inside:
        raise MeasureInputError(f"--out {out_path}: hardware/measured/ holds the tables GPU profiles are priced with, and "
                                "a CPU's kernel times are not a GPU's; write a CPU table elsewhere (e.g. --out cpu.json)")


def check_measure_limits(budget_s: float, threads: Optional[int], reps: int, warmup: int) -> None:
    """Finite, physical limits for one measure run (issue 17: `--budget-s inf` and `--threads 100000` crashed)."""
    bounded_float(budget_s, "--budget-s", 0.0, 3600.0, "a kernel timed for over an hour is a hang, not a measurement",
                  lo_open=True)
    cpus = os.cpu_count() or 1
    if threads is not None:
        bounded_int(threads, "--threads", 1, cpus, f"this machine has {cpus} CPUs; more threads only contend")
    bounded_int(reps, "--reps", 1, 1_000_000, "the median settles long before a million repetitions")
    bounded_int(warmup, "--warmup", 0, 1_000_000, "warm-up settles long before a million calls")


def _measure_keys(table, keys, device, out_path, reps, warmup, max_elements, budget_s, threads, op_num_elements, split_key):
    try:
        import torch
    except ImportError:
        raise MeasureInputError(TORCH_MISSING) from None  # one `error:` line, exit 2, as every refusal

    if threads is not None:
        torch.set_num_threads(threads)
    try:
        dev = resolve_device(device)
    except DeviceUnavailable as exc:
        raise MeasureInputError(str(exc)) from None
    fingerprint, environment = device_fingerprint(dev), device_environment(dev)
    done = [k for k in keys if table.has(fingerprint, k)]
    too_big = [k for k in keys if max_elements is not None and op_num_elements(split_key(k)[1]) > max_elements]
    todo = [k for k in keys if k not in set(done) | set(too_big)]
    click.echo(f"{fingerprint}: {len(keys)} kernels, {len(done)} already in {out_path}, "
               f"{len(too_big)} above --max-elements, {len(todo)} to measure", err=True)
    measured, last_save = 0, time.monotonic()
    try:
        with click.progressbar(todo, label="measuring", file=unfiltered(sys.stderr),
                               item_show_func=lambda k: k or "") as bar:
            for key in bar:
                entry = measure_key(key, dev, warmup=warmup, reps=reps, budget_s=budget_s)
                table.add(fingerprint, key, entry, environment)
                measured += 1
                if time.monotonic() - last_save >= 1.0:
                    table.save(out_path)
                    last_save = time.monotonic()
    finally:
        if measured:
            table.save(out_path)
    for key in too_big:
        click.echo(f"skipped (above --max-elements): {key}", err=True)
    click.echo(f"measured {measured}, kept {len(done)}, skipped {len(too_big)}; "
               f"{table.num_entries(fingerprint)} entries for {fingerprint} in {out_path}")


if __name__ == "__main__":
    measure_command()
