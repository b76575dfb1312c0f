"""The public API (`import shardplan`): the README's example runs as printed, results are the objects the CLI dumps,
their JSON Schemas describe that JSON, unusable input is ShardplanError (exit 2) and a bug is an internal error (exit 3)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

import shardplan
from boundary.errors import InputRefused
from constraints.case import CaseError
from constraints.megatron.errors import MegatronArgsError
from constraints.models.load import ModelError
from constraints.read import InputError
from constraints.script.lex import LaunchScriptError
from hardware.profile import ProfileError
from shardplan.cli.main import cli, main
from shardplan.results import CheckResult, SolveResult
from solver.space import SpaceError
from tests.helpers.builders import REPO

EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"


EMPTY_FOLDER_MARK = "<!-- docs-test: run from an empty folder -->"  # tests/test_docs.py's


def _api_example(doc: str) -> tuple[str, str, bool]:
    """(code, what it prints, whether it is marked to run from an empty folder) of a document's API example."""
    text = (REPO / doc).read_text()
    m = re.search(r"((?:<!--[^\n]*-->\n)*)<!-- api-example[^>]*-->\n```python\n(.*?)```\nprints\n```\n(.*?)```", text, re.S)
    assert m, f"{doc} lost its API example"
    return m.group(2), m.group(3), EMPTY_FOLDER_MARK in m.group(1)


@pytest.mark.parametrize("doc", ["README.md", "docs/api.md"])
def test_the_api_example_runs_and_prints_what_the_doc_shows(doc, tmp_path):
    """Runs the block in a fresh interpreter, from an empty folder when it is marked so (then the checkout is only on
    PYTHONPATH: the example may open no file by a path relative to the repository); the printed lines match the doc's
    with digits masked (a calibration refit may move the figures, never the shape or the wording)."""
    code, shown, empty_folder = _api_example(doc)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path if empty_folder else REPO,
                          env=env)
    assert done.returncode == 0, done.stderr
    mask = lambda s: re.sub(r"\d", "#", s).strip().splitlines()  # noqa: E731
    assert mask(done.stdout) == mask(shown)


def test_the_api_page_example_runs_from_an_empty_folder():
    assert _api_example("docs/api.md")[2], "docs/api.md's example must show that no repository path is needed"


def test_solve_result_is_what_solve_json_prints():
    kw = dict(seq_length=4096, global_batch_size=32, top=3, tp=(1, 4), proposer="none")
    result = shardplan.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, **kw)
    assert isinstance(result, SolveResult) and result.ok and len(result.recipes) == 3 and result.proven_optimal
    cli_json = json.loads(CliRunner().invoke(cli, ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1",
                                                   "--seq-length", "4096", "--global-batch-size", "32", "--top", "3", "--tp", "1..4",
                                                   "--proposer", "none", "--format", "json"]).stdout)
    ours = result.to_json()
    assert ours.keys() == cli_json.keys() and "explanation" not in ours and "fewest_gpus" not in ours
    assert [r["parallel"] for r in ours["recipes"]] == [r["parallel"] for r in cli_json["recipes"]]
    assert SolveResult.model_validate(ours).to_json() == ours


def test_check_result_matches_check_json_and_round_trips():
    result = shardplan.check(EXAMPLE)
    assert isinstance(result, CheckResult) and result.ok and result.case.model.name == "Llama-3.1-70B"
    cli_json = json.loads(CliRunner().invoke(cli, ["check", str(EXAMPLE), "--json"]).stdout)
    assert result.to_json() == cli_json
    assert CheckResult.model_validate(cli_json).to_json() == cli_json
    # the same recipe as a mapping
    import yaml

    assert shardplan.check(yaml.safe_load(EXAMPLE.read_text())).to_json() == cli_json


def test_schemas_forbid_unknown_keys_and_name_every_json_key():
    schemas = shardplan.schemas()
    assert set(schemas) == {"check", "solve", "render", "models", "hardware", "sweep"}
    for name, schema in schemas.items():
        item = schema["items"] if name in ("models", "hardware") else schema
        assert item["additionalProperties"] is False, name
    # `models --json` / `hardware --json` print a list: their schemas are arrays of the item's object
    for name in ("models", "hardware"):
        printed = json.loads(CliRunner().invoke(cli, [name, "--json"]).stdout)
        assert schemas[name]["type"] == "array" and isinstance(printed, list) and printed
        assert all(set(item) <= set(schemas[name]["items"]["properties"]) for item in printed), name
    data = shardplan.check(EXAMPLE).to_json()
    assert set(data) <= set(schemas["check"]["properties"])
    out = CliRunner().invoke(cli, ["schema", "solve"])
    assert out.exit_code == 0 and json.loads(out.stdout)["title"] == "SolveResult"
    with pytest.raises(ValidationError, match="surprise"):
        CheckResult.model_validate({**data, "surprise": 1})


def test_render_returns_the_script():
    res = shardplan.render(EXAMPLE, format="slurm")
    assert res.format == "slurm" and res.script.startswith("#!") and "pretrain_gpt.py" in res.script and res.problems == []


@pytest.mark.parametrize("cls", [CaseError, MegatronArgsError, ModelError, LaunchScriptError, ProfileError, InputError, SpaceError,
                                 InputRefused])
def test_input_errors_are_shardplan_errors(cls):
    assert issubclass(cls, shardplan.ShardplanError)


def test_unusable_input_raises_shardplan_error_in_one_line():
    with pytest.raises(shardplan.ArgumentError, match=r"^global_batch_size: input should be greater than 0 \(got 0\); give "):
        shardplan.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, seq_length=4096, global_batch_size=0)
    with pytest.raises(shardplan.ShardplanError, match=r"^--tp 'x': give N or LO..HI"):
        shardplan.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, seq_length=4096, global_batch_size=8, tp="x")
    with pytest.raises(shardplan.ShardplanError, match="unknown hardware profile|hardware"):
        shardplan.check(EXAMPLE, hardware="h999")


def test_a_bug_is_an_internal_error_with_exit_3_not_unusable_input(monkeypatch, capsys):
    def broken():
        raise KeyError("oops")

    monkeypatch.setattr(shardplan.api, "models", broken)
    with pytest.raises(SystemExit) as exit_info:
        main(["models"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 3
    assert err.startswith("internal error: KeyError: 'oops' at test_api.py:") and "not your input" in err


def test_a_plain_value_error_inside_the_library_is_internal_too(monkeypatch, capsys):
    """A ValueError that is not a ShardplanError is a bug (before: reported as unusable input, exit 2)."""
    import shardplan.api

    def broken(*args, **kwargs):
        raise ValueError("an internal invariant")

    monkeypatch.setattr(shardplan.api, "check_and_project", broken)
    with pytest.raises(SystemExit) as exit_info:
        main(["check", str(EXAMPLE)])
    assert exit_info.value.code == 3 and "internal error: ValueError" in capsys.readouterr().err
