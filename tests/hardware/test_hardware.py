"""Hardware profiles: the 11 bundled YAMLs load, cite a source for every number, match datasheet
anchors, and bad input gives a one-line ProfileError. Also the `shardplan hardware` listing."""
from __future__ import annotations

import json
import shutil
import typing

import pytest
import yaml
from click.testing import CliRunner
from pydantic import BaseModel

import hardware.profile as profile_module
from hardware.listing import profiles_table
from hardware.profile import PROFILES_DIR, HardwareProfile, ProfileError, available_profiles, load_profile
from shardplan.cli.main import hardware_command, main

EXPECTED_NAMES = {
    "a100-sxm-80gb", "h100-sxm-80gb", "h800-sxm-80gb", "h200-sxm-141gb", "b200", "b300",
    "gb200-nvl72", "gb300-nvl72", "mi300x", "mi325x", "mi355x",
}


def _cited_leaves(data: dict, prefix: str = "") -> dict[str, object]:
    """Numeric and boolean leaves that need a source, keyed like `sources` ('peak_tflops.bf16')."""
    leaves = {}
    for key, value in data.items():
        if key in ("calibration", "sources"):  # calibration constants are cited by their fit, not here
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            leaves.update(_cited_leaves(value, prefix=f"{path}."))
        elif isinstance(value, (bool, int, float)):
            leaves[path] = value
    return leaves


def _all_field_paths(model_cls=HardwareProfile, prefix: str = "") -> set[str]:
    paths = set()
    for name, field in model_cls.model_fields.items():
        annotation = field.annotation
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(inner) == 1:  # Optional[Model]
            annotation = inner[0]
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            paths |= _all_field_paths(annotation, prefix=f"{prefix}{name}.")
        else:
            paths.add(f"{prefix}{name}")
    return paths


@pytest.fixture(scope="module")
def profiles() -> dict[str, HardwareProfile]:
    return {name: load_profile(name) for name in available_profiles()}


def test_bundled_names_are_exactly_the_eleven():
    assert set(available_profiles()) == EXPECTED_NAMES


def test_every_profile_loads_and_names_itself_by_file_stem(profiles):
    for stem, profile in profiles.items():
        assert profile.name == stem


def test_every_number_has_a_source(profiles):
    for name, profile in profiles.items():
        cited = _cited_leaves(profile.model_dump())
        missing = sorted(set(cited) - set(profile.sources))
        assert not missing, f"{name}: no source for {missing}"
        for key in cited:
            assert profile.sources[key].strip(), f"{name}: empty source for {key}"


def test_sources_name_only_real_fields(profiles):
    known = _all_field_paths()
    for name, profile in profiles.items():
        stale = sorted(set(profile.sources) - known)
        assert not stale, f"{name}: sources for unknown fields {stale}"


def test_load_is_case_insensitive():
    assert load_profile("H100-SXM-80GB").name == "h100-sxm-80gb"


# --- datasheet anchors -------------------------------------------------------------------------

def test_h100_dense_peaks_match_datasheet():
    # H100 SXM5 datasheet: BF16 1,979 and FP8 3,958 TFLOP/s *with sparsity*; dense is half
    # (glennklockwood.com/garden/processors/h100: 989.4 / 1978.9 dense).
    h100 = load_profile("h100-sxm-80gb")
    assert h100.peak_tflops.bf16 == pytest.approx(989.4)
    assert h100.peak_tflops.fp8 == pytest.approx(1978.9)
    assert h100.hbm_bandwidth_gb_per_s == pytest.approx(3350.0)


def test_h100_capacity_is_nvidia_smi_81559_mib():
    # nvidia-smi memory.total for 'NVIDIA H100 80GB HBM3' = 81559 MiB = 85_520_809_984 B (79.65 GiB)
    assert load_profile("h100-sxm-80gb").hbm_capacity_bytes == 81559 * 1024**2 == 85_520_809_984


