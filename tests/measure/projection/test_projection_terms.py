"""The projection's physical terms one by one: fp8 casts, MoE permutes, grouped-GEMM tokens, node-deduplicated
dispatch, per-micro-batch FSDP traffic and the host floor."""
import pytest

from constraints.models.load import load_model
from constraints.spec import DataParallelSharding, JobSpec, MoeDispatcher, Placement, Precision, Recipe
from hardware.profile import load_profile
from measure.comm import collectives as col
from measure.comm.topology import GroupSpan
from measure.kernels.layer_ops import LayerKind, Phase, layer_ops
from measure.kernels.ops import OpKind
from measure.kernels.roofline import grouped_token_efficiency
from measure.projection.layer_cost import layer_cost
from measure.projection.project import project

H100 = load_profile("h100-sxm-80gb")
QWEN_MOE = load_model("Qwen3-30B-A3B")
LLAMA8 = load_model("Llama-3.1-8B")
JOB = JobSpec(seq_length=4096, global_batch_size=256, precision=Precision.bf16)


def test_fp8_adds_one_cast_per_gemm_input_and_gradient():
    """TE quantises X (m x k) before the forward GEMM and dY (m x n) before the backward ones; bf16 has none. Under
    current scaling (tensorwise) a QKV input, fed by TE's fused norm that writes its amax, is read once (2 B) and written
    as fp8 (1 B), plus its transposed copy (1 B) where FP8 GEMMs are TN only (an op of its own: Hopper;
    measure/kernels/quantization.py); the projection's input takes one more 2 B read for its amax."""
    r = Recipe(tp=1)
    bf16 = [p for p in layer_ops(LLAMA8, JOB, r, LayerKind.dense) if p.op.kind == OpKind.elementwise]
    fp8_job = JOB.model_copy(update={"precision": Precision.fp8_tensorwise})
    fp8 = [p for p in layer_ops(LLAMA8, fp8_job, r, LayerKind.dense) if p.op.kind == OpKind.elementwise]
    casts = [p for p in fp8 if p.op.dtype == "bf16" and not p.host_op]
    assert len(fp8) - len(bf16) == 2 * 2 * 4  # qkv, proj, fc1, fc2: a forward and a backward pass each, with its copy
    assert len(casts) == 2 * 4
    qkv_cast = next(p for p in casts if p.module == "qkv" and p.phase == Phase.fwd)
    assert qkv_cast.op.shape == (4096 * 4096,) and qkv_cast.bytes_moved == 3 * 4096 * 4096
    proj_cast = next(p for p in casts if p.module == "proj" and p.phase == Phase.fwd)
    assert proj_cast.bytes_moved == 5 * 4096 * 4096


def test_moe_layer_has_router_topk_and_two_permutes_each_way():
    r = Recipe(ep=8)
    moe = [p for p in layer_ops(QWEN_MOE, JOB, r, LayerKind.moe) if p.phase == Phase.fwd and p.op.kind == OpKind.elementwise]
    copies = 4096 * QWEN_MOE.moe_router_topk * QWEN_MOE.hidden_size
    # forced balance: 16 local experts x 2048 tokens = the same 32768 copies; permute and unpermute around the
    # dispatch, and the local re-sorts by expert before and after the grouped GEMMs
    assert 16 * 2048 * QWEN_MOE.hidden_size == copies
    assert sum(1 for p in moe if p.module == "moe" and p.op.shape == (copies,)) == 4
    one_rank = [p for p in layer_ops(QWEN_MOE, JOB, Recipe(ep=1), LayerKind.moe) if p.phase == Phase.fwd and p.op.kind == OpKind.elementwise]
    assert sum(1 for p in one_rank if p.module == "moe" and p.op.shape == (copies,)) == 2  # EP=1: no re-sort
    assert any(p.module == "router" and p.op.shape == (4096 * QWEN_MOE.num_experts,) for p in moe)
    # the flex dispatcher (DeepEP / HybridEP) has no re-sort: one permute by expert after the dispatch, one back
    flex = [p for p in layer_ops(QWEN_MOE, JOB, Recipe(ep=8, moe_dispatcher=MoeDispatcher.flex), LayerKind.moe)
            if p.phase == Phase.fwd and p.op.kind == OpKind.elementwise]
    assert sum(1 for p in flex if p.module == "moe" and p.op.shape == (copies,)) == 2


