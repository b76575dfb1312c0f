"""Recipe -> Megatron-LM `pretrain_gpt.py` arguments: one pure function, no I/O, no quoting.

Why pure and grouped: the launch templates only lay these lists out as bash arrays (quoted by
`templates.render`), and the inverse parser (`constraints.megatron.argv_to_specs`) reads them back, so the
mapping must live in exactly one place. Every flag is spelled as Megatron-LM's argument parser
spells it (megatron/training/arguments.py and the TransformerConfig-generated options, NVIDIA/Megatron-LM
snapshot 2026-08-22); the combination is one `validate_args` accepts (checked with
bench/tools/megatron_validate.py for every bundled model).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from boundary.errors import ShardplanError
from constraints.models.mamba import layout_as_segments, pattern_with_pipes
from constraints.models.window import flags_from_skip_freq
from constraints.spec import (
    Activation,
    AttentionBackend,
    DataParallelSharding,
    JobSpec,
    ModelSpec,
    Precision,
    Recipe,
    RecomputeGranularity,
)

GROUPS = ("model", "training", "parallelism", "moe", "precision", "data", "logging", "checkpointing")

# Placeholders a user replaces; chosen so a reader sees at once what goes there (every one starts with
# PLACEHOLDER_PREFIX, which templates/placeholders.py lists in the script and `check` warns about)
PLACEHOLDER_PREFIX = "/path/to/"
DATA_PATH_PLACEHOLDER = "/path/to/data_text_document"
CHECKPOINT_DIR_PLACEHOLDER = "/path/to/checkpoints"
MEGATRON_PATH_PLACEHOLDER = "/path/to/Megatron-LM"
TOKENIZER_PLACEHOLDER = "/path/to/tokenizer"


class RenderPathError(ShardplanError):
    """A path that would not reach Megatron as one literal argument; one line naming the option and the fix."""


_PATH_OPTIONS = {"data_path": "--data-path", "tokenizer_model": "--tokenizer-model",
                 "checkpoint_dir": "--checkpoint-dir", "megatron_path": "--megatron-path"}
# Megatron argparse dest -> the render option that sets its value (for a message naming what to change)
PATH_OPTION_OF_DEST = {"data_path": "--data-path", "tokenizer_model": "--tokenizer-model", "save": "--checkpoint-dir",
                       "load": "--checkpoint-dir", "tensorboard_dir": "--checkpoint-dir"}


def _check_path(option: str, value: str) -> None:
    """Quoting keeps any text one shell word, but Megatron's argparse still reads a word that starts with `-`
    as a flag and an empty word as a stray value; NUL cannot be in a command-line argument at all."""
    if value == "":
        raise RenderPathError(f"{option}: empty; give a path")
    if value.startswith("-"):
        raise RenderPathError(f"{option} {value!r}: starts with '-', which argparse reads as a flag; write ./{value}")
    if "\x00" in value:
        raise RenderPathError(f"{option} {value!r}: holds a NUL character, which no argument can carry; remove it")


@dataclass(frozen=True)
class RenderPaths:
    """Site-specific paths. `mock_data`: train on Megatron's synthetic batches (`--mock-data`, NullTokenizer with the
    model's `--vocab-size`), asked for explicitly. Otherwise the script reads `data_path` with the HF tokenizer
    `tokenizer_model`; when neither is given both stay placeholders (listed in the script's header), and a real data
    path without its tokenizer is refused: NullTokenizer would train on ids that mean nothing to the data.
    Any other text is allowed (it is shell-quoted), except what `_check_path` refuses."""

    data_path: str = DATA_PATH_PLACEHOLDER
    tokenizer_model: Optional[str] = None
    checkpoint_dir: str = CHECKPOINT_DIR_PLACEHOLDER
    megatron_path: str = MEGATRON_PATH_PLACEHOLDER
    mock_data: bool = False

    def __post_init__(self) -> None:
        for field, option in _PATH_OPTIONS.items():
            value = getattr(self, field)
            if value is not None:
                _check_path(option, value)
        if not isinstance(self.mock_data, bool):
            raise RenderPathError(f"--mock-data: give true or false (got a {type(self.mock_data).__name__})")
        if self.mock_data and self.data_path != DATA_PATH_PLACEHOLDER:
            raise RenderPathError("--mock-data: synthetic batches read no dataset, yet --data-path is given; give one of them")
        if not self.mock_data and self.tokenizer_model is None and self.data_path != DATA_PATH_PLACEHOLDER:
            raise RenderPathError("--tokenizer-model: a real --data-path needs the tokenizer its tokens came from (without "
                                  "one the script trains on NullTokenizer); give --tokenizer-model, or --mock-data for "
                                  "synthetic batches")

    @property
    def tokenizer(self) -> Optional[str]:
        """The HF tokenizer the script names: the given one, the placeholder, or None with mock data (NullTokenizer)."""
        if self.tokenizer_model is not None:
            return self.tokenizer_model
        return None if self.mock_data else TOKENIZER_PLACEHOLDER


# Fixed training hyper-parameters: not part of a recipe, written out so the script runs as is.
# Values follow Megatron-LM examples/mixtral/train_mixtral_8x7b_distributed.sh.
TRAIN_ITERS = 500000
LR, MIN_LR, LR_WARMUP_ITERS = "1e-4", "1e-5", 500


def _fp8_format_recipe(precision: Precision) -> tuple[str, str]:
    """(--fp8-format, --fp8-recipe). Delayed/tensorwise use `hybrid` (E4M3 fwd, E5M2 bwd; Megatron
    examples/llama/train_llama3_8b_h100_fp8.sh); blockwise and MXFP8 scale per block and use E4M3 throughout
    (DeepSeek-V3 sec. 3.3.2; OCP MX spec)."""
    return {
        Precision.fp8_delayed: ("hybrid", "delayed"),
        Precision.fp8_tensorwise: ("hybrid", "tensorwise"),
        Precision.fp8_blockwise: ("e4m3", "blockwise"),
        Precision.mxfp8: ("e4m3", "mxfp8"),
    }[precision]


def moe_layer_freq_string(pattern: tuple[bool, ...]) -> str:
    """Run-length Python list expression Megatron's `moe_freq_type` evaluates, e.g. "([0]*3+[1]*58)"."""
    runs: list[tuple[int, int]] = []
    for flag in pattern:
        bit = int(flag)
        if runs and runs[-1][0] == bit:
            runs[-1] = (bit, runs[-1][1] + 1)
        else:
            runs.append((bit, 1))
    return "(" + "+".join(f"[{bit}]*{count}" for bit, count in runs) + ")"


def _model_args(model: ModelSpec, job: JobSpec) -> list[str]:
    h, heads = model.hidden_size, model.num_attention_heads
    args = ["--num-layers", str(model.num_layers), "--hidden-size", str(h),
            "--ffn-hidden-size", str(model.ffn_hidden_size), "--num-attention-heads", str(heads)]
    if model.multi_latent_attention:
        # MLA and GQA are mutually exclusive in Megatron; MLA head dims come from the --qk-* / --v-head-dim flags.
        args += ["--multi-latent-attention"]
        if model.q_lora_rank is not None:
            args += ["--q-lora-rank", str(model.q_lora_rank)]
        args += ["--kv-lora-rank", str(model.kv_lora_rank), "--qk-head-dim", str(model.qk_head_dim),
                 "--qk-pos-emb-head-dim", str(model.qk_pos_emb_head_dim), "--v-head-dim", str(model.v_head_dim)]
    else:
        if model.num_query_groups != heads:
            args += ["--group-query-attention", "--num-query-groups", str(model.num_query_groups)]
        # kv_channels defaults to hidden/heads (TransformerConfig); say it only when the model differs
        if h % heads != 0 or model.kv_channels != h // heads:
            args += ["--kv-channels", str(model.kv_channels)]
    # validate_args asserts --max-position-embeddings >= --seq-length; RoPE has no table, so only learned positions keep theirs
    max_positions = model.max_position_embeddings if model.learned_position_embeddings else max(model.max_position_embeddings, job.seq_length)
    args += ["--seq-length", str(job.seq_length), "--max-position-embeddings", str(max_positions)]
    if model.activation == Activation.swiglu:
        args += ["--swiglu"]
    elif model.activation == Activation.quick_geglu:
        args += ["--quick-geglu"]
    elif model.activation == Activation.squared_relu:
        args += ["--squared-relu"]
    if model.glu_clamp is not None:  # TransformerConfig activation_func_clamp_value / glu_linear_offset (gpt-oss)
        args += ["--activation-func-clamp-value", _num(model.glu_clamp)]
    if model.glu_linear_offset:
        args += ["--glu-linear-offset", _num(model.glu_linear_offset)]
    args += ["--normalization", model.normalization.value]
    # Megatron's add_bias_linear (default on) covers every linear; --add-qkv-bias re-adds only the QKV bias.
    if not model.mlp_bias:
        args += ["--disable-bias-linear"]
        if model.attention_bias or model.qkv_bias:
            args += ["--add-qkv-bias"]
    if not model.tied_embeddings:
        args += ["--untie-embeddings-and-output-weights"]
    yarn = model.yarn if not model.multi_latent_attention else None
    args += ["--position-embedding-type", "learned_absolute" if model.learned_position_embeddings else "yarn" if yarn else "rope"]
    if yarn is not None:  # megatron/training/argument_utils.py _apply_yarn_config_from_args reads these for GPTModel
        args += ["--rotary-scaling-factor", _num(yarn.scaling_factor),
                 "--yarn-original-max-position-embeddings", str(yarn.original_max_position_embeddings),
                 "--yarn-beta-fast", _num(yarn.beta_fast), "--yarn-beta-slow", _num(yarn.beta_slow),
                 "--yarn-correction-range-round-to-int" if yarn.correction_range_round_to_int
                 else "--no-yarn-correction-range-round-to-int",
                 "--mscale", _num(yarn.mscale), "--mscale-all-dim", _num(yarn.mscale_all_dim)]
    if model.rotary_base is not None and not model.learned_position_embeddings:
        args += ["--rotary-base", _num(model.rotary_base)]
    if model.llama3_rope_scaling_factor is not None:
        args += ["--use-rope-scaling"] + (["--rope-scaling-factor", _num(model.llama3_rope_scaling_factor)]
                                          if model.llama3_rope_scaling_factor != 8 else [])
    if model.qk_layernorm:
        args += ["--qk-layernorm"]
    if model.attention_sinks:
        args += ["--softmax-type", "learnable"]  # gpt-oss per-head sink logit (TransformerConfig softmax_type)
    args += ["--attention-dropout", _num(model.attention_dropout), "--hidden-dropout", _num(model.hidden_dropout)]
    if model.mtp_num_layers:
        args += ["--mtp-num-layers", str(model.mtp_num_layers)]
        if model.mtp_repeated_layer:
            args += ["--mtp-use-repeated-layer"]
    if model.no_rope_layers is not None:  # NoPE layers (Llama 4): N when every N-th layer, else the 0/1 list
        n = next((k for k in range(1, len(model.no_rope_layers) + 1)
                  if model.no_rope_layers == tuple((i + 1) % k == 0 for i in range(len(model.no_rope_layers)))), None)
        args += ["--no-rope-freq", str(n) if n else moe_layer_freq_string(model.no_rope_layers)]
    if model.qk_l2_norm:
        args += ["--qk-l2-norm"]
    if model.window_size is not None:  # Megatron's causal window (W, 0); a 1 in the skip list marks a windowed layer
        args += ["--window-size", f"({model.window_size},0)"]
        if model.window_layers is not None:
            args += ["--window-attn-skip-freq", skip_freq_string(model.window_layers)]
    return args


def skip_freq_string(flags: tuple[bool, ...]) -> str:
    """--window-attn-skip-freq: N when every N-th layer (from 1) is full attention and the rest windowed, else the
    run-length list expression (moe_layer_freq_string), as Megatron's is_layer_window_attention reads either."""
    for n in range(2, len(flags) + 1):
        if flags == flags_from_skip_freq(n, len(flags)):
            return str(n)
    return moe_layer_freq_string(flags)


def hybrid_model_args(model: ModelSpec, recipe: Recipe, base: list[str]) -> list[str]:
    """A hybrid model's arguments: --hybrid-layer-pattern (with the recipe's pipeline segments as '|') in place of
    --num-layers, which Megatron derives from it, the --mamba-* sizes, and no position embedding (Megatron-Bridge
    NemotronHBridge: position_embedding_type none) unless the model has a learned table: a hybrid script that leaves
    --position-embedding-type at Megatron's default learned_absolute builds one (hybrid_builders.py passes the type to
    HybridModel), and its rendering keeps it, so the rendered script trains the model check judged."""
    i = base.index("--num-layers")
    args = base[:i] + base[i + 2:]
    j = args.index("--position-embedding-type")
    args[j + 1] = "learned_absolute" if model.learned_position_embeddings else "none"
    segments = layout_as_segments(recipe.pipeline_layout) if recipe.pipeline_layout else None
    args = ["--hybrid-layer-pattern", pattern_with_pipes(model, segments)] + args
    if "M" in model.hybrid_layer_pattern + (model.mtp_hybrid_pattern or ""):
        args += ["--mamba-num-heads", str(model.mamba_num_heads), "--mamba-head-dim", str(model.mamba_head_dim),
                 "--mamba-state-dim", str(model.mamba_state_dim), "--mamba-num-groups", str(model.mamba_num_groups)]
    return args


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@dataclass(frozen=True)
class TrialRun:
    """A short measuring run (`solve --trials`): few iterations, every one logged with its throughput, per-phase
    timers (--timing-log-level 1: forward-backward, grad sync, optimizer, read back by `check LOG` / `calibrate`), no
    evaluation and no checkpoint, so it costs minutes and leaves nothing behind but its log. Megatron prints the memory
    report (`max allocated` / `max reserved`) after the first logged iteration by itself (training_log's
    report_memory_flag)."""

    train_iters: int = 30


def _training_args(job: JobSpec, recipe: Recipe, trial: Optional[TrialRun] = None) -> list[str]:
    args = ["--micro-batch-size", str(recipe.mbs), "--global-batch-size", str(job.global_batch_size),
            "--train-iters", str(trial.train_iters if trial else TRAIN_ITERS), "--optimizer", job.optimizer.value,
            "--lr", LR, "--min-lr", MIN_LR, "--lr-decay-style", "cosine",
            # Megatron's scheduler asserts warm-up < decay steps (OptimizerParamScheduler): a trial warms up briefly
            "--lr-warmup-iters", str(max(1, trial.train_iters // 10) if trial else LR_WARMUP_ITERS),
            "--weight-decay", "0.1", "--clip-grad", "1.0"]
    if job.optimizer_moments_bf16:
        args += ["--use-precision-aware-optimizer", "--exp-avg-dtype", "bf16", "--exp-avg-sq-dtype", "bf16"]
    if recipe.cross_entropy_loss_fusion:
        args += ["--cross-entropy-loss-fusion"]
        if recipe.compiled_loss_fusion:  # priced with the compiled loss's fp32 copy: say which impl that was
            args += ["--cross-entropy-fusion-impl", "native"]
    args += _attention_backend_args(recipe)
    rc = recipe.recompute
    if rc.granularity == RecomputeGranularity.selective:
        # no modules listed = Megatron's default [core_attn]; written out so the script says what it recomputes
        modules = [m.value for m in rc.modules] or ["core_attn"]
        args += ["--recompute-granularity", "selective", "--recompute-modules", *modules]
        # a method or layer count with selective is illegal (validate_args); a --force render keeps it visible
        if rc.method is not None:
            args += ["--recompute-method", rc.method.value]
        if rc.num_layers is not None:
            args += ["--recompute-num-layers", str(rc.num_layers)]
    elif rc.granularity == RecomputeGranularity.full:
        args += ["--recompute-granularity", "full"]
        if rc.method is not None:
            args += ["--recompute-method", rc.method.value]
        if rc.num_layers is not None:
            args += ["--recompute-num-layers", str(rc.num_layers)]
    if recipe.distribute_saved_activations:
        args += ["--distribute-saved-activations"]
    if recipe.cpu_offloading_num_layers:
        args += ["--cpu-offloading-num-layers", str(recipe.cpu_offloading_num_layers)]
    return args


def _attention_backend_args(recipe: Recipe) -> list[str]:
    """--attention-backend and the softmax flags, only when they differ from Megatron's defaults (auto, fusion on,
    bf16 softmax), so a default recipe renders as before and a script's choice round-trips."""
    args = [] if recipe.attention_backend == AttentionBackend.auto else ["--attention-backend", recipe.attention_backend.value]
    if not recipe.masked_softmax_fusion:
        args += ["--no-masked-softmax-fusion"]
    if recipe.attention_softmax_in_fp32:
        args += ["--attention-softmax-in-fp32"]
    if recipe.local_transformer_impl:
        args += ["--transformer-impl", "local"]
    return args


def _parallel_args(model: ModelSpec, recipe: Recipe) -> list[str]:
    args = ["--tensor-model-parallel-size", str(recipe.tp), "--pipeline-model-parallel-size", str(recipe.pp)]
    # at most one of layout / virtual stages (Megatron validate_args); the layout implies VPP
    if recipe.pipeline_layout is not None and model.is_hybrid and layout_as_segments(recipe.pipeline_layout) is not None:
        pass  # a hybrid model's stages are the '|' segments of --hybrid-layer-pattern (hybrid_model_args)
    elif recipe.pipeline_layout is not None:
        args += ["--pipeline-model-parallel-layout", recipe.pipeline_layout]
    elif recipe.vpp > 1:
        args += ["--num-virtual-stages-per-pipeline-rank", str(recipe.vpp)]
    if recipe.first_stage_layers is not None:
        args += ["--decoder-first-pipeline-num-layers", str(recipe.first_stage_layers)]
    if recipe.last_stage_layers is not None:
        args += ["--decoder-last-pipeline-num-layers", str(recipe.last_stage_layers)]
    if recipe.account_for_embedding_in_pipeline_split:
        args += ["--account-for-embedding-in-pipeline-split"]
    if recipe.account_for_loss_in_pipeline_split:
        args += ["--account-for-loss-in-pipeline-split"]
    if recipe.microbatch_group_size is not None:
        args += ["--microbatch-group-size-per-virtual-pipeline-stage", str(recipe.microbatch_group_size)]
    if not recipe.overlap_p2p_comm:
        args += ["--no-overlap-p2p-communication"]
    if recipe.cp > 1:
        args += ["--context-parallel-size", str(recipe.cp), "--cp-comm-type", recipe.cp_comm_type.value]
        if recipe.hierarchical_cp_sizes:
            args += ["--hierarchical-context-parallel-sizes", *[str(s) for s in recipe.hierarchical_cp_sizes]]
    if model.is_moe:
        args += ["--expert-model-parallel-size", str(recipe.ep)]
        if recipe.etp is not None:
            args += ["--expert-tensor-parallel-size", str(recipe.etp)]
    else:  # a dense model's legal recipe has neither; a --force render of one that does must not hide it
        if recipe.ep > 1:
            args += ["--expert-model-parallel-size", str(recipe.ep)]
        if recipe.etp is not None and recipe.etp != recipe.tp:
            args += ["--expert-tensor-parallel-size", str(recipe.etp)]
    if recipe.sp_active:  # validate_args drops SP at TP=1 with a warning; do not write a flag that does nothing
        args += ["--sequence-parallel"]
    if recipe.tp_comm_overlap:  # requires --sequence-parallel; written regardless so a --force render stays illegal
        args += ["--tp-comm-overlap"]
    sharding = recipe.dp_sharding
    if sharding == DataParallelSharding.distributed_optimizer:
        args += ["--use-distributed-optimizer"]
    elif sharding == DataParallelSharding.megatron_fsdp:
        # Megatron-FSDP v1 (default) turns on the distributed optimizer itself
        args += ["--use-megatron-fsdp", "--data-parallel-sharding-strategy", recipe.fsdp_sharding_strategy.value]
    elif sharding == DataParallelSharding.torch_fsdp2:
        # validate_args: FSDP2 rejects gradient-accumulation fusion (on by default)
        args += ["--use-torch-fsdp2", "--no-gradient-accumulation-fusion"]
    if recipe.num_distributed_optimizer_instances > 1:
        args += ["--num-distributed-optimizer-instances", str(recipe.num_distributed_optimizer_instances)]
    if recipe.overlap_grad_reduce:
        args += ["--overlap-grad-reduce"]
    # needs dist-opt/Megatron-FSDP and --overlap-grad-reduce (check's overlap_param_gather rule): a legal recipe
    # only sets it with them, and a --force render must not hide that an illegal one does
    if recipe.overlap_param_gather:
        args += ["--overlap-param-gather"]
    return args


def _moe_args(model: ModelSpec, recipe: Recipe) -> list[str]:
    if not model.is_moe:
        return []
    args = ["--num-experts", str(model.num_experts), "--moe-router-topk", str(model.moe_router_topk),
            "--moe-ffn-hidden-size", str(model.moe_ffn_hidden_size)]
    if model.moe_shared_expert_intermediate_size:
        args += ["--moe-shared-expert-intermediate-size", str(model.moe_shared_expert_intermediate_size)]
        if model.moe_shared_expert_gate:
            args += ["--moe-shared-expert-gate"]
    if model.moe_latent_size:  # TransformerConfig.moe_latent_size (latent projections around the routed experts)
        args += ["--moe-latent-size", str(model.moe_latent_size)]
    if not all(model.moe_layers) and not model.is_hybrid:  # a hybrid pattern's E symbols place the MoE layers
        args += ["--moe-layer-freq", moe_layer_freq_string(model.moe_layers)]
    if model.moe_router_group_topk:  # group-limited routing (megatron/core/transformer/moe/moe_utils.py group_limited_topk)
        args += ["--moe-router-num-groups", str(model.moe_router_num_groups),
                 "--moe-router-group-topk", str(model.moe_router_group_topk)]
    if model.moe_router_score_bias:
        # DeepSeek-V3 sec. 2.1.2: sigmoid gating, aux-loss-free bias, sequence-wise balance loss alpha=1e-4
        args += ["--moe-router-score-function", "sigmoid", "--moe-router-enable-expert-bias",
                 "--moe-router-load-balancing-type", "seq_aux_loss", "--moe-aux-loss-coeff", "1e-4"]
    else:  # Megatron examples/mixtral: aux_loss with coefficient 1e-2
        args += ["--moe-router-load-balancing-type", "aux_loss", "--moe-aux-loss-coeff", "1e-2"]
        if model.moe_router_topk == 1:  # softmax over one score has no gradient: TransformerConfig demands pre-softmax
            args += ["--moe-router-pre-softmax"]
    if recipe.moe_grouped_gemm:
        args += ["--moe-grouped-gemm"]
    args += ["--moe-token-dispatcher-type", recipe.moe_dispatcher.value]
    if recipe.moe_shared_expert_overlap:
        args += ["--moe-shared-expert-overlap"]
    if recipe.overlap_moe_expert_parallel_comm:
        args += ["--overlap-moe-expert-parallel-comm"]
    return args


def _precision_args(job: JobSpec, recipe: Recipe) -> list[str]:
    # FP8 keeps BF16 outside the FP8 GEMMs; fp32 is the absence of both flags (Megatron's default params_dtype)
    args = ["--fp16"] if job.precision == Precision.fp16 else [] if job.precision == Precision.fp32 else ["--bf16"]
    if job.precision.is_fp8:
        fmt, fp8_recipe = _fp8_format_recipe(job.precision)
        args += ["--fp8-format", fmt, "--fp8-recipe", fp8_recipe]
        if fp8_recipe == "delayed":  # amax history as in examples/llama/train_llama3_8b_h100_fp8.sh
            args += ["--fp8-amax-history-len", "1024", "--fp8-amax-compute-algo", "max"]
    if job.precision.is_fp4:  # TransformerConfig: fp4 Literal['e2m1'], fp4_recipe 'nvfp4' (TE NVFP4BlockScaling)
        args += ["--fp4-format", "e2m1", "--fp4-recipe", "nvfp4"]
    if job.has_bf16_layers:  # both counts written: Megatron's defaults (1, 1) are not Megatron-Bridge's (0, 0)
        args += ["--first-last-layers-bf16", "--num-layers-at-start-in-bf16", str(job.bf16_layers_at_start),
                 "--num-layers-at-end-in-bf16", str(job.bf16_layers_at_end)]
    if recipe.fp8_param_gather:  # written even where check finds it illegal (--force), so check sees it again
        args += ["--fp8-param-gather"]
    if recipe.fp4_param_gather:
        args += ["--fp4-param-gather"]
    if recipe.grad_reduce_in_bf16:
        args += ["--grad-reduce-in-bf16"]
    return args


def _data_args(model: ModelSpec, recipe: Recipe, paths: RenderPaths, trial: Optional[TrialRun] = None) -> list[str]:
    # a trial with no data path given measures on Megatron's synthetic batches (--mock-data): step time does not
    # depend on the tokens' values, and a trial then needs no dataset on the cluster
    mock = paths.mock_data or (trial is not None and paths.data_path == DATA_PATH_PLACEHOLDER)
    args = ["--mock-data"] if mock else ["--data-path", paths.data_path, "--split", "99,1,0"]
    tokenizer = paths.tokenizer_model if mock else paths.tokenizer
    if tokenizer is None:
        args += ["--tokenizer-type", "NullTokenizer"]
    else:
        args += ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", tokenizer]
    # NullTokenizer takes its size from --vocab-size; Megatron pads it to a multiple of divisible-by x TP. With a HF
    # tokenizer it is the model's size, which `check` reads back (the tokenizer file may not be on this machine)
    args += ["--vocab-size", str(model.vocab_size),
             "--make-vocab-size-divisible-by", str(recipe.make_vocab_size_divisible_by)]
    return args


def _logging_args(paths: RenderPaths, trial: Optional[TrialRun] = None) -> list[str]:
    if trial is not None:
        return ["--log-interval", "1", "--log-throughput", "--timing-log-level", "1", "--eval-iters", "0"]
    return ["--log-interval", "1", "--log-throughput", "--eval-interval", "1000", "--eval-iters", "10",
            "--tensorboard-dir", paths.checkpoint_dir.rstrip("/") + "/tensorboard"]


def _checkpoint_args(recipe: Recipe, paths: RenderPaths) -> list[str]:
    args = ["--save", paths.checkpoint_dir, "--load", paths.checkpoint_dir, "--save-interval", "1000"]
    if recipe.dp_sharding == DataParallelSharding.megatron_fsdp:
        args += ["--ckpt-format", "fsdp_dtensor"]  # validate_args: Megatron-FSDP requires it
    return args


def megatron_arg_groups(model: ModelSpec, job: JobSpec, recipe: Recipe,
                        paths: RenderPaths | None = None, trial: Optional[TrialRun] = None) -> dict[str, list[str]]:
    """The arguments by group (keys in GROUPS order); an empty list means the group does not apply. `trial`: a short
    measuring run (TrialRun) instead of a training run."""
    paths = paths or RenderPaths()
    return {
        "model": hybrid_model_args(model, recipe, _model_args(model, job)) if model.is_hybrid else _model_args(model, job),
        "training": _training_args(job, recipe, trial),
        "parallelism": _parallel_args(model, recipe),
        "moe": _moe_args(model, recipe),
        "precision": _precision_args(job, recipe),
        "data": _data_args(model, recipe, paths, trial),
        "logging": _logging_args(paths, trial),
        "checkpointing": [] if trial is not None else _checkpoint_args(recipe, paths),
    }


def recipe_to_megatron_args(model: ModelSpec, job: JobSpec, recipe: Recipe,
                            paths: RenderPaths | None = None) -> list[str]:
    """The flat `pretrain_gpt.py` argv (without the script name), groups concatenated in GROUPS order."""
    return [arg for group in megatron_arg_groups(model, job, recipe, paths).values() for arg in group]


def needs_cuda_device_max_connections_1(recipe: Recipe, compute_capability: float | None) -> bool:
    """Megatron validate_args asserts CUDA_DEVICE_MAX_CONNECTIONS=1 on pre-Blackwell GPUs (arch < 10) when
    TP>1 or CP>1, except with FSDP2 / Megatron-FSDP or --overlap-moe-expert-parallel-comm (only warnings).
    Unknown arch (None) is treated as pre-Blackwell: the setting is harmless there."""
    if recipe.tp == 1 and recipe.cp == 1:
        return False
    if compute_capability is not None and compute_capability >= 10:
        return False
    if uses_fsdp(recipe) or recipe.overlap_moe_expert_parallel_comm:
        return False
    return True


def uses_fsdp(recipe: Recipe) -> bool:
    """FSDP2 and Megatron-FSDP assert CUDA_DEVICE_MAX_CONNECTIONS is not 1 (validate_args)."""
    return recipe.dp_sharding in (DataParallelSharding.megatron_fsdp, DataParallelSharding.torch_fsdp2)
