"""What the HF config reader did not follow: an unknown model family read as a Llama-style decoder, keys whose
effect is not priced, and defaults that transformers sets per family but the config leaves out.

Why: a config.json of a family shardplan has no reader for (Gemma 2, StarCoder2, OLMo 2, ...) is read through the
generic decoder path, which takes hidden_size, layers, heads, MLP width and vocabulary and nothing else. Without these
notes, Gemma 2's logit soft-capping and alternating 4096-token windows, or an untied/tied embedding the config does not
state, would change the answer without a word. Each note becomes a `check` warning (rule `model_config`) and a line
under `solve`'s table; bundled configs read with none (tests/constraints/models/test_hf_config_reading.py).
"""
from __future__ import annotations

from boundary.show import shown
from constraints.spec import Activation, YarnRope

# model_type -> transformers' default tie_word_embeddings for that family when config.json leaves it out
# (each family's configuration_*.py in huggingface/transformers: LlamaConfig, MistralConfig, MixtralConfig,
# Qwen2Config, Qwen3Config, Qwen2MoeConfig, Qwen3MoeConfig, DeepseekV2Config, DeepseekV3Config, GptOssConfig,
# NemotronConfig all default to False; GPT2Config to True). Kimi-K2 ships DeepseekV3's configuration code; DeepSeek-V2
# is V3's MLA + shared-expert MoE without the score-correction bias and MTP, which the generic path reads key by key.
FAMILY_TIE_DEFAULT = {"llama": False, "mistral": False, "mixtral": False, "qwen2": False, "qwen3": False,
                      "qwen2_moe": False, "qwen3_moe": False, "deepseek_v2": False, "deepseek_v3": False,
                      "kimi_k2": False, "gpt_oss": False, "nemotron": False, "gpt2": True}
# Families read through the generic path whose transformers config ties the embeddings when config.json leaves
# tie_word_embeddings out (huggingface/transformers configuration_*.py: GemmaConfig, Gemma2Config, Gemma3TextConfig,
# CohereConfig, Cohere2Config, Starcoder2Config, SmolLM3Config default it to True); their counts then match HF's
UNREAD_FAMILY_TIE_DEFAULT = {"gemma": True, "gemma2": True, "gemma3_text": True, "cohere": True, "cohere2": True,
                             "starcoder2": True, "smollm3": True}
# families with a reader of their own in constraints/models/load.py (their keys are audited there)
OWN_READER_TYPES = ("nemotron_h", "llama4", "llama4_text")
KNOWN_TYPES = tuple(FAMILY_TIE_DEFAULT) + OWN_READER_TYPES

# keys constraints/models/load.py reads on the generic and GPT-2 paths
KEYS_READ = frozenset((
    "model_type", "hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size", "num_key_value_heads",
    "head_dim", "vocab_size", "max_position_embeddings", "hidden_act", "tie_word_embeddings", "attention_bias", "mlp_bias",
    "attention_dropout", "hidden_dropout", "sliding_window", "use_sliding_window", "layer_types",
    "n_routed_experts", "num_local_experts", "num_experts", "num_experts_per_tok", "experts_per_token",
    "moe_intermediate_size", "n_shared_experts", "topk_method", "first_k_dense_replace", "moe_layer_freq",
    "decoder_sparse_step", "mlp_only_layers", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "num_nextn_predict_layers", "shared_expert_intermediate_size", "rope_theta", "rope_scaling",
    "n_embd", "n_layer", "n_head", "n_inner", "n_positions", "resid_pdrop", "attn_pdrop", "swiglu_limit",
    "max_window_layers", "num_kv_heads", "multi_query", "activation",
))

# keys that change neither a tensor shape nor the work of a training step at the level shardplan prices:
# metadata, token ids, initialisation, norm epsilons, RoPE frequencies and scaling (element-wise on q/k), router loss
# coefficients and score normalisation (a few element-wise ops per token), inference-only settings
KEYS_WITHOUT_COST = frozenset((
    "_comment", "_name_or_path", "architectures", "auto_map", "transformers_version", "torch_dtype", "dtype",
    "bos_token_id", "eos_token_id", "pad_token_id", "initializer_range", "initializer_factor",
    "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps",
    "rope_theta", "rope_scaling", "rope_parameters", "rope_interleave", "partial_rotary_factor", "initial_context_length",
    "use_cache", "pretraining_tp", "num_logits_to_keep", "quantization_config", "ep_size",
    "output_router_logits", "router_aux_loss_coef", "aux_loss_alpha", "seq_aux", "router_jitter_noise",
    "norm_topk_prob", "routed_scaling_factor", "scoring_func", "embd_pdrop", "n_ctx",
    "activation_function", "is_decoder", "tokenizer_class", "summary_type", "summary_use_proj", "summary_activation",
    "summary_proj_to_labels", "summary_first_dropout", "scale_attn_weights", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "task_specific_params",
))

