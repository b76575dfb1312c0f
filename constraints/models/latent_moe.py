"""Latent MoE (Nemotron 3 Super / Ultra; HF `moe_latent_size`, Megatron-LM `--moe-latent-size`): the parameters,
saved activations and weight shapes of the two projections that wrap the routed experts.

Why its own module: a latent MoE layer is an MoE layer whose routed experts run in a narrower width L. The
router scores the full hidden state h; then `fc1_latent_proj` (h -> L) projects the tokens down, the token
dispatcher permutes and sends L-wide tokens, each routed expert is an MLP L -> ffn -> L, the combine returns
L-wide outputs and `fc2_latent_proj` (L -> h) projects them back; shared experts run on the full h and are
added after it. Sources, both @ their stored versions:
- Megatron-LM megatron/core/transformer/moe/moe_layer.py @ d98e8a64 (MoELayer.__init__ builds fc1/fc2_latent_proj
  as TELinear with parallel_mode="duplicated", bias=add_bias_linear; preprocess / postprocess apply them around
  dispatch and combine), moe/experts.py (expert input width moe_latent_size), moe/token_dispatcher.py
  (hidden_dim = moe_latent_size or hidden_size), training/theoretical_memory_usage.py (latent_projection_params
  = 2 h L), training/training.py (routed FLOPs over L plus 4 T h L for the two projections).
- HF transformers models/nemotron_h/modeling_nemotron_h.py (NemotronHMoE: nn.Linear(h, L, bias=mlp_bias) and
  nn.Linear(L, h, bias=mlp_bias); NemotronHExperts up_proj (E, ffn, L), down_proj (E, L, ffn)); the bundled
  Nemotron-3-Super-120B-A12B count equals HF's on the meta device (docs/facts/models/params.json).

"duplicated" means every TP rank holds the whole projection (replicated across TP, like MLA's down-projections)
and runs it on the tokens it holds. Megatron refuses --moe-shared-expert-overlap with latent projections in
training (moe_layer.py preprocess raises): rule latent_moe_shared_expert_overlap.
"""
from __future__ import annotations

from typing import Protocol

from constraints.spec import ModelSpec


class SavedInput(Protocol):
    """The slice of constraints.memory.activations.Shape this module reads (kept as a protocol: no import cycle)."""

    lin_per16: int

    def lin(self, elems: int, div: int = 1) -> int: ...


BF16_LIN_PER16 = 32  # a bf16 GEMM input: 2 B per element (constraints.memory.activations.LIN_BYTES_PER_16)


def latent_projection_params(model: ModelSpec) -> int:
    """fc1_latent_proj (h x L) + fc2_latent_proj (L x h), with their biases when the linears have them; 0 without
    a latent size. Replicated on every TP rank ("duplicated")."""
    L = model.moe_latent_size
    if not L:
        return 0
    h = model.hidden_size
    return 2 * h * L + ((L + h) if model.mlp_bias else 0)


def latent_projection_shapes(model: ModelSpec) -> list[tuple[int, int, int]]:
    """(rows, cols, count) of the two projection weights (TE out x in), whole on every TP rank."""
    L, h = model.moe_latent_size, model.hidden_size
    return [(L, h, 1), (h, L, 1)] if L else []


def latent_activation_terms(model: ModelSpec, sh: SavedInput, local_tokens: int) -> dict[str, int]:
    """Bytes the two projections save for backward, one micro-batch on one rank (`local_tokens` = the tokens
    entering the dispatcher here, SP-split): fc2_latent_proj's input (the combined L-wide expert output), and
    fc1_latent_proj's input, which in bf16 is the pre-MLP norm output the router already keeps (counted there as
    router_input) and under FP8 / NVFP4 is TE's own quantised copy."""
    L = model.moe_latent_size
    if not L:
        return {}
    quantised = sh.lin_per16 < BF16_LIN_PER16
    return {
        "latent_fc1_input": sh.lin(local_tokens * model.hidden_size) if quantised else 0,
        "latent_fc2_input": sh.lin(local_tokens * L),
    }
