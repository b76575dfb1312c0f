"""Activation bytes one rank stores for one micro-batch, per decoder layer and for the model ends.

Base: Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models"), sec. 4,
Table 2: per layer sbh(34 + 5as/h) bytes in 16-bit; with TP t and SP everything is divided by t; without
SP the LayerNorm/dropout parts (10sbh) stay whole. Megatron's `theoretical_memory_usage.py` implements
the SP + selective case as sbh(18 + 4*ffn/h)/t. We generalise term by term (each named below):
- attention is fused/flash (Megatron with TE): the 5as^2b score/softmax terms are never stored; only the
  per-head softmax statistics (fp32 LSE) are. `core_attn` recompute drops those.
- GQA: K and V hold g*d channels; per rank max(g/t, 1) groups (KV heads are replicated when g < t).
- SwiGLU: fc1 output is 2*ffn wide (gate and up).
- MLA: down-projection outputs, normed latents and the up-projected q/k/v (see DeepSeek-V2 sec. 2.1).
- MoE: tokens*topk routed copies on the expert side (forced balance: every EP rank gets the mean), width
  /ETP; shared experts as a dense MLP of their width; router probabilities in fp32. A latent MoE's experts
  save latent-wide tensors, plus its projections' inputs (constraints/models/latent_moe.py). The routing probabilities
  are applied inside the expert activation (megatron/core/transformer/moe/experts.py TEGroupedMLP.forward,
  weighted_bias_swiglu_impl, since "Memory efficient token permutation", Megatron-LM 2659630, 2025-04), so the
  combine (token_dispatcher.py unpermute without probs) saves nothing: the experts' fc2 output is not kept.
  In bf16 the shared experts' fc1 saves the very tensor the router saved (the pre-MLP norm output; TE Linear
  keeps its input without a copy when no cast is needed), so it is counted once; FP8 saves a quantised copy.
- QK layernorm (Qwen3, --qk-layernorm): the per-head q/k RMSNorm (TENorm) saves its input and fp32 rstd
  before RoPE (megatron/core/transformer/attention.py get_query_key_value_tensors, q_layernorm/k_layernorm).
- CP: every term holds s/CP tokens.
- FP8 (TE): GEMM inputs are saved quantised, 1 byte per element instead of 2. NVFP4 (TE NVFP4BlockScaling):
  4-bit E2M1 values, two per byte, plus one E4M3 scale byte per 16-element block: 9 bytes per 16 elements
  (NVIDIA, "Pretraining LLMs with NVFP4", arXiv 2509.25149 sec. 2; cited by megatron/core/fp4_utils.py).
- dropout masks (1 byte) only when the model trains with dropout > 0.
- `--attention-backend local/unfused` store the s x s scores instead of the LSE: constraints/memory/attention_scores.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from constraints.memory import attention_scores
from constraints.models import hybrid_pattern, mamba
from constraints.models.latent_moe import latent_activation_terms
from constraints.spec import Activation, JobSpec, ModelSpec, Precision, Recipe, RecomputeGranularity, RecomputeModule


@dataclass(frozen=True)
class Shape:
    """Per-rank token counts and divisors for one micro-batch."""

    tokens: int  # s*b/CP
    tp: int
    sp_div: int  # TP when SP (or distribute-saved-activations) shards the sequence dims, else 1
    etp: int
    ep: int
    lin_per16: int  # bytes per 16 elements of a saved GEMM input (LIN_BYTES_PER_16: 32 bf16, 16 FP8, 9 NVFP4, 64 fp32)
    core_attention: Optional[attention_scores.CoreAttention] = None  # set for the backends that store the scores
    act_bytes: int = 2  # bytes of one saved activation element outside the GEMM inputs: 2 (bf16 / fp16), 4 in fp32
    compiled_loss_copy: bool = False  # --cross-entropy-loss-fusion: one more fp32 logits buffer at the loss (output_bytes)

    def lin(self, elems: int, div: int = 1) -> int:
        """Bytes of `elems` saved GEMM-input elements split over `div` ranks, rounded up."""
        return _ceil_div(self.lin_per16 * elems, 16 * div)


LIN_BF16_PER16 = 32  # 16 bf16 elements
LIN_FP32_PER16 = 64  # 16 fp32 elements


def activation_element_bytes(job: JobSpec) -> int:
    """Bytes of a saved activation element: 4 in fp32 training (params_dtype torch.float: every layer computes and
    saves fp32), else 2 (bf16 / fp16; fp8 and fp4 keep bf16 outside their GEMM inputs)."""
    return 4 if job.precision == Precision.fp32 else 2


def lin_bytes_per16(job: JobSpec) -> int:
    """Bytes per 16 elements of a GEMM input TE saves for backward, by precision (module docstring)."""
    if job.precision.is_fp4:
        return 9
    if job.precision == Precision.fp32:
        return LIN_FP32_PER16
    return 16 if job.precision.is_fp8 else LIN_BF16_PER16


def shape_of(job: JobSpec, recipe: Recipe) -> Shape:
    tokens = job.seq_length * recipe.mbs // recipe.cp
    return Shape(tokens=tokens, tp=recipe.tp, sp_div=recipe.tp if recipe.sp_active else 1,
                 etp=recipe.etp_effective, ep=recipe.ep, lin_per16=lin_bytes_per16(job),
                 core_attention=attention_scores.core_attention_of(job, recipe), act_bytes=activation_element_bytes(job),
                 compiled_loss_copy=recipe.cross_entropy_loss_fusion and recipe.compiled_loss_fusion)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def attention_terms(model: ModelSpec, sh: Shape) -> dict[str, int]:
    """Korthikanti Table 2 attention block (11sbh for MHA), generalised. Keys name the saved tensor."""
    T, h, t, e = sh.tokens, model.hidden_size, sh.tp, sh.act_bytes  # e: bytes per element, 2 (4 in fp32)
    a = model.num_attention_heads
    mask = T * h // sh.sp_div if model.hidden_dropout > 0 else 0
    terms = {
        "ln1_input": _ceil_div(e * T * h, sh.sp_div),           # residual stream into the input norm
        "qkv_input": sh.lin(T * h, sh.sp_div),  # norm output, saved by the QKV GEMM
        "softmax_stats": 4 * T * _ceil_div(a, t),                 # flash-attention LSE, fp32 per head
        "attn_dropout_mask": mask,
    }
    if model.multi_latent_attention:
        qk = model.qk_head_dim + model.qk_pos_emb_head_dim
        kv_latent = model.kv_lora_rank + model.qk_pos_emb_head_dim
        q_latent = model.q_lora_rank or 0
        terms.update({
            "mla_latents": _ceil_div(e * T * (2 * q_latent + kv_latent + model.kv_lora_rank), sh.sp_div),
            "mla_qkv_up": e * T * _ceil_div(a, t) * (2 * qk + model.v_head_dim),
            "attn_output": sh.lin(T * _ceil_div(a, t) * model.v_head_dim),
        })
        return _with_scores(model, sh, terms, _ceil_div(a, t))  # MLA: every head has its own K and V
    d = model.kv_channels
    groups = max(model.num_query_groups // t, 1)
    terms.update({
        "q_k": e * T * (_ceil_div(a, t) * d + groups * d),   # Q and K saved for QK^T
        "v": e * T * groups * d,
        "attn_output": sh.lin(T * _ceil_div(a, t) * d),  # input of the output projection
    })
    if model.qk_layernorm:  # q/k RMSNorm inputs (bf16) and rstd (fp32 per token and head), before RoPE
        heads = _ceil_div(a, t) + groups
        terms["qk_norm_input"] = e * T * heads * d + 4 * T * heads
    return _with_scores(model, sh, terms, groups)


def _with_scores(model: ModelSpec, sh: Shape, terms: dict[str, int], groups: int) -> dict[str, int]:
    """The unfused backends keep the s x s scores and no LSE (constraints/memory/attention_scores.py); `groups` are the
    K/V heads per rank before the GQA expansion."""
    if sh.core_attention is None:
        return terms
    heads = _ceil_div(model.num_attention_heads, sh.tp)
    terms.pop("softmax_stats")
    terms.update(attention_scores.score_terms(model, sh.core_attention, heads, groups))
    return terms


def dense_mlp_terms(model: ModelSpec, sh: Shape, ffn: int, prefix: str, tokens: int, div: int) -> dict[str, int]:
    """Korthikanti's MLP (19sbh at ffn=4h): input, fc1 output, activation output (fc2 input), dropout mask."""
    return {
        f"{prefix}fc1_input": sh.lin(tokens * model.hidden_size, sh.sp_div),
        f"{prefix}fc1_output": _ceil_div(sh.act_bytes * tokens * model.fc1_width(ffn), div),
        f"{prefix}act_output": sh.lin(tokens * ffn, div),
    }


