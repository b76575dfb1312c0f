"""--format table|json|csv|markdown on models, hardware, check and solve (--json an alias), shell completion of model
and hardware names, and progress kept off stdout."""
from __future__ import annotations

import csv
import io
import json

from click.testing import CliRunner

from constraints.models.load import bundled_models
from hardware.profile import available_profiles
from shardplan import progress
from shardplan.cli.completion import complete_hardware, complete_model
from shardplan.cli.main import cli
from shardplan.formats import to_table
from tests.helpers.builders import REPO

EXAMPLE = str(REPO / "constraints" / "examples" / "llama3-70b-h100.yaml")
SOLVE = ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--seq-length", "4096",
         "--global-batch-size", "32", "--top", "2", "--tp", "1..2", "--proposer", "none"]


def _run(*args):
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.stdout


def test_models_csv_has_a_row_per_bundled_model_with_exact_counts():
    code, out = _run("models", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["model"] for r in rows] == bundled_models()
    row = {r["model"]: r for r in rows}["Llama-3.1-8B"]
    # plain digits, as a spreadsheet reads them (the table view keeps the separators)
    assert row["total params"] == "8030261248" and row["kind"] == "dense"


def test_models_lists_hybrid_models_as_hybrid_with_their_layer_kinds():
    """Nemotron-H-8B's pattern holds 24 Mamba-2, 4 attention and 24 MLP layers (HF hybrid_override_pattern); Nano adds
    128-expert top-6 MoE layers in place of the MLPs."""
    _, out = _run("models", "--format", "csv")
    row = {r["model"]: r for r in csv.DictReader(io.StringIO(out))}
    assert row["Nemotron-H-8B-Base-8K"]["kind"] == "hybrid Mamba-2: 24 M, 4 *, 24 -"
    assert row["Nemotron-3-Nano-30B-A3B"]["kind"] == "hybrid Mamba-2 + MoE 128x top-6: 23 M, 6 *, 23 E"
    rows = {r["name"]: r for r in json.loads(_run("models", "--json")[1])}
    assert rows["Nemotron-H-8B-Base-8K"]["hybrid_layer_pattern"].count("*") == 4 and rows["Llama-3.1-8B"]["hybrid_layer_pattern"] is None


def test_json_and_its_alias_agree():
    assert _run("models", "--json") == _run("models", "--format", "json")
    assert [h["name"] for h in json.loads(_run("hardware", "--format", "json")[1])] == available_profiles()


def test_markdown_is_a_pipe_table():
    code, out = _run("hardware", "--format", "markdown")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("| name | bf16 TFLOP/s") and lines[1].startswith("|---|")
    assert len(lines) == 2 + len(available_profiles()) and all(line.count("|") == lines[0].count("|") for line in lines)


def test_check_csv_and_markdown_are_one_summary_row():
    code, out = _run("check", EXAMPLE, "--format", "csv")
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and row["model"] == "Llama-3.1-70B" and row["legal"] == "True" and row["GPUs"] == "64"
    assert float(row["peak GiB"]) > 10


