"""The three user-owned inputs (model, job) and the tool-owned output (recipe) as validated specs.

Why one module: every other part (rules, memory, projection, solver, render) speaks these types, so
they must be defined once, small and strict (`extra="forbid"`), with each field saying what it means.
The cluster lives in `hardware.profile` (it is hardware data plus counts).
"""
from __future__ import annotations

import math
from enum import Enum
from typing import Annotated, Any, Optional

from pydantic import ConfigDict, Field, model_validator

from boundary.numbers import NumbersAreNotBooleans
from constraints.memory.magnitudes import magnitude_error
from constraints.models.hybrid_pattern import check_hybrid_fields

# A global batch or a sequence past these is a typo, not a training job; they also keep every
# integer-byte product far below 2**62 (CP-SAT's bound) — see solver notes.
MAX_SEQ_LENGTH = 16 * 1024 * 1024
MAX_GLOBAL_BATCH = 1 << 24
MAX_WORLD_SIZE = 1 << 20
# Megatron builds one module per layer; the deepest published LLMs have under 200 layers, and per-layer
# tables (MoE patterns, pipeline layouts, stage splits) are sized by this bound.
MAX_NUM_LAYERS = 4096

# Why each bound is where it is, added to a bound error's message (boundary.show.validation_line).
BOUND_REASONS = {
    "num_layers": f"the deepest published LLMs have under 200 layers; per-layer tables are sized by the {MAX_NUM_LAYERS} bound",
    "seq_length": "16 Mi tokens per sample is 100x the longest published context; it keeps activation bytes in int64",
    "global_batch_size": "2**24 samples per step is far beyond any published run; it keeps token counts in int64",
    "max_position_embeddings": "bounded like seq_length",
    **{f: f"no cluster has more than {MAX_WORLD_SIZE:,} GPUs, so no parallel degree is larger" for f in (
        "tp", "pp", "cp", "ep", "etp", "num_nodes", "num_distributed_optimizer_instances")},
    "vpp": "a virtual stage holds at least one layer",
    "gpus_per_node": "no server holds more than 1024 GPUs",
    "mbs": "a micro-batch is part of the global batch",
    **{f: "a layer count, bounded by num_layers' limit" for f in (
        "first_stage_layers", "last_stage_layers", "cpu_offloading_num_layers", "mtp_num_layers")},
    "name": "a display name (a file stem is at most 255 bytes)",
}


class Strict(NumbersAreNotBooleans):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Activation(str, Enum):
    """MLP non-linearity; decides fc1 width (the gated ones double it) — Megatron `--swiglu` / `--quick-geglu` /
    `--squared-relu`. `quick_geglu` is gpt-oss's gate: x * sigmoid(1.702 x) on the gate half times the up half
    (HF transformers GptOssExperts; Megatron `fused_bias_geglu.quick_geglu`, which Megatron-Bridge's gpt-oss bridge
    selects with `activation_func = quick_gelu` and `gated_linear_unit`)."""

    swiglu = "swiglu"
    quick_geglu = "quick_geglu"
    gelu = "gelu"
    squared_relu = "squared_relu"

    @property
    def gated(self) -> bool:
        """fc1 stacks the gate and up projections (h -> 2 x ffn)."""
        return self in (Activation.swiglu, Activation.quick_geglu)


class Normalization(str, Enum):
    """`--normalization`; LayerNorm has a bias (2 params per channel), RMSNorm does not."""

    rmsnorm = "RMSNorm"
    layernorm = "LayerNorm"


class Precision(str, Enum):
    """Training precision. FP8 variants map to `--fp8-recipe` (Megatron spells them delayed, tensorwise,
    blockwise, mxfp8); `nvfp4` is `--fp4-format e2m1 --fp4-recipe nvfp4` (TE NVFP4BlockScaling). All keep
    bf16 compute outside the quantised GEMMs. `fp32` is a script with neither --bf16 nor --fp16: Megatron's params_dtype
    stays torch.float (megatron/training/arguments.py @d98e8a64, "args.params_dtype = torch.float" unless --fp16 /
    --bf16), and weights, gradients and activations are fp32 (constraints/memory/per_rank.py, activations.py)."""

    bf16 = "bf16"
    fp16 = "fp16"
    fp32 = "fp32"
    fp8_delayed = "fp8-delayed"
    fp8_tensorwise = "fp8-tensorwise"
    fp8_blockwise = "fp8-blockwise"
    mxfp8 = "mxfp8"
    nvfp4 = "nvfp4"

    @property
    def is_fp8(self) -> bool:
        return self not in (Precision.bf16, Precision.fp16, Precision.fp32, Precision.nvfp4)

    @property
    def is_fp4(self) -> bool:
        return self == Precision.nvfp4


