"""Transformer Engine's cuBLAS workspaces (constraints/memory/gemm_workspaces.py), sized as TE's
transformer_engine/pytorch/cpp_extensions/gemm.py:37-67 @d0067d0d allocates them, and carried by check's report."""
from __future__ import annotations

from constraints.memory.gemm_workspaces import te_gemm_workspace_bytes
from constraints.memory.per_rank import memory_report
from constraints.models.load import load_model
from constraints.spec import JobSpec, Recipe
from hardware.profile import load_profile

MIB = 1024 ** 2


def test_one_workspace_per_part_generation():
    dense = load_model("Llama-3.1-8B")
    assert te_gemm_workspace_bytes(load_profile("h100-sxm-80gb").compute_capability, dense, Recipe()) == 32 * MIB + 1024
    assert te_gemm_workspace_bytes(load_profile("gb200-nvl72").compute_capability, dense, Recipe()) == 32 * MIB + 1024
    assert te_gemm_workspace_bytes(load_profile("a100-sxm-80gb").compute_capability, dense, Recipe()) == 4 * MIB
    assert te_gemm_workspace_bytes(load_profile("mi300x").compute_capability, dense, Recipe()) == 0  # no TE on CUDA
    assert te_gemm_workspace_bytes(9.0, dense, Recipe(local_transformer_impl=True)) == 0  # no TE GEMM


def test_grouped_experts_and_userbuffers_add_their_streams():
    moe = load_model("Qwen3-30B-A3B")
    one = 32 * MIB + 1024
    assert te_gemm_workspace_bytes(9.0, moe, Recipe(moe_grouped_gemm=True)) == 5 * one   # + 4 compute streams
    assert te_gemm_workspace_bytes(9.0, moe, Recipe(moe_grouped_gemm=False)) == one
    overlap = Recipe(tp=2, sequence_parallel=True, tp_comm_overlap=True, moe_grouped_gemm=False)
    assert te_gemm_workspace_bytes(9.0, moe, overlap) == 4 * one                        # + 3 userbuffers streams


def test_the_report_carries_them_on_every_rank():
    model, job = load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=32)
    recipe = Recipe(pp=2)
    with_cc = memory_report(model, job, recipe, 8, 80 * 1024 ** 3, compute_capability=9.0)
    without = memory_report(model, job, recipe, 8, 80 * 1024 ** 3)
    for a, b in zip(with_cc.stages, without.stages):
        assert a.total_bytes - b.total_bytes == a.terms["gemm_workspaces"] == 32 * MIB + 1024
