"""`shardplan report`: writes the page and the trace for a legal recipe (exit 0), still writes the page of an
illegal one with its violations (exit 1, as check), and refuses unusable output paths with one line (exit 2)."""
from __future__ import annotations

import json
import subprocess
import sys

import yaml

from tests.helpers.builders import REPO, run_cli

ROOT = REPO
EXAMPLE = ROOT / "constraints" / "examples" / "llama3-70b-h100.yaml"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shardplan.cli.main", "report", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_report_check_writes_page_and_trace(tmp_path):
    out, trace = tmp_path / "r.html", tmp_path / "r.json"
    res = _run("check", str(EXAMPLE), "-o", str(out), "--trace", str(trace))
    assert res.returncode == 0, res.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "LEGAL, FITS" in page
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched
    events = json.loads(trace.read_text())["traceEvents"]
    # PP4: 64 micro-batches x VPP5 x F/B per rank, then the optimizer on every rank and the exposed DP tail if any
    blocks = [e for e in events if e["ph"] == "X"]
    tail = [e for e in blocks if e["cat"] not in ("forward", "backward")]
    dp = [e for e in tail if e["cat"] == "DP comm (exposed)"]
    assert len(blocks) - len(tail) == 4 * 2 * 64 * 5 and len(tail) - len(dp) == 4 and len(dp) in (0, 4)  # all or none
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temp file


def test_report_check_of_an_illegal_recipe_shows_its_violation(tmp_path):
    data = yaml.safe_load(EXAMPLE.read_text())
    data["recipe"]["tp"] = 3  # does not divide 64 heads
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    out = tmp_path / "bad.html"
    res = _run("check", str(bad), "-o", str(out), "--trace", str(tmp_path / "t.json"))
    assert res.returncode == 1, res.stderr
    page = out.read_text()
    assert "ILLEGAL" in page and "fix:" in page and "timeline-chart" not in page
    assert not (tmp_path / "t.json").exists() and "no trace written" in res.stderr


def test_report_refuses_an_output_folder_that_does_not_exist(tmp_path):
    res = _run("check", str(EXAMPLE), "-o", str(tmp_path / "missing" / "r.html"))
    assert res.returncode == 2
    assert res.stderr.startswith("error: --output: the folder") and len(res.stderr.strip().splitlines()) == 1
    res = _run("check", str(EXAMPLE), "-o", str(tmp_path))
    assert res.returncode == 2 and res.stderr.startswith(f"error: --output: {tmp_path} is a directory")


def test_report_solve_keeps_what_the_model_reading_left_out(tmp_path):
    """`solve` prints `! model config:` lines under its table; its page says the same (an unknown family's reading)."""
    from shardplan.report.collect import solve_report

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "somefamily", "hidden_size": 1024, "intermediate_size": 4096,
                                  "num_hidden_layers": 4, "num_attention_heads": 16, "vocab_size": 32000,
                                  "hidden_act": "silu", "tie_word_embeddings": False}))
    report = solve_report(str(config), "h100-sxm-80gb", 1, top=1, seq_length=2048, global_batch_size=16, proposer="none")
    assert any(n.startswith("model config: model_type 'somefamily' is not a family shardplan reads by name")
               for n in report.notes)


def test_the_report_names_the_model_with_its_parameter_count(tmp_path):
    """Issue 31: every result says what was read, the report too (Llama-3.1-70B: 70.6 B parameters, as `models` lists)."""
    out = tmp_path / "r.html"
    code, _, err = run_cli("report", "check", str(REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"), "-o", str(out))
    assert code == 0, err
    assert "Llama-3.1-70B (70.6 B parameters) on 64 x" in out.read_text()