class Optimizer(str, Enum):
    """Adam (Megatron default) keeps two fp32 moments; Muon keeps one momentum buffer."""

    adam = "adam"
    muon = "muon"


class RecomputeGranularity(str, Enum):
    """`--recompute-granularity`: none (flag absent), selective (modules), full (whole layers)."""

    none = "none"
    selective = "selective"
    full = "full"


class RecomputeMethod(str, Enum):
    """`--recompute-method` for full recompute: uniform groups of N layers, or the first N layers of a chunk."""

    uniform = "uniform"
    block = "block"


class RecomputeModule(str, Enum):
    """`--recompute-modules` values that change memory in this model (Megatron spelling)."""

    core_attn = "core_attn"
    moe_act = "moe_act"
    layernorm = "layernorm"
    mla_up_proj = "mla_up_proj"
    mlp = "mlp"
    moe = "moe"
    shared_experts = "shared_experts"


class PipelineSchedule(str, Enum):
    """Pipeline schedule. `1f1b` (PipeDream-flush, Megatron default without VPP), `interleaved` (Megatron
    virtual pipeline, VPP>1), `zb-h1` (zero-bubble H1, Qi et al. 2023), `zbv` (zero-bubble V-shape, 2 chunks)."""

    one_f_one_b = "1f1b"
    interleaved = "interleaved"
    zb_h1 = "zb-h1"
    zbv = "zbv"


class DataParallelSharding(str, Enum):
    """How DP replicas hold optimizer state, grads and params.
    none: plain DDP; distributed_optimizer: `--use-distributed-optimizer` (ZeRO-1 style);
    megatron_fsdp: `--use-megatron-fsdp` (its strategy: Recipe.fsdp_sharding_strategy); torch_fsdp2: `--use-torch-fsdp2`."""

    none = "none"
    distributed_optimizer = "distributed_optimizer"
    megatron_fsdp = "megatron_fsdp"
    torch_fsdp2 = "torch_fsdp2"


class FsdpShardingStrategy(str, Enum):
    """Megatron-FSDP `--data-parallel-sharding-strategy` (read only with `--use-megatron-fsdp`; default
    optim_grads_params). What each shards over DP x CP, per Megatron-LM megatron/core/distributed/fsdp/src/README.md
    (`zero_dp_strategy`): no_shard nothing (like DDP); optim the optimizer state (ZeRO-1); optim_grads optimizer
    state and gradients (ZeRO-2); optim_grads_params also the parameters (ZeRO-3)."""

    no_shard = "no_shard"
    optim = "optim"
    optim_grads = "optim_grads"
    optim_grads_params = "optim_grads_params"


class MoeDispatcher(str, Enum):
    """`--moe-token-dispatcher-type`."""

    allgather = "allgather"
    alltoall = "alltoall"
    flex = "flex"


class AttentionBackend(str, Enum):
    """`--attention-backend` (Megatron AttnBackend, default auto). auto / flash / fused run a fused kernel that keeps
    no s x s scores; unfused (Transformer Engine's UnfusedDotProductAttention) and local (Megatron's own
    DotProductAttention) store them: constraints/memory/attention_scores.py."""

    auto = "auto"
    flash = "flash"
    fused = "fused"
    unfused = "unfused"
    local = "local"

    @property
    def stores_scores(self) -> bool:
        return self in (AttentionBackend.unfused, AttentionBackend.local)


class CpCommType(str, Enum):
    """`--cp-comm-type` (CLI spelling)."""

    p2p = "p2p"
    a2a = "a2a"
    allgather = "allgather"
    a2a_p2p = "a2a+p2p"


