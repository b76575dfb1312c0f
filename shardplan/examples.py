"""The bundled example recipes by name, wherever the caller runs: `shardplan.examples.path("llama3-70b-h100")`.

Why: the README's API example opened `constraints/examples/llama3-70b-h100.yaml`, a path relative to the repository
root, so it failed from any other folder and in an installed shardplan. The files ship as package data of
`constraints` (pyproject.toml's `examples/*`), so they are found through the package, not the working directory.
A name matches as boundary/names.py matches hardware and models (case-insensitive, `.yaml` optional, a unique prefix
such as `llama3`); an unknown one gets a "did you mean".
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from boundary.errors import ArgumentError
from boundary.names import did_you_mean, resolve_name
from shardplan.api_arguments.edge import api_edge
from shardplan.api_arguments.models import ExampleArguments

SUFFIX = ".yaml"


def _folder() -> Path:
    """The bundled examples' folder (a real folder: shardplan installs unzipped, setuptools' default)."""
    return Path(str(resources.files("constraints") / "examples"))


def names() -> list[str]:
    """Every bundled example's name (its file name without `.yaml`), sorted."""
    return sorted(p.name[: -len(SUFFIX)] for p in _folder().glob(f"*{SUFFIX}"))


@api_edge(ExampleArguments)
def path(name: str) -> Path:
    """The file of the bundled example `name` (see names()), e.g. path("llama3-70b-h100"), to pass to check or render.
    An unknown name raises ArgumentError with the closest names."""
    known = names()
    wanted = name.strip()
    wanted = wanted[: -len(SUFFIX)] if wanted.lower().endswith(SUFFIX) else wanted
    found = resolve_name(wanted, known)
    if found is None:
        hint = did_you_mean(wanted, known) or f"; the examples are {', '.join(known)}"
        raise ArgumentError(f"name: no bundled example {wanted[:80]!r}{hint}", "name")
    return _folder() / f"{found}{SUFFIX}"
