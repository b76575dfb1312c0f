"""Read a Primus experiment YAML (AMD's stack on Megatron-LM) as Megatron arguments.

Layout (AMD-AGI/Primus: examples/megatron/configs/<GPU>/*.yaml, primus/configs/models/megatron/*.yaml):

    work_group / user_name / exp_name / workspace      run metadata, may hold ${NAME:default}
    modules:
      pre_trainer:
        framework: megatron
        config: pre_trainer.yaml                      Primus's trainer defaults (primus/configs/modules/megatron/)
        model: llama3.1_8B.yaml                       a model file; `extends:` chains to its bases
        overrides: {tensor_model_parallel_size: 2, ...}   Megatron argparse dest names, plus Primus's own

Keys are Megatron's argparse dests, so each maps to its flag (constraints.stacks.keys). The module config and the
model file are looked up beside the experiment, then in primus/configs/{modules,models}/megatron/ of a Primus
checkout above it; each `extends` base is read first, the file itself next; trainer defaults, then the model,
then `overrides` (Primus's merge order). Trainer defaults that are no Megatron argument are listed as ignored
(Primus's own settings the user did not write); every key the user wrote that is none is "not understood".
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Callable

from boundary.limits import MAX_EXTENDS_DEPTH
from boundary.read import is_regular_file
from boundary.show import shown
from constraints.megatron.flags import READ_FLAGS
from constraints.stacks.common import ArgvBuilder, EnvReferences, StackConfig, StackConfigError
from constraints.stacks.keys import MEGATRON_DESTS, StackKeyError, flags_for_core_field

META_KEYS = ("work_group", "user_name", "exp_name", "workspace")
MODULE_KEYS = ("framework", "config", "model", "overrides")

Reader = Callable[[Path], Any]  # a YAML file -> its value, through the bounded input boundary


def is_primus(data: dict) -> bool:
    return isinstance(data.get("modules"), dict)


def _megatron_module(modules: dict) -> tuple[str, dict]:
    found = [(name, m) for name, m in modules.items() if isinstance(m, dict) and m.get("framework") == "megatron"]
    if not found:
        frameworks = sorted({str(m.get("framework")) for m in modules.values() if isinstance(m, dict)})
        raise StackConfigError(f"modules: no module with framework: megatron (found {', '.join(frameworks) or 'none'}); "
                               "shardplan reads Primus's Megatron-LM trainer")
    if len(found) > 1:
        raise StackConfigError(f"modules: {len(found)} Megatron modules ({', '.join(n for n, _ in found)}); keep the "
                               "one to judge")
    return found[0]


def _primus_file(name: str, experiment: Path, folder: str) -> Path | None:
    """A model / module file beside the experiment, else in primus/configs/<folder>/megatron of a checkout above it."""
    candidates = [experiment.parent / name]
    candidates += [d / "primus" / "configs" / folder / "megatron" / name for d in experiment.resolve().parents]
    return next((c for c in candidates if is_regular_file(c)), None)


class ExtendsTree:
    """The Primus files one experiment names (trainer defaults, model file) and their `extends` bases, each read once.

    Why a tree with a memo: Primus merges a file's bases in order and the file over them, recursively (AMD-AGI/Primus
    primus/core/config/yaml_loader.py _apply_extends), so a base named by two files is read by both. Followed naively
    a tree that fans out (3 bases a file, 14 deep) opens 3^14 files and never ends. Here each file is read once (by
    resolved path) and merged once; every entry that names a file is charged to the input's budget before it is opened
    (boundary.budget: at most MAX_TREE_FILES names, MAX_TREE_BYTES, MAX_TREE_YAML_VALUES), one chain is at most
    MAX_EXTENDS_DEPTH files, and a file that extends itself, directly or not, is refused naming the loop. The merge of
    flat mappings (Primus model and trainer files are flat) is the same as Primus's: a key's value and place come from
    the last and first file that sets it, in Primus's order."""

    def __init__(self, read: Reader, env: EnvReferences):
        self._read, self._env = read, env
        self._data: dict[Path, Any] = {}  # resolved path -> its parsed YAML
        self._merged: dict[Path, tuple[list[Path], dict[str, tuple[Path, Any]]]] = {}

    def _file(self, path: Path, named_by: str) -> Any:
        self._env.budget.charge_file(named_by)
        key = path.resolve()
        if key not in self._data:
            self._data[key] = self._read(path)
        return self._data[key]

    def merged(self, path: Path, named_by: str, chain: tuple[Path, ...] = ()) -> tuple[list[Path], dict[str, tuple[Path, Any]]]:
        """(the files read, bases first; {key: (the file that set it last, its value)}) of `path` and its bases."""
        key = path.resolve()
        if key in chain:
            loop = " -> ".join(p.name for p in chain[chain.index(key):] + (key,))
            raise StackConfigError(f"{path.name}: extends itself ({loop}); break the cycle")
        if len(chain) >= MAX_EXTENDS_DEPTH:
            raise StackConfigError(f"{path.name}: more than {MAX_EXTENDS_DEPTH} files chained by extends "
                                   f"({' -> '.join(p.name for p in chain[:4])} -> ...); shorten the chain")
        data = self._file(path, named_by)
        if key in self._merged:
            return self._merged[key]
        if not isinstance(data, dict):
            raise StackConfigError(f"{path.name}: a Primus model file must be a mapping of Megatron arguments")
        files: list[Path] = []
        keys: dict[str, tuple[Path, Any]] = {}
        for base in self._bases(path, data):
            base_files, base_keys = self.merged(path.parent / base, f"{path.name}: extends {shown(base)}", chain + (key,))
            files += [f for f in base_files if f not in files]
            keys.update(base_keys)
        files.append(path)
        keys.update((k, (path, v)) for k, v in data.items() if k != "extends")
        self._merged[key] = (files, keys)
        return files, keys

    def _bases(self, path: Path, data: dict) -> list[str]:
        bases = data.get("extends") or []
        bases = [bases] if isinstance(bases, str) else bases
        if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
            raise StackConfigError(f"{path.name}: extends must be a file name or a list of file names "
                                   f"({shown(data.get('extends'))}); list the base files beside it")
        out = []
        for base in bases:
            base = str(self._env.value(base, f"{path.name}: extends"))
            if not is_regular_file(path.parent / base):
                raise StackConfigError(f"{path.name}: extends {shown(base)}, which is not beside it; put it in "
                                       f"{shown(str(path.parent))}")
            out.append(base)
        return out