class YarnRope(Strict):
    """YaRN rotary embeddings of a non-MLA GPT model, in Megatron-LM's terms (arguments.py `--position-embedding-type
    yarn`, `--rotary-scaling-factor`, `--yarn-original-max-position-embeddings`, `--yarn-beta-fast/-slow`,
    `--[no-]yarn-correction-range-round-to-int`, `--mscale`, `--mscale-all-dim`; argument_utils.py
    _apply_yarn_config_from_args maps them onto TransformerConfig's yarn_* fields, with these defaults). Why it matters
    beyond the model's numerics: `concentration_factor` multiplies cos and sin, and TE's fused RoPE cannot apply it,
    so any value but 1 runs Megatron's unfused RoPE (rope_utils.py), which the projection prices."""

    scaling_factor: float = Field(1.0, gt=0, le=1e6)
    original_max_position_embeddings: int = Field(4096, gt=0, le=1 << 30)
    beta_fast: float = Field(32.0, gt=0, le=1e6)
    beta_slow: float = Field(1.0, gt=0, le=1e6)
    correction_range_round_to_int: bool = True
    mscale: float = Field(1.0, ge=0, le=1e6)
    mscale_all_dim: float = Field(0.0, ge=0, le=1e6)

    @property
    def concentration_factor(self) -> float:
        """Megatron-LM yarn_rotary_pos_embedding._yarn_get_concentration_factor with both mscales given:
        _yarn_get_mscale(f, mscale) / _yarn_get_mscale(f, mscale_all_dim), where _yarn_get_mscale(f, m) = 0.1 m ln f + 1
        (1 for f <= 1). Megatron-LM's defaults (1, 0) give 0.1 ln f + 1, the value Megatron-Bridge gets when the HF
        config has no mscales (it passes None for both, gpt-oss: f = 32 -> 1.3466)."""
        def m(scale: float) -> float:
            return 1.0 if self.scaling_factor <= 1 else 0.1 * scale * math.log(self.scaling_factor) + 1.0
        return m(self.mscale) / m(self.mscale_all_dim)


