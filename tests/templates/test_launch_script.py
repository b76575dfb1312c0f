"""`render` takes a launch script as well as a recipe YAML: check -> render -> check gives back the same model, job,
recipe and cluster, for the shape-corpus scripts `check` calls legal (tests/data/scripts/shapes)."""
from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

from constraints.read import load_check_input
from shardplan.cli.render import render_command
from tests.helpers.builders import TESTS

SHAPES = TESTS / "data" / "scripts" / "shapes"


@pytest.mark.parametrize("script", ["sourced_config.sh", "sbatch_chain.sh"])
@pytest.mark.parametrize("fmt", ["torchrun", "slurm"])
def test_check_render_check_round_trip_from_a_launch_script(script, fmt, tmp_path, monkeypatch):
    work = tmp_path / "shapes"
    shutil.copytree(SHAPES, work)
    monkeypatch.chdir(work)
    monkeypatch.setenv("PWD", str(work))
    before = load_check_input(script, "h100-sxm-80gb", None, None)
    out = tmp_path / "rendered.sh"
    res = CliRunner().invoke(render_command, [script, "--hardware", "h100-sxm-80gb", "--format", fmt, "-o", str(out)])
    assert res.exit_code == 0, res.output
    after = load_check_input(str(out), "h100-sxm-80gb", None, None)
    assert after.case.recipe == before.case.recipe
    assert (after.case.job, after.case.placement) == (before.case.job, before.case.placement)
    same = ("num_layers", "hidden_size", "num_attention_heads", "vocab_size", "ffn_hidden_size", "normalization")
    assert [getattr(after.case.model, f) for f in same] == [getattr(before.case.model, f) for f in same]


def test_render_refuses_an_illegal_launch_script_naming_megatrons_refusal(tmp_path, monkeypatch):
    monkeypatch.chdir(SHAPES)
    res = CliRunner().invoke(render_command, ["argparse_exit.sh", "--hardware", "h100-sxm-80gb", "--nodes", "1",
                                              "--gpus-per-node", "8"])
    assert res.exit_code == 1
    assert "unrecognized arguments: --DDP-impl local" in res.output and "checkpoint-activations" in res.output
