"""`solve --render DIR` with a zero-bubble schedule writes no script (pretrain_gpt.py has no flag for it, so a script
would run 1F1B, whose memory and time were never checked): it said so only in SUMMARY.md, and stderr was silent. Now
stderr and the JSON result (`rendered`) both say how many scripts were written and why each missing one is missing."""
from __future__ import annotations

import json

from click.testing import CliRunner

from shardplan.cli.main import cli

ARGS = ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8",
        "--seq-length", "4096", "--global-batch-size", "64", "--pp", "2", "--top", "2", "--proposer", "none"]


def test_a_zero_bubble_answer_is_named_on_stderr_and_in_json(tmp_path):
    out = tmp_path / "scripts"
    res = CliRunner().invoke(cli, ARGS + ["--schedule", "zb-h1", "--render", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rendered = json.loads(res.stdout)["rendered"]
    assert rendered["scripts"] == [] and len(rendered["not_rendered"]) == 2
    assert rendered["not_rendered"][0].startswith("rank 1: schedule zb-h1 has no Megatron-LM pretrain_gpt.py flag")
    assert f"render: 0 of 2 recipe(s) written to {out}" in res.stderr
    assert "render: not written: rank 2: schedule zb-h1" in res.stderr
    assert sorted(p.name for p in out.iterdir()) == [".shardplan-render.json", "SUMMARY.md"]


def test_a_rendered_answer_lists_its_scripts(tmp_path):
    out = tmp_path / "scripts"
    res = CliRunner().invoke(cli, ARGS + ["--render", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rendered = json.loads(res.stdout)["rendered"]
    assert rendered["not_rendered"] == [] and len(rendered["scripts"]) == 2
    assert all((out / name).is_file() for name in rendered["scripts"])
    assert "not written" not in res.stderr


def test_nothing_fits_clears_an_earlier_render_and_says_so(tmp_path):
    out = tmp_path / "scripts"
    assert CliRunner().invoke(cli, ARGS + ["--render", str(out)]).exit_code == 0
    assert len(list(out.glob("*.sh"))) == 2
    res = CliRunner().invoke(cli, ARGS + ["--tp", "3", "--render", str(out), "--json"])
    assert res.exit_code == 1
    assert json.loads(res.stdout)["rendered"] == {"directory": str(out), "scripts": [], "not_rendered": [], "placeholders": []}
    assert f"render: 0 of 0 recipe(s) written to {out}" in res.stderr
    assert sorted(p.name for p in out.iterdir()) == [".shardplan-render.json", "SUMMARY.md"]  # no stale answer beside it


def test_an_empty_render_folder_is_bad_input():
    res = CliRunner().invoke(cli, ARGS + ["--render", ""])
    assert res.exit_code == 2 and "--render: empty folder name" in res.output