class ModelSpec(Strict):
    """A decoder-only transformer, with optional GQA, MLA, MoE (routed + shared experts), MTP.

    Shapes are as in the HF config; `layer_is_moe` lists, per decoder layer, whether it is an MoE
    layer (Megatron `--moe-layer-freq` as an explicit list)."""

    name: str = Field(min_length=1, max_length=256, description="display name, e.g. the config file stem")
    num_layers: int = Field(gt=0, le=MAX_NUM_LAYERS, description="decoder layers (MTP layers not included)")
    hidden_size: int = Field(gt=0, le=1 << 20)
    ffn_hidden_size: int = Field(gt=0, le=1 << 22, description="dense MLP intermediate size")
    num_attention_heads: int = Field(gt=0, le=1 << 14)
    num_query_groups: int = Field(gt=0, le=1 << 14, description="KV heads; = heads for MHA")
    kv_channels: int = Field(gt=0, le=1 << 14, description="head dim (q/k/v per head)")
    vocab_size: int = Field(gt=0, le=1 << 24, description="unpadded vocabulary")
    max_position_embeddings: int = Field(gt=0, le=MAX_SEQ_LENGTH)
    activation: Activation = Activation.swiglu
    normalization: Normalization = Normalization.rmsnorm
    tied_embeddings: bool = False
    learned_position_embeddings: bool = Field(False, description="GPT-2 style wpe table (else RoPE)")
    attention_bias: bool = Field(False, description="bias on q/k/v/o projections")
    qkv_bias: bool = Field(False, description="bias on the q/k/v projections only (Qwen2 / Qwen2-MoE attention; Megatron "
                           "--add-qkv-bias with --disable-bias-linear)")
    mlp_bias: bool = Field(False, description="bias on dense MLP and expert linears")
    qk_layernorm: bool = Field(False, description="per-head q/k RMSNorm (Qwen3)")
    attention_sinks: bool = Field(False, description="one learned sink logit per head (gpt-oss)")
    glu_clamp: Optional[float] = Field(None, gt=0, le=1e6, description="a gated activation's input clamp: gate <= c, "
                                       "-c <= up <= c (gpt-oss 7.0: HF swiglu_limit; Megatron --activation-func-clamp-value)")
    glu_linear_offset: float = Field(0.0, ge=-1e6, le=1e6, description="added to a gated activation's up half (gpt-oss 1.0; "
                                     "Megatron --glu-linear-offset)")
    hidden_dropout: float = Field(0.0, ge=0, lt=1, description="Megatron --hidden-dropout; >0 stores dropout masks")
    attention_dropout: float = Field(0.0, ge=0, lt=1)
    config_notes: tuple[str, ...] = Field((), description="what the HF config reader did not follow (constraints/"
                                          "hf_reading.py); check shows each as a warning, solve under its table")
    # --- MoE ---
    num_experts: Optional[int] = Field(None, gt=0, le=1 << 16, description="routed experts per MoE layer")
    moe_router_topk: Optional[int] = Field(None, gt=0, le=1 << 10)
    moe_ffn_hidden_size: Optional[int] = Field(None, gt=0, le=1 << 22)
    moe_shared_expert_intermediate_size: Optional[int] = Field(None, gt=0, le=1 << 22, description="total shared expert width")
    moe_shared_expert_gate: bool = Field(False, description="a sigmoid gate (hidden -> 1) scales the shared expert's output "
                                         "(Qwen2-MoE shared_expert_gate; Megatron --moe-shared-expert-gate)")
    rotary_base: Optional[float] = Field(None, gt=0, le=1e12, description="RoPE theta (HF rope_theta; Megatron --rotary-base, "
                                         "default 10000); no cost, rendered so the launch script trains the same model")
    llama3_rope_scaling_factor: Optional[float] = Field(None, gt=0, le=1e6, description="Llama 3.x rope_scaling (rope_type "
                                                        "llama3; Megatron --use-rope-scaling --rope-scaling-factor, default 8); "
                                                        "None = none; no cost, rendered")
    yarn: Optional[YarnRope] = Field(None, description="YaRN rotary embeddings (Megatron --position-embedding-type yarn) "
                                     "of a non-MLA model; None = plain RoPE (or learned positions); MLA's own YaRN (--rope-type "
                                     "yarn) is not read here")
    moe_router_bias: bool = Field(False, description="router linear has a bias (gpt-oss)")
    moe_router_score_bias: bool = Field(False, description="per-expert score correction bias (DeepSeek-V3 noaux_tc)")
    moe_router_num_groups: Optional[int] = Field(None, gt=0, le=1 << 16, description="group-limited routing: the routed "
                                                 "experts in this many equal groups (HF n_group, Megatron "
                                                 "--moe-router-num-groups); None = every token may take any expert")
    moe_router_group_topk: Optional[int] = Field(None, gt=0, le=1 << 16, description="groups a token's experts may come from "
                                                 "(HF topk_group, Megatron --moe-router-group-topk; DeepSeek-V3: 4 of 8)")
    layer_is_moe: Optional[tuple[bool, ...]] = Field(None, description="per layer: MoE (True) or dense (False)")
    moe_latent_size: Optional[int] = Field(None, gt=0, le=1 << 20, description="latent MoE (Nemotron 3 Super, Megatron "
                                           "--moe-latent-size): routed experts and their dispatch run in this width, "
                                           "between projections h -> latent -> h (constraints/models/latent_moe.py)")
    # --- MLA (DeepSeek-V3 style); q_lora_rank None = no q compression ---
    multi_latent_attention: bool = False
    q_lora_rank: Optional[int] = Field(None, gt=0, le=1 << 20)
    kv_lora_rank: Optional[int] = Field(None, gt=0, le=1 << 20)
    qk_head_dim: Optional[int] = Field(None, gt=0, le=1 << 14, description="MLA no-rope part of q/k head")
    qk_pos_emb_head_dim: Optional[int] = Field(None, gt=0, le=1 << 14, description="MLA rope part of q/k head")
    v_head_dim: Optional[int] = Field(None, gt=0, le=1 << 14)
    # --- MTP ---
    mtp_num_layers: int = Field(0, ge=0, le=16, description="multi-token-prediction depth (DeepSeek-V3: 1)")
    mtp_repeated_layer: bool = Field(False, description="one MTP block's weights run at every depth (Megatron "
                                     "--mtp-use-repeated-layer, MultiTokenPredictionBlock: 'only 1 layer is created and "
                                     "applied mtp_num_layers times'); weights once, activations and FLOPs per depth")
    # --- sliding-window attention (Megatron --window-size (W, 0), --window-attn-skip-freq; constraints/models/window.py) ---
    window_size: Optional[int] = Field(None, ge=0, le=MAX_SEQ_LENGTH, description="left window W: each query sees itself and W earlier tokens")
    window_layers: Optional[tuple[bool, ...]] = Field(None, description="per layer: sliding window (True) or full attention; None = all")
    # --- position encoding per layer (Llama 4: every 4th layer without RoPE, Megatron --no-rope-freq) ---
    no_rope_layers: Optional[tuple[bool, ...]] = Field(None, description="per layer: True = no rotary embedding (NoPE)")
    qk_l2_norm: bool = Field(False, description="parameter-free L2 norm of q and k (Llama 4 use_qk_norm, Megatron --qk-l2-norm)")
    # --- hybrid Mamba-2 / attention (Megatron --hybrid-layer-pattern; constraints/models/mamba.py) ---
    hybrid_layer_pattern: Optional[str] = Field(
        None, max_length=4096, description="one symbol per layer: M Mamba-2, * attention, - MLP, E MoE (no | or /)")
    mamba_num_heads: Optional[int] = Field(None, gt=0, le=1 << 14)
    mamba_head_dim: Optional[int] = Field(None, gt=0, le=1 << 12)
    mamba_state_dim: Optional[int] = Field(None, gt=0, le=1 << 12, description="SSM state size N")
    mamba_num_groups: Optional[int] = Field(None, gt=0, le=1 << 12, description="B/C groups")
    mamba_conv_kernel: int = Field(4, gt=0, le=64, description="depthwise causal conv width (Megatron d_conv)")
    mtp_hybrid_pattern: Optional[str] = Field(
        None, min_length=1, max_length=256, description="a hybrid model's MTP depth pattern (one '/' part of --hybrid-layer-pattern, "
        "HF mtp_hybrid_override_pattern), repeated mtp_num_layers times")

    @model_validator(mode="after")
    def _consistent(self) -> "ModelSpec":
        if self.num_experts is not None:
            if self.moe_router_topk is None or self.moe_ffn_hidden_size is None:
                raise ValueError("MoE model needs moe_router_topk and moe_ffn_hidden_size")
            if self.moe_router_topk > self.num_experts:
                raise ValueError(f"moe_router_topk={self.moe_router_topk} exceeds num_experts={self.num_experts}")
            # as Megatron's TransformerConfig.__post_init__ checks them (transformer_config.py @d98e8a64): groups alone
            # limit nothing (moe_utils.py topk_routing_with_score_function limits only `if group_topk`)
            groups, picked = self.moe_router_num_groups, self.moe_router_group_topk
            if picked is not None and groups is None:
                raise ValueError("moe_router_group_topk needs moe_router_num_groups (group-limited routing picks among "
                                 "the groups); set it")
            if picked is not None and (self.num_experts % groups or picked > groups):
                raise ValueError(f"moe_router_num_groups={groups}, moe_router_group_topk={picked}: the groups must divide "
                                 f"num_experts={self.num_experts} and be at least as many as those picked")
        elif self.moe_router_num_groups is not None or self.moe_router_group_topk is not None:
            raise ValueError("moe_router_num_groups / moe_router_group_topk need num_experts (they group the routed experts)")
        elif self.moe_latent_size is not None:
            raise ValueError("moe_latent_size needs num_experts (the latent projections wrap the routed experts)")
        if not self.multi_latent_attention and self.num_attention_heads % self.num_query_groups:
            # Megatron's fused QKV splits per KV group into heads/groups query heads (attention.py
            # get_query_key_value_tensors); HF's repeat_kv needs the same divisibility
            raise ValueError(f"num_query_groups (HF num_key_value_heads): {self.num_attention_heads} attention heads are not divisible by "
                             f"{self.num_query_groups} KV heads; use a divisor of {self.num_attention_heads}")
        if self.no_rope_layers is not None and len(self.no_rope_layers) != self.num_layers:
            raise ValueError(f"no_rope_layers has {len(self.no_rope_layers)} entries, expected num_layers={self.num_layers}")
        if self.window_layers is not None and len(self.window_layers) != self.num_layers:
            raise ValueError(f"window_layers has {len(self.window_layers)} entries, expected num_layers={self.num_layers}")
        if self.hybrid_layer_pattern is not None:
            check_hybrid_fields(self)
        elif self.mtp_hybrid_pattern is not None:
            raise ValueError("mtp_hybrid_pattern on a model without hybrid_layer_pattern; drop it (a transformer's MTP depth "
                             "copies its last layer)")
        if self.layer_is_moe is not None and len(self.layer_is_moe) != self.num_layers:
            raise ValueError(f"layer_is_moe has {len(self.layer_is_moe)} entries, expected num_layers={self.num_layers}")
        if not self.activation.gated and (self.glu_clamp is not None or self.glu_linear_offset):
            raise ValueError(f"glu_clamp / glu_linear_offset act on a gated activation's halves; activation {self.activation.value} "
                             "has none: drop them or use swiglu / quick_geglu")
        if self.multi_latent_attention:
            for f in ("kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim"):
                if getattr(self, f) is None:
                    raise ValueError(f"MLA model needs {f}")
        error = magnitude_error(self)
        if error:
            raise ValueError(error)
        return self

    def fc1_width(self, ffn: int) -> int:
        """FC1's output width for an MLP of intermediate size `ffn`: a gated activation stacks its gate and up
        projections (Megatron `--swiglu` / `--quick-geglu`: fc1 is h -> 2 x ffn)."""
        return 2 * ffn if self.activation.gated else ffn

    @property
    def rope_mscale(self) -> float:
        """YaRN's concentration factor (`YarnRope.concentration_factor`); 1 when TE's fused RoPE runs (no YaRN, or MLA,
        whose YaRN path Megatron applies inside its own attention and this field does not describe)."""
        return self.yarn.concentration_factor if self.yarn is not None and not self.multi_latent_attention else 1.0

    @property
    def is_moe(self) -> bool:
        return self.num_experts is not None

    @property
    def moe_expert_width(self) -> int:
        """Width routed experts read and write, and tokens are dispatched in: the latent size of a latent MoE
        (Megatron experts.py / token_dispatcher.py use moe_latent_size), else the hidden size."""
        return self.moe_latent_size or self.hidden_size

    @property
    def moe_layers(self) -> tuple[bool, ...]:
        """Per-layer MoE flags; all layers are MoE for an MoE model without an explicit pattern."""
        if self.layer_is_moe is not None:
            return self.layer_is_moe
        return tuple([self.is_moe] * self.num_layers)

    @property
    def num_moe_layers(self) -> int:
        return sum(self.moe_layers)

    @property
    def is_hybrid(self) -> bool:
        return self.hybrid_layer_pattern is not None

    @property
    def mtp_layer_kinds(self) -> tuple:
        """The layer kinds of one MTP depth: a hybrid model's MTP pattern symbols, else one copy of the last layer's
        kind (DeepSeek-V3 sec. 2.2; Megatron builds the transformer MTP layer from the decoder's last layer spec)."""
        if self.mtp_hybrid_pattern is not None:
            return tuple(self.mtp_hybrid_pattern)
        return (self.layer_kinds[-1],) if self.num_layers else ()

    @property
    def layer_kinds(self) -> tuple:
        """Per layer, the key its parameters, activations and kernels are priced by: the MoE flag (False dense,
        True MoE) of a transformer layer, or the hybrid symbol (M, *, -, E) of a hybrid model's layer."""
        return tuple(self.hybrid_layer_pattern) if self.hybrid_layer_pattern is not None else self.moe_layers


