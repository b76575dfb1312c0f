"""Dump the field names of each Megatron-Bridge ConfigContainer section into constraints/bridge_field_table.py.

Why: a Bridge config key that is no field of its section's dataclass is a typo Bridge refuses when it builds the
config (the dataclass takes no such keyword), while a real field shardplan does not model is only "not
modelled"; check needs the list of real fields to tell them apart. Read without importing anything (neither
package is installed here): every class of Megatron-Bridge's src/megatron/bridge and of Megatron-LM's
megatron/core and megatron/training is parsed with `ast`; a class's fields are its annotated class attributes
(not ClassVar) and those of its bases, followed through `import ... as` aliases. A section's fields are those of
every type ConfigContainer annotates it with and of every subclass of those types (a YAML's `_target_` may name
any provider, e.g. Llama3ModelProvider under `model`).

    python -m bench.tools.dump_bridge_fields --bridge /path/Megatron-Bridge/.git --megatron /path/Megatron-LM/.git
"""
from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "constraints", "bridge_field_table.py")
CONTAINER = ("src/megatron/bridge/training/config.py", "ConfigContainer")
SKIP = {"env_vars"}  # free-form mapping of environment variables, no fields
# more roots whose subclasses a section may hold: Bridge's DistillationProvider (teacher, kd_config) and other
# providers subclass Megatron-Core's TransformerConfig without being a GPTModelProvider, yet sit under `model`
EXTRA_ROOTS = {"model": ("TransformerConfig",)}


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True).stdout


def _sources(repo: str, prefixes: tuple[str, ...]) -> dict[str, str]:
    names = [n for n in _git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
             if n.endswith(".py") and n.startswith(prefixes)]
    return {n: _git(repo, "show", f"HEAD:{n}") for n in names}


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _name(node.value)
    return None


class Classes:
    """Every class seen: name -> [(base names, field names)] (a name defined in several files keeps all)."""

    def __init__(self) -> None:
        self.defs: dict[str, list[tuple[list[str], set[str]]]] = defaultdict(list)
        self.children: dict[str, set[str]] = defaultdict(set)
        self.annotations: dict[tuple[str, str], dict[str, ast.AST]] = {}

    def add_file(self, path: str, text: str) -> None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return
        alias = {a.asname: a.name.rsplit(".", 1)[-1] for n in ast.walk(tree) if isinstance(n, (ast.ImportFrom, ast.Import))
                 for a in n.names if a.asname}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [alias.get(b, b) for b in (_name(x) for x in node.bases) if b]
            fields, annots = set(), {}
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                        and "ClassVar" not in ast.unparse(item.annotation):
                    fields.add(item.target.id)
                    annots[item.target.id] = item.annotation
            self.defs[node.name].append((bases, fields))
            self.annotations[(path, node.name)] = annots
            for b in bases:
                if b != node.name:
                    self.children[b].add(node.name)

    def fields(self, name: str, seen: set[str] | None = None) -> set[str]:
        seen = set() if seen is None else seen
        if name in seen:
            return set()
        seen.add(name)
        out: set[str] = set()
        for bases, own in self.defs.get(name, []):
            out |= own
            for b in bases:
                out |= self.fields(b, seen)
        return out

    def subclasses(self, name: str) -> set[str]:
        out, todo = {name}, [name]
        while todo:
            for c in self.children.get(todo.pop(), ()):
                if c not in out:
                    out.add(c)
                    todo.append(c)
        return out


def section_fields(classes: Classes) -> dict[str, list[str]]:
    annots = classes.annotations[CONTAINER]
    out = {}
    for section, annotation in annots.items():
        if section.startswith("_") or section in SKIP:
            continue
        types = {n for n in (_name(x) for x in ast.walk(annotation)) if n in classes.defs}
        types |= set(EXTRA_ROOTS.get(section, ()))
        names: set[str] = set()
        for t in types:
            for c in classes.subclasses(t):
                names |= classes.fields(c)
        out[section] = sorted(n for n in names if not n.startswith("__"))
    return out


def render(fields: dict[str, list[str]], bridge_rev: str, megatron_rev: str) -> str:
    lines = ['"""Megatron-Bridge ConfigContainer sections and the field names each accepts, as dumped data.',
             "",
             "Why its own module: data that changes only when we re-dump newer sources; the reader",
             "(constraints.stack_field_names) stays short. Dumped by bench/tools/dump_bridge_fields.py from",
             f"NVIDIA-NeMo/Megatron-Bridge @ {bridge_rev} (src/megatron/bridge/training/config.py ConfigContainer and",
             f"every class of src/megatron/bridge) and NVIDIA/Megatron-LM @ {megatron_rev} (megatron/core,",
             "megatron/training: TransformerConfig, ModelParallelConfig, DistributedDataParallelConfig,",
             "OptimizerConfig, GPTDatasetConfig, the training config dataclasses). A section's names are the fields of",
             "each type ConfigContainer annotates it with, of their bases and of all their subclasses (every model",
             "provider under `model`, and every subclass of TransformerConfig there, e.g. DistillationProvider), so",
             "a name listed is a field of at least one class a config may name.",
             '"""', "", "FIELDS = {"]
    for section, names in fields.items():
        lines.append(f"    {section!r}: \"\"\"")
        row = ""
        for n in names:
            if len(row) + len(n) + 1 > 116:
                lines.append(row.rstrip())
                row = ""
            row += n + " "
        lines.append(row.rstrip() + '""",')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bridge", required=True, help="git dir of NVIDIA-NeMo/Megatron-Bridge")
    ap.add_argument("--megatron", required=True, help="git dir of NVIDIA/Megatron-LM")
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args(argv)
    classes = Classes()
    for repo, prefixes in ((a.megatron, ("megatron/core/", "megatron/training/")), (a.bridge, ("src/megatron/bridge/",))):
        for path, text in _sources(repo, prefixes).items():
            classes.add_file(path, text)
    revs = [_git(r, "rev-parse", "--short=8", "HEAD").strip() for r in (a.bridge, a.megatron)]
    text = render(section_fields(classes), *revs)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(a.out)), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, a.out)
    print(f"wrote {a.out}: " + ", ".join(f"{s} {len(n)}" for s, n in section_fields(classes).items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
