"""Bytes of the NVFP4 compute weights Megatron-LM keeps resident with `--fp4-param-gather`, exact per tensor.

Why its own module: with --fp4-param-gather the model copy of every quantised linear weight is a Transformer
Engine NVFP4Tensor, not a bf16 tensor, and its size is not "½ B per element": TE keeps a row-wise and a
column-wise copy, each with E4M3 block scales padded to the cuBLAS tile layout. What is resident per weight of
shape (rows, cols) as stored on one rank (out_features x in_features after the TP / expert-TP split):

- row-wise data, E2M1 packed two per byte: rows*cols/2 B. Megatron maps it into the DDP param buffer (uint8,
  "NVFP4 packs two FP4 values into a single uint8 byte", param_and_grad_buffer.py _compute_nvfp4_packed_layout;
  fp4_utils.py modify_nvfp4_rowwise_storage); the other storages stay owned by the tensor.
- column-wise data (the transpose, for the dgrad GEMM): cols*rows/2 B. Megatron quantises master weights with
  manual_post_all_gather_processing (fp4_utils.py quantize_nvfp4_param_shard), so TE never drops it; after each
  param all-gather TE's post_all_gather_processing rebuilds it in place (_nvfp4_2d_multi_tensor_transpose
  allocates (K, M/2) uint8 once and keeps it) — transformer_engine/pytorch/tensor/utils.py @ d0067d0.
- E4M3 scales, one byte per 16-element block, in tiles of 128 x 4 (NVFP4Quantizer.get_scale_shape,
  transformer_engine/pytorch/tensor/nvfp4_tensor.py @ d0067d0): row-wise (round_up(rows, 128),
  round_up(ceil(cols/16), 4)); column-wise (round_up(cols, 128), round_up(ceil(rows/16), 4)). Weights use 2-D
  16 x 16 scaling (NVFP4BlockScaling; _cast_master_weights_to_nvfp4_2d), written expanded into the same layout.
- the per-tensor fp32 amax of each direction: 2 x 4 B (NVFP4Quantizer.inner_tensor_specs _amax_rowwise /
  _amax_columnwise; one per tensor, not per row, with the default row_scaled_nvfp4 off).

So a weight costs about 1 + 1/8 B per element against bf16's 2 B (arXiv 2509.25149 sec. 2: E2M1 with one E4M3
scale per 16 values, applied in both directions). The fp32 master copy lives in the optimizer (unchanged).

Which weights are quantised: those TE modules create inside `get_fp4_context(config, layer, is_init=True)`
(megatron/core/fp4_utils.py; called per decoder layer by transformer_block.py build_layer and hybrid_block.py):
the linear layers of every decoder layer (attention QKV / MLA projections and output projection, MLP fc1 / fc2,
routed and shared experts, a latent MoE's projections, Mamba in_proj / out_proj). Not quantised: biases ("biases will remain unchanged",
TransformerConfig.fp4_param), norms, the router (a plain nn.Parameter in TopKRouter), Mamba's conv / A_log /
D / dt_bias / gated norm, embeddings and the output layer (built outside the context), and MTP depths
(multi_token_prediction.py builds them under get_fp8_context only). --first-last-layers-bf16 keeps the first
and last N decoder layers out of the context (N = --num-layers-at-start/end-in-bf16, default 1): their weights stay
bf16 (constraints/memory/per_rank.py static_terms leaves JobSpec.bf16_layer_indices out).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from constraints.models.hybrid_pattern import ATTENTION, MAMBA, MLP, MOE
from constraints.models.latent_moe import latent_projection_shapes
from constraints.models.mamba import mamba_dims
from constraints.spec import ModelSpec

NVFP4_BLOCK = 16          # elements per E4M3 scale (TE NVFP4_BLOCK_SCALING_SIZE)
SCALE_TILE_OUTER = 128    # scale rows padded to a multiple of 128 (NVFP4Quantizer.get_scale_shape)
SCALE_TILE_INNER = 4      # scale columns padded to a multiple of 4
AMAX_BYTES = 4            # one fp32 amax per direction


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def nvfp4_tensor_bytes(rows: int, cols: int) -> int:
    """Resident bytes of one NVFP4 weight of logical shape (rows, cols): both data copies, both padded scale
    tensors, both amax scalars (the module docstring gives each term's source)."""
    data = 2 * -(-rows * cols // 2)
    rowwise_scale = _round_up(rows, SCALE_TILE_OUTER) * _round_up(-(-cols // NVFP4_BLOCK), SCALE_TILE_INNER)
    colwise_scale = _round_up(cols, SCALE_TILE_OUTER) * _round_up(-(-rows // NVFP4_BLOCK), SCALE_TILE_INNER)
    return data + rowwise_scale + colwise_scale + 2 * AMAX_BYTES


@dataclass(frozen=True)
class QuantisedWeights:
    """Quantised linear weights of one rank: their element count (as counted in the parameter totals) and their
    resident NVFP4 bytes."""

    elements: int = 0
    nvfp4_bytes: int = 0

    def __add__(self, other: "QuantisedWeights") -> "QuantisedWeights":
        return QuantisedWeights(self.elements + other.elements, self.nvfp4_bytes + other.nvfp4_bytes)


def _of(shapes: Iterable[tuple[int, int, int]]) -> QuantisedWeights:
    """(rows, cols, how many) triples -> their elements and NVFP4 bytes."""
    total = QuantisedWeights()
    for rows, cols, n in shapes:
        total += QuantisedWeights(n * rows * cols, n * nvfp4_tensor_bytes(rows, cols))
    return total


def _split(width: int, parts: int) -> int:
    return -(-width // parts)


def _mlp_shapes(model: ModelSpec, ffn: int, tp: int, n: int = 1, width: int | None = None) -> list[tuple[int, int, int]]:
    """linear_fc1 (column-parallel, gate and up fused for SwiGLU) and linear_fc2 (row-parallel); `width` is the
    MLP's input / output width (h, or a latent MoE's latent size for its routed experts)."""
    h = width or model.hidden_size
    return [(_split(model.fc1_width(ffn), tp), h, n), (h, _split(ffn, tp), n)]


def attention_shapes(model: ModelSpec, tp: int) -> list[tuple[int, int, int]]:
    """Megatron's attention linears on one TP rank: fused linear_qkv + linear_proj, or MLA's down (duplicated on
    every TP rank), up (column-parallel) and output projections (multi_latent_attention.py)."""
    h, a = model.hidden_size, model.num_attention_heads
    if model.multi_latent_attention:
        qk = model.qk_head_dim + model.qk_pos_emb_head_dim
        shapes = [(model.kv_lora_rank + model.qk_pos_emb_head_dim, h, 1),
                  (_split(a * (model.qk_head_dim + model.v_head_dim), tp), model.kv_lora_rank, 1),
                  (h, _split(a * model.v_head_dim, tp), 1)]
        if model.q_lora_rank:
            shapes += [(model.q_lora_rank, h, 1), (_split(a * qk, tp), model.q_lora_rank, 1)]
        else:
            shapes.append((_split(a * qk, tp), h, 1))
        return shapes
    d, g = model.kv_channels, model.num_query_groups
    return [(_split(a * d + 2 * g * d, tp), h, 1), (h, _split(a * d, tp), 1)]


def moe_shapes(model: ModelSpec, tp: int, ep: int, etp: int) -> list[tuple[int, int, int]]:
    """The local experts' fc1 / fc2 (TEGroupedMLP: one weight per local expert, split by expert TP), a latent
    MoE's two projections (TELinear, whole on every TP rank) and the shared experts' (split by TP). The router
    stays bf16."""
    shapes = _mlp_shapes(model, model.moe_ffn_hidden_size, etp, _split(model.num_experts, ep), model.moe_expert_width)
    shapes += latent_projection_shapes(model)
    if model.moe_shared_expert_intermediate_size:
        shapes += _mlp_shapes(model, model.moe_shared_expert_intermediate_size, tp)
    return shapes


def layer_shapes(model: ModelSpec, kind, tp: int, ep: int, etp: int) -> list[tuple[int, int, int]]:
    """(rows, cols, count) of the quantised weights one rank holds of one decoder layer of `kind` (a transformer
    layer's MoE flag or a hybrid symbol, as ModelSpec.layer_kinds)."""
    h = model.hidden_size
    if kind == MAMBA:
        d = mamba_dims(model)
        return [(_split(d.in_proj_width, tp), h, 1), (h, _split(d.d_inner, tp), 1)]
    if kind == ATTENTION:
        return attention_shapes(model, tp)
    if kind == MLP:
        return _mlp_shapes(model, model.ffn_hidden_size, tp)
    if kind == MOE:
        return moe_shapes(model, tp, ep, etp)
    mlp = moe_shapes(model, tp, ep, etp) if kind else _mlp_shapes(model, model.ffn_hidden_size, tp)
    return attention_shapes(model, tp) + mlp


def rank_quantised_weights(model: ModelSpec, layers: Iterable[int], tp: int, ep: int, etp: int) -> QuantisedWeights:
    """Quantised weights of the decoder layers `layers` (global indices) on one rank; MTP, embedding and
    output weights are not quantised (module docstring)."""
    kinds = model.layer_kinds
    per_kind: dict = {}
    total = QuantisedWeights()
    for i in layers:
        k = kinds[i]
        if k not in per_kind:
            per_kind[k] = _of(layer_shapes(model, k, tp, ep, etp))
        total += per_kind[k]
    return total
