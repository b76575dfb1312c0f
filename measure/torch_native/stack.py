"""What a torch-native training stack (torchtitan, NeMo AutoModel, plain PyTorch FSDP) runs, beyond the parallel layout.

Why its own description: these stacks share Megatron's parallel vocabulary (TP, PP, CP, EP, DP) but not its step. The
data-parallel state lives in PyTorch FSDP (FSDP2 `fully_shard` or FSDP1 `FullyShardedDataParallel`), which gathers
each layer's parameters before it runs and reduce-scatters its gradients right after its backward; kernels are eager
PyTorch unless `torch.compile` fuses them (or Transformer Engine modules replace them); float8 comes from torchao, not
Transformer Engine; tensor-parallel overlap is PyTorch's async TP, not userbuffers (refused by the step model);
activation checkpointing is PyTorch's, with torchtitan's per-op and per-layer policies. measure/torch_native/step.py prices a step from these.
"""
from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class FsdpVersion(str, Enum):
    """fsdp2: `torch.distributed.fsdp.fully_shard` (per-parameter DTensor sharding). full_shard / shard_grad_op: FSDP1
    `ShardingStrategy.FULL_SHARD` (ZeRO-3: parameters gathered again for the backward) and `SHARD_GRAD_OP` (ZeRO-2:
    parameters kept unsharded from forward to backward), https://pytorch.org/docs/stable/fsdp.html."""

    fsdp2 = "fsdp2"
    full_shard = "full_shard"
    shard_grad_op = "shard_grad_op"


class ActivationCheckpoint(str, Enum):
    """torchtitan's `[activation_checkpoint] mode` / `selective_ac_option` (torchtitan/config_manager.py): none, full
    (each block's forward runs again in its backward), selective_op (the per-op policy: keep matmul outputs except every
    second one, attention outputs and reduce-scatters; recompute the rest) and selective_layer (every second block
    checkpointed in full, `selective_ac_option = '2'`). AutoModel's `activation_checkpointing: true` is full."""

    none = "none"
    full = "full"
    selective_op = "selective_op"
    selective_layer = "selective_layer"


class TorchNativeStack(BaseModel):
    """The stack settings the torch-native step model reads (measure/torch_native/step.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    fsdp: FsdpVersion = FsdpVersion.fsdp2
    activation_checkpoint: ActivationCheckpoint = ActivationCheckpoint.none
    fused_pointwise: bool = Field(False, description="element-wise ops run fused: torch.compile, or Transformer Engine "
                                  "modules (AutoModel's `linear: te` / `rms_norm: te` backend)")
    eager_norm: bool = Field(False, description="unfused, the norms run as eager PyTorch ops (torchtitan's `norm_type = "
                             "\"rmsnorm\"` without compile; measure/torch_native/pointwise.py)")
    fp8_all_gather: bool = Field(False, description="torchao `enable_fsdp_float8_all_gather`: float8 linear weights are "
                                 "gathered in float8 (1 byte) instead of bf16")
    async_tp: bool = Field(False, description="PyTorch async tensor parallel (torchtitan `enable_async_tensor_parallel`); "
                             "the step model refuses it (measure/torch_native/step.py `refusal`)")
    reduce_bytes_per_elem: int = Field(4, description="gradient reduce-scatter dtype: torchtitan's MixedPrecisionPolicy "
                                       "reduce_dtype float32 (torchtitan/parallelisms/parallelize_llama.py @041336434, "
                                       "config_manager.py mixed_precision_reduce 'float32' @e7c0cae)")
