"""Context parallelism in an MoE layer (issue 32 item 2): the ring's K/V exchange per micro-batch, its overlap with the
forward and backward attention, and the MoE all-to-all volume per CP rank (tokens per rank = MBS x s / CP)."""
import pytest

from constraints.models.load import load_model
from constraints.spec import JobSpec, MoeDispatcher, Placement, Recipe
from hardware.profile import load_profile
from measure.comm import collectives as col
from measure.comm.topology import recipe_groups
from measure.kernels.layer_ops import LayerKind
from measure.projection.layer_cost import ATTENTION_BWD_OVER_FWD, cp_ring_s, layer_parts

H100 = load_profile("h100-sxm-80gb")
QWEN = load_model("Qwen3-235B-A22B")  # 4 KV heads of 128
PLACE = Placement(hardware="h100-sxm-80gb", num_nodes=4, gpus_per_node=8)


def _recipe(cp: int, mbs: int = 1) -> Recipe:
    return Recipe(tp=4, cp=cp, ep=8, etp=1, mbs=mbs, sequence_parallel=True)


def test_ring_moves_each_rank_kv_shard_once_per_step():
    """K and V of MBS x s / CP tokens, 1 KV head per TP-4 rank, head dim 128, bf16, CP - 1 steps; MBS counted once."""
    r = _recipe(cp=4, mbs=2)
    groups = recipe_groups(r, H100, PLACE)
    t_tok = 2 * 65536 // 4
    fwd, _ = cp_ring_s(QWEN, r, t_tok, groups, H100, attention_fwd_s=0.0)
    assert fwd == pytest.approx(3 * col.p2p_s(2 * t_tok * 1 * 128 * 2, groups.cp.num_domains > 1, H100))


def test_ring_hides_behind_forward_and_backward_attention():
    r = _recipe(cp=4)
    groups = recipe_groups(r, H100, PLACE)
    ring, _ = cp_ring_s(QWEN, r, 16384, groups, H100, attention_fwd_s=0.0)
    fwd, bwd = cp_ring_s(QWEN, r, 16384, groups, H100, attention_fwd_s=ring / 2)
    assert fwd == pytest.approx(ring / 2)  # half hidden by the forward attention
    assert bwd == pytest.approx(2 * ring - ATTENTION_BWD_OVER_FWD * ring / 2)  # K,V and dK,dV behind 2.5x that
    long_fwd, long_bwd = cp_ring_s(QWEN, r, 16384, groups, H100, attention_fwd_s=10 * ring)
    f = H100.calibration.exposed_comm_fraction
    assert long_fwd == pytest.approx(ring * f) and long_bwd == pytest.approx(2 * ring * f)


def test_a2a_volume_per_rank_halves_at_cp2():
    """The dispatcher of a CP rank moves its own s / CP tokens: CP 2 at 8k moves what CP 1 at 4k moves, less than CP 1
    at 8k."""
    def ep_s(seq: int, cp: int) -> float:
        parts = layer_parts(QWEN, JobSpec(seq_length=seq, global_batch_size=1), _recipe(cp), PLACE, H100, LayerKind.moe)
        return parts.ep_raw_by_dispatcher_s[MoeDispatcher.alltoall]

    assert ep_s(8192, 2) == pytest.approx(ep_s(4096, 1), rel=1e-9)
    assert ep_s(8192, 2) < ep_s(8192, 1)


def test_long_context_layer_prices_the_ring_behind_attention():
    """At 128k, CP 8 the ring is far shorter than the attention: only the exposed fraction shows, both ways."""
    parts = layer_parts(QWEN, JobSpec(seq_length=131072, global_batch_size=1), _recipe(8), PLACE, H100, LayerKind.moe)
    groups = recipe_groups(_recipe(8), H100, PLACE)
    ring, _ = cp_ring_s(QWEN, _recipe(8), 16384, groups, H100, attention_fwd_s=0.0)
    f = H100.calibration.exposed_comm_fraction
    assert parts.cp_s == pytest.approx(ring * f) and parts.cp_bwd_s == pytest.approx(2 * ring * f)
