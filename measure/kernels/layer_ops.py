"""The kernels one decoder layer (and the head, and the optimizer) runs per micro-batch on one rank.

Why a list of ops and not a formula: the same list drives the torch benchmarks (what to measure), the
roofline (what to price when nothing was measured) and recomputation (which forward ops run twice), so
all three agree on the per-rank shapes a recipe induces after TP / SP / CP / EP / ETP slicing.

Conventions (Megatron-LM core, `megatron/core/transformer/*`):
- tokens per rank per micro-batch t = mbs * seq / CP; with SP (TP>1) norms, residuals and the router
  see t / TP tokens, the column/row-parallel GEMMs see all t tokens with their N (or K) split by TP.
- a GEMM `gemm:(m,n,k)` costs 2mnk FLOPs; its dgrad is (m,k,n) and its wgrad (k,n,m) (same FLOPs).
- flash attention backward does 5 of the forward's 2 matmul passes: 2.5x the forward FLOPs
  (Dao, FlashAttention-2, sec. 3.1); core attention has no weights, so it is all dgrad. Its op carries the FLOPs its
  time is worth at the part's attention rate: the causal (or windowed) FLOPs times the tile-step factor of
  measure/kernels/attention_tiles.py (fixed work per query tile; 1.0 for full causal attention at 8k).
- MoE under forced balance: every local expert gets t_ep = EP * ETP * (t / TP) * topk / E tokens
  (tokens of the EP group, all-gathered over ETP; Megatron `MoEAlltoAllTokenDispatcher`).
- MLA down-projections (q_down, kv_down) are not TP-split (Megatron `MLASelfAttention`, duplicated).
- FP8 recipes run the TE linears (qkv, proj, fc1, fc2, experts, MLA projections) in fp8; the router,
  the output layer and core attention stay bf16. Each fp8 GEMM adds the casts of its activation input and
  incoming gradient (`measure.kernels.common`). NVFP4 (`--fp4-format e2m1`) runs the same linears in fp4 and quantises
  each input twice (row-wise, and column-wise after a random Hadamard transform for wgrad; `measure.kernels.common`).
- MoE adds the router's score/top-k pass, the permutes before and after the dispatch and the unpermutes
  (memory-bound passes over t/TP * topk token copies).
"""
from __future__ import annotations

from enum import Enum

from constraints.models.window import mean_pair_fraction
from constraints.spec import Activation, JobSpec, ModelSpec, MoeDispatcher, Recipe
from measure.kernels.attention_tiles import query_tile_time_factor
from measure.kernels.common import (
    Phase,
    PhaseOp,
    act_dtype,
    gemm_dtype,
    gemm_ops,
    grouped_gemm_ops,
    norm_ops,
    pointwise_ops,
    rank_tokens,
    unquantised_gemm_dtype,
)
from measure.kernels.cp_merge import cp_merge_ops
from measure.kernels.mamba_ops import HYBRID_KINDS, mamba_ops
from measure.kernels.ops import Op, OpKind
from measure.kernels.packed_attention import packed_pair_fraction
from measure.kernels.quantization import padded_rows_per_expert
from measure.kernels.unfused_attention import runs_unfused, unfused_attention_ops


class LayerKind(str, Enum):
    """dense / moe: a transformer layer (attention + MLP or MoE block). The rest are a hybrid model's one-block
    layers (constraints/models/mamba.py, measure/kernels/mamba_ops.py): Mamba-2 mixer, attention alone, MLP alone, MoE alone."""

    dense = "dense"
    moe = "moe"
    mamba = "mamba"
    attention = "attention"
    mlp = "mlp"
    moe_block = "moe_block"

    @property
    def is_hybrid(self) -> bool:
        return self not in (LayerKind.dense, LayerKind.moe)

    @property
    def has_moe(self) -> bool:
        return self in (LayerKind.moe, LayerKind.moe_block)

    @property
    def has_attention(self) -> bool:
        return self in (LayerKind.dense, LayerKind.moe, LayerKind.attention)


