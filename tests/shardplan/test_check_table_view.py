"""`check --format table` draws its lists with rich (formats.to_table, as solve does) and still shows everything it
showed as plain lines: verdict, each violation and warning with its fix, each memory term in exact bytes, each part
of the projected step, and `--suggest`'s changed fields. The other formats are unchanged."""
from __future__ import annotations

import json

from click.testing import CliRunner

import shardplan
from shardplan.check_text import format_check
from shardplan.cli.main import check_row, cli
from shardplan.formats import to_csv, to_markdown
from tests.constraints.models.test_hf_config_reading import GEMMA2_9B
from tests.helpers.builders import LLAMA8B_MBS3, REPO

EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"
WIDE = 1000  # no cell folds at this width, so a whole message stands on one line


def _row(text: str, *cells: str) -> list[str]:
    """The table lines whose cells (split on runs of two or more spaces) start with `cells`."""
    import re

    return [line for line in text.splitlines() if re.split(r" {2,}", line.strip())[:len(cells)] == list(cells)]


def test_legal_recipe_shows_every_memory_term_and_time_part_in_a_table():
    result = shardplan.check(EXAMPLE)
    text = format_check(result, width=WIDE)
    data = result.to_json()
    assert "verdict: LEGAL, FITS" in text
    mem = data["memory"]
    assert f"peak {mem['peak_bytes'] / 2**30:.2f} GiB of {mem['usable_bytes'] / 2**30:.2f} GiB usable" in text
    assert _row(text, "memory term", "GiB", "bytes")
    shown = [name for name, value in mem["terms"].items() if value]
    assert len(shown) >= 6
    for name in shown:
        value = mem["terms"][name]
        assert len(_row(text, name, f"{value / 2**30:.2f}", f"{value:,}")) == 1, name
    proj = data["projection"]
    assert f"projection: {proj['iteration_time_s']:.3f} s/iteration, {proj['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU" in text
    for part, seconds in proj["breakdown"].items():
        assert len(_row(text, part, f"{seconds:.3f}")) == 1, part


def test_illegal_recipe_lists_each_violation_with_its_fix(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(EXAMPLE.read_text().replace("tp: 8", "tp: 3"))
    result = shardplan.check(path)
    text = format_check(result, width=WIDE)
    assert "verdict: ILLEGAL" in text and _row(text, "kind", "rule", "what", "fix")
    assert len(result.violations) >= 2
    for v in result.violations:
        assert _row(text, "violation", v.rule, v.message, v.fix), v.rule


def test_warnings_are_rows_of_their_own(tmp_path):
    config = tmp_path / "gemma-2-9b.json"
    config.write_text(json.dumps(GEMMA2_9B))
    result = shardplan.check({"model": str(config), "hardware": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8,
                              "job": {"seq_length": 4096, "global_batch_size": 64}, "recipe": {"tp": 2}})
    text = format_check(result, width=WIDE)
    assert len(result.warnings) == 5
    for w in result.warnings:
        assert _row(text, "warning", w.rule, w.message, w.fix), w.message


def test_suggestion_is_a_table_of_changed_fields(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(LLAMA8B_MBS3)
    result = shardplan.check(path, suggest=True)
    text = format_check(result, width=WIDE)
    assert _row(text, "field", "Megatron flag", "now", "suggested")
    rows = _row(text, "mbs", "--micro-batch-size", "3")
    assert len(rows) == 1 and int(rows[0].split()[-1]) == result.suggestion["changes"]["mbs"]["to"]


def test_a_narrow_terminal_folds_text_but_never_a_number():
    result = shardplan.check(EXAMPLE)
    text = format_check(result, width=40)
    for value in result.memory.terms.values():
        if value:
            assert f"{value:,}" in text


def test_cli_table_is_the_text_view_and_other_formats_are_the_flat_row():
    runner = CliRunner()
    result = shardplan.check(EXAMPLE)
    table = runner.invoke(cli, ["check", str(EXAMPLE)])
    assert table.exit_code == 0 and table.stdout == format_check(result) + "\n"
    row = check_row(result.to_json())
    from shardplan.cli.main import CHECK_COLUMNS

    assert runner.invoke(cli, ["check", str(EXAMPLE), "--format", "csv"]).stdout == to_csv([row], CHECK_COLUMNS) + "\n"
    assert runner.invoke(cli, ["check", str(EXAMPLE), "--format", "markdown"]).stdout == to_markdown([row], CHECK_COLUMNS) + "\n"
    assert json.loads(runner.invoke(cli, ["check", str(EXAMPLE), "--json"]).stdout) == result.to_json()
