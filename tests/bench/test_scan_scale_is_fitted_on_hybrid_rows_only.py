"""The Mamba-2 scan's bandwidth constant (SoftwareConstants.ssd_scan_scale) moves only with rows of hybrid models: a fit
without one keeps None, so the scan follows memory_scale, and its grid step never re-prices a transformer row."""
import pytest

from bench.fit_software import HYBRID_ONLY, SharedFit
from bench.run_slices import throughput_cases
from hardware.calibration import Microbench, SoftwareConstants, derive_calibration


@pytest.fixture(scope="module")
def cases():
    return throughput_cases()


def test_the_scan_efficiency_is_the_copy_fraction_times_its_own_scale():
    """H100: copy 84 % of 3,350 GB/s (the profile's microbench.hbm_fraction); scan scale 0.4 -> 0.336, memory scale 0.8 -> 0.672."""
    mb = Microbench(matmul_bf16_tflops=794.5, attention_fraction=0.45, hbm_fraction=0.84, allreduce_ring_busbw_gb_per_s=367.61)
    cal = derive_calibration(989.4, None, 3350.0, 450.0, mb, SoftwareConstants(memory_scale=0.8, ssd_scan_scale=0.4))
    assert cal.ssd_scan_memory_efficiency == pytest.approx(0.336) and cal.memory_bound_efficiency == pytest.approx(0.672)
    assert derive_calibration(989.4, None, 3350.0, 450.0, mb, SoftwareConstants()).ssd_scan_memory_efficiency is None


def test_a_fit_without_hybrid_rows_leaves_the_scan_on_memory_scale(cases):
    dense = [c for c in cases if not c.model.hybrid_layer_pattern][:2]
    fit = SharedFit(dense)
    assert not fit.uses_hybrid and HYBRID_ONLY == ("ssd_scan_scale",)
    fit.run(rounds=1)
    assert fit.sw.ssd_scan_scale is None


def test_hybrid_rows_fit_the_scan_scale_and_only_they_feel_it(cases):
    hybrid = [c for c in cases if c.model.hybrid_layer_pattern][:1]
    dense = [c for c in cases if not c.model.hybrid_layer_pattern][:1]
    assert hybrid and dense and SharedFit(hybrid + dense).uses_hybrid
    slow, fast = SoftwareConstants(ssd_scan_scale=0.2), SoftwareConstants(ssd_scan_scale=1.1)
    assert SharedFit(dense).loss(slow) == SharedFit(dense).loss(fast)
    # a slower scan makes the hybrid row's projection slower: its |log error| moves
    assert SharedFit(hybrid).loss(slow) != SharedFit(hybrid).loss(fast)