# keys whose effect is known and not priced, stated in docs/limits.md (DeepSeek's node-limited routing)
KEYS_STATED_IN_LIMITS = frozenset(("n_group", "topk_group"))

# hidden_act values the generic path reads as a gated MLP without doubt (SwiGLU: Llama, Mistral, Qwen, DeepSeek)
GATED_ACTS = ("silu", "swish")
# hidden_act values the generic path reads as a plain two-matrix MLP; every other value is read as SwiGLU. The gelu
# variants are plain outside the Gemma families (`geglu_family`): StarCoder2 (gelu_pytorch_tanh, c_fc / c_proj),
# GPT-NeoX, Falcon, Phi-2 (gelu_new) all use a two-matrix MLP
PLAIN_MLP_ACTIVATIONS = {"relu2": Activation.squared_relu, "gelu": Activation.gelu, "gelu_new": Activation.gelu,
                         "gelu_pytorch_tanh": Activation.gelu, "gelu_fast": Activation.gelu, "gelu_python": Activation.gelu,
                         "gelu_accurate": Activation.gelu}


def hidden_act_of(raw: dict) -> str | None:
    """The MLP's activation name: `hidden_act`, else `activation` (transformers FalconConfig names it so, default
    "gelu"; a Falcon config read as SwiGLU had half again its MLP weights, +38 % on Falcon-40B). None when neither."""
    for key in ("hidden_act", "activation"):
        value = raw.get(key)
        if isinstance(value, str):
            return value
    return None


def geglu_family(model_type: object) -> bool:
    """Gemma families gate their MLP with gelu (transformers GemmaMLP: gate_proj, up_proj, down_proj) whatever
    hidden_act says: constraints/models/load.py reads them gated, reading_notes says so."""
    return str(model_type).startswith("gemma")


