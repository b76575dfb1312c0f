"""A recipe file names its model and hardware profile by bundled name or by path; a path is read relative to the
recipe file (where its author put the files), whatever the working directory is."""
from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from constraints.case import load_case_yaml
from hardware.profile import load_profile
from shardplan.cli.main import cli
from tests.helpers.builders import REPO


def _recipe_beside_its_files(tmp_path: Path) -> Path:
    folder = tmp_path / "cluster"
    folder.mkdir()
    profile = yaml.safe_load((REPO / "hardware/profiles/h100-sxm-80gb.yaml").read_text())
    profile["name"] = "our-h100"
    profile["hbm_capacity_bytes"] = 64 * 1024 ** 3  # a cut-down part, so reading the bundled h100 instead would show
    (folder / "our-h100.yaml").write_text(yaml.safe_dump(profile))
    shutil.copy(REPO / "constraints/models/hf_configs/Llama-3.1-8B.json", folder / "my-model.json")
    recipe = {"model": "my-model.json", "hardware": "our-h100.yaml", "nodes": 1, "gpus_per_node": 8,
              "job": {"seq_length": 4096, "global_batch_size": 64}, "recipe": {"tp": 2, "pp": 1, "mbs": 1}}
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def test_hardware_and_model_paths_are_read_relative_to_the_recipe_file(tmp_path, monkeypatch):
    path = _recipe_beside_its_files(tmp_path)
    monkeypatch.chdir(tmp_path)  # not the recipe's folder
    case = load_case_yaml(path)
    assert Path(case.placement.hardware) == path.parent / "our-h100.yaml"
    assert load_profile(case.placement.hardware).hbm_capacity_bytes == 64 * 1024 ** 3
    result = CliRunner().invoke(cli, ["check", str(path), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    assert "64.00 GiB" in CliRunner().invoke(cli, ["check", str(path)]).output
