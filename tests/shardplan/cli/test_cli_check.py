"""`shardplan check` through the real entry point: verdicts, exit codes, one-line errors."""
import json
import subprocess
import sys

import pytest

from tests.helpers.builders import REPO

EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"


def run(*args, cwd=None):
    p = subprocess.run([sys.executable, "-m", "shardplan.cli.main", *args], capture_output=True, text=True, cwd=cwd or REPO)
    return p.returncode, p.stdout, p.stderr


def write(tmp_path, text, name="r.yaml"):
    f = tmp_path / name
    f.write_text(text)
    return str(f)


BASE = EXAMPLE.read_text()


def test_example_is_legal_and_fits_with_projection():
    rc, out, err = run("check", str(EXAMPLE), "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["legal"] and data["fits"] and data["violations"] == []
    mem = data["memory"]
    assert mem["peak_bytes"] == sum(mem["terms"].values()) and mem["capacity_bytes"] == 85_520_809_984
    assert data["projection"]["tokens_per_s_per_gpu"] > 0


def test_table_view_shows_terms():
    rc, out, _ = run("check", str(EXAMPLE))
    assert rc == 0 and "LEGAL" in out and "optimizer_state" in out


def test_oom_recipe_exits_1_and_names_the_term(tmp_path):
    text = BASE.replace("tp: 8", "tp: 1").replace("pp: 4", "pp: 1").replace("vpp: 5", "vpp: 1").replace("schedule: interleaved", "schedule: 1f1b")
    rc, out, _ = run("check", write(tmp_path, text), "--json", "--no-projection")
    data = json.loads(out)
    assert rc == 1 and data["legal"] and not data["fits"]
    assert data["violations"][0]["rule"] == "memory_fits"


def test_illegal_recipe_lists_rule_and_fix(tmp_path):
    rc, out, _ = run("check", write(tmp_path, BASE.replace("tp: 8", "tp: 3")), "--json")
    data = json.loads(out)
    assert rc == 1 and not data["legal"]
    rules = {v["rule"] for v in data["violations"]}
    assert {"world_divisible", "heads_divisible_by_tp"} & rules
    assert all(v["fix"] for v in data["violations"])


@pytest.mark.parametrize("mutation,needle", [
    (lambda t: t.replace("tp: 8", "tp: [8"), "not valid YAML"),
    (lambda t: t.replace("Llama-3.1-70B", "Llama-9"), "unknown model"),
    (lambda t: t.replace("h100-sxm-80gb", "h999"), "unknown profile"),
    (lambda t: t.replace("tp: 8", "tp: eight"), "recipe.tp"),
    (lambda t: t.replace("nodes: 8", "nodes: 0"), "nodes: Input should be greater than 0"),
    (lambda t: t.replace("global_batch_size: 128", "global_batch_size: 1000000000000000000"), "global_batch_size"),
    (lambda t: t.replace("  tp: 8", "  tp: 8\n  bogus: 1"), "bogus"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, mutation, needle):
    rc, out, err = run("check", write(tmp_path, mutation(BASE)))
    assert rc == 2, (out, err)
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_degrees_not_multiplying_to_world_is_a_violation(tmp_path):
    rc, out, _ = run("check", write(tmp_path, BASE.replace("nodes: 8", "nodes: 3")), "--json")
    assert rc == 1 and "world_divisible" in {v["rule"] for v in json.loads(out)["violations"]}


def test_missing_file_is_exit_2():
    rc, _, err = run("check", "/nonexistent/recipe.yaml")
    assert rc == 2 and "cannot read" in err


def test_models_json_lists_exact_counts():
    rc, out, _ = run("models", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rc == 0 and rows["DeepSeek-V3"]["total_params"] == 671_026_404_352 and rows["DeepSeek-V3"]["active_params"] == 37_552_282_624


def test_every_command_help_has_an_example():
    from click.testing import CliRunner

    from shardplan.cli.main import cli
    for name in cli.commands:
        res = CliRunner().invoke(cli, [name, "--help"])
        assert res.exit_code == 0 and "Example" in res.output, name