def test_solve_csv_rows_are_the_json_recipes():
    code, out = _run(*SOLVE, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    data = json.loads(_run(*SOLVE, "--json")[1])
    assert code == 0 and len(rows) == len(data["recipes"]) == 2
    assert [int(r["TP"]) for r in rows] == [r["parallel"]["tp"] for r in data["recipes"]]


def test_table_fits_a_narrow_terminal_and_keeps_long_names_whole():
    long_name = "a-very-long-hardware-profile-name-from-a-user-yaml-file"
    rows = [{"name": long_name, "v": 1.5}, {"name": "b", "v": 22.25}]
    text = to_table(rows, [("name", "name", "{}"), ("value", "v", "{:.2f}")], width=40)
    assert max(map(len, text.splitlines())) <= 40
    assert long_name in "".join(line.split()[0] if line.split() else "" for line in text.splitlines())


def test_completion_names_models_and_hardware():
    assert [c.value for c in complete_model(None, None, "llama-3.1")] == ["Llama-3.1-405B", "Llama-3.1-70B", "Llama-3.1-8B"]
    assert [c.value for c in complete_hardware(None, None, "h")] == [n for n in available_profiles() if n.startswith("h")]
    assert [c.value for c in complete_hardware(None, None, "H1")] == ["h100-sxm-80gb"]
    assert complete_model(None, None, "./my")[0].type == "file"


def test_completion_through_clicks_protocol(monkeypatch):
    """What the shell sees: `_SHARDPLAN_COMPLETE=bash_complete` with the words typed so far."""
    from shardplan.cli.main import cli as group

    monkeypatch.setenv("_SHARDPLAN_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "shardplan solve --hardware gb")
    monkeypatch.setenv("COMP_CWORD", "3")
    res = CliRunner().invoke(group, [], prog_name="shardplan", complete_var="_SHARDPLAN_COMPLETE")
    assert res.stdout.split() == ["plain,gb200-nvl72", "plain,gb300-nvl72"]


def test_progress_goes_to_stderr_only_and_json_stays_clean():
    progress.configure(True)
    try:
        with progress.step("slow step", delay_s=0.0):
            import time

            time.sleep(0.05)
        code, out = _run(*SOLVE, "--format", "json")
    finally:
        progress.configure(None)
    assert code == 0 and json.loads(out)["recipes"]


def test_a_table_wider_than_the_terminal_folds_text_and_never_crops_a_number():
    rows = [{"name": "distributed_optimizer", "n": 123456789, "x": 12345.25}]
    text = to_table(rows, [("name", "name", "{}"), ("big number", "n", "{}"), ("free GiB", "x", "{:.2f}")], width=20)
    assert "123456789" in text and "12345.25" in text and "GiB" in text and "…" not in text
    assert "distributed_optimizer" in "".join(line.split()[0] for line in text.splitlines()[1:] if line.split())


def test_check_and_solve_csv_write_mfu_and_throughput_alike():
    """One column, one unit: MFU as a fraction with three decimals and tokens/s/GPU as a plain integer in both commands'
    csv (check wrote 40.7% and 1,234 where solve wrote 0.407 and 1234)."""
    _, checked = _run("check", EXAMPLE, "--format", "csv")
    _, solved = _run(*SOLVE, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(checked))) + list(csv.DictReader(io.StringIO(solved)))
    assert len(rows) == 3
    for row in rows:
        mfu, tps = row["MFU"], row["tok/s/GPU"]
        assert mfu.startswith("0.") and len(mfu.split(".")[1]) == 3 and 0 < float(mfu) < 1, row
        assert tps.isdigit(), row


def test_the_hardware_is_named_as_the_profile_names_itself(tmp_path):
    """A bundled profile typed in capitals reads as its own name; a user's YAML shows its file too, since it may reuse a
    bundled name with other numbers."""
    _, solved = _run(*[a if a != "h100-sxm-80gb" else "H100-SXM-80GB" for a in SOLVE])
    assert solved.startswith("Llama-3.1-8B (8.03 B parameters) on 8 x h100-sxm-80gb, ")
    own = tmp_path / "my-h100.yaml"
    own.write_text((REPO / "hardware" / "profiles" / "h100-sxm-80gb.yaml").read_text())
    _, checked = _run("check", EXAMPLE, "--hardware", str(own))
    assert checked.splitlines()[0].startswith(f"Llama-3.1-70B (70.6 B parameters) on 64 x h100-sxm-80gb ({own}) (8 nodes x 8)")


def test_no_recompute_with_a_recompute_pin_is_refused_in_either_order():
    for args in (("--recompute", "full", "--no-recompute"), ("--no-recompute", "--recompute", "selective")):
        res = CliRunner().invoke(cli, [*SOLVE, *args])
        assert res.exit_code == 2 and "--no-recompute: contradicts --recompute" in res.stderr


def test_nothing_fits_in_csv_says_why_on_stderr():
    res = CliRunner().invoke(cli, ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1",
                                   "--seq-length", "4096", "--global-batch-size", "32", "--tp", "3", "--proposer", "none",
                                   "--format", "csv"])
    assert res.exit_code == 1 and res.stdout.count("\n") == 1  # the header alone
    assert res.stderr.startswith("nothing fits: --tp") and "32 attention heads are not divisible by TP=3" in res.stderr