class JobSpec(Strict):
    """The training job: what is trained per step and in which number format."""

    seq_length: int = Field(gt=0, le=MAX_SEQ_LENGTH, description="tokens per sample")
    global_batch_size: int = Field(gt=0, le=MAX_GLOBAL_BATCH, description="samples per optimizer step")
    precision: Precision = Precision.bf16
    optimizer: Optimizer = Optimizer.adam
    optimizer_moments_bf16: bool = Field(False, description="--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype "
                                         "bf16: Adam moments (Muon momentum) held in bf16; the fp32 master copy stays")
    # --first-last-layers-bf16 (TransformerConfig.first_last_layers_bf16; megatron/core/fp8_utils.py
    # is_first_last_bf16_layer, fp4_utils.py get_fp4_context): these decoder layers run outside the fp8 / fp4 autocast
    bf16_layers_at_start: int = Field(0, ge=0, le=MAX_NUM_LAYERS, description="--num-layers-at-start-in-bf16: the first N "
                                      "decoder layers keep bf16 GEMMs under an fp8 / NVFP4 precision (0 = none)")
    bf16_layers_at_end: int = Field(0, ge=0, le=MAX_NUM_LAYERS, description="--num-layers-at-end-in-bf16: the last N "
                                    "decoder layers keep bf16 GEMMs under an fp8 / NVFP4 precision (0 = none)")
    # packed sequences (NeMo / Megatron-Bridge packed SFT, THD with cu_seqlens; Megatron-LM --reset-attention-mask):
    # each sample of seq_length tokens holds several documents and attention stays inside each one
    # (measure/kernels/packed_attention.py prices it); None = one document per sample
    packed_mean_tokens: Optional[int] = Field(None, gt=0, le=MAX_SEQ_LENGTH, description="mean tokens per packed "
                                              "sub-sequence (document) when samples are packed; None = not packed")

    @model_validator(mode="after")
    def _bf16_layers_need_a_quantised_precision(self) -> "JobSpec":
        if (self.bf16_layers_at_start or self.bf16_layers_at_end) and not (self.precision.is_fp8 or self.precision.is_fp4):
            raise ValueError(f"bf16_layers_at_start / bf16_layers_at_end keep layers out of fp8 / NVFP4, but the precision "
                             f"is {self.precision.value}; set them to 0 or pick an fp8 / nvfp4 precision")
        return self

    @property
    def has_bf16_layers(self) -> bool:
        return bool(self.bf16_layers_at_start or self.bf16_layers_at_end)

    def bf16_layer_indices(self, num_layers: int) -> frozenset[int]:
        """The decoder layers (0-based, of `num_layers`) --first-last-layers-bf16 keeps out of fp8 / NVFP4
        (fp8_utils.is_first_last_bf16_layer: layer_no < start or layer_no >= num_layers - end, global indices,
        whatever the pipeline split)."""
        start = min(self.bf16_layers_at_start, num_layers)
        return frozenset(range(start)) | frozenset(range(max(num_layers - self.bf16_layers_at_end, 0), num_layers))

    def in_bf16(self) -> "JobSpec":
        """The same job with its GEMMs in bf16: how its bf16 layers are priced."""
        return self.model_copy(update={"precision": Precision.bf16, "bf16_layers_at_start": 0, "bf16_layers_at_end": 0})