def test_flex_dispatcher_layer_is_cheaper_by_the_alltoall_resorts():
    """finish_parts adds the alltoall dispatcher's two re-sort passes (fwd and bwd) to its compute and nothing to flex."""
    from measure.projection.layer_cost import finish_parts, layer_parts
    place = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    parts = layer_parts(QWEN_MOE, JOB, Recipe(ep=8), place, H100, LayerKind.moe)
    a2a = finish_parts(parts, frozenset(), False, MoeDispatcher.alltoall, False, H100.calibration)
    flex = finish_parts(parts, frozenset(), False, MoeDispatcher.flex, False, H100.calibration)
    copies_bytes = 2 * 4 * 4096 * QWEN_MOE.moe_router_topk * QWEN_MOE.hidden_size  # two passes, each a bf16 read + write
    bw = H100.hbm_bandwidth_gb_per_s * 1e9 * H100.calibration.memory_bound_efficiency
    assert a2a.fwd - flex.fwd == pytest.approx(copies_bytes / bw + 2 * H100.calibration.kernel_launch_us * 1e-6, rel=1e-6)
    assert a2a.dgrad - flex.dgrad == pytest.approx(a2a.fwd - flex.fwd, rel=1e-6)


def test_grouped_gemm_efficiency_saturates_in_tokens_per_expert():
    cal = H100.calibration.model_copy(update={"grouped_gemm_half_tokens": 256.0, "grouped_gemm_relative_efficiency": 0.8})
    assert grouped_token_efficiency(cal, 256) == pytest.approx(0.4)
    assert grouped_token_efficiency(cal, 64) == pytest.approx(0.8 * 64 / 320)
    assert grouped_token_efficiency(cal, 1e9) == pytest.approx(0.8, rel=1e-6)


def test_node_dedup_dispatch_sends_each_token_once_per_remote_node():
    """4 nodes x 8 GPUs, top-8 of uniformly spread experts: a token reaches 3 * (1 - (3/4)^8) = 2.70 other nodes
    instead of 8 * 24/32 = 6 remote copies (DeepEP internode dispatch)."""
    span = GroupSpan(size=32, per_domain=8, num_domains=4, crosses_pod=False)
    token_bytes = 4096 * 7168 * 2
    _, _, b_out, a_out = col._links(H100, span)
    remote = 3 * (1 - 0.75 ** 8)
    expect_inter = token_bytes * remote / b_out + a_out + H100.calibration.collective_fixed_overhead_us * 1e-6
    assert col.node_dedup_all_to_all_s(token_bytes, 8, span, H100) == pytest.approx(expect_inter)
    assert col.node_dedup_all_to_all_s(token_bytes, 8, span, H100) < 0.5 * col.all_to_all_s(8 * token_bytes, span, H100)
    one_node = GroupSpan(size=8, per_domain=8, num_domains=1, crosses_pod=False)
    assert col.node_dedup_all_to_all_s(token_bytes, 8, one_node, H100) == col.all_to_all_s(8 * token_bytes, one_node, H100)


def test_flex_dispatcher_cuts_cross_node_ep_time():
    place = Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8)
    a2a = Recipe(ep=16)
    flex = a2a.model_copy(update={"moe_dispatcher": MoeDispatcher.flex})
    t_a2a = layer_cost(QWEN_MOE, JOB, a2a, place, H100, LayerKind.moe).ep_fwd
    t_flex = layer_cost(QWEN_MOE, JOB, flex, place, H100, LayerKind.moe).ep_fwd
    assert t_flex < 0.6 * t_a2a


def test_fsdp_gathers_and_reduces_every_micro_batch():
    """ZeRO-3 pays 3 passes per micro-batch against the distributed optimizer's 2 per step."""
    place = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    job = JobSpec(seq_length=8192, global_batch_size=64, precision=Precision.bf16)
    base = Recipe(tp=1, overlap_grad_reduce=False, overlap_param_gather=False)
    dist = project(LLAMA8, job, base, place, H100).breakdown.dp_comm
    fsdp = project(LLAMA8, job, base.model_copy(update={"dp_sharding": DataParallelSharding.megatron_fsdp}), place, H100).breakdown.dp_comm
    m = 64 // 8
    assert fsdp == pytest.approx(dist * 3 * m / 2, rel=1e-9)


