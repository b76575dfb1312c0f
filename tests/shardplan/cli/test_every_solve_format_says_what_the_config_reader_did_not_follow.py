"""`solve --format csv|markdown` dropped the `! model config:` notes the table prints (what the HF config reader did not
follow), so a misread model left no trace there (found by QA with a Gemma-2 config: five notes in the table, none in
csv). They now go to stderr, as the job warnings do. And the Python API took `gpus_per_node=0` as "the profile's
default" (`0 or default`), where the CLI and `check` refuse it."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import shardplan
from shardplan.cli.main import cli
from tests.helpers.builders import hf_config


def test_csv_and_markdown_say_the_model_notes_on_stderr(tmp_path):
    path = hf_config(tmp_path, model_type="unheard_of")
    args = ["solve", "--model", path, "--hardware", "h100-sxm-80gb", "--nodes", "1", "--seq-length", "4096",
            "--global-batch-size", "64", "--top", "1", "--proposer", "none"]
    table = CliRunner().invoke(cli, args)
    assert table.exit_code == 0 and "! model config: model_type 'unheard_of' is not a family" in table.stdout
    for fmt in ("csv", "markdown"):
        res = CliRunner().invoke(cli, args + ["--format", fmt])
        assert res.exit_code == 0 and "! model config: model_type 'unheard_of' is not a family" in res.stderr
        assert "model config" not in res.stdout


@pytest.mark.parametrize("call", [shardplan.solve, shardplan.sweep])
def test_the_api_refuses_zero_gpus_per_node(call):
    with pytest.raises(shardplan.ShardplanError, match="^gpus_per_node: "):  # the API names its own argument
        call("Llama-3.1-8B", "h100-sxm-80gb", nodes=1 if call is shardplan.solve else [1], gpus_per_node=0,
             seq_length=4096, global_batch_size=64)
