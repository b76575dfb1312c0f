"""What `--overlap-moe-expert-parallel-comm` can hide: Megatron's combined 1F1B layer step on two CUDA streams.

Why a schedule and not "the A2A hides behind the other micro-batch's compute": Megatron-LM pairs one micro-batch's
forward of layer l with another's backward of a layer, and runs the pair as fixed nodes on a compute and a communication
stream (megatron/core/models/common/model_chunk_schedule_plan.py:236-302 at d98e8a64, `TransformerLayerSchedulePlan.run`):

    comm_stream: combine_bwd       | dispatch_fwd -> dispatch_bwd   | combine_fwd
    comp_stream: pre_dispatch_fwd  | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | pre_dispatch_bwd (-> its wgrad)

where `pre_dispatch` is attention, the pre-MLP norm, shared experts, router and permute and `mlp` the routed experts
(megatron/core/models/gpt/fine_grained_callables.py:67-217 at d98e8a64). Each node waits for its data: the backward
experts for the backward combine, the forward dispatch for the forward attention, the forward experts for the forward
dispatch, the backward dispatch for the backward experts, the backward attention for the backward dispatch; the next
layer's forward attention waits for this layer's forward combine and its backward combine for this backward attention.
So a dispatch or combine hides only behind the one compute node it is paired with, never behind the whole opposite
pass: where the experts are small beside the A2A (many small experts, fine-grained MoE), most of it stays exposed.

`layer_pair_period_s` is that dependency graph in max-plus arithmetic (each node ends at max(its stream free, its
input ready) + its time), run over `_LAYERS` identical layers; the steady-state period is the time one layer's
forward + backward pair takes. It works on floats and numpy arrays alike, so the scalar projection
(measure/projection/layer_cost.py `finish_parts`) and the vectorised one (measure/projection/layer_columns.py
`finish_columns`) price the overlap with the same function.
"""
from __future__ import annotations

import numpy as np

_LAYERS = 6  # the period is read between layers 2 and 6: the first layer's start-up (nothing yet on either stream) is left out


def layer_pair_period_s(attn_fwd_s, expert_fwd_s, expert_dgrad_s, expert_wgrad_s, attn_dgrad_s, attn_wgrad_s, a2a_s):
    """Seconds per layer of a forward paired with a backward under the combined 1F1B schedule (module docstring).
    `a2a_s`: one dispatch or one combine (the forward's dispatch + combine is 2 x a2a_s, so is the backward's);
    attention = everything of the layer outside the routed experts. Scalars or broadcastable numpy arrays."""
    comp = comm = attn_dgrad_done = combine_fwd_done = 0.0
    ends = []
    for _ in range(_LAYERS):
        combine_bwd = np.maximum(comm, attn_dgrad_done) + a2a_s
        attn_fwd = np.maximum(comp, combine_fwd_done) + attn_fwd_s
        expert_dgrad = np.maximum(attn_fwd, combine_bwd) + expert_dgrad_s
        comp = expert_dgrad + expert_wgrad_s
        dispatch_fwd = np.maximum(combine_bwd, attn_fwd) + a2a_s
        dispatch_bwd = np.maximum(dispatch_fwd, expert_dgrad) + a2a_s
        expert_fwd = np.maximum(comp, dispatch_fwd) + expert_fwd_s
        combine_fwd_done = np.maximum(dispatch_bwd, expert_fwd) + a2a_s
        attn_dgrad_done = np.maximum(expert_fwd, dispatch_bwd) + attn_dgrad_s
        comp, comm = attn_dgrad_done + attn_wgrad_s, combine_fwd_done
        ends.append(np.maximum(comp, comm))
    return (ends[-1] - ends[1]) / (_LAYERS - 2)


def exposed_ep_pair_s(fwd_s, dgrad_s, wgrad_s, expert_fwd_s, expert_dgrad_s, expert_wgrad_s, ep_raw_s, exposed_fraction):
    """EP seconds a paired forward + backward of one layer still shows under the overlap: the schedule's period less the
    layer's compute, and never under `exposed_fraction` of both passes' traffic (the calibration's share of any overlapped
    collective that shows: the A2A kernels take SMs and HBM bandwidth from the compute they run beside).
    `ep_raw_s`: one pass's dispatch + combine; the expert times are the routed experts' share of the pass times."""
    period = layer_pair_period_s(fwd_s - expert_fwd_s, expert_fwd_s, expert_dgrad_s, expert_wgrad_s,
                                 dgrad_s - expert_dgrad_s, wgrad_s - expert_wgrad_s, ep_raw_s / 2)
    return np.maximum(period - (fwd_s + dgrad_s + wgrad_s), 2 * ep_raw_s * exposed_fraction)