def mlp_terms(model: ModelSpec, sh: Shape, is_moe: bool) -> dict[str, int]:
    T, h, e = sh.tokens, model.hidden_size, sh.act_bytes
    terms = {
        "ln2_input": _ceil_div(e * T * h, sh.sp_div),
        "mlp_dropout_mask": T * h // sh.sp_div if model.hidden_dropout > 0 else 0,
    }
    if not is_moe:
        terms.update(dense_mlp_terms(model, sh, model.ffn_hidden_size, "", T, sh.tp))
        return terms
    # tokens entering the dispatcher on this rank (SP shards them over TP), x topk copies, gathered over ETP
    local_tokens = _ceil_div(T, sh.sp_div)
    routed = local_tokens * model.moe_router_topk * sh.etp
    f = model.moe_ffn_hidden_size
    w = model.moe_expert_width  # h, or a latent MoE's latent width (experts and dispatch run in it)
    terms.update({
        "router_input": e * local_tokens * h,
        "router_probs": 4 * local_tokens * model.num_experts,
        "expert_fc1_input": sh.lin(routed * w),
        "expert_fc1_output": _ceil_div(e * routed * model.fc1_width(f), sh.etp),
        # gpt-oss's clamped quick-GEGLU: weighted_bias_quick_geglu_impl (Megatron fused_bias_geglu.py) clamps the two
        # halves of FC1's output and concatenates them; the fused function saves the concatenation for its backward
        # while the clamps keep FC1's output (their backward reads it): a second copy of it
        "expert_glu_clamp_output": _ceil_div(e * routed * model.fc1_width(f), sh.etp)
        if model.activation == Activation.quick_geglu and model.glu_clamp is not None else 0,
        "expert_act_output": sh.lin(routed * f, sh.etp),
        **latent_activation_terms(model, sh, local_tokens),
    })
    if model.moe_shared_expert_intermediate_size:
        terms.update(dense_mlp_terms(model, sh, model.moe_shared_expert_intermediate_size, "shared_", T, sh.tp))
        if sh.lin_per16 == LIN_BF16_PER16:
            terms["shared_fc1_input"] = 0  # the router's saved input, same tensor (module docstring)
    return terms


