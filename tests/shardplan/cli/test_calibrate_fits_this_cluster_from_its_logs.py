"""`shardplan calibrate LOG... -o FILE` and `--calibration FILE`, through the real entry point: one log of this cluster
moves the projection of that run onto its measurement, the factors follow the model they were measured on (another
model takes only the cluster's communication and host factors, with a warning), and a file that is not what calibrate wrote, or was made for
another part, is refused in one line. Nothing is written over a log, and nothing at all when a log is bad.
"""
from __future__ import annotations

import json
import re

import pytest

from tests.helpers.builders import REPO, run_cli

LOG = REPO / "tests" / "data" / "logs" / "megatron_format_gpt175b_tp8_pp16_restarted.log"
EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"  # Llama-3.1-70B: a model the log did not run
HW = "h100-sxm-80gb"
MEASURED_S = 14.1841  # the log's steady median (tests/shardplan/cli/test_check_reads_a_training_log.py)


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    """(path of the file calibrate wrote from the one log, calibrate's stdout)."""
    out_file = tmp_path_factory.mktemp("cal") / "h100-cluster.json"
    rc, out, err = run_cli("calibrate", str(LOG), "--hardware", HW, "-o", str(out_file))
    assert rc == 0, err
    return out_file, out


def check_json(*args) -> dict:
    rc, out, err = run_cli("check", *map(str, args), "--json")
    assert rc in (0, 1), err
    return json.loads(out)


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_calibrate_writes_a_sealed_file_that_reproduces_its_run(calibration):
    path, shown = calibration
    data = json.loads(path.read_text())
    assert data["format"] == "shardplan-calibration" and data["hardware"] == HW
    assert re.fullmatch(r"[0-9a-f]{64}", data["content_sha256"])
    (ev,) = data["evidence"]
    assert ev["measured_iteration_time_s"] == pytest.approx(MEASURED_S)
    assert ev["world_size"] == 1024 and ev["recipe"].startswith("tp8 pp16 ")
    assert abs(ev["residual"]) <= 0.02
    assert ev["projected_after_s"] == pytest.approx(MEASURED_S, rel=0.02)
    # one run moves the three factors along one direction (the prior's common scale: all slower than shipped, since
    # the log's step is 1.67x the shipped projection), fitted on that run's model only
    assert set(data["free_factors"]) == {"compute", "communication", "host"}
    assert list(data["model_factors"]) == [ev["model_key"]]
    f = data["model_factors"][ev["model_key"]]
    assert all(f[name] < 1.0 for name in ("compute", "communication", "host"))
    assert f["allocator_gap_bytes"] == ev["max_reserved_bytes"] - ev["max_allocated_bytes"]
    assert data["software"].get("container") == "24.01"
    assert "from 1 run(s)" in shown and f"wrote '{path}'" in shown


def test_check_with_the_calibration_projects_the_measured_step(calibration):
    path, _ = calibration
    plain = check_json(LOG, "--hardware", HW)
    cal = check_json(LOG, "--hardware", HW, "--calibration", path)
    assert cal["calibration"] == str(path)
    assert "calibration_other_model" not in {w["rule"] for w in cal["warnings"]}
    step = cal["measured_vs_projected"]["iteration_time_s"]
    assert step["measured"] == pytest.approx(MEASURED_S)
    assert step["projected"] == pytest.approx(MEASURED_S, rel=0.02)
    assert abs(plain["measured_vs_projected"]["iteration_time_s"]["ratio"] - 1) > 0.2  # what the file corrected
    # the cluster's allocator gap is added to the framework reserve, in exact bytes
    gap = json.loads(path.read_text())["factors"]["allocator_gap_bytes"]
    assert cal["memory"]["terms"]["framework_overhead"] - plain["memory"]["terms"]["framework_overhead"] == gap


def test_the_factors_carry_to_another_recipe_of_the_same_model(calibration, tmp_path):
    path, _ = calibration
    other = tmp_path / "gbs768.log"  # the same model, half the global batch
    other.write_text(re.sub(r"(global_batch_size \.+ )1536", r"\g<1>768", LOG.read_text()))
    plain = check_json(other, "--hardware", HW)
    cal = check_json(other, "--hardware", HW, "--calibration", path)
    assert cal["recipe"] == plain["recipe"] and plain["model"] == cal["model"]
    assert "calibration_other_model" not in {w["rule"] for w in cal["warnings"]}
    assert cal["projection"]["iteration_time_s"] > 1.3 * plain["projection"]["iteration_time_s"]


