"""`--software` / `software:` through the CLI and the API: every result says which generation it priced and where
that came from; a 2021 generation prices the same recipe slower; a calibration is tied to its software; bad values
are one `error:` line. The log evidence is tests/data/logs/megatron_format_gpt175b_tp8_pp16_restarted.log (see
SOURCES.md there) with a `pip list` row for Megatron-Core added to its head, as such logs print it."""
from __future__ import annotations

import json

import pytest

from boundary.errors import ShardplanError
from shardplan import api
from shardplan.calibrate import calibrate
from tests.helpers.builders import TESTS, run_cli

LOG = TESTS / "data" / "logs" / "megatron_format_gpt175b_tp8_pp16_restarted.log"
RECIPE = {"model": "Llama-3.1-8B", "hardware": "a100-sxm-80gb", "nodes": 1, "gpus_per_node": 8,
          "job": {"seq_length": 2048, "global_batch_size": 64, "precision": "fp16"}, "recipe": {"tp": 8, "mbs": 1}}


@pytest.fixture(scope="module")
def log_with_core(tmp_path_factory):
    """The log with `megatron-core 0.12.0` printed in its head, as `pip list` does."""
    text = LOG.read_text().replace("PyTorch Version 2.2.0a0+81ea7a4\n", "PyTorch Version 2.2.0a0+81ea7a4\nmegatron-core    0.12.0\n", 1)
    path = tmp_path_factory.mktemp("log") / "run.log"
    path.write_text(text)
    return path


def _recipe_file(tmp_path, **top):
    path = tmp_path / "recipe.yaml"
    path.write_text(json.dumps({**RECIPE, **top}))  # JSON is YAML
    return path


def test_the_cli_says_the_default_is_the_newest_generation(tmp_path):
    code, out, _ = run_cli("check", str(_recipe_file(tmp_path)), "--json")
    assert code == 0
    software = json.loads(out)["software"]
    assert software["value"] == "megatron-bridge:26.08" and software["source"] == "default: the newest generation"
    code, out, _ = run_cli("check", str(_recipe_file(tmp_path)))
    assert "software: megatron-bridge:26.08 (default: the newest generation; 2026-08)" in out


def test_the_cli_prices_a_2021_generation_slower_and_says_what_it_set(tmp_path):
    path = str(_recipe_file(tmp_path))
    code, out, _ = run_cli("check", path, "--software", "megatron-lm:2021-04", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["software"]["value"] == "megatron-lm:2021-04" and data["software"]["source"] == "--software"
    assert any("Transformer Engine" in note for note in data["software"]["notes"])
    assert "transformer_engine" in data["software"]["missing"] and "flash_attention" in data["software"]["missing"]
    _, newest_out, _ = run_cli("check", path, "--json")
    assert data["projection"]["tokens_per_s_per_gpu"] < json.loads(newest_out)["projection"]["tokens_per_s_per_gpu"]


def test_a_recipe_file_states_its_software_and_the_option_wins_with_a_warning(tmp_path):
    path = str(_recipe_file(tmp_path, software="nemo:24.07"))
    result = api.check(path)
    assert result.software["value"] == "nemo:24.07" and result.software["source"] == "recipe file"
    overridden = api.check(path, software="megatron-bridge:26.08")
    assert overridden.software["value"] == "megatron-bridge:26.08"
    assert any(w.rule == "software_differs" for w in overridden.warnings)


@pytest.mark.parametrize("value, words", [("megatron-lm", "STACK:VERSION"), ("foo:1", "unknown stack"),
                                          ("torchtitan:2025-06", "torch-native")])
def test_a_bad_software_is_one_error_line(tmp_path, value, words):
    code, out, err = run_cli("check", str(_recipe_file(tmp_path)), "--software", value)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and words in err


def test_a_stated_knob_the_generation_lacks_is_refused(tmp_path):
    path = str(_recipe_file(tmp_path, recipe={"tp": 2, "mbs": 1, "sequence_parallel": True}))
    code, _, err = run_cli("check", path, "--software", "megatron-lm:2021-04")
    assert code == 2 and "sequence parallelism" in err and "since 2022-04" in err


def test_the_api_takes_software_and_refuses_a_wrong_type():
    result = api.check(RECIPE, software="megatron-core:0.8.0")
    assert result.software == {"value": "megatron-core:0.8.0", "source": "--software", "month": "2024-08",
                               "missing": ["cuda_graphs", "megatron_fsdp", "deepep", "ep_comm_overlap", "hybridep"], "notes": []}
    with pytest.raises(ShardplanError, match="software"):
        api.check(RECIPE, software=2021)


def test_a_log_states_its_software(log_with_core):
    result = api.check(str(log_with_core), hardware="h100-sxm-80gb")
    assert result.software["value"] == "megatron-core:0.12.0" and result.software["source"] == "log versions"


def test_a_calibration_is_tied_to_its_software(log_with_core, tmp_path):
    cal = tmp_path / "h100.json"
    calibrate([str(log_with_core)], "h100-sxm-80gb", output=str(cal))
    h100 = {**RECIPE, "hardware": "h100-sxm-80gb", "job": {**RECIPE["job"], "precision": "bf16"}}
    assert api.check(h100, calibration=str(cal)).software["source"] == "calibration file"
    with pytest.raises(ShardplanError) as exc:
        api.check(h100, calibration=str(cal), software="megatron-bridge:26.08")
    assert "fitted on logs of megatron-core:0.12.0, not megatron-bridge:26.08" in str(exc.value)


def test_solve_keeps_to_the_generation_and_refuses_one_it_cannot_search():
    result = api.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, seq_length=4096, global_batch_size=32, top=1,
                       software="nemo:24.07", method="exhaustive", proposer="none")
    assert result.software["value"] == "nemo:24.07" and result.recipes
    code, _, err = run_cli("solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1",
                           "--seq-length", "4096", "--global-batch-size", "32", "--software", "megatron-lm:2021-04")
    assert code == 2 and "check a recipe with --software instead" in err and err.count("\n") == 1


def test_sweep_and_report_say_their_software(tmp_path):
    from shardplan.report.collect import check_report
    from shardplan.sweep import sweep

    result = sweep("Llama-3.1-8B", "h100-sxm-80gb", "1", seq_length=4096, global_batch_size=16, software="nemo:24.07")
    assert result.software["value"] == "nemo:24.07"
    with pytest.raises(ShardplanError, match="check a recipe with --software"):
        sweep("Llama-3.1-8B", "h100-sxm-80gb", "1", seq_length=4096, global_batch_size=16, software="megatron-lm:2021-04")
    report = check_report(str(_recipe_file(tmp_path)), software="megatron-lm:2021-04")
    assert any(note.startswith("software: megatron-lm:2021-04 (--software; 2021-04") for note in report.notes)
