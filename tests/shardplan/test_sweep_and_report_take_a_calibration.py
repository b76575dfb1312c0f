"""sweep and report project with a calibration as check and solve do, and refuse one made for a part they do not
include. The evidence is the Megatron-LM-format log in tests/data/logs (see SOURCES.md there), measured 14.1841 s/iter."""
from __future__ import annotations

import pytest

from boundary.errors import ShardplanError
from shardplan.calibrate import calibrate
from shardplan.report.collect import check_report
from shardplan.sweep import sweep
from tests.helpers.builders import TESTS

LOG = str(TESTS / "data" / "logs" / "megatron_format_gpt175b_tp8_pp16_restarted.log")


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "h100.json"
    calibrate([LOG], "h100-sxm-80gb", output=str(path))
    return str(path)


def test_report_check_projects_the_calibrated_step(calibration):
    report = check_report(LOG, hardware="h100-sxm-80gb", calibration=calibration)
    step_s = report.recipes[0].projection["iteration_time_s"]
    assert abs(step_s / 14.1841 - 1) < 0.02
    uncalibrated = check_report(LOG, hardware="h100-sxm-80gb").recipes[0].projection["iteration_time_s"]
    assert uncalibrated < 0.8 * step_s  # the shipped constants project this run well faster than it ran


def test_sweep_refuses_a_calibration_for_a_part_it_does_not_sweep(calibration):
    with pytest.raises(ShardplanError, match="made for hardware 'h100-sxm-80gb', which this sweep does not include"):
        sweep("Llama-3.1-8B", "b200", "1", seq_length=4096, global_batch_size=16, calibration=calibration)
