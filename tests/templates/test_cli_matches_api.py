"""`shardplan render` is `shardplan.render()`: for the same inputs the command prints (and `-o` writes) the very bytes
the API returns, refuses with the problems the API raises, and warns with the problems and model notes the API
returns."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import shardplan
from boundary.errors import ShardplanError
from shardplan.cli.main import cli
from templates.render_input import RenderRefused
from tests.helpers.builders import REPO, TESTS

EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"
SHAPES = TESTS / "data" / "scripts" / "shapes"
PATHS = {"data_path": "/data/fineweb_text_document", "megatron_path": "/opt/Megatron LM", "tokenizer_model": "meta-llama/Llama-3.1-70B",
         "checkpoint_dir": "/ckpt/run 1"}


def _cli_args(source: str, fmt: str, paths: dict, **where) -> list[str]:
    args = ["render", source, "--format", fmt]
    for key, value in {**paths, **where}.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args


@pytest.mark.parametrize("fmt", ["torchrun", "slurm", "primus", "bridge", "bridge-overrides"])
@pytest.mark.parametrize("paths", [{}, PATHS], ids=["default-paths", "given-paths"])
def test_cli_prints_and_writes_the_bytes_the_api_returns_for_a_recipe(fmt, paths, tmp_path):
    if fmt == "bridge-overrides" and paths:  # '/ckpt/run 1' holds a space: no override line carries it as data
        with pytest.raises(ShardplanError, match="--checkpoint-dir") as refused:
            shardplan.render(EXAMPLE, format=fmt, **paths)
        res = CliRunner().invoke(cli, _cli_args(str(EXAMPLE), fmt, paths))
        assert res.exit_code == 2 and res.stderr == f"error: {refused.value}\n"
        paths = {key: value.replace(" ", "_") for key, value in paths.items()}
    result = shardplan.render(EXAMPLE, format=fmt, **paths)
    want, placeholders = result.script, "".join(f"{line}\n" for line in result.placeholders)
    assert bool(placeholders) == (not paths)  # every path given: none left to replace
    res = CliRunner().invoke(cli, _cli_args(str(EXAMPLE), fmt, paths))
    assert res.exit_code == 0, res.output
    assert res.stdout == want and res.stderr == placeholders
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, _cli_args(str(EXAMPLE), fmt, paths) + ["-o", str(out)])
    assert res.exit_code == 0 and res.stderr == f"{placeholders}wrote {out}\n"
    assert out.read_bytes() == want.encode()


@pytest.mark.parametrize("fmt", ["torchrun", "slurm"])
def test_cli_and_api_agree_on_a_launch_script_read_as_check_reads_it(fmt, tmp_path, monkeypatch):
    work = tmp_path / "shapes"
    shutil.copytree(SHAPES, work)
    monkeypatch.chdir(work)
    monkeypatch.setenv("PWD", str(work))
    api = shardplan.render("sourced_config.sh", format=fmt, hardware="h100-sxm-80gb")
    res = CliRunner().invoke(cli, _cli_args("sourced_config.sh", fmt, {}, hardware="h100-sxm-80gb"))
    assert res.exit_code == 0, res.output
    assert res.stdout == api.script and api.problems == []
    assert "--tensor-model-parallel-size 4" in api.script  # the script's own TP, carried over


def test_the_same_recipe_as_a_mapping_renders_the_same_bytes():
    mapping = yaml.safe_load(EXAMPLE.read_text())
    assert shardplan.render(mapping, format="slurm", **PATHS).script == shardplan.render(EXAMPLE, format="slurm", **PATHS).script


def test_placement_options_override_a_recipe_yaml_in_both(tmp_path):
    """--hardware / --nodes / --gpus-per-node replace what a recipe YAML states, as in `check` (they used to be read
    for launch scripts only and silently ignored for a recipe YAML)."""
    mapping = dict(yaml.safe_load(EXAMPLE.read_text()), nodes=16)
    want = shardplan.render(mapping).script
    assert 'NUM_NODES="${NUM_NODES:-16}"' in want and want != shardplan.render(EXAMPLE).script
    assert shardplan.render(EXAMPLE, nodes=16).script == want
    res = CliRunner().invoke(cli, ["render", str(EXAMPLE), "--nodes", "16"])
    assert res.exit_code == 0 and res.stdout == want


def _illegal_recipe(tmp_path: Path) -> Path:
    # 64 heads do not split over TP=3 (Megatron TransformerConfig), and 64 GPUs are not a multiple of 3
    data = dict(yaml.safe_load(EXAMPLE.read_text()))
    data["recipe"] = {"tp": 3}
    path = tmp_path / "illegal.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_refusal_lists_exactly_the_problems_the_api_raises(tmp_path):
    path = _illegal_recipe(tmp_path)
    with pytest.raises(RenderRefused) as refused:
        shardplan.render(path)
    problems = refused.value.problems
    assert isinstance(refused.value, ShardplanError) and len(problems) >= 2
    assert str(refused.value).startswith(f"recipe: illegal or not expressible ({len(problems)} problem(s): {problems[0]});")
    assert {p.split(":", 1)[0] for p in problems} >= {"world_divisible", "heads_divisible_by_tp"}
    res = CliRunner().invoke(cli, ["render", str(path)])
    assert res.exit_code == 1 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert lines[0] == f"error: {path}: the recipe is illegal or not expressible ({len(problems)} problem(s)); fix it or pass --force:"
    assert lines[1:] == [f"  - {p}" for p in problems]


def test_forced_render_warns_with_the_problems_the_api_returns(tmp_path):
    path = _illegal_recipe(tmp_path)
    api = shardplan.render(path, force=True)
    assert api.problems and "--tensor-model-parallel-size 3" in api.script
    res = CliRunner().invoke(cli, ["render", str(path), "--force"])
    assert res.exit_code == 0 and res.stdout == api.script
    assert res.stderr.splitlines() == [f"warning (--force): {p}" for p in api.problems] + api.placeholders


def test_unknown_hardware_is_unusable_input_unless_forced():
    with pytest.raises(ShardplanError, match="h999"):
        shardplan.render(EXAMPLE, hardware="h999")
    res = CliRunner().invoke(cli, ["render", str(EXAMPLE), "--hardware", "h999"])
    assert res.exit_code == 2 and res.stderr.startswith("error: ") and "h999" in res.stderr and res.stderr.count("\n") == 1
    forced = shardplan.render(EXAMPLE, hardware="h999", force=True)
    assert len(forced.problems) == 1 and forced.problems[0].startswith("not checked: ") and "h999" in forced.problems[0]
    res = CliRunner().invoke(cli, ["render", str(EXAMPLE), "--hardware", "h999", "--force"])
    assert res.exit_code == 0 and res.stdout == forced.script
    assert res.stderr.splitlines() == [f"warning (--force): {forced.problems[0]}"] + forced.placeholders
