"""A pass's communication fills the GPU's wait on the host instead of adding to it (layer_cost.comm_filled_host_wait_s).

Measured bound: Megatron-Bridge skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md @067f987d ("HybridEP
Production-Shape Benchmark": Qwen3-30B-A3B, 16 H100, BF16, TP1 / EP16, MBS 1, GBS 1024, flex + HybridEP, TE CUDA
graphs over moe_router + moe_preprocess, EP overlap off) measured a 24.7138 s step whose Nsight "GPU-active interval
union" is 22.821 s: the GPU waits on anything else, the host included, at most 1.893 s of the step.
"""
from __future__ import annotations

import pytest

from bench.runs import load_runs, project_case
from constraints.models.load import load_model
from constraints.spec import JobSpec, MoeDispatcher, Placement, Recipe
from hardware.profile import load_profile
from measure.kernels.layer_ops import LayerKind
from measure.projection.layer_cost import comm_filled_host_wait_s, finish_parts, layer_parts

H100 = load_profile("h100-sxm-80gb")
STEP_S, GPU_ACTIVE_S = 24.7138, 22.821  # the SKILL.md benchmark, overlap off, iterations 5-20


def _host(per_op_us: float, launch_us: float = 0.0, sync_us: float = 0.0):
    cal = H100.calibration.model_copy(update={"host_time_per_op_us": per_op_us, "gemm_launch_host_us": launch_us,
                                              "moe_dispatch_overhead_us": sync_us})
    return H100.model_copy(update={"calibration": cal})


def test_comm_fills_only_the_wait():
    assert comm_filled_host_wait_s(2e-3, 1e-3) == 1e-3
    assert comm_filled_host_wait_s(1e-3, 3e-3) == 1e-3
    assert comm_filled_host_wait_s(0.0, 3e-3) == 0.0


def test_host_bound_pass_pays_its_host_time_not_host_plus_all_to_all():
    """Qwen3-30B-A3B on 2 nodes at EP 16 (the dispatch crosses InfiniBand): with a host far slower than the GPU, a
    pass takes its host time and the all-to-all hides in it; with a free host, compute and all-to-all add up."""
    model = load_model("Qwen3-30B-A3B")
    job = JobSpec(seq_length=4096, global_batch_size=1024)
    place = Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8)
    recipe = Recipe(ep=16)
    slow = layer_parts(model, job, recipe, place, _host(1000.0), LayerKind.moe)
    cost = finish_parts(slow, frozenset(), False, MoeDispatcher.alltoall, False, H100.calibration)
    ep = slow.ep_raw_by_dispatcher_s[MoeDispatcher.alltoall]
    assert 0 < ep < slow.host_wait_fwd_s
    assert cost.fwd + cost.ep_fwd == pytest.approx(slow.fwd_s + slow.alltoall_sort_fwd_s)
    free = layer_parts(model, job, recipe, place, _host(0.0), LayerKind.moe)
    assert free.host_wait_fwd_s == free.host_wait_bwd_s == 0.0
    cost = finish_parts(free, frozenset(), False, MoeDispatcher.alltoall, False, H100.calibration)
    assert cost.fwd + cost.ep_fwd == pytest.approx(free.fwd_s + free.alltoall_sort_fwd_s + ep)


def test_projected_host_idle_within_the_measured_gpu_idle():
    """The benchmark's row (MBSKILL-535) with the shipped constants: the step less the same step with every host term at
    zero (per-op issue, per-GEMM launch, dispatcher sync) is the time the projection has the GPU wait on the host. It
    must fit in the GPU's measured idle time (1.893 s); pricing host and communication one after the other had it
    at 7.5 s."""
    case = next(c for c in load_runs() if c.id == "MBSKILL-535")
    assert case.cuda_graph_scope == {"moe_router", "moe_preprocess"} and case.measured["iter_time_s"] == STEP_S
    step = project_case(case, H100).iteration_time_s
    gpu_only = project_case(case, _host(0.0)).iteration_time_s
    assert 0 < step - gpu_only <= STEP_S - GPU_ACTIVE_S


def test_capturing_attention_and_router_gains_nothing_on_h100_alltoall():
    """Megatron-Bridge skills/nemo-mbridge-perf-cuda-graphs/SKILL.md @067f987d, pitfall 13: Qwen3-30B-A3B, H100, BF16,
    the all-to-all dispatcher, TE graphs over attn + moe_router + moe_preprocess: replay 42.00 s per step against 41.36 s
    eager (no gain). On that shape (the dispatcher skill's 16-GPU EP 16 run, MBSKILL-538) the cross-node all-to-all fills
    the GPU's wait on the host, so removing host ops changes nothing; pricing host and traffic one after the other
    promised 13 % (48.31 -> 42.08 s)."""
    case = next(c for c in load_runs() if c.id == "MBSKILL-538")
    steps = [project_case(case.model_copy(update={"cuda_graph_scope": frozenset(s)}), H100).iteration_time_s
             for s in ((), ("attn", "moe_router", "moe_preprocess"))]
    assert steps[1] / steps[0] == pytest.approx(42.00 / 41.36, abs=0.03)
