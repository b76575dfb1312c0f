"""Which stack config a file is (Primus experiment, Megatron-Bridge recipe or overrides, Megatron `--yaml-cfg`),
read into Megatron arguments; None for anything else (a shardplan recipe YAML, a launch script).

Why a separate dispatch: `check` and `render` accept any of these where they accept a launch script, and the
formats tell themselves apart by their top-level keys alone (modules / language_model + model_parallel /
ConfigContainer sections), so no flag is needed. Every file is read through the bounded input boundary.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from boundary.budget import InputBudget
from boundary.errors import InputRefused
from boundary.parse import load_yaml
from boundary.read import read_text
from constraints.stacks.bridge import SECTIONS, bridge_key, is_bridge, load_override_value, mapping_from_overrides, overrides_text, read_bridge
from constraints.stacks.common import EnvReferences, StackConfig, StackConfigError
from constraints.stacks.keys import DEST_OF
from constraints.stacks.primus import is_primus, read_primus
from constraints.stacks.torch_native import torch_native_refusal
from constraints.stacks.yaml_cfg import is_yaml_cfg, read_yaml_cfg

KINDS = ("primus", "bridge", "yaml-cfg")


def _tree_reader(budget: InputBudget) -> Callable[[Path], Any]:
    """Reads one file a stack config names (a Primus module config, model file or `extends` base) through the bounded
    boundary, its bytes and YAML values charged to the input's budget."""
    def read(path: Path) -> Any:
        text = read_text(path, "recipe", str(path))
        budget.charge_bytes(len(text.encode()), str(path))
        return load_yaml(text, "recipe", str(path), budget)
    return read


def stack_kind(data: Any) -> Optional[str]:
    """The stack format of a parsed YAML mapping, or None."""
    if not isinstance(data, dict):
        return None
    if is_primus(data):
        return "primus"
    if is_yaml_cfg(data):
        return "yaml-cfg"
    if is_bridge(data):
        return "bridge"
    return None


def read_stack_mapping(data: dict, path: Path, environ: dict[str, str], budget: InputBudget | None = None) -> Optional[StackConfig]:
    """The config's Megatron arguments, or None when `data` is no stack config; `budget` is what reading it may cost
    with every file it names and every `${NAME}` it expands (a fresh boundary.budget.InputBudget by default)."""
    kind = stack_kind(data)
    if kind is None:
        return None
    env = EnvReferences(environ, budget or InputBudget(path.name), [])
    try:
        if kind == "primus":
            return read_primus(data, path, _tree_reader(env.budget), env)
        if kind == "yaml-cfg":
            return read_yaml_cfg(data, env)
        return read_bridge(data, env)
    except InputRefused as exc:  # a limit of the boundary or of the input's budget
        raise StackConfigError(str(exc)) from None


def read_stack_config(path: Path, text: str, environ: dict[str, str]) -> Optional[StackConfig]:
    """The file's Megatron arguments if it is a stack config; None otherwise (the caller reads it as before).
    Raises StackConfigError (one line) for a stack config that cannot be used, and for a Python file: a Megatron-Bridge
    recipe is a Python function that builds its ConfigContainer, which check would have to run (it never runs code)."""
    if path.suffix == ".py":
        what = "a Megatron-Bridge recipe function" if "megatron.bridge" in text or "ConfigContainer" in text else "Python"
        raise StackConfigError(f"{path.name} is {what}, which shardplan does not run; save the ConfigContainer it builds as "
                               "a Bridge YAML, or write its key=value overrides to a file, and check that")
    budget = InputBudget(path.name)
    budget.charge_file(path.name)
    budget.charge_bytes(len(text.encode()), path.name)
    if path.suffix not in (".yaml", ".yml") and torch_native_refusal(path.name, text):  # a torchtitan TOML
        raise StackConfigError(torch_native_refusal(path.name, text))
    if path.suffix in (".yaml", ".yml"):
        try:
            data = load_yaml(text, "recipe", str(path), budget)
        except InputRefused:
            return None  # the recipe reader reports YAML errors as before
        if torch_native_refusal(path.name, text, data):  # a NeMo AutoModel recipe
            raise StackConfigError(torch_native_refusal(path.name, text, data))
        if isinstance(data, dict):
            return read_stack_mapping(data, path, environ, budget)
        if not isinstance(data, str):
            return None
        # key=value override lines saved as .yaml read as one YAML string: they are the overrides all the same
    tokens = overrides_text(text)
    if tokens is None:
        return None
    config = read_bridge(mapping_from_overrides(tokens, load_override_value, path.name), EnvReferences(environ, budget, []))
    return config.model_copy(update={"notes": [f"read {len(tokens)} Megatron-Bridge key=value override(s)"]
                                     + config.notes})


