"""Model loading: bundled HF `config.json` files by stem, a user's HF config or model YAML by path.

Why a translation layer: HF configs name the same shape differently per family (`n_embd` vs
`hidden_size`, `num_local_experts` vs `n_routed_experts`, `first_k_dense_replace` vs
`mlp_only_layers`); everything downstream speaks one `ModelSpec`.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from boundary.errors import InputRefused, ShardplanError
from boundary.names import did_you_mean, exact_name, hub_id_tail, looks_like_path, resolve_name
from boundary.parse import load_json, load_yaml
from boundary.read import is_regular_file, read_text
from boundary.show import shown, validation_line
from constraints.models.hf_reading import (
    KNOWN_TYPES,
    PLAIN_MLP_ACTIVATIONS,
    UNREAD_FAMILY_TIE_DEFAULT,
    geglu_family,
    hidden_act_of,
    not_modelled_layers,
    reading_notes,
    rope_fields,
    unread_moe_keys,
)
from constraints.spec import BOUND_REASONS, MAX_NUM_LAYERS, Activation, ModelSpec, Normalization

MODELS_DIR = Path(__file__).resolve().parent / "hf_configs"


class ModelError(ShardplanError):
    """A model that cannot be found or understood; the message is one line for the user."""


# HF model types whose layers shardplan has no terms for (each named in docs/recipe-yaml.md)
NOT_MODELLED_TYPES = {
    "qwen3_next": "gated delta-net linear attention layers (Qwen3-Next; Megatron --linear-attention-freq)",
    "qwen3_5": "gated delta-net linear attention layers (Qwen3.5)", "qwen3_5_moe": "gated delta-net linear attention layers (Qwen3.5)",
}


def bundled_models() -> list[str]:
    return sorted(p.stem for p in MODELS_DIR.glob("*.json"))


def _get(raw: dict, *keys: str, default: Any = None) -> Any:
    for k in keys:
        if raw.get(k) is not None:
            return raw[k]
    return default


# HF config fields read as integers / fractions; a quoted number ("4096") is named instead of failing deep inside.
_HF_INT_FIELDS = (
    "hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size", "num_key_value_heads", "num_kv_heads",
    "head_dim", "vocab_size", "max_position_embeddings", "n_routed_experts", "num_local_experts", "num_experts",
    "num_experts_per_tok", "experts_per_token", "moe_intermediate_size", "n_shared_experts", "kv_lora_rank",
    "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "first_k_dense_replace", "moe_layer_freq",
    "decoder_sparse_step", "num_nextn_predict_layers", "max_window_layers", "n_embd", "n_layer", "n_head", "n_inner",
    "n_positions", "mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel", "attention_head_dim",
    "moe_shared_expert_intermediate_size", "sliding_window", "intermediate_size_mlp", "num_local_experts",
    "interleave_moe_layer_step", "moe_latent_size", "shared_expert_intermediate_size",
)
_HF_FLOAT_FIELDS = ("attention_dropout", "hidden_dropout", "resid_pdrop", "attn_pdrop")
_HF_BOOL_FIELDS = ("tie_word_embeddings", "attention_bias", "mlp_bias")
# other families' names for the three shape keys every reader needs (DBRX d_model / n_heads / n_layers, the Falcon
# RefinedWeb layout n_head / n_layer, GPT-2's n_embd outside model_type gpt2): seen, they get a refusal naming them
_OWN_NAMES = {"hidden_size": ("d_model", "n_embd", "dim", "model_dim"),
              "num_attention_heads": ("n_heads", "n_head", "num_heads"),
              "num_hidden_layers": ("n_layers", "n_layer", "num_layers")}


def _unread_experts(name: str, moe_unread: list[str]) -> ModelError:
    """A family's own words for experts (ERNIE-4.5 moe_num_experts, Hunyuan num_shared_expert, DBRX
    ffn_config.moe_num_experts): read without them, the model would be priced as a dense model, or without its shared
    experts."""
    return ModelError(f"model {name}: the config describes experts in keys shardplan does not read "
                      f"({', '.join(moe_unread[:4])}); read without them it would price another model: write a "
                      "model YAML (num_experts, moe_router_topk, moe_ffn_hidden_size, "
                      "moe_shared_expert_intermediate_size: README 'Recipe YAML')")


def _check_hf_types(raw: dict, name: str) -> None:
    """One line naming the first field whose JSON type is wrong (null counts as absent, as in HF)."""
    for key in _HF_INT_FIELDS:
        v = raw.get(key)
        if isinstance(v, list):  # Hunyuan's per-layer moe_intermediate_size: one width per layer is not modelled
            raise ModelError(f"model {name}: {key} is a per-layer list ({shown(v, 24)}), which the HF config reader does "
                             "not model (one value for every layer); write a model YAML (README 'Recipe YAML')")
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise ModelError(f"model {name}: {key} must be an integer, got {shown(v)}; write it as a bare JSON number")
    for key in _HF_FLOAT_FIELDS:
        v = raw.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise ModelError(f"model {name}: {key} must be a number, got {shown(v)}; write it as a bare JSON number")
    for key in _HF_BOOL_FIELDS:
        v = raw.get(key)
        if v is not None and not isinstance(v, bool):
            raise ModelError(f"model {name}: {key} must be true or false, got {shown(v)}")


def _check_num_layers(num_layers: Any, name: str, key: str) -> None:
    """Refuse a layer count past ModelSpec's bound before any per-layer list is built from it (issue 17:
    a 10^9-layer config allocated gigabytes before validation named the field)."""
    if isinstance(num_layers, int) and not isinstance(num_layers, bool) and num_layers > MAX_NUM_LAYERS:
        raise ModelError(f"model {name}: {key} is {num_layers:,}, above the {MAX_NUM_LAYERS} layers shardplan "
                         f"models (the deepest published LLMs have under 200); give the model's real layer count")


def _moe_pattern(raw: dict, num_layers: int) -> tuple[bool, ...] | None:
    """Which layers are MoE, from each family's own field (DeepSeek first_k_dense_replace + moe_layer_freq;
    Qwen3-MoE decoder_sparse_step + mlp_only_layers)."""
    if "first_k_dense_replace" in raw or "moe_layer_freq" in raw:
        first_k = raw.get("first_k_dense_replace") or 0
        freq = raw.get("moe_layer_freq") or 1
        return tuple(i >= first_k and i % freq == 0 for i in range(num_layers))
    if "decoder_sparse_step" in raw or "mlp_only_layers" in raw:
        step = raw.get("decoder_sparse_step") or 1
        dense = set(raw.get("mlp_only_layers") or [])
        return tuple(i not in dense and (i + 1) % step == 0 for i in range(num_layers))
    return None


def model_from_hf_config(raw: dict, name: str) -> ModelSpec:
    """Translate an HF config dict into a ModelSpec (families: llama, mistral, mixtral, qwen2/3(+moe),
    deepseek_v3/kimi_k2, gpt_oss, nemotron, gpt2)."""
    mt = raw.get("model_type", "")
    _check_hf_types(raw, name)
    if mt == "nemotron_h":
        return _nemotron_h(raw, name)
    if mt in ("llama4", "llama4_text"):
        return _llama4(raw, name)
    if mt in NOT_MODELLED_TYPES:
        raise ModelError(f"model {name}: {NOT_MODELLED_TYPES[mt]} are not modelled; shardplan cannot price this model")
    other_layers = not_modelled_layers(raw)
    if other_layers:
        # read as attention decoders, a Mamba hybrid or a linear-attention model would be priced as another model
        raise ModelError(f"model {name}: {other_layers}, which the HF config reader does not model (it reads softmax-"
                         "attention decoders); for a Mamba hybrid judge its Megatron launch script "
                         "(--hybrid-layer-pattern), or write a model YAML")
    if mt == "gpt2":
        h = raw["n_embd"]
        return ModelSpec(config_notes=reading_notes(raw),
            name=name, num_layers=raw["n_layer"], hidden_size=h, ffn_hidden_size=raw.get("n_inner") or 4 * h,
            num_attention_heads=raw["n_head"], num_query_groups=raw["n_head"], kv_channels=h // raw["n_head"],
            vocab_size=raw["vocab_size"], max_position_embeddings=raw.get("n_positions", 1024),
            activation=Activation.gelu, normalization=Normalization.layernorm,
            tied_embeddings=raw.get("tie_word_embeddings", True), learned_position_embeddings=True,
            attention_bias=True, mlp_bias=True, hidden_dropout=raw.get("resid_pdrop", 0.1) or 0.0,
            attention_dropout=raw.get("attn_pdrop", 0.1) or 0.0,
        )
    num_experts = _get(raw, "n_routed_experts", "num_local_experts", "num_experts")
    moe_unread = unread_moe_keys(raw)
    if moe_unread and not num_experts:
        # said before any missing dense key (DBRX ffn_config.moe_num_experts), whose fix (add hidden_size ...) would
        # lead to a model read as dense
        raise _unread_experts(name, moe_unread)
    h = _get(raw, "hidden_size")
    heads = _get(raw, "num_attention_heads")
    layers = _get(raw, "num_hidden_layers")
    for key, value in (("hidden_size", h), ("num_attention_heads", heads), ("num_hidden_layers", layers)):
        if value is None and isinstance(raw.get("text_config"), dict):
            # a multimodal config (LLaVA, Qwen2-VL, ...) keeps its language model under text_config
            raise ModelError(f"model {name}: model_type {shown(mt)} is multimodal: its language model's {key} is under "
                             "text_config, and shardplan prices the decoder alone (no vision encoder); give text_config's "
                             "contents as the config")
        if value is None and _OWN_NAMES.get(key, ()) and any(k in raw for k in _OWN_NAMES[key]):
            # the family names its shape its own way (DBRX d_model / n_heads / n_layers, Falcon RW n_head / n_layer):
            # copying one key over would leave the others read by guess
            own = ", ".join(f"{k}={shown(raw[k], 16)}" for k in _OWN_NAMES[key] if k in raw)
            raise ModelError(f"model {name}: config has no {key}; model_type {shown(mt)} names it its own way ({own}), "
                             "which shardplan does not read: write a model YAML (num_layers, hidden_size, ffn_hidden_size, "
                             "num_attention_heads, num_query_groups, vocab_size: README 'Recipe YAML')")
        if not value or value < 0:
            got = "it is missing" if value is None else f"got {value}"
            raise ModelError(f"model {name}: config needs a positive {key} ({got}); copy it from the model's HF config.json")
    _check_num_layers(layers, name, "num_hidden_layers")
    for key in ("intermediate_size", "vocab_size"):
        # No family-independent default: transformers' LlamaConfig says 11008, others 4*hidden, so guessing
        # would silently build a different model than HF does.
        if raw.get(key) is None:
            if mt not in KNOWN_TYPES:  # the family may name it otherwise (Falcon: 4*hidden, no key): adding a key misleads
                raise ModelError(f"model {name}: config has no {key} and model_type {shown(mt)} is not a family shardplan "
                                 "reads by name; write a model YAML instead (num_layers, hidden_size, ffn_hidden_size, "
                                 "num_attention_heads, num_query_groups, vocab_size: README 'Recipe YAML')")
            raise ModelError(f"model {name}: config has no {key}; add \"{key}\" from the model's HF config.json")
    if num_experts and _get(raw, "num_experts_per_tok", "experts_per_token") is None:
        named = f"; its own expert keys ({', '.join(moe_unread[:4])}) are not ones shardplan reads" if moe_unread else ""
        raise ModelError(f"model {name}: config has {num_experts} experts but no num_experts_per_tok (experts per "
                         f"token){named}: add \"num_experts_per_tok\" if the model routes each token to that many "
                         "experts and has no other expert settings, else write a model YAML (README 'Recipe YAML')")
    if moe_unread:
        raise _unread_experts(name, moe_unread)
    mla = raw.get("kv_lora_rank") is not None
    act = PLAIN_MLP_ACTIVATIONS.get(hidden_act_of(raw) or "silu", Activation.swiglu)
    if geglu_family(mt):  # GeGLU has SwiGLU's shapes (hf_reading notes the gate's function)
        act = Activation.swiglu
    glu: dict[str, Any] = {}
    if mt == "gpt_oss":  # transformers GptOssExperts: gate * sigmoid(1.702 gate) * (up + 1), both halves clamped at
        # swiglu_limit, whatever hidden_act says; Megatron-Bridge's gpt-oss bridge: quick_gelu GLU, clamp, offset 1
        act = Activation.quick_geglu
        glu = {"glu_linear_offset": 1.0, "glu_clamp": _get(raw, "swiglu_limit", default=7.0)}
    fields: dict[str, Any] = dict(
        name=name, num_layers=layers, hidden_size=h, ffn_hidden_size=raw["intermediate_size"],
        # Falcon names its KV heads num_kv_heads, and multi_query (one KV head) when it has no such key
        num_attention_heads=heads, num_query_groups=_get(raw, "num_key_value_heads", "num_kv_heads",
                                                         default=1 if raw.get("multi_query") is True else heads),
        kv_channels=_get(raw, "head_dim", default=h // heads), vocab_size=raw["vocab_size"],
        max_position_embeddings=_get(raw, "max_position_embeddings", default=4096), activation=act,
        normalization=Normalization.layernorm if mt == "nemotron" else Normalization.rmsnorm,
        tied_embeddings=bool(raw.get("tie_word_embeddings", UNREAD_FAMILY_TIE_DEFAULT.get(mt, False))),
        attention_bias=bool(raw.get("attention_bias", False)),
        # transformers' Qwen2Attention / Qwen2MoeAttention build q/k/v with bias=True and o_proj without, whatever the config
        qkv_bias=mt in ("qwen2", "qwen2_moe"),
        mlp_bias=bool(raw.get("mlp_bias", False)) or mt == "gpt_oss",
        qk_layernorm=mt in ("qwen3", "qwen3_moe"), attention_sinks=mt == "gpt_oss",
        attention_dropout=float(raw.get("attention_dropout", 0.0) or 0.0),
        hidden_dropout=float(raw.get("hidden_dropout", 0.0) or 0.0), config_notes=reading_notes(raw),
        **rope_fields(raw), **glu,
    )
    if mla:  # MLA applies its YaRN inside its own attention (Megatron --rope-type yarn); `yarn` describes GPTModel's
        fields.pop("yarn", None)
    fields.update(_sliding_window(raw, mt, layers, name))
    if num_experts:
        moe_ffn = _get(raw, "moe_intermediate_size", default=fields["ffn_hidden_size"])
        shared = raw.get("n_shared_experts") or 0
        # Qwen2-MoE names its one shared expert's width and gates it (Qwen2MoeSparseMoeBlock.shared_expert(_gate))
        shared_width = raw.get("shared_expert_intermediate_size") or shared * moe_ffn or None
        fields.update(
            num_experts=num_experts, moe_router_topk=_get(raw, "num_experts_per_tok", "experts_per_token"),
            moe_ffn_hidden_size=moe_ffn, moe_shared_expert_intermediate_size=shared_width,
            moe_shared_expert_gate=bool(raw.get("shared_expert_intermediate_size")) and mt == "qwen2_moe",
            moe_router_bias=mt == "gpt_oss",
            moe_router_score_bias=raw.get("topk_method") == "noaux_tc",
            layer_is_moe=_moe_pattern(raw, layers),
        )
        if (raw.get("n_group") or 1) > 1:  # DeepSeek-V3's node-limited routing: topk_group of n_group expert groups
            fields.update(moe_router_num_groups=raw["n_group"], moe_router_group_topk=raw.get("topk_group") or raw["n_group"])
    if mla:
        fields.update(
            multi_latent_attention=True, q_lora_rank=raw.get("q_lora_rank"), kv_lora_rank=raw["kv_lora_rank"],
            qk_head_dim=raw["qk_nope_head_dim"], qk_pos_emb_head_dim=raw["qk_rope_head_dim"],
            v_head_dim=raw["v_head_dim"], kv_channels=raw["qk_nope_head_dim"] + raw["qk_rope_head_dim"],
            num_query_groups=heads, mtp_num_layers=raw.get("num_nextn_predict_layers") or 0,
        )
    return ModelSpec(**fields)


QWEN_TYPES = ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe")
# transformers' Qwen2Config, Qwen3Config, Qwen2MoeConfig and Qwen3MoeConfig all default max_window_layers to 28
QWEN_MAX_WINDOW_LAYERS_DEFAULT = 28


def _sliding_window(raw: dict, mt: str, layers: int, name: str) -> dict[str, Any]:
    """window_size / window_layers from HF's sliding_window (W keys including the query: Megatron's window_size is
    (W - 1, 0), Megatron-Bridge conversion/utils.py) and layer_types ("sliding_attention" / "full_attention", gpt-oss);
    Qwen-style use_sliding_window false (or absent where the family needs it) means no window."""
    w = raw.get("sliding_window")
    if not isinstance(w, int) or isinstance(w, bool) or w <= 0:
        return {}
    if mt in QWEN_TYPES and not raw.get("use_sliding_window"):
        return {}
    kinds = raw.get("layer_types")
    if not isinstance(kinds, list) and mt in QWEN_TYPES:
        # transformers Qwen2Config / Qwen3Config (and their MoE twins): layer i slides when i >= max_window_layers
        # (default 28), the layers below it attend fully
        start = _get(raw, "max_window_layers", default=QWEN_MAX_WINDOW_LAYERS_DEFAULT)
        kinds = ["sliding_attention" if i >= start else "full_attention" for i in range(layers)]
    if isinstance(kinds, list):
        if len(kinds) != layers or set(kinds) - {"sliding_attention", "full_attention"}:
            raise ModelError(f"model {name}: layer_types must list sliding_attention / full_attention once per layer")
        flags = tuple(k == "sliding_attention" for k in kinds)
        return dict(window_size=w - 1, window_layers=None if all(flags) else flags) if any(flags) else {}
    if mt in ("gpt_oss",) or raw.get("use_sliding_window") or mt in ("mistral", "mixtral"):
        return dict(window_size=w - 1)
    return {}


def _llama4(raw: dict, name: str) -> ModelSpec:
    """HF `llama4` (its text_config) / `llama4_text`: routed experts of intermediate_size with one shared expert of the
    same width on the MoE layers, dense layers of intermediate_size_mlp, MoE every interleave_moe_layer_step-th layer
    (Llama4TextConfig.moe_layers: step-1, 2 step-1, ...), no_rope_layers (1 = RoPE; Megatron --no-rope-freq marks the
    NoPE ones), parameter-free q/k L2 norm. attention_chunk_size (chunked local attention) has no Megatron-LM flag, so
    the model is what Megatron trains: full causal attention on every layer."""
    text = dict(raw.get("text_config") or raw)
    text.setdefault("tie_word_embeddings", raw.get("tie_word_embeddings", False))
    _check_hf_types(text, name)
    layers, step = text["num_hidden_layers"], text.get("interleave_moe_layer_step") or 1
    _check_num_layers(layers, name, "num_hidden_layers")  # before the MoE and NoPE per-layer lists below
    moe = text.get("moe_layers")
    moe_set = set(moe) if isinstance(moe, list) else set(range(step - 1, layers, step))
    rope = text.get("no_rope_layers") or [int((i + 1) % (text.get("no_rope_layer_interval") or 4) != 0) for i in range(layers)]
    if len(rope) != layers:
        raise ModelError(f"model {name}: no_rope_layers has {len(rope)} entries for {layers} layers")
    h, heads, f = text["hidden_size"], text["num_attention_heads"], text["intermediate_size"]
    return ModelSpec(
        name=name, num_layers=layers, hidden_size=h, ffn_hidden_size=text["intermediate_size_mlp"], num_attention_heads=heads,
        num_query_groups=_get(text, "num_key_value_heads", default=heads), kv_channels=_get(text, "head_dim", default=h // heads),
        vocab_size=text["vocab_size"], max_position_embeddings=min(_get(text, "max_position_embeddings", default=4096), 16 * 1024 * 1024),
        tied_embeddings=bool(text.get("tie_word_embeddings", False)), attention_bias=bool(text.get("attention_bias", False)),
        num_experts=text["num_local_experts"], moe_router_topk=text["num_experts_per_tok"], moe_ffn_hidden_size=f,
        moe_shared_expert_intermediate_size=f, layer_is_moe=tuple(i in moe_set for i in range(layers)),
        no_rope_layers=tuple(not r for r in rope) if not all(rope) else None, qk_l2_norm=bool(text.get("use_qk_norm", False)),
    )


# HF NemotronHConfig layers_block_type names (transformers 5.x, and the older spellings) -> Megatron symbols
_BLOCK_SYMBOLS = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*", "mlp": "-", "moe": "E"}


def _nemotron_h(raw: dict, name: str) -> ModelSpec:
    """HF `nemotron_h` (Nemotron-H, Nemotron 3): hybrid_override_pattern (or layers_block_type) is Megatron's
    --hybrid-layer-pattern; Mamba-2 sizes from mamba_num_heads / mamba_head_dim / ssm_state_size / n_groups /
    conv_kernel; squared-ReLU MLPs and experts without a gate; RMSNorm; no position embedding (Megatron-Bridge
    NemotronHBridge sets position_embedding_type none); num_nextn_predict_layers MTP depths of mtp_hybrid_override_pattern."""
    pattern = raw.get("hybrid_override_pattern")
    if pattern is None and isinstance(raw.get("layers_block_type"), list):
        unknown = [t for t in raw["layers_block_type"] if t not in _BLOCK_SYMBOLS]
        if unknown:
            raise ModelError(f"model {name}: layers_block_type {unknown[0]!r} is not modelled; use mamba, attention, mlp or moe")
        pattern = "".join(_BLOCK_SYMBOLS[t] for t in raw["layers_block_type"])
    if not isinstance(pattern, str) or not pattern:
        raise ModelError(f"model {name}: nemotron_h config needs hybrid_override_pattern (e.g. \"M-M*-\"); copy it from the HF config.json")
    _check_num_layers(len(pattern), name, "hybrid_override_pattern's length")  # one layer a symbol: sized before use
    depth = raw.get("num_nextn_predict_layers") or 0
    mtp_pattern = raw.get("mtp_hybrid_override_pattern") if depth else None
    if depth and not (isinstance(mtp_pattern, str) and mtp_pattern):
        raise ModelError(f"model {name}: num_nextn_predict_layers {depth} needs mtp_hybrid_override_pattern (the MTP layers, "
                         "e.g. \"*E\"); copy it from the HF config.json or set num_nextn_predict_layers to 0")
    h, heads = raw["hidden_size"], raw["num_attention_heads"]
    act = raw.get("mlp_hidden_act") or raw.get("hidden_act") or "relu2"
    fields: dict[str, Any] = dict(
        name=name, num_layers=len(pattern), hidden_size=h, ffn_hidden_size=raw["intermediate_size"],
        num_attention_heads=heads, num_query_groups=_get(raw, "num_key_value_heads", default=heads),
        kv_channels=_get(raw, "head_dim", "attention_head_dim", default=h // heads), vocab_size=raw["vocab_size"],
        max_position_embeddings=_get(raw, "max_position_embeddings", default=4096),
        activation={"relu2": Activation.squared_relu, "gelu": Activation.gelu}.get(act, Activation.swiglu),
        normalization=Normalization.rmsnorm, tied_embeddings=bool(raw.get("tie_word_embeddings", False)),
        attention_bias=bool(raw.get("attention_bias", False)), mlp_bias=bool(raw.get("mlp_bias", False)),
        hybrid_layer_pattern=pattern, mamba_num_heads=raw.get("mamba_num_heads"), mamba_head_dim=raw.get("mamba_head_dim"),
        mamba_state_dim=raw.get("ssm_state_size"), mamba_num_groups=raw.get("n_groups"),
        mamba_conv_kernel=raw.get("conv_kernel") or 4, mtp_num_layers=depth, mtp_hybrid_pattern=mtp_pattern,
    )
    if raw.get("use_bias") or raw.get("use_conv_bias") is False:
        raise ModelError(f"model {name}: Mamba in/out projection biases or a conv without bias are not modelled "
                         "(Megatron's MambaMixer asserts neither)")
    if "E" in pattern + (mtp_pattern or ""):
        fields.update(num_experts=raw["n_routed_experts"], moe_router_topk=raw["num_experts_per_tok"],
                      moe_ffn_hidden_size=raw["moe_intermediate_size"],
                      moe_shared_expert_intermediate_size=raw.get("moe_shared_expert_intermediate_size"),
                      moe_router_score_bias=True, layer_is_moe=tuple(ch == "E" for ch in pattern),
                      moe_latent_size=raw.get("moe_latent_size"))  # Nemotron 3 Super / Ultra (constraints/models/latent_moe.py)
    return ModelSpec(**fields)


def _model_from_yaml(data: dict, name: str) -> ModelSpec:
    """A short model YAML: ModelSpec fields, plus `first_k_dense_layers: N` as a shorthand pattern."""
    data = dict(data)
    data.setdefault("name", name)
    first_k = data.pop("first_k_dense_layers", None)
    _check_num_layers(data.get("num_layers"), name, "num_layers")
    if first_k is not None:
        data["layer_is_moe"] = [i >= first_k for i in range(data["num_layers"])]
    data.setdefault("num_query_groups", data.get("num_attention_heads"))
    if "kv_channels" not in data and data.get("hidden_size") and data.get("num_attention_heads"):
        data["kv_channels"] = data["hidden_size"] // data["num_attention_heads"]
    data.setdefault("max_position_embeddings", 131072)
    return ModelSpec(**data)


# Keys only an HF config has, and keys only a ModelSpec YAML has (hidden_size, vocab_size... are in both).
_HF_ONLY_KEYS = {"num_hidden_layers", "intermediate_size", "num_key_value_heads", "n_embd", "n_layer", "n_head",
                 "architectures", "transformers_version", "torch_dtype", "hidden_act", "rms_norm_eps"}
_SPEC_ONLY_KEYS = {"num_layers", "ffn_hidden_size", "num_query_groups", "kv_channels"}


def _looks_like_hf(data: dict) -> bool:
    return bool(_HF_ONLY_KEYS & set(data)) and not (_SPEC_ONLY_KEYS & set(data))


def model_from_mapping(data: dict, name: str) -> ModelSpec:
    """HF config (has `model_type`) or ModelSpec-shaped mapping, with one-line errors."""
    if not isinstance(name, str) or len(name) > 256:  # the name starts every message below: bound it first
        raise ModelError(f"model: name {shown(name)} is not a display name of at most 256 characters; shorten it")
    if not data:
        raise ModelError(f"model {name}: the mapping is empty; give an HF config.json (with model_type) "
                         "or a model YAML (num_layers, hidden_size, ...)")
    if "model_type" not in data and _looks_like_hf(data):
        raise ModelError(f"model {name}: HF config has no model_type; add \"model_type\" (e.g. \"llama\") "
                         "as in the model's HF config.json")
    try:
        if "model_type" in data:
            return model_from_hf_config(data, name)
        return _model_from_yaml(data, name)
    except ValidationError as exc:
        raise ModelError(f"model {name}: field {validation_line(exc, reasons=BOUND_REASONS)}") from None
    except (KeyError, TypeError) as exc:
        raise ModelError(f"model {name}: missing or malformed field {shown(str(exc))}") from None
    except (ZeroDivisionError, OverflowError) as exc:  # e.g. an HF gpt2 config with n_head: 0
        raise ModelError(f"model {name}: a field is zero or out of range ({exc}); copy the values from the "
                         "model's HF config.json") from None


def _is_folder(path: Path) -> bool:
    """A directory, False for a name the OS cannot even look up (too long, NUL): that is an unknown model."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def load_model(name_or_path: str) -> ModelSpec:
    """A bundled model by case-insensitive stem (e.g. `llama-3.1-70b`), a path to an HF config.json / model YAML, or
    an HF model folder holding config.json."""
    path = Path(name_or_path)
    if _is_folder(path) and is_regular_file(path / "config.json"):
        path = path / "config.json"  # an HF checkpoint or download folder: its config.json describes the model
    if not is_regular_file(path):
        names = bundled_models()
        meant = resolve_name(name_or_path, names)
        hub_repo = hub_id_tail(name_or_path)
        if meant is None and hub_repo is not None and not os.path.lexists(name_or_path):
            meant = exact_name(hub_repo, names) or exact_name(hub_repo.removeprefix("Meta-"), names)
        path = MODELS_DIR / f"{meant}.json" if meant is not None else None
        if path is None and os.path.lexists(name_or_path):  # exists but is a directory, FIFO, device...
            path = Path(name_or_path)
        if path is None and hub_repo is not None:
            raise ModelError(f"--model: no file {shown(name_or_path)}, and no bundled model {shown(hub_repo)}"
                             f"{did_you_mean(hub_repo, names)}; for a hub model, download its config.json "
                             f"(`huggingface-cli download {shown(name_or_path)[1:-1]} config.json`) and pass that path")
        if path is None and looks_like_path(name_or_path):
            raise ModelError(f"--model: no file {shown(name_or_path)}; check the path (an HF config.json, a model YAML, or "
                             "the model's folder)")
        if path is None:
            raise ModelError(f"--model: unknown model {shown(name_or_path)}{did_you_mean(name_or_path, names)} (`shardplan "
                             "models` lists the bundled ones; or give a path to an HF config.json / model YAML)")
    label = f"--model {path}"
    try:
        text = read_text(path, "model", f"--model: {path}", expected="an HF config.json or a model YAML")
        data = load_json(text, "model", label) if path.suffix == ".json" else load_yaml(text, "model", label)
    except InputRefused as exc:
        raise ModelError(str(exc)) from None
    if not isinstance(data, dict):
        raise ModelError(f"--model: {path} must hold a mapping of model fields")
    return model_from_mapping(data, config_name(path, data))


HUB_SNAPSHOT = re.compile(r"^[0-9a-f]{40}$")  # huggingface_hub's cache: models--ORG--NAME/snapshots/<commit sha>/config.json


def config_name(path: Path, data: dict) -> str:
    """The name a model file is shown under, as the user knows it (issue 31: a HF folder's model showed as `config`).
    An HF download keeps config.json in a folder named after the model, and that folder names it; in huggingface_hub's
    cache the folder is a commit hash, so the cache entry `models--ORG--NAME` names it, else the config's own
    `_name_or_path` (what transformers wrote when it saved the config); any other file is named by its stem."""
    if path.stem != "config" or path.parent.name in ("", ".", "/"):
        return path.stem
    folder = path.parent.name
    if not HUB_SNAPSHOT.match(folder):
        return folder
    entry = path.parent.parent.parent.name
    if entry.startswith("models--") and entry.count("--") >= 2:
        return entry.split("--", 2)[2]
    named = data.get("_name_or_path")
    if isinstance(named, str) and named.strip("/ "):
        return named.strip("/ ").rsplit("/", 1)[-1][:256]
    return folder
