"""The bundled example recipes are reached by name from any folder (issue 31: the README's API example opened
`constraints/examples/...`, a path relative to the repository root)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import tomllib

import shardplan
from boundary.errors import ArgumentError
from tests.helpers.builders import REPO


def test_names_are_the_shipped_example_files():
    on_disk = sorted(p.stem for p in (REPO / "constraints" / "examples").glob("*.yaml"))
    assert shardplan.examples.names() == on_disk and "llama3-70b-h100" in on_disk
    for name in on_disk:
        assert shardplan.examples.path(name) == REPO / "constraints" / "examples" / f"{name}.yaml"
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "examples/*" in package_data["constraints"], "the examples must ship in the wheel"


@pytest.mark.parametrize("typed", ["llama3-70b-h100", "LLAMA3-70B-H100", "llama3-70b-h100.yaml", " llama3 "])
def test_a_name_matches_as_hardware_and_model_names_do(typed):
    assert shardplan.examples.path(typed).name == "llama3-70b-h100.yaml"


def test_an_unknown_name_gets_did_you_mean_or_the_list():
    with pytest.raises(ArgumentError, match=r"^name: no bundled example 'llama3-70b-h10'; did you mean llama3-70b-h100\?$"):
        shardplan.examples.path("llama3-70b-h10")
    with pytest.raises(ArgumentError, match=r"^name: no bundled example 'zzz'; the examples are llama3-70b-h100, "):
        shardplan.examples.path("zzz")


def test_every_example_is_checked_from_an_empty_folder(tmp_path):
    """The whole way in, as a user's notebook runs it: no repository folder at hand, only the package on the path."""
    code = ("import shardplan\n"
            "for name in shardplan.examples.names():\n"
            "    r = shardplan.check(shardplan.examples.path(name), project=False)\n"
            "    print(name, r.legal, r.fits)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{n} True True" for n in shardplan.examples.names()]
