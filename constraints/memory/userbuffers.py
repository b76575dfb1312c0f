"""Transformer Engine's userbuffers: the communication buffers `--tp-comm-overlap` allocates once, in exact bytes.

Why a term of its own: the buffers are allocated by TE's C++ (cuMemCreate, or cudaMalloc on the CUDA IPC path:
transformer_engine/common/comm_gemm_overlap/userbuffers/userbuffers-host.cpp:514-665 @d0067d0d), outside PyTorch's
caching allocator, so they hold HBM for the whole run but never show in torch's `max_memory_allocated` (what
Megatron logs as `mem-max-allocated-bytes`). They count towards fit, and the bench subtracts them with the framework
reserve where it compares with allocated bytes (bench/megatron_golden/compare.py, bench/validate_memory.py).

Sources (NVIDIA/Megatron-LM @d98e8a64, NVIDIA/TransformerEngine @d0067d0d):
- Megatron calls TE's `initialize_ub` whenever `--tp-comm-overlap` is set (megatron/training/initialize.py:164-166,
  whatever the transformer impl), with the buffer shape (seq_length x micro_batch_size / CP, hidden)
  (:223-227), no dtype (TE's default bf16, transformer_engine/pytorch/module/base.py:156), and one quantization mode:
  FP8 under fp8, else NONE, plus NONE again when fp8 keeps first / last layers in bf16 (:229-238).
- TE builds one communicator per GEMM of a transformer layer per quantization mode
  (base.py:350-360, the `methods` table: ring_exchange qkv_fprop, fc1_fprop,
  proj_dgrad, fc2_dgrad; pipeline proj_fprop, fc2_fprop; bulk qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad; external
  proj_wgrad, fc2_wgrad: 12), every one over the same shape (:560-569 calls `add_ub` for each).
- A buffer is 1 B per element (uint8) in the FP8 mode for the all-gather layers (`fp8_buf`, base.py:336-346, :391
  and :472-476), else 2 B (bf16).
- Bytes per buffer: the full shape for `CommOverlap` (comm_gemm_overlap.cpp:419) and for an all-gather
  `CommOverlapP2P` (:813); a reduce-scatter P2P buffer holds 2 x TP - 1 chunks (:816-820), which only a user
  `--tp-comm-overlap-cfg` selects (by default no reduce-scatter GEMM runs ring_exchange), so it is not priced.
Not counted: the driver's allocation granularity rounding each buffer up (cuMemGetAllocationGranularity), and the
communicator's flag pages (a few MiB, userbuffers-host.cpp:355-376).
Userbuffers-host allocation: cuMemCreate at userbuffers-host.cpp:557, cudaMalloc at :660.
"""
from __future__ import annotations

from constraints.spec import JobSpec, ModelSpec, Recipe

# base.py:336-345: the GEMMs whose buffer is fp8 (`fp8_buf`) under the FP8 quantization mode
ALL_GATHER_GEMMS = ("qkv_fprop", "qkv_dgrad", "proj_dgrad", "proj_wgrad", "fc1_fprop", "fc1_dgrad", "fc2_dgrad",
                    "fc2_wgrad")
# base.py:346: the reduce-scatter GEMMs, whose buffer stays bf16
REDUCE_SCATTER_GEMMS = ("proj_fprop", "fc2_fprop", "qkv_wgrad", "fc1_wgrad")
BF16_BUFFER_BYTES = 2  # initialize_ub's default dtype, torch.bfloat16 (base.py:156)
FP8_BUFFER_BYTES = 1   # torch.uint8 (base.py:472-476)


def buffer_elements(model: ModelSpec, job: JobSpec, recipe: Recipe) -> int:
    """Elements of one userbuffer: Megatron's `input_shape` (megatron/training/initialize.py:223-227), seq x mbs // CP by hidden."""
    return (job.seq_length * recipe.mbs) // recipe.cp * model.hidden_size


def userbuffer_bytes(model: ModelSpec, job: JobSpec, recipe: Recipe) -> int:
    """HBM TE's userbuffers hold on every rank of a `--tp-comm-overlap` run (0 without it): one buffer per GEMM of
    ALL_GATHER_GEMMS and REDUCE_SCATTER_GEMMS per quantization mode (module docstring)."""
    if not recipe.tp_comm_overlap:
        return 0
    elements = buffer_elements(model, job, recipe)
    bf16_set = (len(ALL_GATHER_GEMMS) + len(REDUCE_SCATTER_GEMMS)) * BF16_BUFFER_BYTES * elements
    if not job.precision.is_fp8:
        return bf16_set
    fp8_set = (len(ALL_GATHER_GEMMS) * FP8_BUFFER_BYTES + len(REDUCE_SCATTER_GEMMS) * BF16_BUFFER_BYTES) * elements
    return fp8_set + (bf16_set if job.has_bf16_layers else 0)