def test_nvlink4_is_450_gb_per_s_one_direction():
    # NVLink4: 900 GB/s bidirectional per GPU (H100/H200 datasheets) -> 450 one way
    for name in ("h100-sxm-80gb", "h200-sxm-141gb"):
        assert load_profile(name).scale_up_bandwidth_gb_per_s == 450.0


def test_mi300x_has_192_gib_of_hbm3():
    # AMD: 192 GB HBM3; torch on MI300X reports total_memory=196592 MiB (ROCm/ROCm#4203)
    mi300x = load_profile("mi300x")
    assert mi300x.hbm_capacity_bytes == 196592 * 1024**2
    assert mi300x.hbm_capacity_bytes / 1024**3 == pytest.approx(192.0, abs=0.05)
    assert mi300x.peak_tflops.bf16 == pytest.approx(1307.4)
    assert mi300x.compute_capability is None and mi300x.vendor == "amd"


def test_nvl72_racks_have_4_gpus_per_tray_and_72_per_domain():
    # DGX GB200 user guide: 18 compute trays x 4 Blackwell GPUs, 72-GPU NVLink domain
    for name in ("gb200-nvl72", "gb300-nvl72"):
        rack = load_profile(name)
        assert (rack.gpus_per_node, rack.scale_up_domain_size) == (4, 72)


def test_a100_has_no_fp8_and_blackwell_has_mxfp8(profiles):
    a100 = profiles["a100-sxm-80gb"]
    assert a100.peak_tflops.fp8 is None and not a100.supports_fp8
    assert a100.compute_capability == 8.0
    for name in ("b200", "b300", "gb200-nvl72", "gb300-nvl72"):
        assert profiles[name].supports_mxfp8
    for name in ("h100-sxm-80gb", "h800-sxm-80gb", "h200-sxm-141gb", "mi300x", "mi325x"):
        assert not profiles[name].supports_mxfp8


def test_b300_scale_out_is_one_800g_nic_per_gpu():
    # HGX/DGX B300: eight ConnectX-8 at 800 Gb/s for 8 GPUs -> 100 GB/s per GPU
    assert load_profile("b300").scale_out_bandwidth_gb_per_s == pytest.approx(100.0)


def test_dense_rates_are_consistent_across_formats(profiles):
    # On every part here FP16 == BF16 and dense FP8 == 2 x BF16; a sparse figure slipped in would break this.
    for name, profile in profiles.items():
        peak = profile.peak_tflops
        assert peak.fp16 == peak.bf16, name
        assert profile.supports_fp8 == (peak.fp8 is not None), name
        if peak.fp8 is not None:
            assert peak.fp8 == pytest.approx(2 * peak.bf16, rel=1e-3), name


def test_scale_up_domain_is_whole_nodes(profiles):
    for name, profile in profiles.items():
        assert profile.scale_up_domain_size % profile.gpus_per_node == 0, name


# --- user profiles and errors ------------------------------------------------------------------

def test_user_profile_loads_from_path(tmp_path):
    data = yaml.safe_load((PROFILES_DIR / "h100-sxm-80gb.yaml").read_text())
    data["name"] = "my-h100"
    data["hbm_capacity_bytes"] = 80 * 10**9
    path = tmp_path / "my-h100.yaml"
    path.write_text(yaml.safe_dump(data))
    profile = load_profile(str(path))
    assert (profile.name, profile.hbm_capacity_bytes) == ("my-h100", 80 * 10**9)


