"""What the three stack-config readers share: the result they hand `check`, and keys -> one Megatron argv.

Why one argv: the launch-script path already turns Megatron arguments into a model, job and recipe and judges
them (constraints.megatron.argv_to_specs); a stack config read into the same argument list gets every rule, memory term
and projection, and is reported the same way. A key that is no Megatron argument is named as not understood,
never dropped; a key set twice to different values (Bridge's optimizer and ddp both hold
use_distributed_optimizer) is refused, since either reading would be a guess.
"""
from __future__ import annotations

import re
from typing import Any, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field

from constraints.megatron.flags import FLAGS
from constraints.stacks.keys import StackKeyError, flags_for_core_field


class StackConfigError(ValueError):
    """An unusable stack config (exit 2); one line naming the key and the fix."""


class StackConfig(BaseModel):
    """A stack config read as Megatron arguments."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="primus | bridge | yaml-cfg")
    argv: list[str] = Field(description="the Megatron arguments the config sets, as pretrain_gpt.py would get them")
    not_understood: list[str] = Field(default_factory=list, description="keys that are no Megatron argument")
    ignored: list[str] = Field(default_factory=list, description="keys known to have no effect (run names, paths)")
    notes: list[str] = Field(default_factory=list, description="how the file was read: files followed, defaults")
    env: Optional[dict[str, str]] = Field(None, description="environment the config sets (Bridge env_vars)")
    missing_model: Optional[str] = Field(None, description="the note naming a model file the config names and that "
                                         "could not be found (Primus): the likely cause of a missing model shape")


class ArgvBuilder:
    """Collects (key path, field, value) into one Megatron argv, refusing conflicting settings of a flag that changes
    something shardplan computes; two values of a flag known to have no effect (Primus's `layernorm_epsilon` beside
    `norm_epsilon`, both --norm-epsilon) are a note, the later one kept."""

    def __init__(self) -> None:
        self._args: dict[str, tuple[list[str], str]] = {}  # first flag -> (its arguments, key path that set it)
        self.not_understood: list[str] = []
        self.notes: list[str] = []

    def add(self, path: str, field: str, value: Any, core_names: bool = False) -> None:
        try:
            args = flags_for_core_field(field, value, path, core_names)
        except StackKeyError as exc:
            raise StackConfigError(str(exc)) from None
        if args is None:
            self.not_understood.append(path)
            return
        self.add_args(path, args)

    def add_args(self, path: str, args: list[str]) -> None:
        """Megatron arguments `path` sets, with the same conflict check as `add`."""
        for group in _split(args):
            flag = group[0]
            before = self._args.get(flag)
            if before is not None and before[0] != group:
                said = (f"{path}: sets {flag} to {' '.join(group[1:]) or 'on'}, but {before[1]} set "
                        f"{' '.join(before[0][1:]) or 'on'}")
                if not (flag in FLAGS and FLAGS[flag].no_effect):
                    raise StackConfigError(f"{said}; make them agree")
                self.notes.append(f"{said}; {flag} changes nothing shardplan judges, so {path}'s value is kept")
                self._args[flag] = (group, path)
                continue
            self._args[flag] = (group, before[1] if before else path)

    def argv(self) -> list[str]:
        return [a for group, _ in self._args.values() for a in group]


def _split(args: list[str]) -> list[list[str]]:
    """['--a', '1', '--b'] -> [['--a', '1'], ['--b']]."""
    groups: list[list[str]] = []
    for a in args:
        if _is_flag(a) or not groups:
            groups.append([a])
        else:
            groups[-1].append(a)
    return groups


def _is_flag(token: str) -> bool:
    return token in FLAGS


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")


def env_default(value: Any, environ: dict[str, str], notes: list[str], path: str) -> Any:
    """Primus `${NAME:default}` / Megatron `${NAME}` in a string value: the environment's value, else the default,
    noted either way (a whole-string reference is typed as YAML would type it; one inside a string, e.g.
    `${PRIMUS_MODEL:deepseek_v3}.yaml`, is substituted as text); a missing variable without a default is refused."""
    if not isinstance(value, str) or "${" not in value:
        return value

    def one(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        if name in environ:
            notes.append(f"{path}: took {name}={environ[name]} from the environment")
            return environ[name]
        if default is None:
            raise StackConfigError(f"{path}: ${{{name}}} is not set in the environment and has no default; set {name} "
                                   "or write the value")
        notes.append(f"{path}: {name} is not set: took its default {default!r}")
        return default

    whole = _ENV_REF.fullmatch(value.strip())
    text = _ENV_REF.sub(one, value)
    if whole is None:
        return text
    try:
        return yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        return text
