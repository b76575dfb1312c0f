"""Bytes the output layer keeps for `--defer-embedding-wgrad-compute`: its weight gradient waits for the pipeline flush.

Why its own module: with the flag, the last pipeline stage's output layer computes no weight gradient in each
micro-batch's backward; it keeps that micro-batch's GEMM input and output gradient in two lists and computes every
weight gradient together during the pipeline flush (megatron/core/models/gpt/gpt_model.py:259-267 @d98e8a64). So
on the rank holding the loss, micro-batches that are done still hold memory:
- `embedding_activation_buffer.append(input_parallel)` in ColumnParallelLinear.forward
  (megatron/core/tensor_parallel/layers.py:1227-1232): the output GEMM's input, T x h activation elements split over
  TP with sequence parallelism (input_parallel is the sequence-sharded input_, layers.py:1220-1223);
- `grad_output_buffer.append(grad_output)` in LinearWithGradAccumulationAndAsyncCommunication.backward
  (layers.py:661-664): the gradient of the logits, T x V/TP elements in the activation dtype.
Both lists keep at most `--wgrad-deferral-limit` entries (0, the default, is unbounded: layers.py:662, :1229;
megatron/core/model_parallel_config.py:410-418) and are emptied by the flush
(megatron/core/pipeline_parallel/schedules.py:894-925 clear_embedding_activation_buffer). The last stage holds one
micro-batch in flight at its peak (the loss of the last micro-batch), so the M - 1 finished ones are held beside it.
"""
from __future__ import annotations

from constraints.memory.activations import Shape
from constraints.spec import ModelSpec, Recipe


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def deferred_embedding_wgrad_bytes(model: ModelSpec, recipe: Recipe, sh: Shape, padded_vocab: int,
                                   num_microbatches: int) -> int:
    """Exact bytes the loss rank holds for finished micro-batches' deferred output-layer weight gradients."""
    if not recipe.defer_embedding_wgrad_compute:
        return 0
    held = num_microbatches - 1
    if recipe.wgrad_deferral_limit:
        held = min(held, recipe.wgrad_deferral_limit)
    if held <= 0:
        return 0
    gemm_input = _ceil_div(sh.act_bytes * sh.tokens * model.hidden_size, sh.sp_div)
    logits_grad = sh.act_bytes * sh.tokens * (padded_vocab // sh.tp)
    return held * (gemm_input + logits_grad)
