"""CUDA graph capture takes the captured kernels out of the host-issue floor (measure/kernels/cuda_graphs.py), and the
published Megatron-Bridge rows carry the capture of their release's preset."""
import pytest

from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Recipe
from hardware.profile import load_profile
from measure.kernels.cuda_graphs import graph_scope, uncaptured_ops
from measure.kernels.layer_ops import LayerKind, Phase, attention_ops, block_ops
from measure.projection.layer_cost import layer_parts

H100 = load_profile("h100-sxm-80gb")
QWEN_MOE = load_model("Qwen3-30B-A3B")
JOB = JobSpec(seq_length=4096, global_batch_size=256)
PLACE = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)


def test_preset_values_normalise_to_megatron_scopes():
    assert graph_scope(None, None) == graph_scope("none", ["full_iteration"]) == frozenset()
    assert graph_scope("full_iteration", []) == frozenset({"full_iteration"})  # Megatron-Bridge's name for it
    assert graph_scope("local", "full_iteration") == frozenset({"full_iteration"})
    assert graph_scope("local", None) == frozenset({"full"})  # the local impl captures whole layers by default
    assert graph_scope("transformer_engine", ["attn", "moe_router", "moe_preprocess"]) == {"attn", "moe_router", "moe_preprocess"}


def _counts(ops):
    fwd = sum(1 for p in ops if p.phase == Phase.fwd)
    return fwd, sum(1 for p in ops if p.phase in (Phase.bwd_dgrad, Phase.bwd_wgrad))


def test_captured_scopes_leave_the_host_floor():
    """With a host time far above the kernels' GPU time, a layer pass takes its uncaptured ops x the host time per op:
    all of them without graphs, the MoE block's less its norm and router under attn + moe_router, none when whole."""
    per_op_s = 1e-3
    # per-expert GEMM launches off: tests/measure/kernels/test_grouped_gemm_launches_per_expert.py holds them
    prof = H100.model_copy(update={"calibration": H100.calibration.model_copy(update={"host_time_per_op_us": per_op_s * 1e6,
                                                                                      "gemm_launch_host_us": 0.0})})
    r = Recipe(ep=8)
    attn, moe = attention_ops(QWEN_MOE, JOB, r), block_ops(QWEN_MOE, JOB, r, LayerKind.moe)
    none = layer_parts(QWEN_MOE, JOB, r, PLACE, prof, LayerKind.moe)
    assert none.fwd_s == pytest.approx(_counts(attn + moe)[0] * per_op_s)
    scope = graph_scope("transformer_engine", ["attn", "moe_router"])
    part = layer_parts(QWEN_MOE, JOB, r, PLACE, prof, LayerKind.moe, cuda_graph_scope=scope)
    left = [p for p in moe if p.module not in ("layernorm", "router")]
    assert part.fwd_s == pytest.approx(_counts(left)[0] * per_op_s)
    assert uncaptured_ops(scope, LayerKind.moe, _counts(attn), {"moe": (3, 5), "router": (2, 2)}) == (3, 5)
    whole = layer_parts(QWEN_MOE, JOB, r, PLACE, prof, LayerKind.moe, cuda_graph_scope=graph_scope("full_iteration", []))
    # GPU time alone: no host time per op and no dispatcher host sync (a full-iteration graph removes both)
    gpu = layer_parts(QWEN_MOE, JOB, r, PLACE, H100.model_copy(update={"calibration": H100.calibration.model_copy(
        update={"host_time_per_op_us": 0.0, "moe_dispatch_overhead_us": 0.0, "gemm_launch_host_us": 0.0})}), LayerKind.moe)
    assert whole.fwd_s == pytest.approx(gpu.fwd_s) and whole.fwd_s < part.fwd_s < none.fwd_s


def test_published_rows_carry_their_presets_capture():
    from bench.runs import load_runs

    cases = {c.id: c for c in load_runs()}
    # Megatron-Bridge 26.08 Qwen3-235B-A22B GB200 MXFP8 preset: full-iteration graphs; 26.04 (MBR-149): TE graphs of
    # attention and the router
    assert cases["MBR-010"].cuda_graph_scope == frozenset({"full_iteration"})
    assert cases["MBR-149"].cuda_graph_scope == frozenset({"attn", "moe_router", "moe_preprocess"})
    assert any("CUDA graphs" in a for a in cases["MBR-010"].assumed)
