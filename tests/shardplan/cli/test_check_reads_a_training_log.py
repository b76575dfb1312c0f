"""`shardplan check LOG` on a Megatron-LM training log, through the real entry point: the recipe is judged from the
log's argument dump and what the run measured is set beside what was projected (JSON and text), and a log that cannot
be read is refused in one line.

The figures are recomputed here from the file itself (tests/data/logs/megatron_format_gpt175b_tp8_pp16_restarted.log:
GPT-3 175B, TP 8 PP 16, 1024 H100, two runs appended), so a change of the steady-state rule shows up as a diff of
numbers anyone can check by hand, not as a silently moved constant.
"""
from __future__ import annotations

import json
import re
import statistics

import pytest

from tests.helpers.builders import REPO, run_cli

LOG = REPO / "tests" / "data" / "logs" / "megatron_format_gpt175b_tp8_pp16_restarted.log"
HW = "h100-sxm-80gb"
GBS, SEQ, WORLD = 1536, 2048, 1024
MIB = 2**20

# the numbers of the last run, read by hand from the file (lines 111-266)
STEADY_MEDIAN_S = 14.1841  # iteration 90's 14184.1 ms: the median of the 9 steady intervals below
STEADY_ITERATIONS = 9  # of 12 intervals (60..170): 60, 70 are warm-up, 110 skipped an iteration
MAX_ALLOCATED_MB, MAX_RESERVED_MB = 52290.25, 60124.0  # `[Rank 0] (after 60 iterations)` of the last run

_ITER = re.compile(r"^\[default(\d+)\]: \[[^]]+\] iteration\s+(\d+)/.*elapsed time per iteration \(ms\): ([\d.]+).*"
                   r"number of skipped iterations:\s+(\d+) \| number of nan iterations:\s+(\d+) \|$")


def steady_times_by_hand() -> list[float]:
    """The last run's steady-state step times, by the rule docs/closed-loop.md states: drop the first two logged
    intervals and any ending at iteration <= 3, drop intervals with a skipped / NaN iteration, drop intervals slower
    than 1.5 x the median of the rest. One rank's lines (the lowest label): every rank prints the same interval."""
    lines = LOG.read_text().splitlines()
    last_banner = max(i for i, line in enumerate(lines) if line.endswith("-- arguments ------------------------"))
    rows = [m.groups() for m in map(_ITER.match, lines[last_banner:]) if m]
    lowest = min(int(r[0]) for r in rows)
    rows = [(int(it), float(ms) / 1000, int(sk), int(nan)) for rank, it, ms, sk, nan in rows if int(rank) == lowest]
    kept = [r for r in rows[2:] if r[0] > 3 and r[2] == 0 and r[3] == 0]
    median = statistics.median(r[1] for r in kept)
    return [r[1] for r in kept if r[1] <= 1.5 * median]


@pytest.fixture(scope="module")
def checked() -> dict:
    rc, out, err = run_cli("check", str(LOG), "--hardware", HW, "--json")
    assert rc == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def shown() -> str:
    rc, out, err = run_cli("check", str(LOG), "--hardware", HW)
    assert rc == 0, err
    return out


def test_the_hand_reading_of_the_file_gives_the_figures_used_below():
    times = steady_times_by_hand()
    assert len(times) == STEADY_ITERATIONS
    assert statistics.median(times) == pytest.approx(STEADY_MEDIAN_S, abs=1e-9)


def test_the_recipe_of_the_log_is_judged_legal_and_fits_on_its_own_world(checked):
    assert checked["legal"] and checked["fits"] and checked["violations"] == []
    assert checked["world_size"] == WORLD  # from the dump's world_size: no --nodes given
    assert checked["hardware"] == HW
    assert checked["recipe"]["tp"] == 8 and checked["recipe"]["pp"] == 16


def test_measured_is_the_median_of_the_steady_iterations(checked):
    m = checked["measured"]
    assert m["iteration_time_s"] == pytest.approx(STEADY_MEDIAN_S, abs=1e-9)
    assert m["iterations_used"] == STEADY_ITERATIONS
    assert m["tokens_per_s_per_gpu"] == pytest.approx(GBS * SEQ / STEADY_MEDIAN_S / WORLD, rel=1e-9)
    assert m["tflops_per_gpu"] == pytest.approx(279.7)  # the log's own figure at the median interval
    # the last run's memory report only, in bytes (Megatron prints MiB as MB)
    assert m["max_allocated_bytes"] == round(MAX_ALLOCATED_MB * MIB)
    assert m["max_reserved_bytes"] == round(MAX_RESERVED_MB * MIB)
    assert m["estimated_peak_bytes"] == checked["memory"]["peak_bytes"]
    assert m["versions"]["container"] == "24.01"
    assert {"forward-backward", "optimizer", "all-grads-sync"} <= set(m["phases_s"])


