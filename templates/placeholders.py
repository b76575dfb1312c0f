"""Placeholder paths (`/path/to/...`) in what shardplan renders and in what `check` reads: named, never silent.

Why: a rendered script with `/path/to/data_text_document` left in starts, loads Megatron and only then fails (or, with
a placeholder tokenizer, fails after the data is indexed). The renderer lists every placeholder it wrote on stderr and
in the script's header; `check` warns about one in any script, so a script a user forgot to finish is flagged before
it is launched. A placeholder is any value starting with PLACEHOLDER_PREFIX (templates/recipe_args.py).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from constraints.case import Case
from constraints.rules.registry import Violation
from templates.recipe_args import PLACEHOLDER_PREFIX, RenderPaths, TrialRun, megatron_arg_groups

# the render option that sets each Megatron flag's value (what to pass to render again)
RENDER_OPTION = {"--data-path": "--data-path", "--tokenizer-model": "--tokenizer-model", "--save": "--checkpoint-dir",
                 "--load": "--checkpoint-dir", "--tensorboard-dir": "--checkpoint-dir"}


def is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PLACEHOLDER_PREFIX)


def rendered_placeholders(case: Case, paths: Optional[RenderPaths], trial: Optional[TrialRun] = None,
                          launch_script: bool = True) -> list[tuple[str, str, list[str]]]:
    """(render option, its placeholder value, where the rendered file uses it) for each placeholder the file holds, in
    the order the script first writes them; a launch script also names its MEGATRON_PATH."""
    paths = paths or RenderPaths()
    used: dict[str, list[str]] = {}
    if launch_script and is_placeholder(paths.megatron_path):
        used["--megatron-path"] = ["MEGATRON_PATH"]
    for args in megatron_arg_groups(case.model, case.job, case.recipe, paths, trial).values():
        for flag, value in zip(args, args[1:]):
            if flag in RENDER_OPTION and is_placeholder(value):
                used.setdefault(RENDER_OPTION[flag], []).append(flag)
    values = {"--megatron-path": paths.megatron_path, "--data-path": paths.data_path,
              "--tokenizer-model": paths.tokenizer, "--checkpoint-dir": paths.checkpoint_dir}
    return [(option, values[option], where) for option, where in used.items()]


def placeholder_lines(found: list[tuple[str, str, list[str]]]) -> list[str]:
    """One line per placeholder, for stderr and for the script's header block."""
    return [f"placeholder: {option} {value} (the script's {', '.join(where)}): replace it, or render again with "
            f"{option} PATH" for option, value, where in found]


def header_block(found: list[tuple[str, str, list[str]]]) -> list[str]:
    """The header lines of a script holding placeholders (each is a `#` comment once laid out)."""
    if not found:
        return []
    return [f"PLACEHOLDERS ({len(found)}): replace each before launching (`shardplan check` warns while one is left)",
            *[f"  {line}" for line in placeholder_lines(found)]]


def _values(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def placeholder_warnings(flags: Optional[Mapping[str, Any]]) -> list[Violation]:
    """`check`'s warning for each Megatron flag of the input whose value is a placeholder path."""
    out = []
    for flag, value in (flags or {}).items():
        held = [v for v in _values(value) if is_placeholder(v)]
        if held:
            option = RENDER_OPTION.get(flag, flag)
            out.append(Violation(rule="placeholder_path", severity="warning",
                                 message=f"{flag} {' '.join(held)} is a placeholder path, not a real one: the run "
                                         "stops when it opens it",
                                 fix=f"replace it with the real path (or render again with {option} PATH)"))
    return out