# the Mamba-2 layer's tensors saved in the activation dtype (constraints/models/mamba.py mamba_activation_terms: "bf16")
MAMBA_BF16_TERMS = frozenset({"ln1_input", "mamba_zxbcdt", "mamba_scan_output", "mamba_norm_input"})


# Which saved tensors each selective-recompute module drops (Megatron --recompute-modules semantics:
# the module's inside is recomputed from its input in backward).
_DROPPED_BY: dict[RecomputeModule, tuple[str, ...]] = {
    RecomputeModule.core_attn: ("softmax_stats",) + attention_scores.SCORE_TERMS,
    RecomputeModule.layernorm: ("qkv_input", "fc1_input", "router_input", "shared_fc1_input"),
    RecomputeModule.mla_up_proj: ("mla_qkv_up",),
    RecomputeModule.mlp: ("fc1_output", "act_output"),
    RecomputeModule.moe_act: ("expert_act_output", "expert_glu_clamp_output"),
    RecomputeModule.moe: ("router_probs", "expert_fc1_input", "expert_fc1_output", "expert_glu_clamp_output", "expert_act_output",
                          "shared_fc1_output", "shared_act_output", "latent_fc1_input", "latent_fc2_input"),
    RecomputeModule.shared_experts: ("shared_fc1_output", "shared_act_output"),
}