def _one_line_error(name_or_path: str) -> str:
    with pytest.raises(ProfileError) as info:
        load_profile(name_or_path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unknown_name_is_one_line_error_listing_choices():
    message = _one_line_error("h900")
    assert "h900" in message and "h100-sxm-80gb" in message


def test_malformed_yaml_is_one_line_error(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n  peak: {")
    assert "not valid YAML" in _one_line_error(str(path))


def test_invalid_field_is_one_line_error_naming_the_field(tmp_path):
    data = yaml.safe_load((PROFILES_DIR / "b200.yaml").read_text())
    data["hbm_bandwidth_gb_per_s"] = -1
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    assert "hbm_bandwidth_gb_per_s" in _one_line_error(str(path))


def test_unknown_field_is_rejected(tmp_path):
    data = yaml.safe_load((PROFILES_DIR / "b200.yaml").read_text())
    data["nvlink_gbps"] = 900
    path = tmp_path / "extra.yaml"
    path.write_text(yaml.safe_dump(data))
    assert "nvlink_gbps" in _one_line_error(str(path))


# --- `shardplan hardware` ----------------------------------------------------------------------

def test_profiles_table_rows():
    rows = {row["name"]: row for row in profiles_table()}
    assert set(rows) == EXPECTED_NAMES
    h100 = rows["h100-sxm-80gb"]
    assert h100["bf16_tflops"] == pytest.approx(989.4)
    assert h100["hbm_gib"] == pytest.approx(79.65, abs=0.01)
    assert h100["hbm_tb_per_s"] == pytest.approx(3.35)
    assert (h100["scale_up_domain_size"], h100["scale_up_gb_per_s"], h100["scale_out_gb_per_s"]) == (8, 450.0, 50.0)
    assert rows["a100-sxm-80gb"]["fp8_tflops"] is None


def test_hardware_command_table_and_json():
    runner = CliRunner()
    table = runner.invoke(hardware_command, [])
    assert table.exit_code == 0
    lines = table.output.strip().splitlines()
    assert len(lines) == 1 + len(EXPECTED_NAMES)
    assert {line.split()[0] for line in lines[1:]} == EXPECTED_NAMES
    as_json = runner.invoke(hardware_command, ["--json"])
    assert as_json.exit_code == 0
    rows = json.loads(as_json.output)
    assert {row["name"] for row in rows} == EXPECTED_NAMES


def test_hardware_command_help_has_example():
    result = CliRunner().invoke(hardware_command, ["--help"])
    assert result.exit_code == 0 and "Example" in result.output and "shardplan hardware" in result.output


def test_hardware_command_reports_a_broken_bundled_profile_in_one_line(tmp_path, monkeypatch, capsys):
    shutil.copy(PROFILES_DIR / "h100-sxm-80gb.yaml", tmp_path / "h100-sxm-80gb.yaml")
    (tmp_path / "zz-broken.yaml").write_text("name: [oops")
    monkeypatch.setattr(profile_module, "PROFILES_DIR", tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["hardware"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.startswith("error: ") and "zz-broken" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("edit, said", [
    (lambda d: d.update(hbm_capacity_bytes=96), "hbm_capacity_bytes: 96 bytes is under 1 GiB"),
    (lambda d: d.update(hbm_bandwidth_gb_per_s=4.8), "hbm_bandwidth_gb_per_s: 4.8 GB/s is below"),
    (lambda d: d["peak_tflops"].update(fp8=29.6), "peak_tflops.fp8: 29.6 TFLOP/s is below bf16's"),
    (lambda d: d["peak_tflops"].update(fp16=98.9), "peak_tflops.bf16: 989.4 and fp16 98.9"),
])
def test_a_unit_slip_inside_the_bounds_is_one_line_naming_the_unit(tmp_path, edit, said):
    """Values inside the fields' bounds that no part has and a unit slip explains (GB written as bytes, TB/s as
    GB/s, GFLOP/s as TFLOP/s) are refused, the unit said; every bundled profile passes (profiles fixture)."""
    data = yaml.safe_load((PROFILES_DIR / "h100-sxm-80gb.yaml").read_text())
    edit(data)
    path = tmp_path / "slip.yaml"
    path.write_text(yaml.safe_dump(data))
    assert said in _one_line_error(str(path))
