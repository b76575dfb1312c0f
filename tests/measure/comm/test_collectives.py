"""Alpha-beta collectives and Megatron rank-order placement."""
import pytest

from constraints.spec import Placement, Recipe
from hardware.profile import load_profile
from measure.comm import collectives as col
from measure.comm.topology import group_span, recipe_groups

H100 = load_profile("h100-sxm-80gb")


def test_tp_inside_node_dp_across_nodes():
    place = Placement(hardware="h100-sxm-80gb", num_nodes=4, gpus_per_node=8)
    g = recipe_groups(Recipe(tp=8, pp=1), H100, place)
    assert (g.tp.per_domain, g.tp.num_domains) == (8, 1)
    assert (g.dp.per_domain, g.dp.num_domains) == (1, 4)  # stride 8 = one member per node
    g2 = recipe_groups(Recipe(tp=2, pp=1), H100, place)
    assert (g2.dp.per_domain, g2.dp.num_domains) == (4, 4)


def test_ring_all_reduce_bandwidth_term_inside_node():
    # 8 GPUs, 1 GB: 2*(7/8)*1e9 / (450e9*eff) + 14 * 1.9 us + fixed overhead
    span = group_span(8, 1, H100, Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8))
    cal = H100.calibration
    expect = 2 * 7 / 8 * 1e9 / (450e9 * cal.collective_bandwidth_efficiency) + 14 * 1.9e-6 + cal.collective_fixed_overhead_us * 1e-6
    assert col.all_reduce_s(1e9, span, H100) == pytest.approx(expect)
    assert col.reduce_scatter_s(1e9, span, H100) < col.all_reduce_s(1e9, span, H100)


def test_hierarchical_beats_flat_ring_across_nodes():
    place = Placement(hardware="h100-sxm-80gb", num_nodes=8, gpus_per_node=8)
    span = group_span(64, 1, H100, place)
    cal = H100.calibration
    flat_ring = 2 * 63 / 64 * 1e9 / (50e9 * cal.collective_bandwidth_efficiency)
    assert col.all_reduce_s(1e9, span, H100) < flat_ring


def test_all_to_all_cost_grows_when_leaving_nvlink():
    inside = group_span(8, 1, H100, Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8))
    across = group_span(16, 1, H100, Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8))
    assert col.all_to_all_s(1e8, across, H100) > 3 * col.all_to_all_s(1e8, inside, H100)


def test_single_rank_groups_cost_nothing():
    span = group_span(1, 1, H100, Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8))
    assert col.all_reduce_s(1e9, span, H100) == 0.0 and col.all_to_all_s(1e9, span, H100) == 0.0
