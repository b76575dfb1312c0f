"""The transfer hardware model: every bundled part's projection constants come from its published
microbenchmarks (cited in the profile) and one set of software constants shared by all parts; nothing is
fitted per part, and a user's own calibration block still wins."""
import pytest
import yaml

from hardware.calibration import CURVE_SHAPE, Microbench, SoftwareConstants, derive_calibration, load_software_constants
from hardware.profile import PROFILES_DIR, available_profiles, load_profile


def test_h100_constants_follow_the_published_microbenchmarks():
    """H100 SXM: matmul 794.5 / 989.4 bf16 and 1402.6 / 1978.9 fp8 TFLOP/s (stas00/ml-engineering MAMF table),
    ring all-reduce 367.61 GB/s over NVLink 4's 450 (same source), under neutral software constants."""
    mb = Microbench(matmul_bf16_tflops=794.5, matmul_fp8_tflops=1402.6, attention_fraction=0.45, hbm_fraction=0.84,
                    allreduce_ring_busbw_gb_per_s=367.61)
    sw = SoftwareConstants(gemm_scale=1.0, fp8_scale=1.0, attention_scale=1.0, memory_scale=1.0)
    cal = derive_calibration(989.4, 1978.9, 3350.0, 450.0, mb, sw)
    assert cal.gemm_efficiency[-1] == (40.0, pytest.approx(794.5 / 989.4, abs=1e-4))
    assert [x for x, _ in cal.gemm_efficiency] == [x for x, _ in CURVE_SHAPE]
    assert cal.fp8_gemm_relative_efficiency == pytest.approx((1402.6 / 1978.9) / (794.5 / 989.4), abs=1e-4)  # 0.883
    assert cal.collective_bandwidth_efficiency == pytest.approx(367.61 / 450, abs=1e-4)  # 0.817
    assert cal.attention_efficiency == 0.45 and cal.memory_bound_efficiency == 0.84


def test_no_bundled_part_is_fitted_per_part_or_left_on_defaults():
    for name in available_profiles():
        data = yaml.safe_load((PROFILES_DIR / f"{name}.yaml").read_text())
        assert "calibration" not in data, f"{name}: a per-part calibration block would bypass the transfer model"
        prof = load_profile(name)
        assert prof.microbench is not None and prof.calibrated
        p = prof.peak_tflops
        assert prof.calibration == derive_calibration(p.bf16, p.fp8, prof.hbm_bandwidth_gb_per_s,
                                                      prof.scale_up_bandwidth_gb_per_s, prof.microbench,
                                                      load_software_constants())
        for field in Microbench.model_fields:
            assert prof.sources.get(f"microbench.{field}", "").strip(), f"{name}: microbench.{field} has no source"


def test_parts_differ_only_through_their_microbenchmarks():
    """Software constants are one value for every part: two parts' calibrations agree on every software field."""
    a, m = load_profile("a100-sxm-80gb").calibration, load_profile("mi355x").calibration
    for field in ("host_time_per_op_us", "grouped_gemm_relative_efficiency", "moe_dispatch_overhead_us", "exposed_comm_fraction"):
        assert getattr(a, field) == getattr(m, field)
    # MI300X's published matmul fraction (668.4 / 1307.4) is well below A100's (271.2 / 312): so is its GEMM curve top
    assert load_profile("mi300x").calibration.gemm_efficiency[-1][1] < a.gemm_efficiency[-1][1]


def test_a_users_calibration_block_wins(tmp_path):
    data = yaml.safe_load((PROFILES_DIR / "h100-sxm-80gb.yaml").read_text())
    data["calibration"] = {"attention_efficiency": 0.9}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    assert load_profile(str(path)).calibration.attention_efficiency == 0.9