def layer_kind_of(kind) -> "LayerKind":
    """The LayerKind of a ModelSpec.layer_kinds entry: a MoE flag or a hybrid pattern symbol."""
    if isinstance(kind, str):
        return LayerKind(HYBRID_KINDS[kind])
    return LayerKind.moe if kind else LayerKind.dense


def padded_vocab(model: ModelSpec, recipe: Recipe) -> int:
    """Megatron `_vocab_size_with_padding`: round up to make_vocab_size_divisible_by * TP."""
    mult = recipe.make_vocab_size_divisible_by * recipe.tp
    return -(-model.vocab_size // mult) * mult


def _activation(model: ModelSpec, tokens: int, width: int, module: str) -> list[PhaseOp]:
    """One fused pass: the gated kinds read both halves (Megatron's weighted SwiGLU / quick-GEGLU fusions)."""
    kind = OpKind.gelu if model.activation == Activation.gelu else (
        OpKind.squared_relu if model.activation == Activation.squared_relu else OpKind.swiglu)
    reads = 2 if model.activation.gated else 1
    return pointwise_ops(kind, (tokens, width), module, reads, 1, flops_per_elem=8.0)


def expert_glu_clamp_ops(model: ModelSpec, routed_tokens: int, width: int) -> list[PhaseOp]:
    """gpt-oss's clamped quick-GEGLU in the experts: Megatron's TEGroupedMLP.bias_act_func calls
    `fused_bias_geglu.weighted_bias_quick_geglu_impl` (bias_activation_fusion, which Megatron-Bridge's gpt-oss bridge
    sets and Megatron's CLI defaults to), which before its fused function clamps the two halves of FC1's output in eager
    PyTorch and concatenates them again (`x_glu.clamp(max=c)`, `x_linear.clamp(-c, c)`, `torch.cat`; Megatron-LM
    2edffadb and d98e8a64): forward 2 reads and 2 writes of the (routed tokens x 2 ffn) tensor; backward the clamps'
    masked gradients (a read of the gradient and of the input and a write, per half: 3 passes) and autograd's
    concatenation of the two halves' gradients for `chunk` (2): 5 passes, 1.25 of the forward's 4. Under `moe_act`
    recompute it runs again in the backward (module "moe_act"). One host op, as every priced module call."""
    if model.activation != Activation.quick_geglu or model.glu_clamp is None:
        return []
    return pointwise_ops(OpKind.elementwise, (routed_tokens * 2 * width,), "moe_act", 2, 2, flops_per_elem=1.0,
                         bwd_factor=1.25)


def expert_activation_host_syncs(model: ModelSpec) -> int:
    """Host synchronisations the experts' activation makes per forward call: `weighted_bias_quick_geglu_impl` builds
    `torch.tensor(linear_offset, device=input.device)` on every call (Megatron-LM 2edffadb / d98e8a64
    fused_bias_geglu.py), a blocking host-to-device copy, which PyTorch issues as cudaMemcpyAsync followed by
    cudaStreamSynchronize (ATen/native/cuda/Copy.cu, non_blocking=False -> `at::cuda::memcpy_and_sync`). One for a
    quick-GEGLU MoE (gpt-oss), whose recompute under `moe_act` makes it again in the backward; none otherwise."""
    return 1 if model.is_moe and model.activation == Activation.quick_geglu else 0


def unfused_rope_ops(model: ModelSpec, tokens: int, heads: int, kv_heads: int, rot_dim: int) -> list[PhaseOp]:
    """Megatron's unfused RoPE on Q and K, which runs when YaRN's concentration factor is not 1 (`rope_mscale`; TE's
    fused RoPE takes none: megatron/core/models/common/embeddings/rope_utils.py apply_rotary_pos_emb falls back to
    `_apply_rotary_pos_emb_bshd`, the same at Megatron-LM 2edffadb and d98e8a64). That function makes, per tensor,
    `t * cos` (a read and a write), `_rotate_half` (the negated half and a concatenation: 1.5 reads, 1.5 writes),
    `* sin` (1, 1), the sum (2, 1) and the final concatenation with the empty pass-through part (1, 1): 6.5 reads and
    5.5 writes forward, priced as 6 and 5 (`pointwise_ops` counts whole passes: about 8 % under). The backward is
    priced as many bytes again; it is not derived op by op (autograd's cat / slice / accumulation passes may make it
    larger). Each call counts as one host op, as every priced module call does: the host floor's unit is a fitted
    framework call, not a CUDA launch. Fused (factor 1), RoPE is a small part of TE's attention input kernel and is
    not priced."""
    if model.rope_mscale == 1.0:
        return []
    return (pointwise_ops(OpKind.elementwise, (tokens * heads * rot_dim,), "qkv", 6, 5, flops_per_elem=3.0, bwd_factor=1.0)
            + pointwise_ops(OpKind.elementwise, (tokens * kv_heads * rot_dim,), "qkv", 6, 5, flops_per_elem=3.0, bwd_factor=1.0))


def expert_bias_ops(model: ModelSpec, routed_tokens: int, width: int) -> list[PhaseOp]:
    """The experts' output bias as Megatron's TEGroupedMLP adds it when the experts have biases (gpt-oss;
    megatron/core/transformer/moe/experts.py `_apply_bias` at Megatron-LM 2edffadb, the commit Megatron-Bridge 26.04.01
    pins: FC2 runs with skip_bias_add, then per local expert `t + b * p` over its split of the output and one
    `torch.cat`, in eager PyTorch; FC1's bias is inside TE's grouped GEMM and costs nothing extra). Forward: `b * p`
    writes a copy, the sum reads two and writes one, the concatenation reads and writes one: 3 reads and 3 writes of
    the routed tokens x width. Backward: the gradients of b and p, each a product with the incoming gradient and a
    reduction: about as many bytes. Priced at bf16 bytes, a lower bound where the pass is wider: with the flex
    dispatcher the probabilities are fp32, and at d98e8a64 `_apply_packed_bias` works in fp32. Not run (and not priced)
    where Transformer Engine's fused grouped MLP adds the bias inside its kernels (`moe_ops(fused_grouped_mlp=True)`),
    and counted as one host op however many experts it loops over (see `unfused_rope_ops`)."""
    if not model.mlp_bias:
        return []
    return pointwise_ops(OpKind.elementwise, (routed_tokens * width,), "moe", 3, 3, flops_per_elem=2.0, bwd_factor=1.0)


def attention_ops(model: ModelSpec, job: JobSpec, recipe: Recipe, fp8_attention: bool = False) -> list[PhaseOp]:
    """Norm, QKV (or MLA projections), core attention, output projection and residual add. `fp8_attention`: the run
    sets Transformer Engine's `fp8_dot_product_attention` (Megatron `--fp8-dot-product-attention`), so an fp8 job's
    core attention runs cuDNN's FP8 fused attention (QK^T and PV in fp8; measure/kernels/roofline.py prices it)."""
    tp, dt, act, q = recipe.tp, gemm_dtype(job), act_dtype(job), job.precision
    core = "fp8" if fp8_attention and job.precision.is_fp8 else act
    t, t_sp = rank_tokens(job, recipe)
    h, nh = model.hidden_size, model.num_attention_heads
    ops = norm_ops(model, t_sp, h)
    heads = max(nh // tp, 1)
    if model.multi_latent_attention:
        dqk = model.qk_head_dim + model.qk_pos_emb_head_dim
        dv = model.v_head_dim
        if model.q_lora_rank:
            ops += gemm_ops(t, model.q_lora_rank, h, dt, "qkv", quant=q)
            ops += norm_ops(model, t, model.q_lora_rank, "mla_up_proj")
            ops += gemm_ops(t, heads * dqk, model.q_lora_rank, dt, "mla_up_proj", quant=q)
        else:
            ops += gemm_ops(t, heads * dqk, h, dt, "qkv", quant=q)
        ops += gemm_ops(t, model.kv_lora_rank + model.qk_pos_emb_head_dim, h, dt, "qkv", quant=q)
        ops += norm_ops(model, t, model.kv_lora_rank, "mla_up_proj")
        ops += gemm_ops(t, heads * (model.qk_head_dim + dv), model.kv_lora_rank, dt, "mla_up_proj", quant=q)
        # one head_dim that gives the true QK^T + PV FLOPs: 2 matmuls of dqk and dv -> mean
        head_dim, kv_heads, out_k = (dqk + dv) // 2, heads, heads * dv
        kv_width = heads * (dqk + dv)
    else:
        d = model.kv_channels
        kv_heads = max(model.num_query_groups // tp, 1)
        ops += gemm_ops(t, (heads + 2 * kv_heads) * d, h, dt, "qkv", quant=q, norm_fed=True)  # TELayerNormColumnParallelLinear
        if model.qk_layernorm:
            ops += norm_ops(model, t * (heads + kv_heads), d, "qkv")
        ops += unfused_rope_ops(model, t, heads, kv_heads, d)
        head_dim, out_k = d, heads * d
        kv_width = kv_heads * 2 * d
    b, s_q, s_kv = recipe.mbs, job.seq_length // recipe.cp, job.seq_length
    # causal: half of the s_q x s_kv scores; CP load-balancing keeps that half per rank; a sliding window keeps the
    # model's mean share of those pairs (constraints/models/window.py)
    # packed sequences attend within each document only (measure/kernels/packed_attention.py)
    attn_flops = 4.0 * b * heads * s_q * s_kv * head_dim / 2 * mean_pair_fraction(model, job.seq_length) * packed_pair_fraction(job)
    # a fused kernel's time follows its tile steps, fixed work per query tile included (measure/kernels/attention_tiles.py);
    # fp32 core attention runs unfused batched matmuls, untiled
    if core != "fp32":
        attn_flops *= query_tile_time_factor(model, job.seq_length)
    io_bytes = b * s_q * heads * head_dim * 2 * 4 + b * s_kv * kv_heads * head_dim * 2 * 2
    shape = (b, heads, kv_heads, s_q, s_kv, head_dim, 1)
    if runs_unfused(job, recipe):  # Megatron's own DotProductAttention: scores in HBM (measure/kernels/unfused_attention.py)
        ops += unfused_attention_ops(model, job, recipe, heads, kv_heads, head_dim, act)
    else:
        ops.append(PhaseOp(Op(OpKind.attention_fwd, shape, core), Phase.fwd, "core_attn", attn_flops, io_bytes))
        ops.append(PhaseOp(Op(OpKind.attention_bwd, shape, core), Phase.bwd_dgrad, "core_attn", 2.5 * attn_flops, 2 * io_bytes))
        # the p2p CP ring merges each step's partial output / gradients outside the kernels (measure/kernels/cp_merge.py)
        ops += cp_merge_ops(recipe.cp, b * s_q, out_k, kv_width)
    ops += gemm_ops(t, h, out_k, dt, "proj", quant=q)
    ops += pointwise_ops(OpKind.elementwise, (t_sp * h,), "residual", 2, 1, flops_per_elem=1.0, bwd_factor=1.0)
    return ops


def mlp_ops(model: ModelSpec, job: JobSpec, recipe: Recipe) -> list[PhaseOp]:
    tp, dt, q = recipe.tp, gemm_dtype(job), job.precision
    t, t_sp = rank_tokens(job, recipe)
    h, f = model.hidden_size, model.ffn_hidden_size // tp
    ops = norm_ops(model, t_sp, h)
    ops += gemm_ops(t, model.fc1_width(f), h, dt, "mlp", quant=q, norm_fed=True)  # TELayerNormColumnParallelLinear
    ops += _activation(model, t, f, "mlp")
    ops += gemm_ops(t, h, f, dt, "mlp", quant=q)
    ops += pointwise_ops(OpKind.elementwise, (t_sp * h,), "residual", 2, 1, bwd_factor=1.0)
    return ops


def tokens_per_local_expert(model: ModelSpec, job: JobSpec, recipe: Recipe) -> int:
    """Forced-balance tokens per local expert on one rank (see module docstring)."""
    t, t_sp = rank_tokens(job, recipe)
    routed = recipe.ep * recipe.etp_effective * t_sp * model.moe_router_topk
    return max(-(-routed // model.num_experts), 1)


def moe_ops(model: ModelSpec, job: JobSpec, recipe: Recipe, fused_grouped_mlp: bool = False) -> list[PhaseOp]:
    """Norm, router, permute, grouped expert GEMMs, expert activation, unpermute, shared experts. `fused_grouped_mlp`:
    the run uses Transformer Engine's fused grouped MLP (Megatron-Bridge `cutedsl_fused_grouped_mlp`): TEGroupedMLP's
    fused forward then applies the activation and the experts' biases inside its kernels, so the eager clamp and bias
    passes (`expert_glu_clamp_ops`, `expert_bias_ops`) do not run. Its GEMM and activation speed is not priced (no
    published rate per shape: docs/limits.md)."""
    dt, q = gemm_dtype(job), job.precision
    t, t_sp = rank_tokens(job, recipe)
    h, E = model.hidden_size, model.num_experts
    ops = norm_ops(model, t_sp, h)
    ops += gemm_ops(t_sp, E, h, unquantised_gemm_dtype(job), "router")
    # router score (fp32 softmax / sigmoid) and top-k over (t_sp, E): read logits, write probs and routing map
    ops += pointwise_ops(OpKind.elementwise, (t_sp * E,), "router", 2, 2, flops_per_elem=4.0, bwd_factor=1.0)
    g = max(E // recipe.ep, 1)
    m = tokens_per_local_expert(model, job, recipe)
    f = model.moe_ffn_hidden_size // recipe.etp_effective
    routed_tokens = g * m
    # a latent MoE projects the rank's tokens h -> L before the dispatch and L -> h after the combine (TELinear,
    # whole on every TP rank: constraints/models/latent_moe.py); permute, dispatch and experts then run L wide
    w, latent = model.moe_expert_width, model.moe_latent_size
    if latent:
        ops += gemm_ops(t_sp, latent, h, dt, "moe_latent_proj", quant=q)
    # permute: gather t_sp * topk token copies into expert order (Megatron `permute`, a read and a write of each
    # copy); the alltoall dispatcher's extra re-sort into local-expert order is `alltoall_sort_ops`
    ops += pointwise_ops(OpKind.elementwise, (t_sp * model.moe_router_topk * w,), "moe", 1, 1, flops_per_elem=0.0, bwd_factor=1.0)
    # fp8 / fp4 pad each expert's rows to the recipe's alignment before its GEMMs (measure/kernels/quantization.py)
    rows = padded_rows_per_expert(m, q, fused_grouped_mlp)
    ops += grouped_gemm_ops(g, rows, model.fc1_width(f), w, dt, "moe", per_group_launch=not fused_grouped_mlp, quant=q)
    ops += [] if fused_grouped_mlp else expert_glu_clamp_ops(model, routed_tokens, f)
    ops += _activation(model, routed_tokens, f, "moe_act")
    ops += grouped_gemm_ops(g, rows, w, f, dt, "moe", per_group_launch=not fused_grouped_mlp, quant=q)
    ops += [] if fused_grouped_mlp else expert_bias_ops(model, routed_tokens, w)
    # unpermute: the prob-weighted scatter-add of topk copies back into t_sp tokens
    ops += pointwise_ops(OpKind.elementwise, (t_sp * model.moe_router_topk * w,), "moe", 1, 1, flops_per_elem=1.0, bwd_factor=1.0)
    if latent:
        ops += gemm_ops(t_sp, h, latent, dt, "moe_latent_proj", quant=q)
    if model.moe_shared_expert_intermediate_size:
        fs = model.moe_shared_expert_intermediate_size // recipe.tp
        ops += gemm_ops(t, model.fc1_width(fs), h, dt, "shared_experts", quant=q)
        ops += _activation(model, t, fs, "shared_experts")
        ops += gemm_ops(t, h, fs, dt, "shared_experts", quant=q)
    ops += pointwise_ops(OpKind.elementwise, (t_sp * h,), "residual", 2, 1, bwd_factor=1.0)
    return ops


def alltoall_sort_ops(model: ModelSpec, job: JobSpec, recipe: Recipe) -> list[PhaseOp]:
    """The two token passes only the alltoall dispatcher makes: after the all-to-all, `sort_chunks_by_idxs` re-sorts
    the received copies (grouped by source rank) into local-expert order, and sorts them back before the combine
    (Megatron-LM megatron/core/transformer/moe/token_dispatcher.py MoEAlltoAllTokenDispatcher, with EP > 1 and more
    than one local expert). The flex dispatcher (DeepEP / HybridEP, MoEFlexTokenDispatcher) has no such pass: its
    dispatch_preprocess only builds metadata, the dispatch kernel sends each token once per destination rank, one
    permute orders the received tokens by expert and the combine kernel does the weighted reduction; the allgather
    dispatcher permutes the gathered tokens once. So both make the two passes `moe_ops` prices, this pair is extra."""
    t, t_sp = rank_tokens(job, recipe)
    g = max(model.num_experts // recipe.ep, 1)
    if recipe.ep <= 1 or g <= 1:
        return []
    routed = g * tokens_per_local_expert(model, job, recipe)
    w = model.moe_expert_width  # the latent width for a latent MoE, else the hidden size (as moe_ops)
    return (pointwise_ops(OpKind.elementwise, (routed * w,), "moe", 1, 1, flops_per_elem=0.0, bwd_factor=1.0)
            + pointwise_ops(OpKind.elementwise, (routed * w,), "moe", 1, 1, flops_per_elem=0.0, bwd_factor=1.0))


def layer_ops(model: ModelSpec, job: JobSpec, recipe: Recipe, layer_kind: LayerKind | str) -> list[PhaseOp]:
    """All kernels of one decoder layer, one micro-batch, one rank (fwd, dgrad, wgrad), with the recipe's dispatcher's
    own passes (`alltoall_sort_ops`)."""
    kind = LayerKind(layer_kind)
    ops = block_ops(model, job, recipe, kind) if kind.is_hybrid else attention_ops(model, job, recipe) + block_ops(model, job, recipe, kind)
    if kind.has_moe and recipe.moe_dispatcher == MoeDispatcher.alltoall:
        ops += alltoall_sort_ops(model, job, recipe)
    return ops


def block_ops(model: ModelSpec, job: JobSpec, recipe: Recipe, layer_kind: LayerKind | str,
              fused_grouped_mlp: bool = False) -> list[PhaseOp]:
    """The kernels after attention: the MLP of a dense layer or the MoE block of an MoE layer (`moe_ops` for
    `fused_grouped_mlp`)."""
    kind = LayerKind(layer_kind)
    if kind == LayerKind.mamba:
        return mamba_ops(model, job, recipe)
    if kind == LayerKind.attention:  # a hybrid model's attention-only layer
        return attention_ops(model, job, recipe)
    if kind == LayerKind.mlp:
        return mlp_ops(model, job, recipe)
    if kind == LayerKind.moe_block:
        return moe_ops(model, job, recipe, fused_grouped_mlp)
    if kind == LayerKind.moe and not model.is_moe:
        raise ValueError(f"layer_kind=moe: model {model.name} has no experts; use layer_kind=dense")
    return moe_ops(model, job, recipe, fused_grouped_mlp) if kind == LayerKind.moe else mlp_ops(model, job, recipe)


def attention_key(recipe: Recipe) -> tuple:
    """The recipe fields `attention_ops` reads (for one model and job): TP, CP, MBS and whether SP is on."""
    return ("attention", recipe.tp, recipe.cp, recipe.mbs, recipe.sp_active)


def block_key(model: ModelSpec, job: JobSpec, recipe: Recipe, layer_kind: LayerKind | str) -> tuple:
    """The recipe fields `block_ops` reads (for one model and job), so that shapes with the same tokens per
    rank share one block: the MLP reads TP and the tokens (`rank_tokens`); the MoE block reads the
    sequence-parallel tokens, EP and ETP, and TP and the full tokens only for shared experts."""
    kind = LayerKind(layer_kind)
    t, t_sp = rank_tokens(job, recipe)
    if kind.is_hybrid:  # one block reading every shape field
        return ("block", kind, recipe.tp, recipe.cp, recipe.mbs, recipe.sp_active, recipe.ep, recipe.etp_effective)
    if kind == LayerKind.dense:
        return ("block", kind, recipe.tp, t, t_sp)
    shared = bool(model.moe_shared_expert_intermediate_size)
    return ("block", kind, t_sp, recipe.ep, recipe.etp_effective, recipe.tp if shared else 0, t if shared else 0)


def head_ops(model: ModelSpec, job: JobSpec, recipe: Recipe) -> list[PhaseOp]:
    """Embedding (first stage), final norm, output GEMM and fused cross-entropy (last stage), plus
    MTP's extra projection, output GEMM and loss per MTP depth (its transformer layer is counted as
    a decoder layer by the projection)."""
    t, t_sp = rank_tokens(job, recipe)
    h, v = model.hidden_size, padded_vocab(model, recipe) // recipe.tp
    ops = [PhaseOp(Op(OpKind.embedding, (t_sp, h), "bf16"), Phase.fwd, "head", 0.0, t_sp * h * 2 * 2),
           PhaseOp(Op(OpKind.embedding, (t_sp, h), "bf16"), Phase.bwd_wgrad, "head", t_sp * h, t_sp * h * 2 * 3)]
    for depth in range(1 + model.mtp_num_layers):
        if depth:
            ops += norm_ops(model, t_sp, 2 * h, "head")
            ops += gemm_ops(t, h, 2 * h, gemm_dtype(job), "head", quant=job.precision)
        ops += norm_ops(model, t_sp, h, "head")
        ops += gemm_ops(t, v, h, unquantised_gemm_dtype(job), "head")
        ops += pointwise_ops(OpKind.softmax_cross_entropy, (t, v), "head", 1, 0, flops_per_elem=5.0, bwd_factor=2.0)
    return ops


def layer_weight_elems(model: ModelSpec, recipe: Recipe, layer_kind: LayerKind | str) -> int:
    """Weight elements of one layer held by one rank (TP/EP/ETP-sliced GEMM weights; norms ignored)."""
    kind = LayerKind(layer_kind)
    job = JobSpec(seq_length=recipe.cp * recipe.tp, global_batch_size=1)
    one = recipe.model_copy(update={"mbs": 1, "sequence_parallel": False})
    elems = 0
    for p in layer_ops(model, job, one, kind):
        if p.phase == Phase.bwd_wgrad and p.op.kind == OpKind.gemm:
            elems += p.op.shape[0] * p.op.shape[1]
        elif p.phase == Phase.bwd_wgrad and p.op.kind == OpKind.grouped_gemm:
            elems += p.op.shape[0] * p.op.shape[1] * p.op.shape[2]
    return elems


def optimizer_ops(model: ModelSpec, recipe: Recipe, num_params_per_rank: int) -> list[PhaseOp]:
    """Fused Adam over the fp32 master params this rank owns (after distributed-optimizer sharding):
    reads param, grad, m, v and writes param, m, v, plus the bf16 copy: ~ 7*4 + 2 bytes per param."""
    n = max(int(num_params_per_rank), 1)
    return [PhaseOp(Op(OpKind.optimizer_step, (n,), "fp32"), Phase.optimizer, "optimizer", 10.0 * n, 30.0 * n)]
