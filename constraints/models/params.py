"""Exact parameter counts, split by how Megatron-LM shards them.

Why split: memory per rank depends on which parameters are divided by TP (column/row-parallel
linears, vocab-parallel embedding), which are replicated (norms, router, MLA down-projections) and
which live in the expert grid (divided by EP*ETP). Totals reproduce HF's module structure exactly
(tests hold them to docs/facts/models/params.json); the split follows Megatron's
`theoretical_memory_usage.py` (TP-sharded / replicated / expert-sharded).
"""
from __future__ import annotations

from dataclasses import dataclass

from constraints.models.latent_moe import latent_projection_params
from constraints.models.mamba import hybrid_layer_split
from constraints.spec import ModelSpec, Normalization


@dataclass(frozen=True)
class LayerParams:
    """One decoder layer. `tp_sharded` / TP, `replicated` on every TP rank, `experts` / (EP*ETP)."""

    tp_sharded: int
    replicated: int
    experts: int
    per_expert: int

    @property
    def total(self) -> int:
        return self.tp_sharded + self.replicated + self.experts


@dataclass(frozen=True)
class ParamCounts:
    total: int
    active: int | None
    embedding: int
    output: int
    non_embedding: int


def _norm(model: ModelSpec, width: int) -> int:
    # LayerNorm has weight + bias; RMSNorm only a weight (Megatron theoretical_memory_usage: norm_size 2 vs 1)
    return width * (2 if model.normalization == Normalization.layernorm else 1)


def _mlp(model: ModelSpec, ffn: int, width: int | None = None) -> int:
    """fc1 (width -> fc1 width) + fc2 (ffn -> width), with biases when the model has them; width is h except for
    a latent MoE's routed experts (constraints/models/latent_moe.py)."""
    h = width or model.hidden_size
    fc1 = model.fc1_width(ffn)
    bias = (fc1 + h) if model.mlp_bias else 0
    return h * fc1 + ffn * h + bias


def attention_params(model: ModelSpec) -> tuple[int, int]:
    """(TP-sharded, replicated) attention parameters, input norm included in replicated."""
    h, a = model.hidden_size, model.num_attention_heads
    replicated = _norm(model, h)
    if model.multi_latent_attention:
        # DeepSeek-V2/V3 MLA (HF DeepseekV3Attention): down-projections and their norms are replicated in
        # Megatron (not TP-split); up-projections are column-parallel, o_proj row-parallel.
        qk = model.qk_head_dim + model.qk_pos_emb_head_dim
        kv_down = h * (model.kv_lora_rank + model.qk_pos_emb_head_dim) + model.kv_lora_rank
        replicated += kv_down
        if model.q_lora_rank:
            replicated += h * model.q_lora_rank + model.q_lora_rank
            sharded = model.q_lora_rank * a * qk
        else:
            sharded = h * a * qk
        sharded += model.kv_lora_rank * a * (model.qk_head_dim + model.v_head_dim) + a * model.v_head_dim * h
        return sharded, replicated
    d, g = model.kv_channels, model.num_query_groups
    q, kv = a * d, g * d
    sharded = h * (q + 2 * kv) + q * h  # Q, K, V, O (GQA: K/V have g groups)
    if model.attention_bias or model.qkv_bias:
        sharded += q + 2 * kv
    if model.attention_bias:
        replicated += h  # row-parallel output bias is not split
    if model.qk_layernorm:
        replicated += 2 * d  # Qwen3 per-head q/k RMSNorm weights
    if model.attention_sinks:
        sharded += a  # gpt-oss: one sink logit per head
    return sharded, replicated


