"""What the three stack-config readers share: the result they hand `check`, and keys -> one Megatron argv.

Why one argv: the launch-script path already turns Megatron arguments into a model, job and recipe and judges
them (constraints.megatron.argv_to_specs); a stack config read into the same argument list gets every rule, memory term
and projection, and is reported the same way. A key that is no Megatron argument is named as not understood,
never dropped; a key set twice to different values (Bridge's optimizer and ddp both hold
use_distributed_optimizer) is refused, since either reading would be a guess.
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from boundary.budget import InputBudget
from boundary.errors import ShardplanError
from boundary.expand import ENV_REFERENCE, substitute_references
from boundary.parse import NotYaml, load_yaml
from boundary.show import shown
from constraints.megatron.flags import FLAGS
from constraints.stacks.keys import StackKeyError, flags_for_core_field


class StackConfigError(ShardplanError):
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


class EnvReferences:
    """Primus `${NAME:default}` / Megatron `${NAME}` in a config's string values: the environment's value, else the
    default, each name noted once (a whole-string reference is typed as YAML would type it; one inside a string, e.g.
    `${PRIMUS_MODEL:deepseek_v3}.yaml`, is substituted as text); a missing variable without a default is refused.

    Why bounded: the substituted text is parsed again, and an environment value or a default is as hostile as the file
    (issue 33: a 734-byte file whose default held a YAML alias bomb took 3.1 GiB; `[[[...` 3,000 deep raised
    RecursionError, exit 3). The
    substitution is sized and charged to the input's budget before it is built (boundary.expand.substitute_references),
    and the result is parsed by the bounded YAML loader under the same budget (boundary.parse.load_yaml); a limit
    passed raises boundary.errors.InputRefused, which no caller mistakes for a key it may skip."""

    def __init__(self, environ: dict[str, str], budget: InputBudget, notes: list[str]):
        self.environ, self.budget, self.notes = environ, budget, notes
        self._noted: set[str] = set()

    def value(self, value: Any, path: str) -> Any:
        """`value` with its references substituted (unchanged when it holds none)."""
        if not isinstance(value, str) or "${" not in value:
            return value
        label = f"{self.budget.label}: {path}"
        text = substitute_references(value, lambda name, default: self._lookup(name, default, path), label, self.budget)
        if ENV_REFERENCE.fullmatch(value.strip()) is None:
            return text
        if not text.strip():
            return None
        try:
            return load_yaml(text, "recipe", f"{label} (its ${{NAME}} value)", self.budget)
        except NotYaml:
            return text  # not YAML: the text itself, as Primus takes it

    def _lookup(self, name: str, default: str | None, path: str) -> str:
        if name in self.environ:
            self._note(name, f"{path}: took {name}={shown(self.environ[name])} from the environment")
            return self.environ[name]
        if default is None:
            raise StackConfigError(f"{path}: ${{{name}}} is not set in the environment and has no default; set {name} "
                                   "or write the value")
        self._note(name, f"{path}: {name} is not set: took its default {shown(default)}")
        return default

    def _note(self, name: str, line: str) -> None:
        if name not in self._noted:
            self._noted.add(name)
            self.notes.append(line)