def test_host_floor_bounds_a_pass_by_its_ops_host_time():
    slow_host = H100.model_copy(update={"calibration": H100.calibration.model_copy(update={"host_time_per_op_us": 1e5})})
    place = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
    r = Recipe(tp=1)
    n_fwd = sum(1 for p in layer_ops(LLAMA8, JOB, r, LayerKind.dense) if p.phase == Phase.fwd)
    lc = layer_cost(LLAMA8, JOB, r, place, slow_host, LayerKind.dense)
    assert lc.fwd == pytest.approx(n_fwd * 0.1)


def test_ep_overlap_shows_what_the_combined_1f1b_layer_schedule_leaves():
    """--overlap-moe-expert-parallel-comm (Megatron model_chunk_schedule_plan.py, measure/projection/ep_overlap_schedule.py):
    a short A2A leaves the exposed fraction, a long one what the schedule cannot hide, split over both passes."""
    from measure.projection.ep_overlap_schedule import layer_pair_period_s
    from measure.projection.layer_cost import finish_parts, layer_parts
    place = Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8)
    r = Recipe(ep=16)
    cal = H100.calibration
    for prof in (H100, H100.model_copy(update={"nic_bandwidth_gbit_per_s": 0.4})):
        parts = layer_parts(QWEN_MOE, JOB, r, place, prof, LayerKind.moe)
        raw = parts.ep_raw_by_dispatcher_s[MoeDispatcher.alltoall]
        off = finish_parts(parts, frozenset(), False, MoeDispatcher.alltoall, False, cal)
        on = finish_parts(parts, frozenset(), False, MoeDispatcher.alltoall, True, cal)
        assert off.ep_fwd == off.ep_bwd == raw
        # the alltoall dispatcher's compute includes its own token re-sorts (layer_ops.alltoall_sort_ops), run by the experts
        assert parts.alltoall_sort_fwd_s > 0 and 0 < parts.expert_fwd_s < parts.fwd_s
        fwd_s, dgrad_s = parts.fwd_s + parts.alltoall_sort_fwd_s, parts.dgrad_s + parts.alltoall_sort_bwd_s
        ef, ed = parts.expert_fwd_s + parts.alltoall_sort_fwd_s, parts.expert_dgrad_s + parts.alltoall_sort_bwd_s
        period = layer_pair_period_s(fwd_s - ef, ef, ed, parts.expert_wgrad_s, dgrad_s - ed, parts.wgrad_s - parts.expert_wgrad_s,
                                     raw / 2)
        compute = fwd_s + dgrad_s + parts.wgrad_s
        assert on.ep_fwd == on.ep_bwd == pytest.approx(max(period - compute, 2 * raw * cal.exposed_comm_fraction) / 2)
        assert on.ep_fwd + on.ep_bwd <= off.ep_fwd + off.ep_bwd
    assert on.ep_fwd > raw * cal.exposed_comm_fraction  # the slow link: more than the fraction stays exposed


def test_attention_rate_follows_flashattention3_head_dim_scaling():
    """FlashAttention-3 (arXiv 2407.08608, Fig. 5, H100 BF16 forward, 16k, non-causal): 497 / 648 / 756 TFLOP/s at head
    dim 64 / 128 / 256; the parts' attention microbenchmarks are head-dim-128 kernels."""
    from measure.kernels.roofline import attention_head_dim_factor, roofline_time_s
    assert attention_head_dim_factor(128) == pytest.approx(1.0)
    assert attention_head_dim_factor(64) == pytest.approx(497 / 648, rel=0.01)
    assert attention_head_dim_factor(256) == pytest.approx(756 / 648, rel=0.02)
    # gpt-oss's head-dim-64 core attention runs at a lower rate per FLOP than Llama's head-dim-128 one
    oss = load_model("gpt-oss-120b")

    def rate(model):
        op = next(p for p in layer_ops(model, JOB, Recipe(), LayerKind.dense if not model.is_moe else LayerKind.moe)
                  if p.op.kind == OpKind.attention_fwd)
        return op.flops / (roofline_time_s(op, H100) - H100.calibration.kernel_launch_us * 1e-6)
    assert rate(oss) / rate(LLAMA8) == pytest.approx(attention_head_dim_factor(64), rel=0.02)
