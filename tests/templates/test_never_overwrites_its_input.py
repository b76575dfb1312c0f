"""`render train.sh -o train.sh` replaced the user's own launch script with the rendered one, no question asked (found
by QA, checked by md5). The CLI and the API refuse an output that is the input file (links followed)."""
from __future__ import annotations

import os
import shutil

import pytest
from click.testing import CliRunner

import shardplan
from shardplan.cli.main import cli
from tests.helpers.builders import REPO

EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"


def test_the_cli_refuses_to_render_over_its_input(tmp_path):
    source = tmp_path / "recipe.yaml"
    shutil.copy(EXAMPLE, source)
    before = source.read_bytes()
    res = CliRunner().invoke(cli, ["render", str(source), "-o", str(source)])
    assert res.exit_code == 2 and "is a file this command reads" in res.stderr
    assert source.read_bytes() == before


def test_the_api_refuses_it_through_a_link_too(tmp_path):
    source = tmp_path / "recipe.yaml"
    shutil.copy(EXAMPLE, source)
    link = tmp_path / "link.yaml"
    os.symlink(source, link)
    with pytest.raises(shardplan.ShardplanError, match=r"link.yaml is a file this command reads \(as .*recipe.yaml\)"):
        shardplan.render(str(source), output=str(link))
    assert source.read_text() == EXAMPLE.read_text()


def test_another_output_is_written(tmp_path):
    out = tmp_path / "train.sh"
    res = CliRunner().invoke(cli, ["render", str(EXAMPLE), "-o", str(out)])
    assert res.exit_code == 0 and out.read_text().startswith("#!")


def test_an_empty_output_path_says_so():
    res = CliRunner().invoke(cli, ["render", str(EXAMPLE), "-o", ""])
    assert res.exit_code == 2 and "an empty path" in res.stderr