def reading_notes(raw: dict) -> tuple[str, ...]:
    """One line per thing the generic HF reader did not follow in `raw` (an HF config.json mapping); empty for the
    families it knows when every key is read or has no cost."""
    mt = str(raw.get("model_type", ""))
    if mt in OWN_READER_TYPES:
        return ()
    notes = []
    if mt not in KNOWN_TYPES:
        act = hidden_act_of(raw) or "silu"
        style = ("a DeepSeek-style decoder (multi-latent attention from kv_lora_rank, one RMSNorm before attention and "
                 "before the MLP)" if raw.get("kv_lora_rank") is not None else
                 "a Llama-style decoder (RoPE, one RMSNorm before attention and before the MLP)")
        notes.append(f"model_type {shown(mt)} is not a family shardplan reads by name; read as {style}; families read "
                     f"by name: {', '.join(sorted(KNOWN_TYPES))}")
        if "tie_word_embeddings" not in raw and mt in UNREAD_FAMILY_TIE_DEFAULT:
            notes.append(f"tie_word_embeddings is absent: read as tied, transformers' default for model_type {shown(mt)}")
        elif "tie_word_embeddings" not in raw:
            notes.append(f"tie_word_embeddings is absent and transformers' default for model_type {shown(mt)} is not "
                         "known here (some families tie, e.g. Gemma); read as untied: add \"tie_word_embeddings\" to the "
                         "config to be sure of the embedding count")
        window = raw.get("sliding_window")
        if window and not raw.get("layer_types") and not raw.get("use_sliding_window"):
            notes.append(f"sliding_window={shown(window)} is not applied: which layers of a model_type {shown(mt)} use the "
                         "window is not known here, so every layer is priced as full attention (an upper bound on "
                         "attention time and memory); add \"layer_types\" (sliding_attention / full_attention per layer)")
        if geglu_family(mt):
            notes.append(f"model_type {shown(mt)}'s MLP is GeGLU (a gelu-gated three-matrix MLP, transformers GemmaMLP): "
                         "priced with SwiGLU's shapes, which are the same weights and FLOPs; Megatron-LM's command line "
                         "has no GeGLU flag, so a rendered script would train SwiGLU")
        elif hidden_act_of(raw) is None:
            notes.append(f"hidden_act is absent, so a model_type {shown(mt)} MLP is read as gated SwiGLU (three matrices); "
                         "a plain MLP of the same width has a third fewer MLP weights and FLOPs: add \"hidden_act\"")
        elif act in PLAIN_MLP_ACTIVATIONS:
            notes.append(f"hidden_act {shown(act)} of an unknown family is read as a plain two-matrix MLP (as GPT-2's, "
                         "Falcon's); if the model's MLP is gated (gate_proj, up_proj, down_proj), it has half again as "
                         "many MLP weights and FLOPs: write a model YAML with activation swiglu (README 'Recipe YAML')")
        elif act not in GATED_ACTS:
            notes.append(f"hidden_act {shown(act)} of an unknown family is read as a gated three-matrix MLP (GeGLU, as "
                         "Gemma's); a plain MLP of the same width has a third fewer MLP weights and FLOPs")
    scaling = raw.get("rope_scaling")
    kind = (scaling.get("rope_type") or scaling.get("type")) if isinstance(scaling, dict) else None
    if kind not in (None, "default", "llama3", "yarn"):
        factor = scaling.get("factor")
        flag = (f"; for linear scaling add --rotary-seq-len-interpolation-factor {int(factor)} to the rendered script"
                if kind == "linear" and isinstance(factor, (int, float)) and float(factor).is_integer() else "")
        notes.append(f"rope_scaling type {shown(kind)} is read without cost but not rendered (only llama3 and yarn "
                     f"scaling are): a rendered launch script trains plain RoPE{flag}")
    unread = unread_keys(raw)
    if unread:
        shown_keys = ", ".join(f"{k}={shown(raw[k], 24)}" for k in unread[:12])
        more = f" and {len(unread) - 12} more" if len(unread) > 12 else ""
        notes.append(f"config keys not read, their effect is not priced: {shown_keys}{more}")
    return tuple(notes)


def unread_keys(raw: dict) -> list[str]:
    """The keys of `raw` no reader takes and whose effect is not known to be free or stated in the Limits."""
    return [k for k in raw if k not in KEYS_READ and k not in KEYS_WITHOUT_COST and k not in KEYS_STATED_IN_LIMITS]


def rope_fields(raw: dict) -> dict:
    """ModelSpec's RoPE fields from an HF config: rope_theta, and Llama 3.x's rope_scaling (rope_type "llama3"). They
    cost nothing, but a rendered launch script without them trains another model (Megatron's --rotary-base defaults
    to 10000, Llama 3.1 was trained at 500000 with --use-rope-scaling). A YaRN rope_scaling gives `yarn`, whose
    concentration factor costs time when it is not 1 (TE's fused RoPE cannot apply it; ModelSpec.rope_mscale)."""
    out: dict = {}
    theta = raw.get("rope_theta")
    if isinstance(theta, (int, float)) and not isinstance(theta, bool) and 0 < theta <= 1e12:
        out["rotary_base"] = float(theta)
    scaling = raw.get("rope_scaling")
    if isinstance(scaling, dict) and (scaling.get("rope_type") or scaling.get("type")) == "llama3":
        factor = scaling.get("factor", 8.0)
        ok = isinstance(factor, (int, float)) and not isinstance(factor, bool) and 0 < factor <= 1e6
        out["llama3_rope_scaling_factor"] = float(factor) if ok else 8.0
    if isinstance(scaling, dict) and (scaling.get("rope_type") or scaling.get("type")) == "yarn":
        out["yarn"] = yarn_rope(scaling)
    return out


