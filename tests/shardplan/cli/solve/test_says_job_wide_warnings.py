"""`solve` says once the warnings that `check` gives every script of the job: the rules that read no recipe field
(constraints.rules.registry.recipe_free_violations). An NVFP4 job needs Transformer Engine >= 2.7 (Megatron-LM validate_args),
which `check` said on each rendered script and `solve` never said."""
from __future__ import annotations

import json

from click.testing import CliRunner

from constraints.models.load import load_model
from constraints.rules.registry import RuleInput, recipe_free_violations
from constraints.spec import JobSpec, Precision, Recipe
from hardware.profile import load_profile
from shardplan.cli.main import cli

ARGS = ["solve", "--model", "Llama-3.1-8B", "--hardware", "b200", "--nodes", "1", "--gpus-per-node", "8",
        "--seq-length", "4096", "--global-batch-size", "64", "--top", "1", "--proposer", "none"]


def test_nvfp4_solve_carries_the_transformer_engine_warning():
    res = CliRunner().invoke(cli, ARGS + ["--precision", "nvfp4", "--json"])
    assert res.exit_code == 0, res.output
    warnings = json.loads(res.stdout)["job_warnings"]
    assert len(warnings) == 1 and warnings[0].startswith("fp4_transformer_engine: --fp4-format needs Transformer Engine >= 2.7")
    table = CliRunner().invoke(cli, ARGS + ["--precision", "nvfp4"])
    assert "warning: fp4_transformer_engine" in table.stdout


def test_a_bf16_solve_has_none():
    res = CliRunner().invoke(cli, ARGS + ["--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["job_warnings"] == []


def test_recipe_free_rules_judge_the_job_alone():
    """The same verdicts whatever the recipe: TP 8 and TP 1 give the same list."""
    model, b200 = load_model("Llama-3.1-8B"), load_profile("b200")
    job = JobSpec(seq_length=4096, global_batch_size=64, precision=Precision.nvfp4)
    one = recipe_free_violations(RuleInput(model, job, Recipe(), 8, b200))
    eight = recipe_free_violations(RuleInput(model, job, Recipe(tp=8), 8, b200))
    assert [v.rule for v in one] == [v.rule for v in eight] == ["fp4_transformer_engine"]


def test_csv_and_markdown_say_it_on_stderr():
    for fmt in ("csv", "markdown"):
        res = CliRunner().invoke(cli, ARGS + ["--precision", "nvfp4", "--format", fmt])
        assert res.exit_code == 0 and "warning: fp4_transformer_engine" in res.stderr


def test_a_job_the_part_refuses_says_the_refusal_without_the_warnings():
    """NVFP4 on H100: the rule nvfp4_hardware rejects every recipe. The Transformer Engine version warning, which is
    about how an NVFP4 run would go, stood above the refusal; now the refusal is said alone."""
    h100 = [a if a != "b200" else "h100-sxm-80gb" for a in ARGS]
    res = CliRunner().invoke(cli, h100 + ["--precision", "nvfp4", "--json"])
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert data["job_warnings"] == []
    assert "nvfp4_hardware" in json.dumps(data["explanation"])
    table = CliRunner().invoke(cli, h100 + ["--precision", "nvfp4"])
    assert "fp4_transformer_engine" not in table.stdout and "rule nvfp4_hardware" in table.stdout
