"""What share of HBM a verdict allows and when an answer is near it (constraints/memory/allocator.py)."""
import pytest

from constraints.memory.allocator import DEFAULT_MEMORY_FRACTION, near_limit, resolve_memory_fraction

H100 = 85_520_809_984  # hardware/profiles/h100-sxm-80gb.yaml


@pytest.mark.parametrize("given, gap, value, source", [
    (None, False, DEFAULT_MEMORY_FRACTION, "learnt"),
    (None, True, 1.0, "calibration"),
    (0.9, True, 0.9, "--max-memory-fraction"),
    (1.0, False, 1.0, "--max-memory-fraction"),
])
def test_the_users_share_then_a_measured_gap_then_the_learnt_one(given, gap, value, source):
    f = resolve_memory_fraction(given, gap)
    assert (f.value, f.source) == (value, source) and f.margin == pytest.approx(1 - value)


def test_near_the_limit_is_the_last_three_percent_of_hbm_below_it():
    usable = H100 * 97 // 100
    assert near_limit(usable, usable, H100)
    assert near_limit(usable - H100 * 29 // 1000, usable, H100)
    assert not near_limit(usable - H100 * 31 // 1000, usable, H100)
    assert not near_limit(usable + 1, usable, H100)  # over the limit is an OOM, not "near"