def layer_terms(model: ModelSpec, sh: Shape, is_moe) -> dict[str, int]:
    """All saved tensors of one layer for one micro-batch, no recompute. `is_moe` is the layer's kind: a transformer
    layer's MoE flag, or a hybrid layer's symbol (constraints/models/mamba.py: one sub-block per layer)."""
    if isinstance(is_moe, str):
        if is_moe == hybrid_pattern.MAMBA:
            terms = mamba.mamba_activation_terms(model, sh.tokens, sh.tp, sh.sp_div, sh.lin)
            # its bf16 tensors are fp32 in fp32 training (the GEMM inputs already follow sh.lin, the rstd is fp32)
            return {k: v * sh.act_bytes // 2 if k in MAMBA_BF16_TERMS else v for k, v in terms.items()}
        if is_moe == hybrid_pattern.ATTENTION:
            return attention_terms(model, sh)
        return mlp_terms(model, sh, is_moe == hybrid_pattern.MOE)
    return {**attention_terms(model, sh), **mlp_terms(model, sh, is_moe)}


def recomputed_modules(recipe: Recipe) -> tuple[RecomputeModule, ...]:
    """The selective-recompute modules whose saved tensors a layer drops (none unless granularity is selective)."""
    rc = recipe.recompute
    return tuple(rc.modules) if rc.granularity == RecomputeGranularity.selective else ()


def layer_bytes(model: ModelSpec, sh: Shape, is_moe: bool, recipe: Recipe) -> int:
    """Bytes one layer keeps for one micro-batch under selective (or no) recompute."""
    return kept_layer_bytes(model, sh, is_moe, recomputed_modules(recipe))


def kept_layer_bytes(model: ModelSpec, sh: Shape, is_moe: bool, modules: tuple[RecomputeModule, ...]) -> int:
    """layer_bytes given the recomputed modules: what it reads of a recipe, so callers can cache by it."""
    terms = layer_terms(model, sh, is_moe)
    for module in modules:
        for key in _DROPPED_BY.get(module, ()):
            terms.pop(key, None)
    return sum(terms.values())


def inputs_sharded(recipe: Recipe) -> bool:
    """Checkpointed layer inputs are split over TP by SP or by --distribute-saved-activations
    (Megatron tensor_parallel.checkpoint)."""
    return recipe.sp_active or recipe.distribute_saved_activations


def layer_input_bytes(model: ModelSpec, sh: Shape, recipe: Recipe) -> int:
    """A checkpointed layer input under full recompute: the residual stream, sharded by SP or by
    --distribute-saved-activations (Megatron tensor_parallel.checkpoint)."""
    return checkpoint_input_bytes(model, sh, inputs_sharded(recipe))


def checkpoint_input_bytes(model: ModelSpec, sh: Shape, sharded: bool) -> int:
    """layer_input_bytes given whether the input is sharded over TP (inputs_sharded)."""
    return _ceil_div(sh.act_bytes * sh.tokens * model.hidden_size, sh.tp if sharded else 1)


def embedding_bytes(model: ModelSpec, sh: Shape) -> int:
    """First stage: int64 token ids (Megatron's 8sb per micro-batch) + embedding dropout mask."""
    mask = sh.tokens * model.hidden_size // sh.sp_div if model.hidden_dropout > 0 else 0
    return 8 * sh.tokens + mask


def output_bytes(model: ModelSpec, sh: Shape, padded_vocab: int) -> int:
    """Last stage, at the loss: final-norm input, output-GEMM input, the bf16 logits over V/TP and the fp32 copy the
    cross entropy makes of them (Megatron's PP=1 term 4sbh + 4sbV, split by what is held). Fused or not, Megatron's
    cross entropy casts the logits to fp32 and saves that buffer (exp_logits) for backward while the bf16 logits are
    still alive: megatron/core/tensor_parallel/cross_entropy.py calculate_logits_max (`.float()`), used by both
    vocab_parallel_cross_entropy and fusions/fused_cross_entropy.py (--cross-entropy-fusion-impl native, the
    default) @d98e8a6; the TE impl keeps an fp32 input gradient too (transformer_engine/pytorch/triton/
    cross_entropy.py cross_entropy_forward, `grad_input = torch.empty_like(_input, dtype=torch.float32)` since
    TE 01bbe3e, 2026-07-09). So 6 B per logit at the end of the forward without fusion.
    --cross-entropy-loss-fusion with the native impl (Recipe.compiled_loss_fusion; Megatron-LM asserts it is not te,
    constraints/megatron/refusals.py; the te impl is TE's Triton kernel, priced above) runs those steps
    inside `jit_fuser` functions, and jit_fuser is torch.compile from torch 2.2 (megatron/core/jit.py:19-20 @d98e8a64).
    calculate_predicted_logits (megatron/core/fusions/fused_cross_entropy.py:25-44) mutates its fp32 logits input in
    place (`-=` and `torch.exp(..., out=)`, megatron/core/tensor_parallel/cross_entropy.py:42 and :62) and returns
    them as exp_logits; torch.compile functionalizes a mutated graph input (AOTAutograd computes the result into a new
    buffer and copies it back into the input afterwards), so the compiled call holds a second fp32 T x V/TP buffer
    beside the fp32 logits: 4 B per logit more. (Held out: Megatron-LM's functional tests measure its fusion cases
    above their unfused siblings, bench/megatron_golden/compare.py; nothing here is fitted on them.)"""
    T, h, e = sh.tokens, model.hidden_size, sh.act_bytes
    v_local = padded_vocab // sh.tp
    norm_in = _ceil_div(e * T * h, sh.sp_div)
    gemm_in = e * T * h  # gathered over TP before the vocab-parallel GEMM
    logits = e * T * v_local
    # fp32 training: the logits are fp32 already and `.float()` returns the same tensor (torch.Tensor.float: "if self is
    # already torch.float32, self is returned"), so the native cross entropy works in place on them: no second buffer
    fp32_loss_buffer = 0 if e == 4 else 4 * T * v_local
    compiled_copy = 4 * T * v_local if sh.compiled_loss_copy else 0
    return norm_in + gemm_in + logits + fp32_loss_buffer + compiled_copy
