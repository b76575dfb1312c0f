"""What `render` reads and what it refuses: the recipe (a recipe YAML or mapping, or any file `check` reads) and the
problems `check` finds in it, one line each.

Why here and not in the CLI: `shardplan render` and `shardplan.render()` are one flow (shardplan.api.render), so a
script the command writes is byte for byte the one the API returns. An illegal or inexpressible recipe is refused with
`RenderRefused`, which carries every problem, so the command can list them (exit 1) and the API can name the first.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from boundary.errors import NotLegal, ShardplanError
from constraints.case import Case, case_from_mapping, load_case_yaml
from constraints.check import check_case
from constraints.read import LoadedCase, load_check_input
from constraints.stacks.detect import is_stack_file
from hardware.profile import load_profile
from templates.placeholders import is_placeholder
from templates.render import unsupported_features
from templates.slurm_options import OPTION_NAMES, SlurmOptions, slurm_options


class RenderRefused(NotLegal):
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


_RENDERED_FLAG = re.compile(r"^\s*(--[A-Za-z0-9][\w-]*)(?:\s+(.+?))?\s*\\?\s*$")


def _rendered_flags(script: str) -> dict[str, list[str]]:
    """Flag -> its values as the rendered launch script writes them, one flag per line inside its argument arrays."""
    out: dict[str, list[str]] = {}
    for line in script.splitlines():
        m = _RENDERED_FLAG.match(line)
        if m:
            out[m.group(1)] = [v.strip("\"'") for v in (m.group(2) or "").split()]
    return out


def _same_value(said: Any, rendered: list[str]) -> bool:
    """Whether a script's parsed flag value (True for a switch, a number, a text or a list) is what the rendered line
    writes: switches by presence, numbers by value (0.0001 == 1e-4), the rest as text."""
    if said is True:
        return True
    values = said if isinstance(said, list) else [said]
    if len(values) != len(rendered):
        return False
    for a, b in zip(values, rendered):
        try:
            if float(a) != float(b):
                return False
        except (TypeError, ValueError):
            if str(a) != b:
                return False
    return True


def flags_not_carried(script_flags: Mapping[str, Any], rendered: str) -> list[str]:
    """The source script's Megatron flags the rendered script does not write as the source did, one line each
    (`--train-iters 1000: rendered as 500000`, `--moe-permute-fusion: not rendered`): `render` writes a recipe, not the
    source, so what it leaves out or sets otherwise is said rather than dropped silently."""
    have = _rendered_flags(rendered)
    out = []
    for flag, said in script_flags.items():
        if any(map(is_placeholder, said if isinstance(said, list) else [said])) and flag in have:
            continue  # a `/path/to/...` the caller filled in: what was meant, not a change to report

        text = " ".join(map(str, said)) if isinstance(said, list) else ("" if said is True else str(said))
        shown = f"{flag} {text}".strip()
        if flag not in have:
            out.append(f"{shown}: not rendered")
        elif not _same_value(said, have[flag]):
            out.append(f"{shown}: rendered as {' '.join(have[flag]) or 'a switch'}")
    return out


def script_site_paths(script_flags: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The site paths a source launch script states, for `render` to keep where the caller gives none: its --mock-data,
    or its one --data-path prefix (a weighted blend of several is left to `flags_not_carried`), and, with
    HuggingFaceTokenizer, its --tokenizer-model. A script reading real data with NullTokenizer is refused unless the
    caller names a tokenizer or asks for mock data: its ids mean nothing to the data."""
    out: dict[str, Any] = {}
    tokenizer = script_flags.get("--tokenizer-model") if script_flags.get("--tokenizer-type") == "HuggingFaceTokenizer" else None
    if isinstance(tokenizer, str) and given.get("tokenizer_model") is None and not given.get("mock_data"):
        out["tokenizer_model"] = tokenizer
    if given.get("mock_data") or given.get("data_path") is not None:
        return out  # the caller's data choice wins over the script's
    if script_flags.get("--mock-data") is True:  # the source trains on synthetic batches: so does the rendering
        return {"mock_data": True}
    data = script_flags.get("--data-path")
    data = data if isinstance(data, list) else [data] if isinstance(data, str) else []
    if len(data) == 1 and isinstance(data[0], str):
        out["data_path"] = data[0]
        if "tokenizer_model" not in out and given.get("tokenizer_model") is None and not is_placeholder(data[0]):
            raise ShardplanError(f"--tokenizer-model: the script reads --data-path {data[0][:80]} without a HF tokenizer "
                                 "(NullTokenizer ids mean nothing to the data); give --tokenizer-model, or --mock-data "
                                 "for synthetic batches")
    return out


def render_slurm_options(fmt: str, slurm: Optional[Mapping[str, Any]]) -> Optional[SlurmOptions]:
    """The sbatch settings for `fmt` (templates.slurm_options): refused for any other format, where nothing would
    carry them (said, not dropped)."""
    if slurm is None:
        return None
    if not isinstance(slurm, Mapping):
        raise ShardplanError(f"slurm: give a mapping of sbatch settings ({', '.join(SlurmOptions.model_fields)}), "
                             f"not a {type(slurm).__name__}")
    if not slurm:
        return None
    if fmt != "slurm":
        names = ", ".join(OPTION_NAMES.get(k, k) for k in slurm)
        raise ShardplanError(f"{names}: only --format slurm writes sbatch settings; add --format slurm or drop them")
    return slurm_options(**dict(slurm))
