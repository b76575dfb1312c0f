"""Hybrid Mamba-2 / attention models: the layer pattern, Mamba-2 mixer shapes, parameters and saved activations.

Why one module: Megatron-LM builds a hybrid model (pretrain_hybrid.py; pretrain_mamba.py is its deprecated alias)
from `--hybrid-layer-pattern`, one symbol per layer, each layer a single pre-normed sub-block:
  M  Mamba-2 mixer (megatron/core/ssm/mamba_mixer.py MambaMixer, TELayerNormColumnParallelLinear in_proj)
  *  self-attention only (linear_qkv with the fused input norm, linear_proj)
  -  dense MLP only (linear_fc1 with the fused norm, linear_fc2)
  E  MoE only (pre_mlp_layernorm, router, experts, shared experts)
(megatron/core/models/hybrid/hybrid_layer_allocation.py Symbols, hybrid_layer_specs.py @ d98e8a64). `|` splits
the main pattern into pipeline segments (a recipe matter: `pattern_segments`, constraints/models/hybrid_pattern.py) and `/`
appends MTP depths (ModelSpec.mtp_hybrid_pattern, repeated mtp_num_layers times on the last pipeline stage, each depth a
MultiTokenPredictionLayer around a HybridStack of those layers). G (gated delta net), D (DSA) and + (MLA) layers are not modelled.

Mamba-2 shapes (Dao & Gu 2024, "Transformers are SSMs", sec. 7; MambaMixer.__init__): d_inner = heads x head_dim;
in_proj h -> [z, x, B, C, dt] = 2 d_inner + 2 groups N + heads; a depthwise causal conv over [x, B, C]
(conv_dim = d_inner + 2 groups N, kernel 4, with bias); per-head dt_bias, A_log, D; a gated RMSNorm over d_inner;
out_proj d_inner -> h. All of these are split over TP (heads and groups per rank); only the fused input norm is
replicated. HF NemotronHForCausalLM has the same tensors (tests hold the bundled counts to HF's on the meta device).
"""
from __future__ import annotations

from dataclasses import dataclass

from constraints.models.hybrid_pattern import ATTENTION, MAMBA, MLP, MTP_SEPARATOR, PIPE
from constraints.models.latent_moe import latent_projection_params
from constraints.spec import ModelSpec, Normalization
from constraints.stages import StageSplitError, expand_layout


