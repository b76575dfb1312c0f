"""No import cycles between shardplan's modules, counting every import: at module level, inside functions and under
TYPE_CHECKING. Why: a cycle hidden in a function or behind TYPE_CHECKING still ties two modules together (each needs the
other's names), and it turns into a circular-import error the day someone moves the import to the top.

The graph is read from the source with ast (nothing is imported): a module -> every project module it imports, where
`from pkg import name` counts as pkg.name when that is a module, else pkg; package `__init__`s count as modules too.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("constraints", "measure", "solver", "shardplan", "templates", "hardware", "boundary")


def _modules() -> dict[str, Path]:
    mods = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported project module: line of the first such import}."""
    mods = _modules()
    graph: dict[str, dict[str, int]] = {m: {} for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base for alias in node.names]
            else:
                continue
            for target in targets:
                resolved = _resolve(target, mods)
                if resolved and resolved != mod:
                    graph[mod].setdefault(resolved, node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles():
    graph = import_graph()
    assert len(graph) > 100  # the walk found the packages
    found = cycles(graph)
    described = []
    for component in found:
        members = set(component)
        edges = [f"{a} -> {b} (line {graph[a][b]})" for a in component for b in sorted(graph[a]) if b in members]
        described.append("cycle: " + ", ".join(component) + "\n    " + "\n    ".join(edges))
    assert not found, "import cycles between project modules:\n" + "\n".join(described)