class Recompute(Strict):
    """Activation recomputation. Megatron: `--recompute-granularity`, `--recompute-method`,
    `--recompute-num-layers`, `--recompute-modules`."""

    granularity: RecomputeGranularity = RecomputeGranularity.none
    method: Optional[RecomputeMethod] = None
    num_layers: Optional[int] = Field(None, gt=0, le=4096)
    modules: tuple[RecomputeModule, ...] = ()

    @classmethod
    def none(cls) -> "Recompute":
        return cls()

    @classmethod
    def selective(cls, *modules: RecomputeModule) -> "Recompute":
        return cls(granularity=RecomputeGranularity.selective, modules=tuple(modules) or (RecomputeModule.core_attn,))

    @classmethod
    def full(cls, method: RecomputeMethod, num_layers: int) -> "Recompute":
        return cls(granularity=RecomputeGranularity.full, method=method, num_layers=num_layers)


class Recipe(Strict):
    """A parallelism recipe: everything Megatron-LM needs beyond the model and the job.

    DP is derived (world / (TP*PP*CP)); expert-DP too (world / (ETP*EP*PP)). `vpp` is the number of
    virtual stages per pipeline rank (1 = not interleaved). Uneven stages: `first_stage_layers` /
    `last_stage_layers` (Megatron `--decoder-first/last-pipeline-num-layers`), or `pipeline_layout`
    (Megatron `--pipeline-model-parallel-layout` string)."""

    tp: int = Field(1, gt=0, le=MAX_WORLD_SIZE)
    pp: int = Field(1, gt=0, le=MAX_WORLD_SIZE)
    vpp: int = Field(1, gt=0, le=4096)
    cp: int = Field(1, gt=0, le=MAX_WORLD_SIZE)
    ep: int = Field(1, gt=0, le=MAX_WORLD_SIZE)
    etp: Optional[int] = Field(None, gt=0, le=MAX_WORLD_SIZE, description="expert TP; None = TP (Megatron default)")
    mbs: int = Field(1, gt=0, le=MAX_GLOBAL_BATCH, description="micro-batch size")
    sequence_parallel: bool = False
    recompute: Recompute = Recompute()
    dp_sharding: DataParallelSharding = DataParallelSharding.distributed_optimizer
    fsdp_sharding_strategy: FsdpShardingStrategy = Field(
        FsdpShardingStrategy.optim_grads_params,
        description="--data-parallel-sharding-strategy; read only with dp_sharding megatron_fsdp (as in Megatron)")
    schedule: PipelineSchedule = PipelineSchedule.one_f_one_b
    first_stage_layers: Optional[int] = Field(None, gt=0, le=MAX_NUM_LAYERS)
    last_stage_layers: Optional[int] = Field(None, gt=0, le=MAX_NUM_LAYERS)
    account_for_embedding_in_pipeline_split: bool = False
    account_for_loss_in_pipeline_split: bool = False
    # a layout names each layer once ("E|(tt|)*30,L"); 64 KiB holds any layout of MAX_NUM_LAYERS layers
    # min_length: Megatron builds a layout from any string given, and an empty one has no stages at all
    pipeline_layout: Optional[str] = Field(None, min_length=1, max_length=64 * 1024)
    microbatch_group_size: Optional[int] = Field(None, gt=0, le=MAX_GLOBAL_BATCH, description="--microbatch-group-size-per-virtual-pipeline-stage; None = PP")
    overlap_p2p_comm: bool = True
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = Field(True, description="--overlap-param-gather; when not given, on exactly where dp_sharding "
                                       "gathers parameters that Megatron can overlap (distributed_optimizer, megatron_fsdp)")
    tp_comm_overlap: bool = False
    moe_dispatcher: MoeDispatcher = MoeDispatcher.alltoall
    moe_grouped_gemm: bool = True
    overlap_moe_expert_parallel_comm: bool = False
    fp8_param_gather: bool = False
    fp4_param_gather: bool = Field(False, description="--fp4-param-gather: NVFP4 compute weights, all-gathered packed (NVFP4 only)")
    grad_reduce_in_bf16: bool = Field(False, description="--grad-reduce-in-bf16: bf16 grad buffers and reduction (bf16 params)")
    cross_entropy_loss_fusion: bool = True
    num_distributed_optimizer_instances: int = Field(1, gt=0, le=MAX_WORLD_SIZE)
    cp_comm_type: CpCommType = CpCommType.p2p
    # one size per CP level (Megatron --hierarchical-context-parallel-sizes: intra- and inter-node, so 2 in practice)
    # min_length: an empty list states no CP level at all (Megatron asserts the sizes multiply to CP)
    hierarchical_cp_sizes: Optional[tuple[Annotated[int, Field(gt=0, le=MAX_WORLD_SIZE)], ...]] = Field(
        None, min_length=1, max_length=16)
    distribute_saved_activations: bool = False
    moe_shared_expert_overlap: bool = False
    cpu_offloading_num_layers: int = Field(0, ge=0, le=MAX_NUM_LAYERS, description=(
        "--cpu-offloading-num-layers: the first N decoder layers' activations go to host memory (Transformer Engine's "
        "CPU offload; constraints/memory/per_rank.py offloaded_layers_peak); PP 1 and no recompute only"))
    make_vocab_size_divisible_by: int = Field(128, gt=0, le=1 << 20, description="Megatron pads the vocab to a multiple of this x TP")
    # not searched by solve (it keeps the default); read from scripts and written back by render
    attention_backend: AttentionBackend = Field(AttentionBackend.auto, description="--attention-backend")
    masked_softmax_fusion: bool = Field(True, description="off with --no-masked-softmax-fusion (local backend only)")
    attention_softmax_in_fp32: bool = Field(False, description="--attention-softmax-in-fp32 (local backend only)")
    compiled_loss_fusion: bool = Field(False, description=(
        "--cross-entropy-loss-fusion with --cross-entropy-fusion-impl native (Megatron's default): the torch.compile'd "
        "fused loss holds a second fp32 logits buffer (constraints/memory/activations.py output_bytes); the te impl "
        "does not"))
    defer_embedding_wgrad_compute: bool = Field(False, description=(
        "--defer-embedding-wgrad-compute: the output layer's finished micro-batches keep their GEMM input and logits "
        "gradient until the pipeline flush (constraints/memory/deferred_wgrad.py)"))
    wgrad_deferral_limit: int = Field(0, ge=0, le=1 << 20, description="--wgrad-deferral-limit (0: every micro-batch)")
    local_transformer_impl: bool = Field(False, description=(
        "--transformer-impl local: Megatron's own modules; core attention is DotProductAttention, which keeps the s x s "
        "scores (constraints/memory/attention_scores.py)"))

    @model_validator(mode="before")
    @classmethod
    def _param_gather_follows_sharding(cls, data: Any) -> Any:
        """--overlap-param-gather needs the distributed optimizer or Megatron-FSDP (rule `overlap_param_gather`), so a
        recipe that names another sharding (none, torch_fsdp2) and says nothing of the overlap means it off: a
        `dp_sharding: torch_fsdp2` recipe was judged illegal for a flag its author never wrote."""
        if isinstance(data, dict) and "overlap_param_gather" not in data and "dp_sharding" in data:
            sharding = data["dp_sharding"]
            sharding = getattr(sharding, "value", sharding)
            if sharding not in (DataParallelSharding.distributed_optimizer.value, DataParallelSharding.megatron_fsdp.value):
                data = {**data, "overlap_param_gather": False}
        return data
    @property
    def etp_effective(self) -> int:
        return self.tp if self.etp is None else self.etp

    @property
    def model_parallel_size(self) -> int:
        return self.tp * self.pp * self.cp

    def dp(self, world_size: int) -> int:
        """Dense data-parallel size (Megatron `args.data_parallel_size`)."""
        return world_size // self.model_parallel_size

    def expert_dp(self, world_size: int) -> int:
        """Expert data-parallel size, world / (ETP*EP*PP) (Megatron parallel_state expert grid)."""
        return world_size // (self.etp_effective * self.ep * self.pp)

    @property
    def sp_active(self) -> bool:
        """SP is silently dropped at TP=1 (Megatron validate_args)."""
        return self.sequence_parallel and self.tp > 1


class Placement(Strict):
    """Where the job runs: a hardware profile name and the counts of nodes and GPUs per node."""

    hardware: str
    num_nodes: int = Field(gt=0, le=MAX_WORLD_SIZE)
    gpus_per_node: int = Field(gt=0, le=1024)

    @property
    def world_size(self) -> int:
        return self.num_nodes * self.gpus_per_node
