"""A calibration file is evidence about one cluster: an edited file, one made for another part or by a newer shardplan
is refused in one line naming the file and the fix, never applied."""
from __future__ import annotations

import json

import pytest

from constraints.models.load import load_model
from hardware.profile import load_profile
from measure.calibration.factors import ClusterFactors
from measure.calibration.store import CalibrationError, CalibrationFile, EvidenceRecord, calibrated_profile, load_calibration, model_key

RECORD = EvidenceRecord(label="run.log", model="Llama-3.1-8B", model_key="0123456789abcdef", world_size=8, recipe_key="fedcba9876543210",
                        recipe="tp1 pp1 vpp1 cp1 ep1 mbs1 gbs64 seq8192 bf16",
                        measured_iteration_time_s=5.0, projected_before_s=4.5, projected_after_s=5.01, residual=0.002)


def _write(tmp_path, **changes) -> str:
    cal = CalibrationFile(hardware="h100-sxm-80gb", factors=ClusterFactors(compute=0.9), free_factors=("compute",),
                          evidence=(RECORD,)).sealed()
    data = json.loads(cal.to_text())
    data.update(changes)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_sealed_file_loads_and_applies_to_the_model_it_measured(tmp_path):
    model = load_model("Llama-3.1-8B")
    cal = CalibrationFile(hardware="h100-sxm-80gb", factors=ClusterFactors(compute=0.9, allocator_gap_bytes=1 << 30),
                          model_factors={model_key(model): ClusterFactors(compute=0.9, allocator_gap_bytes=1 << 30)},
                          free_factors=("compute",), evidence=(RECORD,)).sealed()
    path = tmp_path / "cal.json"
    path.write_text(cal.to_text())
    loaded = load_calibration(str(path))
    profile = load_profile("h100-sxm-80gb")
    calibrated = calibrated_profile(profile, loaded, "cal.json", model)
    assert calibrated.calibration.attention_efficiency == pytest.approx(profile.calibration.attention_efficiency * 0.9)
    # another model keeps the shipped speed constants and takes only the cluster's allocator gap
    other = calibrated_profile(profile, loaded, "cal.json", load_model("Llama-3.1-70B"))
    assert other.calibration.attention_efficiency == profile.calibration.attention_efficiency
    assert other.calibration.framework_overhead_bytes == profile.calibration.framework_overhead_bytes + (1 << 30)


def test_an_edited_file_is_refused(tmp_path):
    path = _write(tmp_path)
    data = json.loads(open(path).read())
    data["factors"]["compute"] = 1.5
    open(path, "w").write(json.dumps(data))
    with pytest.raises(CalibrationError, match="edited after `shardplan calibrate` wrote it"):
        load_calibration(path)


def test_a_file_for_another_part_is_refused(tmp_path):
    cal = load_calibration(_write(tmp_path))
    with pytest.raises(CalibrationError, match="made for hardware 'h100-sxm-80gb', not 'b200'"):
        calibrated_profile(load_profile("b200"), cal, "cal.json")


def test_a_newer_format_is_refused(tmp_path):
    with pytest.raises(CalibrationError, match="newer than this shardplan reads"):
        load_calibration(_write(tmp_path, format_version=2))


def test_a_file_that_is_no_calibration_is_refused(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(CalibrationError, match="not a shardplan calibration file"):
        load_calibration(str(path))
    for message in (str(e) for e in [CalibrationError("x")]):
        assert "\n" not in message