def yarn_rope(scaling: dict) -> YarnRope:
    """An HF `rope_scaling` YaRN block as Megatron trains it. Megatron-Bridge passes HF's factor, original context,
    betas and `truncate` (correction range rounded to integers), and its mscales or None for both when HF has not both;
    None gives 0.1 ln(factor) + 1 (yarn_rotary_pos_embedding._yarn_get_concentration_factor), which Megatron-LM's
    command-line defaults --mscale 1 --mscale-all-dim 0 also give, so a missing pair is stored as (1, 0): the rendered
    script (templates/recipe_args.py) then trains the same factor. DeepSeek-V3 and Kimi-K2 give (1, 1): factor 1."""
    def num(key, low=0.0):
        v = scaling.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and low <= v <= 1e6 else None
    fields = {"scaling_factor": num("factor", 1e-6), "beta_fast": num("beta_fast", 1e-6), "beta_slow": num("beta_slow", 1e-6)}
    original = num("original_max_position_embeddings", 1)
    fields["original_max_position_embeddings"] = None if original is None else int(original)
    mscale, mscale_all_dim = num("mscale"), num("mscale_all_dim")
    if mscale is not None and mscale_all_dim is not None:  # else YarnRope's defaults (1, 0), as said above
        fields.update(mscale=mscale, mscale_all_dim=mscale_all_dim)
    # an absent or unusable value takes YarnRope's default, which is Megatron-LM's
    return YarnRope(correction_range_round_to_int=bool(scaling.get("truncate", True)),
                    **{k: v for k, v in fields.items() if v is not None})


# model types whose layers are not all softmax-attention decoder layers, which the generic path would price as if they
# were (transformers model_type of each: Mamba / Mamba-2 hybrids, linear or recurrent attention)
NOT_ATTENTION_TYPES = {
    "jamba": "Mamba and attention layers with MoE every other layer (Jamba)",
    "falcon_h1": "a Mamba-2 mixer beside attention in every layer (Falcon-H1)",
    "granitemoehybrid": "Mamba-2 and attention layers (Granite 4.0-H)",
    "bamba": "Mamba-2 and attention layers (Bamba)", "zamba": "Mamba layers with shared attention (Zamba)",
    "zamba2": "Mamba-2 layers with shared attention (Zamba2)", "mamba": "Mamba layers", "mamba2": "Mamba-2 layers",
    "falcon_mamba": "Mamba layers", "rwkv": "RWKV recurrent layers", "recurrent_gemma": "recurrent (Griffin) layers",
    "minimax": "lightning linear-attention layers (MiniMax-Text-01)", "kimi_linear": "KDA linear-attention layers (Kimi-Linear)",
}
ATTENTION_LAYER_TYPES = ("full_attention", "sliding_attention", "attention")
# unread keys that say the config is a mixture of experts in a family's own words (ERNIE-4.5 moe_num_experts, Hunyuan
# num_shared_expert): reading such a config as dense would price a fraction of its weights
MOE_KEY_WORDS = ("expert", "moe_")


def not_modelled_layers(raw: dict) -> str | None:
    """What in an HF config says its layers are not all softmax attention, or None: a known non-attention family, a
    per-layer `layer_types` holding other kinds (mamba, linear_attention), or Mamba state keys."""
    mt = str(raw.get("model_type", ""))
    if mt in NOT_ATTENTION_TYPES:
        return f"model_type {shown(mt)} has {NOT_ATTENTION_TYPES[mt]}"
    kinds = raw.get("layer_types")
    if isinstance(kinds, list):
        other = sorted({str(k) for k in kinds} - set(ATTENTION_LAYER_TYPES))
        if other:
            return f"layer_types holds {', '.join(shown(k) for k in other)} layers"
    mamba = sorted(k for k in raw if str(k).startswith(("mamba_", "ssm_")) and raw[k] is not None)
    if mamba:
        return f"the config has Mamba state keys ({', '.join(mamba[:3])})"
    return None


def _describes_experts(key: object, value: object) -> bool:
    return any(w in str(key) for w in MOE_KEY_WORDS) and ((isinstance(value, int) and not isinstance(value, bool)
                                                           and value > 1) or (isinstance(value, list) and bool(value)))


def unread_moe_keys(raw: dict) -> list[str]:
    """`key=value` of keys no reader takes that describe experts (MOE_KEY_WORDS) with a value above one or a list, also
    one level down in an unread mapping (DBRX keeps them in `ffn_config`: `ffn_config.moe_num_experts=16`)."""
    out = []
    for k in unread_keys(raw):
        v = raw[k]
        if _describes_experts(k, v):
            out.append(f"{k}={shown(v, 24)}")
        elif isinstance(v, dict):
            out += [f"{k}.{sub}={shown(sv, 24)}" for sub, sv in v.items() if _describes_experts(sub, sv)]
    return out
