"""`layer_parts` shares op sums across per-rank shapes through `op_cache` (keyed by `attention_key` / `block_key`,
the recipe fields each block reads). A key that misses a field the ops read would silently hand one shape
another's cost, so: every shape priced through one shared cache equals the same shape priced alone, and the
phase sums equal the sums of `layer_ops` timed op by op."""
import itertools

import pytest

from constraints.models.load import load_model
from constraints.spec import JobSpec, MoeDispatcher, Placement, Recipe
from hardware.profile import load_profile
from measure.kernels.layer_ops import LayerKind, Phase, alltoall_sort_ops, layer_ops
from measure.projection.layer_cost import layer_parts, timed_ops

PROF = load_profile("h100-sxm-80gb")
PLACE = Placement(hardware="h100-sxm-80gb", num_nodes=4, gpus_per_node=8)
JOB = JobSpec(seq_length=4096, global_batch_size=256)
FP8_JOB = JobSpec(seq_length=4096, global_batch_size=256, precision="fp8-tensorwise")  # adds cast ops to every GEMM


def _shapes(model):
    moe = model.is_moe
    for tp, cp, mbs, sp in itertools.product((1, 2, 4), (1, 2), (1, 2), (False, True)):
        for ep, etp in (((1, None), (4, 1), (8, 1), (4, 2), (2, None)) if moe else ((1, None),)):
            if sp and tp == 1:
                continue
            yield Recipe(tp=tp, cp=cp, mbs=mbs, sequence_parallel=sp, ep=ep, etp=etp)


@pytest.mark.parametrize("name,job", [("Llama-3.1-8B", JOB), ("Mixtral-8x7B-v0.1", JOB), ("DeepSeek-V3", JOB),
                                      ("Qwen3-30B-A3B", JOB), ("Qwen3-30B-A3B", FP8_JOB), ("Llama-3.1-8B", FP8_JOB)])
def test_shared_cache_equals_fresh_and_op_sums(name, job):
    model = load_model(name)
    kinds = [LayerKind.moe, LayerKind.dense] if model.is_moe else [LayerKind.dense]
    shared: dict = {}
    n = 0
    for r in _shapes(model):
        for kind in kinds:
            got = layer_parts(model, job, r, PLACE, PROF, kind, op_cache=shared)
            alone = layer_parts(model, job, r, PLACE, PROF, kind)
            assert got == alone, (r, kind)
            # layer_parts keeps the alltoall dispatcher's own re-sorts apart (alltoall_sort_*), so its phase and module
            # sums are those of the flex dispatcher's op list, which has none
            flex = r.model_copy(update={"moe_dispatcher": MoeDispatcher.flex})
            timed = timed_ops(layer_ops(model, job, flex, kind), PROF, None, None, PROF.calibration.moe_load_imbalance)
            sorts = timed_ops(alltoall_sort_ops(model, job, r) if kind == LayerKind.moe else [], PROF, None, None,
                              PROF.calibration.moe_load_imbalance)
            assert got.alltoall_sort_fwd_s == pytest.approx(sum(t for p, t in sorts if p.phase == Phase.fwd), rel=1e-12)
            wgrad = sum(t for p, t in timed if p.phase == Phase.bwd_wgrad)
            assert got.wgrad_s == pytest.approx(wgrad, rel=1e-12)
            for module in {p.module for p, _ in timed if p.phase == Phase.fwd}:  # every module recompute may re-run
                fwd = sum(t for p, t in timed if p.phase == Phase.fwd and p.module == module)
                assert got.fwd_by_module_s[module] == pytest.approx(fwd, rel=1e-12), module
            core = sum(t for p, t in timed if p.phase == Phase.fwd and p.module == "core_attn")
            assert got.fwd_by_module_s["core_attn"] == pytest.approx(core, rel=1e-12)
            n += 1
    assert n >= 10