# what a Megatron-Bridge training log names as its config's class (the first line of its `Task Configuration` block)
CONFIG_CONTAINER_TARGET = "megatron.bridge.training.config.ConfigContainer"


def _whole(value: Any) -> Any:
    """A float with no fractional part as its int; anything else as it is."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def read_printed_bridge_config(text: str, label: str, environ: dict[str, str]) -> StackConfig:
    """The Megatron arguments of the ConfigContainer a Megatron-Bridge training log printed as YAML (its `Task
    Configuration` block), read through the same bounded YAML boundary and Bridge reader as a Bridge YAML file. Keys of
    another Bridge release than shardplan's field lists are not understood rather than refused (read_bridge `printed`).
    Raises StackConfigError (one line) for a block that is not a ConfigContainer."""
    budget = InputBudget(label)
    budget.charge_bytes(len(text.encode()), label)
    try:
        data = load_yaml(text, "recipe", label, budget)
    except InputRefused as exc:
        raise StackConfigError(str(exc)) from None
    if not isinstance(data, dict) or data.get("_target_", CONFIG_CONTAINER_TARGET) != CONFIG_CONTAINER_TARGET:
        raise StackConfigError(f"{label}: the Task Configuration block is not a Megatron-Bridge ConfigContainer (its "
                               f"_target_ is not {CONFIG_CONTAINER_TARGET}); give the log of a Megatron-Bridge training run")
    # Bridge prints what its dataclasses hold, and some integer fields hold floats (`rotary_base: 500000.0` in the real
    # log, tests/data/logs/megatron_bridge_llama32_1b_whole.log), which Megatron's int flags refuse: a whole float is
    # written as the integer it is (a float flag reads `500000` as well)
    data = {k: ({f: _whole(v) for f, v in body.items()} if isinstance(body, dict) else body)
            for k, body in data.items() if k != "_target_"}
    notes = _trained_sequence_length(data)
    unknown = sorted(k for k in data if k not in SECTIONS)
    if unknown:  # a section of another Bridge release: said, never silently dropped
        data = {k: v for k, v in data.items() if k in SECTIONS}
    env = EnvReferences(environ, budget, [])
    try:
        config = read_bridge(data, env, printed=True)
    except InputRefused as exc:
        raise StackConfigError(str(exc)) from None
    return config.model_copy(update={"not_understood": [*unknown, *config.not_understood], "notes": notes + config.notes})


def _trained_sequence_length(data: dict) -> list[str]:
    """A printed config's samples are `dataset.sequence_length` tokens long (Megatron-Core's GPTDatasetConfig field,
    megatron/core/datasets/blended_megatron_dataset_config.py, which builds every sample), while `model.seq_length`
    only sizes the position embeddings: where they differ (model 131072, dataset 1024 in the real log), the trained
    length is the dataset's. Sets it on the model section (what the Bridge reader reads as --seq-length) and says so."""
    dataset, model = data.get("dataset"), data.get("model")
    if not isinstance(dataset, dict) or not isinstance(model, dict):
        return []
    trained = dataset.get("sequence_length", dataset.get("seq_length"))
    if not isinstance(trained, int) or isinstance(trained, bool) or trained == model.get("seq_length"):
        return []
    said = model.get("seq_length")
    data["model"] = {**model, "seq_length": trained}
    return [f"samples are dataset.sequence_length = {trained} tokens (model.seq_length {said!r} sizes only the position "
            "embeddings): judged at the dataset's length"]


def is_stack_file(path: str | Path) -> bool:
    """Whether `render`/`check` should read this file as a stack config (a cheap, bounded look)."""
    p = Path(path)
    try:
        text = read_text(p, "recipe" if p.suffix in (".yaml", ".yml") else "launch script", str(p))
    except InputRefused:
        return False
    if p.suffix in (".yaml", ".yml"):
        try:
            return stack_kind(load_yaml(text, "recipe", str(p))) is not None
        except InputRefused:
            return False
    return overrides_text(text) is not None


def key_for_flag(kind: str, flag: str) -> Optional[str]:
    """The key a `kind` config uses for Megatron flag `flag` (for one-line fixes in the user's terms)."""
    dest = DEST_OF.get(flag)
    if dest is None:
        return None
    if kind == "primus":
        return f"overrides.{dest}"
    if kind == "bridge":
        return bridge_key(dest)
    return dest