def read_primus(data: dict, experiment: Path, read: Reader, env: EnvReferences) -> StackConfig:
    """The experiment's Megatron arguments: trainer defaults, then the model file, then `overrides` (Primus's order);
    `read` reads one YAML file through the bounded boundary, `env` substitutes `${NAME:default}` and holds the notes."""
    name, module = _megatron_module(data["modules"])
    notes = env.notes
    tree = ExtendsTree(read, env)
    builder = ArgvBuilder()
    ignored = [k for k in data if k in META_KEYS]
    builder.not_understood += [k for k in data if k not in META_KEYS and k != "modules"]
    builder.not_understood += [f"modules.{name}.{k}" for k in module if k not in MODULE_KEYS]
    builder.not_understood += [f"modules.{n}" for n in data["modules"] if n != name]
    merged: dict[str, tuple[str, Any]] = {}
    defaults: set[str] = set()  # keys whose value comes from Primus's trainer defaults, not the user
    shipped_model: set[str] = set()  # keys whose value comes from a model file shipped in primus/configs/models
    config_name = env.value(module.get("config"), f"modules.{name}.config")
    if config_name:
        config_path = _primus_file(str(config_name), experiment, "modules")
        if config_path is None:
            notes.append(f"modules.{name}.config {shown(module['config'])} (Primus's trainer defaults) was found neither "
                         "beside the experiment nor in a Primus checkout above it: keys it sets that the experiment does "
                         "not are Megatron-LM's defaults here")
        else:
            files, keys = tree.merged(config_path, f"modules.{name}.config")
            notes += [f"read {path} (Primus trainer defaults)" for path in files]
            for key, (path, value) in keys.items():
                merged[key] = (f"{path.name}:{key}", value)
                defaults.add(key)
    model_name = env.value(module.get("model"), f"modules.{name}.model")
    missing_model = None
    if model_name is not None:
        model_path = _primus_file(str(model_name), experiment, "models")
        if model_path is None:
            missing_model = (f"modules.{name}.model {shown(model_name)} was found neither beside the experiment nor in a "
                             "Primus checkout above it: its keys are not read (give the shape in overrides or pass --model)")
            notes.append(missing_model)
        else:
            files, keys = tree.merged(model_path, f"modules.{name}.model")
            notes += [f"read {path} (Primus model file)" for path in files]
            for key, (path, value) in keys.items():
                merged[key] = (f"{path.name}:{key}", value)
                defaults.discard(key)
                shipped = "/primus/configs/" in path.resolve().as_posix()  # Primus's own file, not the user's
                (shipped_model.add if shipped else shipped_model.discard)(key)
    overrides = module.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise StackConfigError(f"modules.{name}.overrides: must be a mapping of Megatron arguments ({type(overrides).__name__})")
    for key, value in overrides.items():
        merged[key] = (f"overrides.{key}", value)
        defaults.discard(key)
        shipped_model.discard(key)
    for key, (path, value) in merged.items():
        if key in shipped_model:  # Primus's model definition: every Megatron argument counts, its own keys are ignored
            if flags_for_core_field(str(key), None, path, core_names=False) is None:
                ignored.append(path)
                continue
        if key not in defaults:
            builder.add(path, str(key), env.value(value, path))
            continue
        # a default shipped in primus/configs/: judged where a rule or the memory model reads its flag; one that is
        # no Megatron argument (Primus's own settings) or that shardplan does not model is listed as ignored
        try:
            value = env.value(value, path)
            args = flags_for_core_field(str(key), value, path, core_names=False)
        except (StackConfigError, StackKeyError):
            args = None
        if args and args[0] in READ_FLAGS:
            builder.add(path, str(key), value)
        elif args is None or args:
            ignored.append(path)
    for path in builder.not_understood:
        error = misspelt_argument(path)
        if error:
            raise StackConfigError(error)
    return StackConfig(kind="primus", argv=builder.argv(), not_understood=builder.not_understood, ignored=ignored,
                       notes=notes + builder.notes, missing_model=missing_model)


def misspelt_argument(path: str) -> str | None:
    """A one-line error for an `overrides.key` that is no Megatron argument but all but spells one (difflib ratio
    >= 0.9: `tensor_model_paralel_size`); None for any other key. Primus sets every override on Megatron's argument
    namespace, so a misspelt one is set on no argument Megatron reads, and the recipe would be judged with the default
    the user did not mean. Primus's own keys (`stderr_sink_level`, `enable_primus_turbo`) are nowhere near a Megatron
    argument name and stay merely not understood."""
    if not path.startswith("overrides."):
        return None
    key = path.split(".", 1)[1]
    near = difflib.get_close_matches(key, MEGATRON_DESTS, n=1, cutoff=0.9)
    if not near or near[0] == key:
        return None
    return (f"{path}: no Megatron-LM argument is named {key}, so Primus sets nothing Megatron reads; did you mean "
            f"overrides.{near[0]}?")
