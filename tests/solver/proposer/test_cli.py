"""The proposer's click options, its config errors, and the text / JSON report."""
from __future__ import annotations

import json

import click
from click.testing import CliRunner

from shardplan.cli.proposer_options import config_from_options, format_hint_report, proposer_options
from solver.proposer.loop import ProposerConfig, solve_with_proposer
from tests.helpers.proposer import TINY, assert_all_legal, tables_for


@click.command()
@proposer_options
def demo(**kwargs):
    """Prints the config the options make."""
    click.echo(config_from_options(**kwargs).model_dump_json())


def test_defaults_are_offline_rules():
    out = CliRunner().invoke(demo, [])
    assert out.exit_code == 0, out.output
    cfg = json.loads(out.output)
    assert cfg["kind"] == "rules" and cfg["max_rounds"] == 3 and cfg["api_key_env"] == "OPENAI_API_KEY"


def test_llm_options_make_a_config():
    out = CliRunner().invoke(demo, ["--proposer", "llm", "--llm-base-url", "http://localhost:8000/v1", "--llm-model", "qwen",
                                    "--llm-api-key-env", "MY_KEY", "--llm-timeout", "7.5", "--proposer-rounds", "5"])
    assert out.exit_code == 0, out.output
    cfg = json.loads(out.output)
    assert (cfg["kind"], cfg["base_url"], cfg["model"], cfg["api_key_env"], cfg["timeout_s"], cfg["max_rounds"]) == \
        ("llm", "http://localhost:8000/v1", "qwen", "MY_KEY", 7.5, 5)


def test_llm_without_url_or_model_is_a_one_line_usage_error():
    out = CliRunner().invoke(demo, ["--proposer", "llm", "--llm-model", "qwen"])
    assert out.exit_code == 2
    assert out.output == "error: --proposer llm: also give --llm-base-url URL (or use --proposer rules, offline)\n"
    out = CliRunner().invoke(demo, ["--proposer", "llm", "--llm-base-url", "localhost:8000", "--llm-model", "q"])
    assert out.exit_code == 2 and "give an http(s) URL" in out.output


def test_report_as_text_and_json():
    tables = tables_for(pins=TINY)
    result, report = solve_with_proposer(tables, k=2, config=ProposerConfig(subsearch_k=1))
    assert_all_legal(tables, result)
    text = format_hint_report(report)
    assert text.startswith("proposer: rules") and "[rule:sp_with_tp] pin tp=2|4, sp=True: searched" in text
    assert "suggest [fp8_where_supported]" in text and "hints changed the top recipe: no" in text
    data = json.loads(json.dumps(report.model_dump(mode="json")))
    assert data["kind"] == "rules" and data["reverified"] == 2 and data["dropped_by_check"] == []
    assert {u["hint"]["source"] for u in data["used"]} >= {"rule:sp_with_tp", "rule:selective_before_full"}
    assert format_hint_report(solve_with_proposer(tables, k=2, config=ProposerConfig(kind="none"))[1]) == "proposer: none"
