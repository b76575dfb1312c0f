"""ModelSpec from parsed Megatron-LM flags, with Megatron's own defaults and derivations where a flag is absent.

Why its own module: the model half of a Megatron command line has its own required flags, its own derived
sizes (SwiGLU FFN width, GQA groups, MLA head dims) and may be incomplete (then `shardplan check` asks for
the missing flags instead of guessing). Defaults and derivations follow megatron/training/arguments.py
(validate_args) and TransformerConfig @ d98e8a64 unless a comment says otherwise.
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import ValidationError

from constraints.megatron.errors import MegatronArgsError, error_from_validation
from constraints.megatron.hybrid_flags import hybrid_model_fields, hybrid_moe_layers, no_rope_fields, window_fields
from constraints.megatron.patterns import moe_layer_pattern
from constraints.spec import MAX_NUM_LAYERS, Activation, ModelSpec, Normalization

# Model flags Megatron needs before it can build the network; without them there is no ModelSpec.
REQUIRED_MODEL_FLAGS = ("--num-layers", "--hidden-size", "--num-attention-heads", "--max-position-embeddings",
                        "--vocab-size")


def model_from_flags(raw: dict[str, Any], name: str) -> tuple[Optional[ModelSpec], list[str]]:
    """(ModelSpec, []) from the parsed flags, or (None, the required model flags that are absent)."""
    g = raw.get
    hybrid = hybrid_model_fields(raw, g("--hidden-size") or 0) if "--hidden-size" in raw else None
    # a hybrid pattern sets the layer count (constraints/megatron/hybrid_flags.py)
    missing = [f for f in REQUIRED_MODEL_FLAGS if f not in raw and not (hybrid and f == "--num-layers")]
    if missing:
        return None, missing
    L, h, heads = (hybrid["num_layers"] if hybrid else g("--num-layers")), g("--hidden-size"), g("--num-attention-heads")
    if isinstance(L, int) and L > MAX_NUM_LAYERS:  # before any per-layer tuple (MoE, window, NoPE) is built from it
        raise MegatronArgsError(f"--num-layers {L:,} is above the {MAX_NUM_LAYERS} layers shardplan models (the deepest "
                                "published LLMs have under 200); give the model's layer count")
    # --hidden-size not divisible by the heads without --kv-channels is validate_args' assert, reported as an illegal verdict
    # (constraints/megatron/refusals.py); the model is read with the floor head dim so the rest can still be judged
    swiglu = g("--swiglu", False)
    if swiglu and (g("--squared-relu") or g("--quick-geglu")):  # argument_utils.py asserts `not args.swiglu` there
        raise MegatronArgsError("--swiglu with --squared-relu or --quick-geglu: Megatron-LM takes one activation; keep one")
    gated = swiglu or (g("--quick-geglu") and not g("--squared-relu"))
    if swiglu and g("--glu-linear-offset") and not g("--no-bias-swiglu-fusion"):
        raise MegatronArgsError("--glu-linear-offset with --swiglu: Megatron's TransformerConfig takes a linear offset only "
                                "with the quick-GEGLU gate when bias_activation_fusion is on; drop it or use --quick-geglu")
    # validate_args: ffn = 4h, or int(4h*2/3 / 64)*64 with SwiGLU.
    ffn = g("--ffn-hidden-size") or (int((4 * h * 2 / 3) / 64) * 64 if swiglu else 4 * h)
    pos = "rope" if g("--use-rotary-position-embeddings") else g("--position-embedding-type", "learned_absolute")
    bias = not g("--disable-bias-linear", False)  # --disable-bias-linear sets add_bias_linear False (default True)
    experts = g("--num-experts")
    mla = g("--multi-latent-attention", False)
    fields: dict[str, Any] = dict(
        name=name, num_layers=L, hidden_size=h, ffn_hidden_size=ffn, num_attention_heads=heads,
        # TransformerConfig: num_query_groups only with --group-query-attention (flag default 1), else = heads.
        num_query_groups=g("--num-query-groups", 1) if g("--group-query-attention") else heads,
        kv_channels=g("--kv-channels") or (max(h // heads, 1) if heads > 0 else 0), vocab_size=g("--vocab-size"),
        max_position_embeddings=g("--max-position-embeddings"),
        # argument_utils.py: --swiglu (SiLU GLU), else --squared-relu, else --quick-geglu (gated quick-GELU), else GELU
        activation=Activation.swiglu if swiglu else (Activation.squared_relu if g("--squared-relu") else (
            Activation.quick_geglu if g("--quick-geglu") else Activation.gelu)),
        # the clamp and offset act only in the gated paths; Megatron ignores them otherwise, and so does this reading
        glu_clamp=g("--activation-func-clamp-value") if gated else None,
        glu_linear_offset=g("--glu-linear-offset", 0.0) if gated else 0.0,
        normalization=Normalization(g("--normalization", "LayerNorm")),
        tied_embeddings=not g("--untie-embeddings-and-output-weights", False),
        learned_position_embeddings=pos == "learned_absolute" and not g("--no-position-embedding", False),
        attention_bias=bias, qkv_bias=bool(g("--add-qkv-bias")) and not bias, mlp_bias=bias, qk_layernorm=g("--qk-layernorm", False),
        attention_sinks=g("--softmax-type") == "learnable",
        hidden_dropout=g("--hidden-dropout", 0.1), attention_dropout=g("--attention-dropout", 0.1),
        mtp_num_layers=g("--mtp-num-layers") or 0, mtp_repeated_layer=bool(g("--mtp-use-repeated-layer", False)),
        multi_latent_attention=mla,
        rotary_base=g("--rotary-base"),
        llama3_rope_scaling_factor=g("--rope-scaling-factor", 8.0) if g("--use-rope-scaling") else None,
    )
    if pos == "yarn" and not mla:  # GPTModel's YaRN, with argument_utils._apply_yarn_config_from_args's defaults
        # one dest, store_true / store_false (default None -> True); a script giving both is read as off (argparse
        # takes the later one; the order is not kept here; it changes the RoPE frequencies, not cost or memory)
        round_to_int = bool(g("--yarn-correction-range-round-to-int", True)) and not g("--no-yarn-correction-range-round-to-int", False)
        given = {"scaling_factor": g("--rotary-scaling-factor"), "mscale": g("--mscale"), "mscale_all_dim": g("--mscale-all-dim"),
                 # Megatron's None -> default for these three: 0 is read as unset, as _apply_yarn_config_from_args's `or`
                 "original_max_position_embeddings": g("--yarn-original-max-position-embeddings") or None,
                 "beta_fast": g("--yarn-beta-fast") or None, "beta_slow": g("--yarn-beta-slow") or None}
        # an absent flag takes YarnRope's default, which is Megatron-LM's; validated with the ModelSpec below, so a
        # value out of range is the one-line error naming its flag
        fields["yarn"] = {"correction_range_round_to_int": round_to_int, **{k: v for k, v in given.items() if v is not None}}
    if experts is not None:
        fields.update(num_experts=experts, moe_router_topk=g("--moe-router-topk", 2),
                      moe_ffn_hidden_size=g("--moe-ffn-hidden-size") or ffn,  # validate_args: defaults to ffn
                      moe_shared_expert_intermediate_size=g("--moe-shared-expert-intermediate-size"),
                      moe_shared_expert_gate=bool(g("--moe-shared-expert-gate", False)),
                      moe_router_score_bias=g("--moe-router-enable-expert-bias", False),
                      moe_router_num_groups=g("--moe-router-num-groups"), moe_router_group_topk=g("--moe-router-group-topk"),
                      moe_latent_size=g("--moe-latent-size"),  # latent MoE (constraints/models/latent_moe.py)
                      # core/transformer/moe/router.py: the router linear has a bias whenever add_bias_linear is on
                      moe_router_bias=bias,
                      layer_is_moe=(hybrid_moe_layers(hybrid) if hybrid else
                                    moe_layer_pattern(g("--moe-layer-freq", 1), L) if L > 0 else None))
    if hybrid:
        fields.update(hybrid)
    fields.update(window_fields(raw, L))
    fields.update(no_rope_fields(raw, L))
    if mla:  # flag defaults: kv-lora-rank 32, qk-head-dim 128, qk-pos-emb-head-dim 64, v-head-dim 128, q-lora-rank None
        fields.update(q_lora_rank=g("--q-lora-rank"), kv_lora_rank=g("--kv-lora-rank", 32), qk_head_dim=g("--qk-head-dim", 128),
                      qk_pos_emb_head_dim=g("--qk-pos-emb-head-dim", 64), v_head_dim=g("--v-head-dim", 128))
        if "--kv-channels" not in raw:  # MLA ignores kv_channels; ModelSpec's head dim is nope + rope (constraints/models/load.py)
            fields["kv_channels"] = fields["qk_head_dim"] + fields["qk_pos_emb_head_dim"]
    try:
        return ModelSpec(**fields), []
    except ValidationError as e:
        raise error_from_validation(e, fields) from None
