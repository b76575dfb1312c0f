"""A dense model reads no MoE option: `solve --moe-dispatcher flex` (or --ep-comm-overlap, --etp) on Llama answered as
if the pin had been followed. It still answers (the pins change nothing there), and says which pins it did not apply
and why, in the table, the JSON and, for csv / markdown, on stderr."""
from __future__ import annotations

import json

from click.testing import CliRunner

from constraints.models.load import load_model
from shardplan.cli.main import cli
from solver.workflow import inapplicable_pins

ARGS = ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8",
        "--seq-length", "4096", "--global-batch-size", "64", "--top", "1", "--proposer", "none"]


def test_moe_pins_on_a_dense_model_are_named_as_not_applied():
    res = CliRunner().invoke(cli, ARGS + ["--moe-dispatcher", "flex", "--no-ep-comm-overlap", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["ignored_pins"] == [
        "--moe-dispatcher flex: not applied: Llama-3.1-8B has no MoE layers",
        "--no-ep-comm-overlap: not applied: Llama-3.1-8B has no MoE layers"]
    table = CliRunner().invoke(cli, ARGS + ["--ep-comm-overlap"])
    assert "note: --ep-comm-overlap: not applied: Llama-3.1-8B has no MoE layers" in table.stdout
    csv = CliRunner().invoke(cli, ARGS + ["--etp", "2", "--format", "csv"])
    assert csv.exit_code == 0 and "note: --etp 2: not applied" in csv.stderr and "note:" not in csv.stdout


def test_an_moe_model_reads_them_and_a_dense_solve_without_them_says_nothing():
    assert inapplicable_pins(load_model("Qwen3-30B-A3B"), {"moe_dispatcher": ["flex"], "etp": [1]}) == []
    res = CliRunner().invoke(cli, ARGS + ["--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["ignored_pins"] == []
