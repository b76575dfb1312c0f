"""The p2p CP ring's merge passes (measure/kernels/cp_merge.py): Transformer Engine merges each ring step's partial
output (forward) and partial dQ, dK, dV (backward) outside the attention kernels
(transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py, AttnFuncWithCPAndKVP2P @d0067d0d)."""
import pytest

from constraints.models.load import load_model
from constraints.spec import JobSpec, Recipe
from hardware.profile import load_profile
from measure.kernels.cp_merge import LATER_STEP_SHARE, cp_merge_ops
from measure.kernels.layer_ops import Phase, attention_ops
from measure.kernels.ops import OpKind
from measure.kernels.roofline import roofline_time_s

H100 = load_profile("h100-sxm-80gb")
QWEN = load_model("Qwen3-235B-A22B")  # 64 query heads, 4 KV heads, head dim 128


def _te_step_share(cp: int) -> float:
    """Mean share of a rank's queries one later ring step covers, read off Transformer Engine's causal step table
    (context_parallel.py: rank r, step i: the diagonal at i = 0, the lower triangle, all queries against the first half of
    the K/V shard, for i <= r, the upper triangle, the second half of the queries against all of it, for i > r)."""
    covered = [1.0 if i <= r else 0.5 for r in range(cp) for i in range(1, cp)]
    return sum(covered) / len(covered)


@pytest.mark.parametrize("cp", [2, 3, 4, 8, 16])
def test_later_steps_cover_three_quarters_of_the_queries(cp):
    assert _te_step_share(cp) == pytest.approx(LATER_STEP_SHARE)


def test_no_merge_without_cp():
    assert cp_merge_ops(1, 131072, 2048, 256) == []
    ops = attention_ops(QWEN, JobSpec(seq_length=16384, global_batch_size=1), Recipe(tp=4, cp=1, sequence_parallel=True))
    assert not [p for p in ops if p.module == "core_attn" and p.op.kind == OpKind.elementwise]


def test_merge_bytes_at_the_model_zoo_128k_layout():
    """MOEZOO-764's layout (TP 4, CP 8, 128k, MBS 1): 16384 queries per rank, 16 heads x 128 of output, 1 KV head x
    (128 + 128) of K and V. Forward: the first step 2 passes, the 7 later ones 3 passes over 3/4 of the output, bf16;
    backward: the same over dQ plus dK, dV."""
    ops = attention_ops(QWEN, JobSpec(seq_length=131072, global_batch_size=1), Recipe(tp=4, cp=8, sequence_parallel=True))
    merge = {p.phase: p for p in ops if p.module == "core_attn" and p.op.kind == OpKind.elementwise}
    passes = 2 + 3 * 0.75 * 7
    assert merge[Phase.fwd].bytes_moved == pytest.approx(2 * 16384 * 16 * 128 * passes)
    assert merge[Phase.bwd_dgrad].bytes_moved == pytest.approx(2 * 16384 * (16 * 128 + 256) * passes)


def test_merge_is_a_fixed_share_of_the_attention_at_a_fixed_shard():
    """The Model Zoo's H100 table holds the shard at 16384 tokens (16k CP 1 ... 128k CP 8): per rank the forward kernel
    grows as s x shard and so do the CP - 1 merge passes, so the merge adds the same share at 32k CP 2 as at 128k CP 8,
    5-6 % of the forward kernel's time on H100 (none at CP 1)."""
    def share(seq: int, cp: int) -> float:
        ops = attention_ops(QWEN, JobSpec(seq_length=seq, global_batch_size=1), Recipe(tp=4, cp=cp, sequence_parallel=True))
        kernel = next(p for p in ops if p.op.kind == OpKind.attention_fwd)
        merge = [p for p in ops if p.module == "core_attn" and p.op.kind == OpKind.elementwise and p.phase == Phase.fwd]
        return sum(roofline_time_s(p, H100) for p in merge) / roofline_time_s(kernel, H100)

    shares = [share(32768 * 2 ** i, 2 ** (i + 1)) for i in range(3)]
    assert all(0.04 < x < 0.08 for x in shares)
    assert max(shares) == pytest.approx(min(shares), rel=0.1)
