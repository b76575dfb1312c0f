"""A violation's fix and `check --suggest` are one search's answer, and every fix shown is legal and fits.

Found by QA (issue 31): on a PP=3 script the world_divisible fix said "PP 2" while --suggest moved PP to 1; for GPT-3
175B on 8 GPUs the fix was "PP 1", which needs ~370 GiB a GPU. The inputs are Megatron-LM's example launcher shapes
(tests/data/scripts) and bundled models, run through the CLI as a user types it.
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import yaml

from tests.helpers.builders import run_cli

SCRIPTS = Path(__file__).resolve().parents[2] / "data" / "scripts"
H100 = ("--hardware", "h100-sxm-80gb")


def _llama_pp3(tmp_path: Path) -> Path:
    """Megatron-LM's examples/llama launcher shape on 2 x 8 GPUs with PP 3 (16 % (TP 2 x PP 3 x CP 2) != 0), saving
    with an interval so that the recipe is the only thing wrong."""
    text = (SCRIPTS / "llama_fp8.sh").read_text().replace("PP_SIZE=2", "PP_SIZE=3")
    text = text.replace('--save "$CHECKPOINT_PATH"', '--save "$CHECKPOINT_PATH" --save-interval 1000')
    path = tmp_path / "train_pp3.sh"
    path.write_text(text)
    return path


def _json(*args) -> tuple[int, dict]:
    code, out, err = run_cli(*args, "--json")
    assert code in (0, 1), err
    return code, json.loads(out)


def _fix_flags(fix: str) -> list[str]:
    """The Megatron arguments of a fix 'use --a 1, --b 2 (the nearest ...)'."""
    match = re.match(r"use (.*) \(the nearest legal recipe that fits", fix)
    assert match, fix
    return [word for change in match.group(1).split(", ") for word in shlex.split(change)]


def test_the_fix_of_a_pp3_script_is_the_first_suggest_answer_and_it_checks_legal_and_fitting(tmp_path):
    script = _llama_pp3(tmp_path)
    code, plain = _json("check", str(script), *H100)
    assert code == 1 and not plain["legal"]
    _, suggested = _json("check", str(script), *H100, "--suggest")
    sug = suggested["suggestion"]
    assert sug["found"] and sug["changes"]["pp"]["from"] == 3
    by_rule = {v["rule"]: v["fix"] for v in plain["violations"]}
    first = by_rule["world_divisible"]
    assert first == {v["rule"]: v["fix"] for v in suggested["violations"]}["world_divisible"]  # --suggest changes no fix
    assert f"--pipeline-model-parallel-size {sug['changes']['pp']['to']}" in first
    # layers_split (32 layers over 3 stages) is answered by the same recipe, not by a PP of its own
    assert by_rule["layers_split"] == "the same fix as world_divisible (one recipe answers them together)"
    flags = _fix_flags(first)
    assert "drop" not in flags
    # Megatron's argparse keeps the last value of a repeated flag: appending the fix applies it
    fixed = tmp_path / "train_fixed.sh"
    fixed.write_text(script.read_text().replace("--save-interval 1000", "--save-interval 1000 " + " ".join(flags)))
    code, after = _json("check", str(fixed), *H100)
    assert code == 0 and after["legal"] and after["fits"], after["violations"]
    assert after["recipe"]["pp"] == sug["changes"]["pp"]["to"]


def test_the_text_fix_column_and_the_suggest_table_say_the_same_pp(tmp_path):
    code, out, _ = run_cli("check", str(_llama_pp3(tmp_path)), *H100, "--suggest", env={"COLUMNS": "250"})
    assert code == 1
    row = next(line for line in out.splitlines() if line.startswith("violation  world_divisible"))
    pp = next(line for line in out.splitlines() if line.split()[:3] == ["pp", "--pipeline-model-parallel-size", "3"])
    assert f"use --pipeline-model-parallel-size {pp.split()[-1]} " in row


def _gpt3(tmp_path: Path, name: str, nodes: int, **recipe) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"model": "GPT-3-175B", "hardware": "h100-sxm-80gb", "nodes": nodes, "gpus_per_node": 8,
                                    "job": {"seq_length": 2048, "global_batch_size": 256, "precision": "bf16"},
                                    "recipe": recipe}))
    return path


def test_gpt3_175b_on_8_gpus_is_told_the_fewest_nodes_solve_names_and_that_recipe_checks(tmp_path):
    _, solved = _json("solve", "--model", "GPT-3-175B", *H100, "--nodes", "1", "--seq-length", "2048",
                      "--global-batch-size", "256", "--proposer", "none")
    nodes = solved["explanation"]["fewest_nodes"]
    assert not solved["recipes"] and nodes and nodes > 1
    # illegal (PP 3 does not divide 8 GPUs) and legal-but-too-big recipes get the same answer
    for path in (_gpt3(tmp_path, "pp3.yaml", 1, tp=4, pp=3), _gpt3(tmp_path, "tp8.yaml", 1, tp=8, sequence_parallel=True)):
        code, data = _json("check", str(path))  # the JSON says it without --suggest
        assert code == 1
        answered = [v for v in data["violations"] if v["rule"] in ("world_divisible", "memory_fits")]
        assert answered and answered[0]["fix"].startswith(f"no legal recipe fits on 8 GPUs: use --nodes {nodes} ")
        assert "--pipeline-model-parallel-size 1 " not in answered[0]["fix"]
        sug = data["suggestion"]
        assert not sug["found"] and sug["fewest_nodes"] == nodes and sug["fewest_gpus"] == 8 * nodes
        there = sug["at_fewest_nodes"]
        assert there["found"]
        code, fixed = _json("check", str(_gpt3(tmp_path, "fixed.yaml", nodes, **there["recipe"])))
        assert code == 0 and fixed["legal"] and fixed["fits"]
        assert fixed["memory"]["peak_bytes"] == there["peak_bytes"]


def test_without_suggest_the_text_quotes_the_answer_in_the_fix_column_only(tmp_path):
    code, out, _ = run_cli("check", str(_llama_pp3(tmp_path)), *H100, env={"COLUMNS": "250"})
    assert code == 1
    assert "use --pipeline-model-parallel-size " in out and not any(ln.startswith("suggestion:") for ln in out.splitlines())


def test_the_text_names_the_fewest_nodes(tmp_path):
    code, out, _ = run_cli("check", str(_gpt3(tmp_path, "pp3.yaml", 1, tp=4, pp=3)), "--suggest", env={"COLUMNS": "250"})
    assert code == 1
    line = next(ln for ln in out.splitlines() if ln.startswith("suggestion: none"))
    nodes = int(re.search(r"the fewest nodes that fit: (\d+) \((\d+) GPUs\)", line).group(1))
    assert f"use --nodes {nodes} ({8 * nodes} GPUs)" in out
    assert any(ln.startswith(f"suggestion: on {nodes} nodes, the nearest legal recipe changes") for ln in out.splitlines())


def test_a_missing_launch_setting_keeps_its_own_fix_and_the_search_does_not_route_around_it(tmp_path):
    # Megatron-LM's examples/gpt3 launcher shape without its CUDA_DEVICE_MAX_CONNECTIONS export, at PP 3 on 32 GPUs
    text = (SCRIPTS / "gpt_dense_distributed.sh").read_text()
    text = text.replace("export CUDA_DEVICE_MAX_CONNECTIONS=1\n", "").replace("--pipeline-model-parallel-size 4", "--pipeline-model-parallel-size 3")
    text = text.replace("\t--num-layers-per-virtual-pipeline-stage 3\n", "")
    script = tmp_path / "gpt.sh"
    script.write_text(text)
    code, data = _json("check", str(script), *H100, "--suggest")
    assert code == 1
    fixes = {v["rule"]: v["fix"] for v in data["violations"]}
    assert fixes["cuda_device_max_connections"] == "export CUDA_DEVICE_MAX_CONNECTIONS=1"
    assert fixes["world_divisible"].startswith("use ")
    assert "tp" not in data["suggestion"]["changes"]  # TP 4 stays: the export, not TP 1, is the answer to that rule


def test_a_job_the_search_cannot_lay_out_says_its_fixes_are_unverified(tmp_path):
    # the search prices every layer in the job's precision, so FP8 with bf16 first/last layers is not searched
    # (solver/space.py bf16_layers_error); check still judges the recipe and says the fix was not verified
    path = tmp_path / "bf16_layers.yaml"
    path.write_text(yaml.safe_dump({"model": "Llama-3.1-8B", "hardware": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8,
                                    "job": {"seq_length": 4096, "global_batch_size": 64, "precision": "fp8-tensorwise",
                                            "bf16_layers_at_start": 1, "bf16_layers_at_end": 1},
                                    "recipe": {"tp": 2, "pp": 3}}))
    code, data = _json("check", str(path), "--suggest")
    assert code == 1
    fix = {v["rule"]: v["fix"] for v in data["violations"]}["world_divisible"]
    assert "(not verified against the other rules and memory: the recipe search cannot run: job bf16_layers_at_start" in fix
    assert not data["suggestion"]["found"]