@dataclass(frozen=True)
class MambaDims:
    heads: int
    head_dim: int
    state: int
    groups: int
    conv_kernel: int

    @property
    def d_inner(self) -> int:
        return self.heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the depthwise conv: x, B and C."""
        return self.d_inner + 2 * self.groups * self.state

    @property
    def in_proj_width(self) -> int:
        """in_proj output per token: z, x, B, C, dt."""
        return 2 * self.d_inner + 2 * self.groups * self.state + self.heads


def mamba_dims(model: ModelSpec) -> MambaDims:
    return MambaDims(model.mamba_num_heads, model.mamba_head_dim, model.mamba_state_dim, model.mamba_num_groups,
                     model.mamba_conv_kernel)


# ---------------------------------------------------------------- parameters
def _norm(model: ModelSpec, width: int) -> int:
    return width * (2 if model.normalization == Normalization.layernorm else 1)


def mamba_mixer_params(model: ModelSpec) -> int:
    """TP-split parameters of one Mamba-2 mixer (its fused input norm excluded): in_proj, conv weight + bias,
    dt_bias, A_log, D (per head), the gated norm over d_inner, out_proj (no linear biases: Megatron asserts
    `not bias`; the conv has its bias, asserted `conv_bias`)."""
    d = mamba_dims(model)
    h = model.hidden_size
    return (h * d.in_proj_width + d.conv_dim * d.conv_kernel + d.conv_dim + 3 * d.heads + d.d_inner
            + d.d_inner * h)


def mlp_params(model: ModelSpec, ffn: int, width: int | None = None) -> int:
    """A dense MLP h -> ffn -> h (SwiGLU doubles fc1), with biases when the model has them; a latent MoE's routed
    experts read and write the latent width instead of h (constraints/models/latent_moe.py)."""
    h = width or model.hidden_size
    fc1 = model.fc1_width(ffn)
    return h * fc1 + ffn * h + ((fc1 + h) if model.mlp_bias else 0)


def hybrid_layer_split(model: ModelSpec, symbol: str, attention: tuple[int, int]) -> tuple[int, int, int, int]:
    """(TP-sharded, replicated, expert, per-expert) parameters of one hybrid layer; `attention` is
    constraints.models.params.attention_params (its replicated part holds the input norm)."""
    h = model.hidden_size
    norm = _norm(model, h)
    if symbol == MAMBA:
        return mamba_mixer_params(model), norm, 0, 0
    if symbol == ATTENTION:
        return attention[0], attention[1], 0, 0
    if symbol == MLP:
        return mlp_params(model, model.ffn_hidden_size), norm, 0, 0
    e = model.num_experts
    per_expert = mlp_params(model, model.moe_ffn_hidden_size, model.moe_expert_width)
    # the score-correction bias is a buffer (HF nn.Buffer); latent projections are replicated across TP
    router = h * e + (e if model.moe_router_bias else 0) + latent_projection_params(model)
    shared = mlp_params(model, model.moe_shared_expert_intermediate_size) if model.moe_shared_expert_intermediate_size else 0
    return shared, norm + router, per_expert * e, per_expert


# ---------------------------------------------------------------- activations
def mamba_activation_terms(model: ModelSpec, tokens: int, tp: int, sp_div: int, lin) -> dict[str, int]:
    """Bytes one Mamba-2 layer saves for backward, one micro-batch on one rank (tokens = s*b/CP; CP re-splits
    heads instead of tokens inside the mixer, MambaContextParallel, so per rank it is the same count). Training
    runs mamba_ssm's memory-efficient `mamba_split_conv1d_scan_combined` (MambaMixer._ssm_training), which saves
    the in_proj output zxBCdt and the scan output, and recomputes the conv and the SSM chunk states in backward:
    - the residual into the fused input norm (bf16, split by SP) and the norm output in_proj saves (GEMM input);
    - zxBCdt (bf16, in_proj width / TP) and the scan output y (d_inner / TP, bf16);
    - the gated RMSNorm's input (bf16) and its fp32 rstd per group, and out_proj's input (GEMM input).
    `lin(elems, div)` prices a saved GEMM input in the job's precision (constraints.memory.activations.Shape.lin)."""
    d = mamba_dims(model)
    h = model.hidden_size
    T = tokens
    groups_local = max(d.groups // tp, 1)
    d_local = d.d_inner // tp
    return {
        "ln1_input": -(-2 * T * h // sp_div),
        "mamba_in_proj_input": lin(T * h, sp_div),
        "mamba_zxbcdt": 2 * T * (d.in_proj_width // tp),
        "mamba_scan_output": 2 * T * d_local,
        "mamba_norm_input": 2 * T * d_local,
        "mamba_norm_rstd": 4 * T * groups_local,
        "mamba_out_proj_input": lin(T * d_local),
    }


def entry_script(model: ModelSpec) -> str:
    """The Megatron-LM training script that builds this model: pretrain_hybrid.py for a hybrid pattern (pretrain_mamba.py
    is its deprecated alias; pretrain_gpt.py would build a GPT model and ignore the pattern), else pretrain_gpt.py."""
    return "pretrain_hybrid.py" if model.is_hybrid else "pretrain_gpt.py"


def entry_script_problem(script: str | None, model: ModelSpec) -> str | None:
    """Why `script` (a launch script's pretrain_*.py path; None for an argument file) does not train `model`, or None."""
    if script is None:
        return None
    name = script.replace("\\", "/").rsplit("/", 1)[-1]
    hybrid_scripts = ("pretrain_hybrid.py", "pretrain_mamba.py")
    if model.is_hybrid and name not in hybrid_scripts:
        return f"{name} does not build a hybrid model (--hybrid-layer-pattern is ignored there); run pretrain_hybrid.py"
    if not model.is_hybrid and name in hybrid_scripts:
        return f"{name} builds a hybrid model and needs --hybrid-layer-pattern; run pretrain_gpt.py for a transformer"
    return None


def pattern_with_pipes(model: ModelSpec, segment_layers: list[int] | None) -> str:
    """--hybrid-layer-pattern of `model`, with `|` after each pipeline segment of `segment_layers` (None: no pipes)
    and its MTP pattern once per depth after `/` (Megatron's unified pattern "<main>/<mtp>/<mtp>...")."""
    pat = model.hybrid_layer_pattern
    mtp = "".join(MTP_SEPARATOR + model.mtp_hybrid_pattern for _ in range(model.mtp_num_layers)) if model.mtp_hybrid_pattern else ""
    if not segment_layers:
        return pat + mtp
    out, pos = [], 0
    for n in segment_layers:
        out.append(pat[pos:pos + n])
        pos += n
    out[-1] += pat[pos:]
    return PIPE.join(out) + mtp


def layout_as_segments(layout: str) -> list[int] | None:
    """Layer counts of the pipe segments a pipeline layout stands for on a hybrid model, or None when it cannot be
    one: Megatron's hybrid segments hold decoder layers only, the embedding on the first and the loss on the last."""
    try:
        stages = expand_layout(layout)
    except StageSplitError:
        return None
    counts = []
    for i, st in enumerate(stages):
        body = st
        if i == 0 and body.startswith("E"):
            body = body[1:]
        if i == len(stages) - 1 and body.endswith("L"):
            body = body[:-1]
        if set(body) - {"t"}:
            return None
        counts.append(len(body))
    if not stages[0].startswith("E") or not stages[-1].endswith("L"):
        return None
    return counts
