"""`--tp-comm-overlap` in the projection (measure/projection/layer_cost.py overlapped_tp_s): TE hides each TP
collective behind a GEMM of its own layer (transformer_engine/pytorch/module/base.py:350-360 @d0067d0d), so no more
than the pass's GEMM time is hidden, and the calibration's exposed fraction stays visible."""
from __future__ import annotations

from constraints.spec import MoeDispatcher
from hardware.profile import load_profile
from measure.projection.layer_cost import LayerParts, finish_parts, overlapped_tp_s


def test_hidden_time_is_bounded_by_the_pass_gemms():
    fwd, bwd = overlapped_tp_s(0.010, 0.004, 0.030, 0.1)
    assert abs(fwd - 0.006) < 1e-12   # 4 ms of forward GEMMs hide 4 of 10 ms
    assert abs(bwd - 0.001) < 1e-12   # 30 ms of backward GEMMs leave the exposed fraction, 10 % of 10 ms


def test_core_attention_hides_nothing():
    cal = load_profile("h100-sxm-80gb").calibration
    parts = LayerParts(fwd_s=0.005, dgrad_s=0.004, wgrad_s=0.004, fwd_by_module_s={"core_attn": 0.004}, tp_raw_s=0.003,
                       ep_raw_by_dispatcher_s={d: 0.0 for d in MoeDispatcher}, cp_s=0.0, dense_params=0, expert_params=0)
    on = finish_parts(parts, frozenset(), True, MoeDispatcher.alltoall, False, cal)
    off = finish_parts(parts, frozenset(), False, MoeDispatcher.alltoall, False, cal)
    assert off.tp_fwd == off.tp_bwd == 0.003
    assert abs(on.tp_fwd - 0.002) < 1e-12  # 1 ms of non-attention forward hides 1 of 3 ms
    assert abs(on.tp_bwd - 0.003 * cal.exposed_comm_fraction) < 1e-12


def test_the_local_impl_overlaps_nothing():
    from constraints.models.load import load_model
    from constraints.spec import JobSpec, Placement, Recipe
    from measure.projection.layer_cost import layer_cost

    model, job = load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=16)
    placement, profile = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8), load_profile("h100-sxm-80gb")
    base = dict(tp=8, sequence_parallel=True, local_transformer_impl=True)
    on = layer_cost(model, job, Recipe(**base, tp_comm_overlap=True), placement, profile, "dense")
    off = layer_cost(model, job, Recipe(**base), placement, profile, "dense")
    assert on.tp_fwd == off.tp_fwd > 0 and on.tp_bwd == off.tp_bwd
