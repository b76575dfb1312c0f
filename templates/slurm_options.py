"""The cluster's own sbatch settings for `render --format slurm`: logs, time limit, partition, account, container.

Why a model of its own: these are facts of a user's cluster, not of the recipe, so they come from flags or from a
small YAML file kept beside the user's other cluster settings (`--slurm-config FILE`, read through boundary/ and
validated here with extra="forbid", so a misspelt key is refused, not ignored). Why the strict character sets:
`#SBATCH` lines are parsed by sbatch, not bash (slurm src/sbatch/opt.c reads an argument up to whitespace or `#`,
with its own quote rules), so an option there is refused unless it holds only characters no tool interprets; the
container options go on the `srun` line instead (pyxis adds `--container-image` / `--container-mounts` to srun,
https://github.com/NVIDIA/pyxis), where bash reads them and `shlex.quote` keeps them one word.
"""
from __future__ import annotations

import difflib
import re
import shlex
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from boundary.errors import InputRefused
from boundary.parse import load_yaml
from boundary.read import read_text
from boundary.show import validation_line

# sbatch --time: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours", "days-hours:minutes",
# "days-hours:minutes:seconds" (sbatch(1), --time), or UNLIMITED / INFINITE
_TIME = re.compile(r"\d+(:\d{1,2}){0,2}|\d+-\d{1,2}(:\d{1,2}){0,2}|UNLIMITED|INFINITE")
_NAME = re.compile(r"[A-Za-z0-9._,-]+")  # a partition (or comma list of them), an account
_LOG_PATTERN = re.compile(r"[A-Za-z0-9._/%+@=,:-]+")  # a log path with sbatch's %j / %x / %N replacements
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
DEFAULT_OUTPUT, DEFAULT_ERROR = "%x-%j.out", "%x-%j.err"  # %x job name, %j job id (sbatch(1), filename pattern)


class SlurmOptions(BaseModel):
    """sbatch options a rendered `.sbatch` file states; None = not stated (the cluster's default applies)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    partition: Optional[str] = None
    account: Optional[str] = None
    time: Optional[str] = None
    output: str = DEFAULT_OUTPUT
    error: str = DEFAULT_ERROR
    container_image: Optional[str] = None
    container_mounts: Optional[str] = None

    @field_validator("partition", "account")
    @classmethod
    def _name(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _NAME.fullmatch(value):
            raise ValueError("give letters, digits and . _ , - only (it lands on an #SBATCH line)")
        return value

    @field_validator("time")
    @classmethod
    def _time(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _TIME.fullmatch(value):
            raise ValueError("give sbatch's form: MINUTES, HH:MM:SS or D-HH:MM:SS")
        return value

    @field_validator("output", "error")
    @classmethod
    def _log(cls, value: str) -> str:
        if not _LOG_PATTERN.fullmatch(value):
            raise ValueError("give a path of letters, digits and . _ / % + @ = , : - only (sbatch reads it, e.g. "
                             "logs/%x-%j.out)")
        return value

    @field_validator("container_image", "container_mounts")
    @classmethod
    def _container(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and (value == "" or _CONTROL.search(value)):
            raise ValueError("give a non-empty value without control characters")
        return value


# what each field is called on the command line, for messages
OPTION_NAMES = {"partition": "--partition", "account": "--account", "time": "--time", "output": "--slurm-output",
                "error": "--slurm-error", "container_image": "--container-image", "container_mounts": "--container-mounts",
                "config_file": "--slurm-config"}


def _refuse_unknown(keys, label: str) -> None:
    for key in keys:
        if key not in SlurmOptions.model_fields:
            near = difflib.get_close_matches(str(key), list(SlurmOptions.model_fields), n=1)
            hint = f"did you mean {near[0]}? " if near else ""
            raise InputRefused(f"{label}: unknown key {str(key)[:60]!r}; {hint}the keys are "
                               f"{', '.join(SlurmOptions.model_fields)}")


def slurm_options(config_file: Optional[str] = None, **given: Optional[str]) -> SlurmOptions:
    """The options from `config_file` (YAML, keys as SlurmOptions' fields), each replaced by a flag given (not None).
    Bad input is one InputRefused line naming the key or flag."""
    base: dict = {}
    if config_file is not None:
        label = f"--slurm-config {config_file}"
        data = load_yaml(read_text(config_file, "recipe", label, expected="a YAML mapping of sbatch settings"),
                         "recipe", label)
        if not isinstance(data, dict):
            raise InputRefused(f"{label}: give a mapping of {', '.join(SlurmOptions.model_fields)}")
        _refuse_unknown(data, label)
        try:
            SlurmOptions(**data)
        except ValidationError as exc:
            raise InputRefused(f"{label}: {validation_line(exc)}") from None
        base = data
    flags = {key: value for key, value in given.items() if value is not None}
    _refuse_unknown(flags, "slurm")
    try:
        return SlurmOptions(**{**base, **flags})
    except ValidationError as exc:
        raise InputRefused(validation_line(exc, rename=OPTION_NAMES)) from None


def slurm_context(options: SlurmOptions) -> dict:
    """What slurm.sbatch.j2 lays out: `#SBATCH` lines (values already in a safe character set), what is left to the
    cluster's defaults, and the srun container words (shell-quoted)."""
    sbatch = [f"--output={options.output}", f"--error={options.error}"]
    unset = []
    for field in ("time", "partition", "account"):
        value = getattr(options, field)
        if value is None:
            unset.append(field)
        else:
            sbatch.append(f"--{field}={value}")
    container = []
    if options.container_image is not None:
        container.append(shlex.quote(f"--container-image={options.container_image}"))
    if options.container_mounts is not None:
        container.append(shlex.quote(f"--container-mounts={options.container_mounts}"))
    return {"sbatch": sbatch, "unset": [OPTION_NAMES[f] for f in unset], "container": container,
            "log_folders": [shlex.quote(f) for f in log_folders(options)]}


def log_folders(options: SlurmOptions) -> list[str]:
    """Folders the log patterns name: sbatch does not create them (the job fails at once without its log), so the
    rendered script's header says to create them."""
    return sorted({str(Path(p).parent) for p in (options.output, options.error) if str(Path(p).parent) != "."})