def test_measured_versus_projected_is_consistent(checked):
    versus, m, proj = checked["measured_vs_projected"], checked["measured"], checked["projection"]
    step = versus["iteration_time_s"]
    assert step["measured"] == m["iteration_time_s"]
    assert step["projected"] == pytest.approx(proj["iteration_time_s"])
    assert step["ratio"] == pytest.approx(step["measured"] / step["projected"])
    tok = versus["tokens_per_s_per_gpu"]
    assert tok["measured"] == m["tokens_per_s_per_gpu"]
    assert tok["projected"] == pytest.approx(proj["tokens_per_s_per_gpu"])
    assert tok["ratio"] == pytest.approx(tok["measured"] / tok["projected"])
    # same GBS x seq / world on both sides: the throughput ratio is the inverse of the step ratio
    assert tok["ratio"] * step["ratio"] == pytest.approx(1.0, rel=1e-6)
    by_timer = {t["timer"]: t for t in versus["terms"]}
    assert by_timer["forward-backward"]["measured_s"] == pytest.approx(m["phases_s"]["forward-backward"])
    assert "pp_bubble" in by_timer["forward-backward"]["covers"]
    dp = next(t for t in versus["terms"] if t["covers"] == ["dp_comm"])
    assert dp["measured_s"] == pytest.approx(m["phases_s"]["all-grads-sync"] + m["phases_s"]["params-all-gather"])


def test_the_restart_in_the_file_is_a_warning(checked):
    rules = {w["rule"]: w for w in checked["warnings"]}
    assert "log_runs" in rules and "2 runs" in rules["log_runs"]["message"]


def test_the_text_view_shows_measured_beside_projected(shown):
    assert "verdict: LEGAL, FITS" in shown
    assert "measured (9 steady iterations): 14.184 s/iteration" in shown
    assert re.search(r"^measured memory: max allocated 51\.06 GiB, max reserved 58\.71 GiB", shown, re.M)
    assert re.search(r"^measured / projected step: \d+\.\d\d \(14\.184 s vs \d+\.\d{3} s\)$", shown, re.M)
    header = next(line for line in shown.splitlines() if line.startswith("timer "))
    assert "measured s" in header and "projected s" in header and "measured / projected" in header
    assert re.search(r"^forward-backward\s+13\.511\s", shown, re.M)
    assert re.search(r"^all-grads-sync \+ params-all-gather\s", shown, re.M)
    assert "log_runs" in shown


def test_a_text_file_that_is_no_log_is_not_read_as_one(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("Notes on the run\nthe elapsed time per iteration was fine\niteration 10 went well\n")
    rc, out, err = run_cli("check", str(notes), "--hardware", HW)
    assert rc == 2 and out == ""
    assert "training log" not in err and "argument dump" not in err  # judged as a launch script, not as a log


def test_a_launch_script_measures_nothing():
    rc, out, err = run_cli("check", str(REPO / "tests" / "data" / "scripts" / "gpt_dense_distributed.sh"),
                           "--hardware", HW, "--json")
    assert rc in (0, 1), err
    data = json.loads(out)
    assert "measured" not in data and "measured_vs_projected" not in data


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def _cut(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


LINES = LOG.read_text().splitlines(keepends=True)


def test_a_log_cut_inside_its_argument_dump_is_refused_in_one_line(tmp_path):
    path = _cut(tmp_path, "cut_in_dump.log", "".join(LINES[:130]))  # the second run's dump opens at line 111
    rc, out, err = run_cli("check", path, "--hardware", HW)
    assert rc == 2 and out == ""
    line = _one_error_line(err)
    assert "cut_in_dump.log:111:" in line and "no end banner" in line


def test_a_log_cut_mid_iteration_line_is_refused_in_one_line(tmp_path):
    text = "".join(LINES)
    cut_at = text.rindex("(ms): 14307.5") + len("(ms): 1430")  # the last line, cut inside its step time, no newline
    path = _cut(tmp_path, "cut_mid_line.log", text[:cut_at])
    rc, out, err = run_cli("check", path, "--hardware", HW)
    assert rc == 2 and out == ""
    line = _one_error_line(err)
    assert "cut mid-record" in line and "truncated" in line


def test_a_log_without_its_argument_dump_is_refused_in_one_line(tmp_path):
    dump = re.compile(r"^\[default0\]:(  \S+ \.+ |-+ (end of )?arguments -+$)")
    path = _cut(tmp_path, "no_dump.log", "".join(line for line in LINES if not dump.match(line)))
    rc, out, err = run_cli("check", path, "--hardware", HW)
    assert rc == 2 and out == ""
    line = _one_error_line(err)
    assert "no argument dump" in line and "--model" in line


def test_a_log_without_hardware_is_refused_naming_hardware():
    rc, out, err = run_cli("check", str(LOG))
    assert rc == 2 and out == ""
    assert "--hardware" in _one_error_line(err)
