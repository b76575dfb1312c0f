"""TE's userbuffers (constraints/memory/userbuffers.py): the bytes `--tp-comm-overlap` holds on every rank, from TE's
initialize_ub defaults (transformer_engine/pytorch/module/base.py @d0067d0d) and Megatron's buffer shape
(megatron/training/initialize.py:223-227 @d98e8a64); the solver's tables price the same bytes as check."""
from __future__ import annotations

from constraints.memory.per_rank import memory_report
from constraints.memory.userbuffers import userbuffer_bytes
from constraints.models.load import load_model
from constraints.spec import JobSpec, Precision, Recipe

GIB = 1024 ** 3


def llama70b_recipe(**over) -> Recipe:
    return Recipe(**{"tp": 4, "pp": 8, "mbs": 1, "sequence_parallel": True, "tp_comm_overlap": True, **over})


def test_bf16_buffers_are_twelve_full_activations():
    # Llama3-70B at seq 8192 (Megatron-Bridge's userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192 shape): 12 GEMM
    # buffers of 8192 x 8192 bf16 = 128 MiB each, whatever the TP size (the shape is global)
    model = load_model("Llama-3.1-70B")
    job = JobSpec(seq_length=8192, global_batch_size=128)
    assert userbuffer_bytes(model, job, llama70b_recipe()) == 12 * 128 * 1024 ** 2 == int(1.5 * GIB)
    assert userbuffer_bytes(model, job, llama70b_recipe(tp=8)) == int(1.5 * GIB)
    assert userbuffer_bytes(model, job, llama70b_recipe(mbs=2, cp=2)) == int(1.5 * GIB)  # seq x mbs / CP
    assert userbuffer_bytes(model, job, llama70b_recipe(tp_comm_overlap=False)) == 0


def test_fp8_all_gather_buffers_are_one_byte_and_bf16_layers_add_a_bf16_set():
    model = load_model("Llama-3.1-70B")
    fp8 = JobSpec(seq_length=8192, global_batch_size=128, precision=Precision.fp8_tensorwise)
    assert userbuffer_bytes(model, fp8, llama70b_recipe()) == (8 * 1 + 4 * 2) * 8192 * 8192 == GIB
    first_last = fp8.model_copy(update={"bf16_layers_at_start": 1, "bf16_layers_at_end": 1})
    assert userbuffer_bytes(model, first_last, llama70b_recipe()) == GIB + int(1.5 * GIB)
    nvfp4 = JobSpec(seq_length=8192, global_batch_size=128, precision=Precision.nvfp4)  # Megatron: args.fp8 is None
    assert userbuffer_bytes(model, nvfp4, llama70b_recipe()) == int(1.5 * GIB)


def test_every_rank_carries_the_term():
    model = load_model("Llama-3.1-70B")
    job = JobSpec(seq_length=8192, global_batch_size=128)
    on = memory_report(model, job, llama70b_recipe(), 256, 80 * GIB)
    off = memory_report(model, job, llama70b_recipe(tp_comm_overlap=False), 256, 80 * GIB)
    for a, b in zip(on.stages, off.stages):
        assert a.total_bytes - b.total_bytes == a.terms["userbuffers"] == int(1.5 * GIB)
