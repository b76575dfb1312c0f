"""What `render` reads and what it refuses: the recipe (a recipe YAML or mapping, or any file `check` reads) and the
problems `check` finds in it, one line each.

Why here and not in the CLI: `shardplan render` and `shardplan.render()` are one flow (shardplan.api.render), so a
script the command writes is byte for byte the one the API returns. An illegal or inexpressible recipe is refused with
`RenderRefused`, which carries every problem, so the command can list them (exit 1) and the API can name the first.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from boundary.errors import ShardplanError
from constraints.case import Case, case_from_mapping, load_case_yaml
from constraints.stack_configs import is_stack_file
from solver.inputs import LoadedCase, load_check_input
from templates.render import unsupported_features


class RenderRefused(ShardplanError):
    """The recipe is illegal or not expressible and `force` was not given; `problems` holds one line per problem."""

    def __init__(self, message: str, problems: Sequence[str]) -> None:
        super().__init__(message)
        self.problems = list(problems)


def load_render_input(source: Union[str, Path, Mapping[str, Any]], hardware: Optional[str] = None,
                      nodes: Optional[int] = None, gpus_per_node: Optional[int] = None) -> LoadedCase:
    """The recipe to render. A recipe YAML (or its mapping) is read as a recipe file; a launch script, argument file or
    stack config as `check` reads it (its Megatron flags and environment come along, to be judged as `check` judges
    them). hardware / nodes / gpus_per_node, when given, replace what the source states, as in `check`."""
    overrides = {"hardware": hardware, "nodes": nodes, "gpus_per_node": gpus_per_node}
    if isinstance(source, Mapping):
        data = {**source, **{key: value for key, value in overrides.items() if value is not None}}
        return LoadedCase(case=case_from_mapping(data))
    if Path(source).suffix in (".yaml", ".yml") and not is_stack_file(source):
        return LoadedCase(case=load_case_yaml(source, overrides))
    return load_check_input(str(source), hardware, nodes, gpus_per_node)


def case_violations(case: Case, flags=None, env=None) -> list[str]:
    """One line per error-severity violation (rules and memory) from `check_case`, as `rule: message (fix: ...)`,
    then what pretrain_gpt.py cannot express; `flags`/`env` are a launch script's raw Megatron flags and environment,
    judged as `check` judges them."""
    from constraints.check import check_case
    from hardware.profile import load_profile

    report = check_case(case, load_profile(case.placement.hardware), flags=flags, env=env)
    lines = [f"{v.rule}: {v.message} (fix: {v.fix})" for v in report.violations]
    return lines + [f"render: {note}" for note in unsupported_features(case)]


def render_problems(loaded: LoadedCase, force: bool = False) -> list[str]:
    """Every problem of the recipe, one line each: the flag values Megatron refuses (found while reading a script),
    then `case_violations`. When nothing can be checked (e.g. an unknown hardware profile) that is unusable input,
    unless `force`, where it becomes the problem `not checked: ...`."""
    early = [f"{v.rule}: {v.message} (fix: {v.fix})" for v in loaded.preflight_violations]
    try:
        return early + case_violations(loaded.case, loaded.flags, loaded.env)
    except ShardplanError as exc:  # any other exception is a bug, reported as one (exit 3), never as "not checked"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not force:
            raise ShardplanError(first) from None
        return early + [f"not checked: {first}"]


def refuse_unless_forced(problems: Sequence[str], force: bool) -> None:
    """Raise RenderRefused naming the first problem (all of them in `.problems`) unless there are none or `force`."""
    if problems and not force:
        raise RenderRefused(f"recipe: illegal or not expressible ({len(problems)} problem(s): {problems[0]}); "
                            "fix it or pass force=True", problems)