def layer_params(model: ModelSpec, is_moe) -> LayerParams:
    """One layer of kind `is_moe`: a transformer layer's MoE flag, or a hybrid layer's symbol (M, *, -, E;
    constraints/models/mamba.py)."""
    if isinstance(is_moe, str):
        return LayerParams(*hybrid_layer_split(model, is_moe, attention_params(model)))
    attn_sharded, attn_repl = attention_params(model)
    replicated = attn_repl + _norm(model, model.hidden_size)  # + pre-MLP norm
    if not is_moe:
        return LayerParams(attn_sharded + _mlp(model, model.ffn_hidden_size), replicated, 0, 0)
    h, e = model.hidden_size, model.num_experts
    per_expert = _mlp(model, model.moe_ffn_hidden_size, model.moe_expert_width)
    # the DeepSeek-V3 score-correction bias is a buffer in both HF and Megatron (`expert_bias`), not a parameter;
    # a latent MoE's two projections are replicated across TP like the router
    router = h * e + (e if model.moe_router_bias else 0) + latent_projection_params(model)
    shared = 0
    if model.moe_shared_expert_intermediate_size:
        shared = _mlp(model, model.moe_shared_expert_intermediate_size)
    if model.moe_shared_expert_gate:  # Megatron SharedExpertMLP.gate_weight [1, hidden], not TP-split
        router += h
    return LayerParams(attn_sharded + shared, replicated + router, per_expert * e, per_expert)


def all_layer_params(model: ModelSpec) -> list[LayerParams]:
    kinds = model.layer_kinds
    cache = {kind: layer_params(model, kind) for kind in set(kinds)}
    return [cache[kind] for kind in kinds]


def mtp_params(model: ModelSpec) -> int:
    """One MTP module (DeepSeek-V3 sec. 2.2): its layers (a copy of the last layer type; a hybrid model's MTP pattern,
    Megatron MultiTokenPredictionLayer's HybridStack without a post norm) + enorm, hnorm, eh_proj (2h -> h), final norm.
    Embedding and output head are shared with the main model. With --mtp-use-repeated-layer one block serves every
    depth (megatron/core/transformer/multi_token_prediction.py MultiTokenPredictionBlock._build_layers)."""
    if not model.mtp_num_layers:
        return 0
    h = model.hidden_size
    block = sum(layer_params(model, k).total for k in model.mtp_layer_kinds) + 3 * _norm(model, h) + 2 * h * h
    return mtp_weight_depths(model, model.mtp_num_layers) * block


def mtp_weight_depths(model: ModelSpec, depths_here: int) -> int:
    """How many MTP blocks of weights a rank holding `depths_here` MTP depths keeps: one when the depths share a
    repeated layer (--mtp-use-repeated-layer), else one per depth."""
    return min(depths_here, 1) if model.mtp_repeated_layer else depths_here


def padded_vocab_size(model: ModelSpec, tp: int, divisible_by: int = 128) -> int:
    """Megatron pads the vocab to a multiple of make_vocab_size_divisible_by * TP (training/tokenizer utils)."""
    multiple = divisible_by * tp
    return -(-model.vocab_size // multiple) * multiple


def param_counts(model: ModelSpec, vocab_size: int | None = None, include_mtp: bool = False) -> ParamCounts:
    """Total and active parameters. Defaults reproduce HF counts (unpadded vocab, no MTP)."""
    v = vocab_size or model.vocab_size
    h = model.hidden_size
    layers = all_layer_params(model)
    embedding = v * h
    output = 0 if model.tied_embeddings else v * h
    position = model.max_position_embeddings * h if model.learned_position_embeddings else 0
    body = sum(lp.total for lp in layers) + _norm(model, h) + (mtp_params(model) if include_mtp else 0)
    total = embedding + output + position + body
    active = None
    if model.is_moe:
        k = model.moe_router_topk
        inactive = sum(lp.per_expert * (model.num_experts - k) for lp in layers if lp.experts)
        active = total - inactive
    return ParamCounts(total=total, active=active, embedding=embedding, output=output,
                       non_embedding=total - embedding - output - position)


def parameters_phrase(model: ModelSpec) -> str:
    """'8.03 B parameters' or '30.53 B parameters, 3.34 B active': what a result's first line says of the model, so a
    user sees at once whether the config was read as meant (issue 31); the exact counts are in every JSON result."""
    counts = param_counts(model)
    return counts_phrase(counts.total, counts.active if counts.active is not None else counts.total)


def counts_phrase(total: int, active: int) -> str:
    """parameters_phrase from the counts a result carries ({total, active})."""
    def count(n: int) -> str:
        return f"{n / 1e9:.3g} B" if n >= 10**9 else f"{n / 1e6:.3g} M"

    return f"{count(total)} parameters" + (f", {count(active)} active" if active != total else "")