def test_another_model_takes_only_the_clusters_communication_and_host_with_a_warning(calibration):
    """measure/calibration/carry.py CARRIED_RULE: compute (the model's own GEMM shapes) stays shipped."""
    path, _ = calibration
    plain = check_json(EXAMPLE)
    cal = check_json(EXAMPLE, "--calibration", path)
    notes = [w for w in cal["warnings"] if w["rule"] == "calibration_other_model"]
    assert len(notes) == 1 and "holds no run of this model" in notes[0]["message"]
    assert "communication + host" in notes[0]["message"]
    factors = json.loads(path.read_text())["factors"]
    assert factors["communication"] < 1 and factors["host"] < 1  # the log's cluster is slower than shipped ...
    assert cal["projection"]["iteration_time_s"] > plain["projection"]["iteration_time_s"]  # ... and that carries
    assert cal["projection"]["breakdown"]["tp_comm"] > plain["projection"]["breakdown"]["tp_comm"]
    gap = json.loads(path.read_text())["factors"]["allocator_gap_bytes"]
    assert cal["memory"]["peak_bytes"] - plain["memory"]["peak_bytes"] == gap  # the allocator gap is the cluster's


def test_solve_with_the_calibration_of_another_model_says_so(calibration):
    path, _ = calibration
    rc, out, err = run_cli("solve", "--model", "Llama-3.1-8B", "--hardware", HW, "--nodes", "1", "--seq-length", "4096",
                           "--global-batch-size", "64", "--top", "1", "--calibration", str(path), "--format", "json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["calibration"] == str(path)
    assert any(w.startswith("calibration_other_model:") for w in data["job_warnings"])
    assert len(data["recipes"]) == 1


def test_calibrate_never_writes_over_its_log(tmp_path):
    log = tmp_path / "run.log"
    log.write_bytes(LOG.read_bytes())
    rc, out, err = run_cli("calibrate", str(log), "--hardware", HW, "-o", str(log))
    assert rc == 2
    assert "-o" in _one_error_line(err) and "input" in err
    assert log.read_bytes() == LOG.read_bytes()


@pytest.mark.parametrize("bad", ["truncated", "recipe"])
def test_nothing_is_written_when_a_log_is_bad(tmp_path, bad):
    if bad == "truncated":
        cut = tmp_path / "cut.log"
        cut.write_text("".join(LOG.read_text().splitlines(keepends=True)[:130]))  # inside the second run's dump
        logs = [str(LOG), str(cut)]
    else:
        logs = [str(LOG), str(EXAMPLE)]  # a recipe measured nothing
    out_file = tmp_path / "cal.json"
    rc, out, err = run_cli("calibrate", *logs, "--hardware", HW, "-o", str(out_file))
    assert rc == 2
    line = _one_error_line(err)
    assert ("cut.log:111:" in line) if bad == "truncated" else ("not a training log" in line)
    assert not out_file.exists() and list(tmp_path.iterdir()) == ([cut] if bad == "truncated" else [])


def test_a_calibration_for_another_part_is_refused_in_one_line(calibration):
    path, _ = calibration
    rc, out, err = run_cli("check", str(EXAMPLE), "--hardware", "b200", "--calibration", str(path))
    assert rc == 2 and out == ""
    line = _one_error_line(err)
    assert "h100-sxm-80gb" in line and "b200" in line


def test_an_edited_calibration_is_refused_in_one_line(calibration, tmp_path):
    path, _ = calibration
    data = json.loads(path.read_text())
    key = next(iter(data["model_factors"]))
    data["model_factors"][key]["compute"] = 1.0  # a hand edit: the seal no longer matches
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data, indent=2))
    rc, out, err = run_cli("check", str(LOG), "--hardware", HW, "--calibration", str(edited))
    assert rc == 2 and out == ""
    assert "edited" in _one_error_line(err)


def test_a_newer_calibration_format_is_refused_in_one_line(calibration, tmp_path):
    path, _ = calibration
    data = json.loads(path.read_text())
    data["format_version"] += 1
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(data))
    rc, out, err = run_cli("check", str(EXAMPLE), "--calibration", str(newer))
    assert rc == 2 and out == ""
    assert "newer" in _one_error_line(err)


def test_a_measured_allocator_gap_replaces_the_learnt_reserve(calibration):
    """Without a calibration the usable share is the learnt 97 % of HBM; the file's measured gap is priced in bytes
    instead, so the generic reserve steps aside (100 %), and --max-memory-fraction still wins over both."""
    path, _ = calibration
    plain = check_json(EXAMPLE)
    cal = check_json(EXAMPLE, "--calibration", path)
    given = check_json(EXAMPLE, "--calibration", path, "--max-memory-fraction", "0.9")
    capacity = plain["memory"]["capacity_bytes"]
    assert plain["memory_fraction"] == {"value": 0.97, "source": "learnt"}
    assert plain["memory"]["usable_bytes"] == capacity * 970_000 // 1_000_000
    assert cal["memory_fraction"]["source"] == "calibration" and cal["memory"]["usable_bytes"] == capacity
    assert given["memory_fraction"] == {"value": 0.9, "source": "--max-memory-fraction"}
    assert given["memory"]["usable_bytes"] == capacity * 900_000 // 1_000_000
