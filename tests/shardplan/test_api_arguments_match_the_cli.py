"""The API's arguments are bounded like the command line's options (issue 33): every click IntRange / FloatRange / Choice
of a command that calls an API function has the same bounds and choices in that function's argument model
(shardplan/api_arguments/models.py). Both import the constants of shardplan/api_arguments/bounds.py; this holds that
nobody wrote a copy in one place."""
from __future__ import annotations

import math
import typing

import click
import pytest
from annotated_types import Ge, Gt, Le, Lt

from shardplan.api_arguments.models import CalibrateArguments, CheckArguments, RenderArguments, SolveArguments, SweepArguments
from shardplan.cli.calibrate import calibrate_command
from shardplan.cli.main import check_command
from shardplan.cli.proposer_options import proposer_options
from shardplan.cli.render import render_command
from shardplan.cli.solve import solve_command
from shardplan.cli.sweep import sweep_command
from templates.slurm_options import SlurmOptions

COMMANDS = [(check_command, CheckArguments), (solve_command, SolveArguments), (sweep_command, SweepArguments),
            (render_command, RenderArguments), (calibrate_command, CalibrateArguments)]
# a click parameter whose API argument has another name (the rest share theirs); None: the API has no such argument
# (a CLI-only switch or a value the CLI turns into another argument)
API_NAME = {"model_name": "model", "k": "top", "sp": "sequence_parallel", "fmt": "format", "nodes_text": "nodes",
            "recipe_file": "source", "file": "source", **{f"{a}_range": a for a in ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs")},
            "launch_env": "env", "no_recompute": None, "no_projection": None, "as_json": None, "report_path": None,
            "verbose": None}


# solve's proposer options become one argument, a solver.proposer.config.ProposerConfig, which bounds its own fields
PROPOSER_OPTIONS = {p.name for p in proposer_options(lambda **kw: None).__click_params__}


# render's sbatch options become one argument, the `slurm` mapping, which templates.slurm_options.SlurmOptions checks
SLURM_OPTIONS = set(SlurmOptions.model_fields) | {"config_file", "output_log", "error_log"}


def _api_name(command, param) -> typing.Optional[str]:
    if param.name == "fmt" and command is not render_command:
        return None  # the output format of check / solve / sweep, not render's format
    if command is solve_command and param.name in PROPOSER_OPTIONS:
        return None
    if command is render_command and param.name in SLURM_OPTIONS:
        return None
    return API_NAME.get(param.name, param.name)


def _range_params():
    for command, model in COMMANDS:
        for param in command.params:
            if isinstance(param.type, (click.IntRange, click.FloatRange)) and _api_name(command, param) is not None:
                yield pytest.param(command, model, param, id=f"{command.name}-{param.name}")


def _api_bounds(field) -> tuple[float, bool, float]:
    """(lower bound, open, upper bound) of an argument model field, through Optional and Annotated."""
    lo, lo_open, hi = -math.inf, False, math.inf
    metadata = list(field.metadata)
    stack = [field.annotation]
    while stack:
        a = stack.pop()
        metadata += list(getattr(a, "__metadata__", ()))
        stack += list(typing.get_args(a.__origin__ if typing.get_origin(a) is typing.Annotated else a))
    for m in metadata:
        if isinstance(m, Ge):
            lo, lo_open = m.ge, False
        elif isinstance(m, Gt):
            lo, lo_open = m.gt, True
        elif isinstance(m, Le):
            hi = m.le
        elif isinstance(m, Lt):
            hi = m.lt
    return lo, lo_open, hi


@pytest.mark.parametrize("command, model, param", list(_range_params()))
def test_each_cli_range_is_the_api_arguments_range(command, model, param):
    name = _api_name(command, param)
    assert name in model.model_fields, f"{command.name} --{param.name}: no API argument {name!r} in {model.__name__}"
    lo, lo_open, hi = _api_bounds(model.model_fields[name])
    t = param.type
    is_int = isinstance(t, click.IntRange)
    if t.min is not None:
        # for ints, > 0 is >= 1
        api_min = lo + 1 if (is_int and lo_open) else lo
        cli_min = t.min + 1 if (is_int and t.min_open) else t.min
        assert api_min == cli_min and (is_int or lo_open == t.min_open), (name, (lo, lo_open), (t.min, t.min_open))
    if t.max is not None:
        assert hi == t.max, (name, hi, t.max)


def _choice_params():
    for command, model in COMMANDS:
        for param in command.params:
            if isinstance(param.type, click.Choice) and _api_name(command, param) is not None:
                yield pytest.param(command, model, param, id=f"{command.name}-{param.name}")


@pytest.mark.parametrize("command, model, param", list(_choice_params()))
def test_each_cli_choice_is_the_api_arguments_choice(command, model, param):
    name = _api_name(command, param)
    field = model.model_fields[name]
    literal = next(a for a in [field.annotation, *typing.get_args(field.annotation)] if typing.get_origin(a) is typing.Literal)
    assert set(typing.get_args(literal)) == set(param.type.choices), name


def test_every_cli_option_of_these_commands_is_an_api_argument():
    """A new option of check / solve / sweep / render / calibrate is an argument of the API too (or named here as CLI-only)."""
    assert {"proposer", "proposer_rounds"} <= PROPOSER_OPTIONS and "slurm" in RenderArguments.model_fields
    missing = []
    for command, model in COMMANDS:
        for param in command.params:
            name = _api_name(command, param)
            if name is not None and name not in model.model_fields:
                missing.append(f"{command.name} {param.name} -> {name}")
    assert not missing, missing
