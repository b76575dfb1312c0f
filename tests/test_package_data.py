"""Every data file the code reads ships in the wheel: a file left out of pyproject's package-data is not an error
when tests run in the checkout, but an installed shardplan silently loses it (the fitted software constants once:
every projection then took the unfitted defaults). Also build the wheel and look inside when `pip wheel` works."""
from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parent.parent


def _setuptools() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def _tracked_data_files() -> list[str]:
    """Non-Python files git tracks inside the packages pyproject lists."""
    packages = [p.rstrip("*") for p in _setuptools()["packages"]["find"]["include"]]
    out = subprocess.run(["git", "ls-files", *packages], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split() if not f.endswith(".py") and "__pycache__" not in f]


def _shipped(path: str, package_data: dict[str, list[str]]) -> bool:
    for package, globs in package_data.items():
        prefix = package.replace(".", "/") + "/"
        if path.startswith(prefix) and any(fnmatch.fnmatch(path[len(prefix):], g) for g in globs):
            return True
    return False


def test_every_tracked_data_file_is_package_data():
    package_data = _setuptools()["package-data"]
    files = _tracked_data_files()
    assert "hardware/software_constants.yaml" in files and len(files) > 40
    missing = [f for f in files if not _shipped(f, package_data)]
    assert missing == [], f"add to [tool.setuptools.package-data] in pyproject.toml: {missing}"


def test_the_built_wheel_holds_the_data_files(tmp_path):
    # build from a copy of the tracked files, so setuptools' build/ and *.egg-info land in tmp_path, not the checkout
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    src = tmp_path / "src"
    for name in (n for n in tracked if (REPO / n).is_file()):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    try:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(src), "-w",
                        str(tmp_path)], check=True, capture_output=True, timeout=240)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"pip wheel could not build here: {exc}")
    wheel = next(tmp_path.glob("shardplan-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(_tracked_data_files()) <= names
