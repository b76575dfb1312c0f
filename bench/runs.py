"""Turn the published measured runs (bench/data/runs.csv) into shardplan cases.

Each expressible row becomes a `RunCase` (ModelSpec, JobSpec, Recipe, Placement, hardware profile name,
measured numbers, outcome ran/oom); every other row becomes a `RunSkip` with its reason. The mapping
mirrors bench/tools/runs_to_megatron.py so our projection and Megatron's own validator see the
same command line. Assumptions for fields a row leaves empty (each is recorded in `RunCase.assumed`):

- model: the bundled HF config named by MODEL_FILES; models not bundled are built from the row's
  own shape columns when hidden/layers/heads are given (GQA from kv_heads; SwiGLU + RMSNorm unless
  ffn_hidden == 4 * hidden, then GELU + LayerNorm, Megatron's GPT defaults; embeddings untied unless the notes say
  "tied embeddings", a learned position table where they say "learned positions"); vocab 51200 if empty.
- MBS = 1 when unpublished (torchtitan rows: GBS / DP, as runs_to_megatron.py).
- sequence parallel whenever TP > 1 unless the row says false (Megatron-Bridge perf recipes).
- distributed optimizer (`--use-distributed-optimizer`, overlap grad reduce and param gather) for
  every row without an FSDP column value; Megatron-FSDP / FSDP2 rows use those shardings.
- recompute none unless the row states it (selective modules are parsed from the text).
- Megatron-Bridge performance-table rows (MBR, release in the notes) and verification-card benchmark rows
  (MBCARD pretrain_performance / weak scaling, at the card's commit): the MoE dispatcher (flex when the preset
  names HybridEP, or DeepEP off GB200/GB300, else alltoall), `--overlap-moe-expert-parallel-comm` (the preset's
  moe_a2a_overlap) and, when the row is silent, the recompute of that release's benchmark preset whose
  TP/PP/VPP/EP/MBS (and the published GBS, which picks between V1/V2 variants) match the row
  (bench/mbridge_presets.py; a card that names no VP takes the preset's VPP); the preset's CUDA graph capture
  (`RunCase.cuda_graph_scope`, passed to the projection: measure/kernels/cuda_graphs.py) and, on fp8 rows, its
  fp8_dot_product_attention (`RunCase.fp8_attention`, measure/kernels/roofline.py); the preset's fused grouped MLP
  (`RunCase.fused_grouped_mlp`) removes the eager activation clamp, expert-bias passes and host sync it replaces
  (measure/layer_ops.moe_ops); its own kernel speed is not modelled (priced, it made the held-out figures worse:
  README Limits).
  25.09 rows and rows without a matching preset keep the defaults below.
- `--overlap-moe-expert-parallel-comm` as the notes state it ("EP overlap on/off", card text), else as above; the CUDA graph
  capture as the notes quote the run's command (`--cuda-graph-scope attn moe_router`) where no preset gives one.
- MoE otherwise: alltoall dispatcher, grouped GEMM, forced-balanced routing, no EP comm overlap; ETP = 1 on Megatron-Bridge
  rows that leave it empty (its perf presets set expert_tensor_parallel_size=1), else Megatron's default ETP = TP.
- torch FSDP2 rows (AutoModel): no --overlap-param-gather (FSDP2 gathers parameters itself).
- account-for-embedding/loss in the pipeline split when layers do not divide PP*VPP but layers+2 do.
- VPP > 1 means the interleaved schedule, else 1F1B; TP comm overlap off.
- precision: FP8 / FP8-CS -> fp8-tensorwise, MXFP8 / FP8-MX -> mxfp8, blockwise -> fp8-blockwise,
  empty -> bf16, NVFP4 -> nvfp4; a plain FP8 of software released before Transformer Engine's current scaling
  (2025-04) -> fp8-delayed (`fp8_recipe_of_its_time`).
- Rows of Megatron-Bridge performance recipes (performance summaries, cards' pretrain_performance / weak-scaling items,
  perf-* skill studies): bf16 main grads, as every such recipe sets grad_reduce_in_fp32 False (`BRIDGE_PERF_SOURCE`);
  fp8 weights for the param gather under MXFP8 / FP8-CS, NVFP4 weights under NVFP4 from 26.06 on
  (`BRIDGE_FP8_PARAM_GATHER`, `BRIDGE_FP4_PARAM_GATHER_RELEASES`).
- Nemotron 3 Super rows of Megatron-Bridge: two MTP depths through one repeated layer, and under NVFP4 the last 14
  layers in bf16 (`BRIDGE_MODEL_TRAINING`, `BRIDGE_NVFP4_BF16_LAYERS`).
- Peak memory of Megatron-Bridge skill studies and cards is logged in decimal GB (`BRIDGE_LOGGED_MEMORY`) and converted
  to GiB; a peak read "after iteration 1" is flagged (`RunCase.memory_after_first_iteration`).
- Muon optimizer where the notes say so (Kimi-K2); Adam otherwise. Megatron-Bridge skill-study and verification-card
  rows of Moonlight-16B-A3B and DeepSeek-V3 on H100 in bf16 take their Bridge recipe's precision-aware optimizer
  (bf16 main grads and Adam moments; `BRIDGE_BF16_OPTIMIZER`).
- GB200/GB300 rows: nodes are 4-GPU trays inside a 72-GPU NVLink domain (the profile says so).
- layers that divide neither way: an even `--pipeline-model-parallel-layout` (see `even_layout`); a layout the notes
  quote (`--pipeline-model-parallel-layout "Et|(tt|)*30L"`) is taken as stated, as are `--fp8-param-gather` and "no MTP".
- software (the `software` column, STACK:VERSION): the generation's knobs overrule the assumptions above where it lacks
  a feature (constraints/software/apply.py: no Transformer Engine -> Megatron's local modules and unfused attention, no
  distributed optimizer -> DDP, no --overlap-grad-reduce, no SP ...); a column that states what its generation lacks
  skips the row. Empty: the newest generation, as any projection without --software.
Skipped: hardware without a profile, unknown model without shape columns, no GBS/TP/PP or sequence
length, LoRA rows, rows whose published DP*TP*PP*CP disagrees with the GPU count.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict

from bench.deepspeed_rows import deepspeed_engine
from bench.mbridge_presets import preset_for
from bench.torch_native_rows import torch_native_stack
from constraints.models.load import load_model
from constraints.software.apply import apply_generation
from constraints.software.generation import SoftwareError, resolve
from constraints.spec import (
    Activation,
    DataParallelSharding,
    FsdpShardingStrategy,
    JobSpec,
    ModelSpec,
    MoeDispatcher,
    Normalization,
    Optimizer,
    PipelineSchedule,
    Placement,
    Precision,
    Recipe,
    Recompute,
    RecomputeGranularity,
    RecomputeMethod,
    RecomputeModule,
)
from hardware.profile import HardwareProfile
from measure.deepspeed.engine import DeepSpeedEngine
from measure.deepspeed.engine import refusal as deepspeed_refusal
from measure.deepspeed.step import project_megatron_deepspeed
from measure.kernels.cuda_graphs import graph_scope
from measure.projection.project import Projection, project
from measure.torch_native.stack import TorchNativeStack
from measure.torch_native.step import project_torch_native, refusal

REPO = Path(__file__).resolve().parents[1]
RUNS_CSV = REPO / "bench" / "data" / "runs.csv"
# published peak-memory studies outside the development set (same columns; read by bench/validate_memory.py only,
# so no projection constant is ever fitted on them): see bench/data/SOURCES.md
MEMORY_CSV = REPO / "bench" / "data" / "memory_runs.csv"

# row model name -> bundled config stem (same table as runs_to_megatron.py)
MODEL_FILES = {
    "Llama3-8B": "Llama-3.1-8B", "Llama3.1-8B": "Llama-3.1-8B", "Llama3-70B": "Llama-3.1-70B", "Llama3.1-70B": "Llama-3.1-70B",
    "Llama3.1-405B": "Llama-3.1-405B", "Llama3-405B": "Llama-3.1-405B", "Llama2-7B": "Llama-2-7b", "Llama2-13B": "Llama-2-13b",
    "Llama2-70B": "Llama-2-70b", "Mixtral-8x7B": "Mixtral-8x7B-v0.1", "Mixtral-8x22B": "Mixtral-8x22B-v0.1",
    "DeepSeek-V3": "DeepSeek-V3", "Qwen3-235B-A22B": "Qwen3-235B-A22B", "Qwen3-30B-A3B": "Qwen3-30B-A3B", "Qwen3-8B": "Qwen3-8B",
    "Nemotron4-340B": "Nemotron-4-340B", "Moonlight-16B-A3B": "Moonlight-16B-A3B", "Kimi-K2": "Kimi-K2-Instruct",
    "GPT3-175B": "GPT-3-175B", "GPT-OSS-120B": "gpt-oss-120b", "GPT-OSS-20B": "gpt-oss-20b",
    "Nemotron3-Nano-30B-A3B": "Nemotron-3-Nano-30B-A3B", "NemotronH-8B": "Nemotron-H-8B-Base-8K",
    "NemotronH-47B": "Nemotron-H-47B-Base-8K", "NemotronH-56B": "Nemotron-H-56B-Base-8K",
    "Llama4-Scout": "Llama-4-Scout-17B-16E", "Llama4-Maverick": "Llama-4-Maverick-17B-128E", "Mistral-7B": "Mistral-7B-v0.1",
    "Moonlight-16B": "Moonlight-16B-A3B", "Nemotron3-Super": "Nemotron-3-Super-120B-A12B",
}
# What Megatron-Bridge's recipes of a model train beyond its HF config, for rows that ran them (source Megatron-Bridge):
# Nemotron 3 Super trains two MTP depths through one shared layer (mtp_num_layers 2, mtp_use_repeated_layer True over
# the HF config's one MTP layer: src/megatron/bridge/recipes/nemotronh/nemotron_3_super.py @v0.4.1 .. @v0.5.1 and
# recipes/nemotronh/h100/nemotron_3_super.py @067f987d, the base every Super perf recipe and card starts from)
BRIDGE_MODEL_TRAINING = {"Nemotron-3-Super-120B-A12B": {"mtp_num_layers": 2, "mtp_repeated_layer": True}}
# (first, last) decoder layers a model's Megatron-Bridge NVFP4 recipes keep in bf16 (--first-last-layers-bf16): Super's
# last 14, none at the start (set_nemotron_3_super_common_configs in scripts/performance/configs/nemotronh/
# nemotron_3_llm_pretrain.py @v0.4.1 .. @v0.5.0, nemotron_3_super_bf16_with_nvfp4_mixed in training/mixed_precision.py
# @v0.5.1 .. @067f987d; MixedPrecisionConfig.num_layers_at_start_in_bf16 defaults to 0)
BRIDGE_NVFP4_BF16_LAYERS = {"Nemotron-3-Super-120B-A12B": (0, 14)}
# Megatron-Bridge performance recipes keep fp8 weights for the param all-gather: _perf_precision / get_precision_config
# take bf16_with_mxfp8_mixed and bf16_with_fp8_current_scaling_mixed, both fp8_param_gather True (training/
# mixed_precision.py @v0.2.1 .. @067f987d); their NVFP4 recipe gathers NVFP4 weights from v0.5.0 (26.06) on
# (bf16_with_nvfp4_mixed fp4_param_gather True since Bridge #3364). Families whose perf recipes turn these off, or set
# them per GPU, keep the defaults (off): gpt-oss (gpt_oss_llm_pretrain.py / perf_recipes/gpt_oss/common.py both
# False), Kimi (MXFP8 WAR in kimi_llm_pretrain.py), DeepSeek (per GPU in perf_recipes/deepseek/*), Nemotron 3 Super's
# fp4 ("Disabled until MCore PR 4358 lands", perf_recipes/nemotronh/common.py)
BRIDGE_FP8_PARAM_GATHER = (Precision.mxfp8, Precision.fp8_tensorwise)
BRIDGE_FP4_PARAM_GATHER_RELEASES = ("26.06", "26.06.01", "26.08", "card@067f987d")
BRIDGE_OWN_PARAM_GATHER = ("gpt-oss-120b", "gpt-oss-20b", "Kimi-K2-Instruct", "DeepSeek-V3")
BRIDGE_NO_FP4_PARAM_GATHER = BRIDGE_OWN_PARAM_GATHER + ("Nemotron-3-Super-120B-A12B",)
# Megatron-Bridge H100 recipes that train with the precision-aware optimizer, bf16 main grads and bf16 Adam moments
# (src/megatron/bridge/recipes/moonlight/h100/moonlight_16b.py moonlight_16b_pretrain_8gpu_h100_bf16_config and
# deepseek/h100/deepseek_v3.py deepseek_v3_pretrain_*_h100_bf16_config @ Bridge HEAD 2026-08): rows of Bridge
# skill studies and verification cards on these models and parts take those optimizer dtypes
BRIDGE_BF16_OPTIMIZER = {("Moonlight-16B-A3B", "h100-sxm-80gb"), ("DeepSeek-V3", "h100-sxm-80gb")}
# Megatron-Bridge performance recipes reduce gradients in bf16 (grad_reduce_in_fp32 False in mixed_precision and ddp):
# scripts/performance/configs/*/*_llm_pretrain.yaml @183aad1d (2025-09, the 25.09 runs), the per-family
# *_llm_pretrain.py / llama3_llm_finetune.py set_*_common_*_configs @e645566b (2025-11) .. @39b4a5b4 (2026-04), and
# src/megatron/bridge/perf_recipes/_common.py _benchmark_common / _perf_precision @067f987d (HEAD 2026-08). Rows of the
# performance summaries, of verification cards' pretrain_performance / weak-scaling items and of the perf-* skill
# studies (which run those recipes: "the native 16-H100 BF16 performance recipe", the Llama3-70B SFT perf config)
# therefore hold a bf16 main-grad buffer, 2 B/param (Megatron arguments.py: accumulate_allreduce_grads_in_fp32 off)
BRIDGE_PERF_SOURCE = re.compile(r"Megatron-Bridge (docs/performance-summary|skills/nemo-mbridge-perf-)"
                                r"|model_verification_cards/.*\[items\.pretrain_(performance|weak_scaling)")
# CUDA graph capture that a Megatron-Bridge study or verification card states in its text, for rows with no preset to take
# it from (row source -> Transformer Engine scopes, measure/kernels/cuda_graphs.py): Qwen3-30B-A3B on H100 / GB200 ran
# TE graphs over moe_router and moe_preprocess in the expert-parallel-overlap study ("CUDA graph: Transformer Engine
# scopes moe_router + moe_preprocess", skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md @067f987d), the
# dispatcher smoke run ("the recipe's Transformer Engine CUDA graph scopes (`moe_router`, `moe_preprocess`)",
# skills/nemo-mbridge-perf-moe-dispatcher-selection/SKILL.md), and the card's pretrain and H100 performance items
# ("Transformer Engine CUDA graph capture completes for all 48 graphable layers with moe_router and moe_preprocess
# scopes", examples/model_verification_cards/qwen3-30b-a3b/card.yaml enabled_features / expected_result)
STATED_GRAPH_SCOPES = (
    (re.compile(r"skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL\.md"), ("moe_router", "moe_preprocess")),
    (re.compile(r"qwen3-30b-a3b/card\.yaml .*\[items\.(pretrain\.(H100|GB200)|pretrain_performance\.H100)\]"),
     ("moe_router", "moe_preprocess")),
)
# substring of the row's hardware -> (profile name, GPUs per node/tray); order matters (H100 after H800/H200). A part
# sold in several memory sizes is matched on the size the row states (`row_hardware`): only its 80 GB A100 is bundled
HARDWARE = [("A100", "a100-sxm-80gb", 8), ("H800", "h800-sxm-80gb", 8), ("H200", "h200-sxm-141gb", 8), ("H100", "h100-sxm-80gb", 8),
            ("GB200", "gb200-nvl72", 4), ("GB300", "gb300-nvl72", 4), ("B200", "b200", 8), ("B300", "b300", 8),
            ("MI300X", "mi300x", 8), ("MI325X", "mi325x", 8), ("MI355X", "mi355x", 8)]
MEASURED = ("tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "iter_time_s", "mem_per_gpu_gib")
# Megatron-Bridge logs peak memory as torch.cuda.memory_stats()["allocated_bytes.all.peak"] / 1e9 rounded to five
# significant digits, printed after iterations 1 and 2 as "(after N iterations) memory (GB) | mem-max-allocated-
# gigabytes: ..." (src/megatron/bridge/training/utils/train_utils.py report_memory, training_log @067f987d): the
# values of its skill studies and verification cards (36.618, 62.166, 66.297; some docs label them GiB) are decimal GB
BRIDGE_LOGGED_MEMORY = re.compile(r"Megatron-Bridge (skills/|examples/model_verification_card)")
GB_PER_GIB = 2 ** 30 / 1e9
TORCH_DDP = re.compile(r"--DDP-impl torch\b")  # a row's notes naming Megatron-LM v2's torch DDP (`row_software`)


class RunCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    model: ModelSpec
    job: JobSpec
    recipe: Recipe
    placement: Placement
    hardware: str
    measured: dict[str, float]
    outcome: Literal["ran", "oom"]
    precision_published: str
    source: str
    assumed: tuple[str, ...] = ()
    memory_after_first_iteration: bool = False  # the measured peak was read after iteration 1 (before Adam's moments exist)
    # kernels the run captured in CUDA graphs (measure/kernels/cuda_graphs.py), from its release's Megatron-Bridge preset;
    # not a Recipe field, so it is passed to measure.projection.project.project as `cuda_graph_scope`
    cuda_graph_scope: frozenset[str] = frozenset()
    # the preset sets fp8_dot_product_attention (core attention in fp8, measure/kernels/roofline.py); not a Recipe field either,
    # passed to measure.projection.project.project as `fp8_attention`
    fp8_attention: bool = False
    # the preset's cutedsl_fused_grouped_mlp (Transformer Engine's fused grouped MLP for the experts)
    fused_grouped_mlp: bool = False
    # the Megatron-Bridge release of a performance-summary row ('26.06.01') or the commit of a verification card
    # ('card@067f987d'), None for other sources (`_bridge_release`)
    bridge_release: Optional[str] = None
    # the torch-native stack (torchtitan, AutoModel, PyTorch FSDP) the row ran (bench/torch_native_rows.py), None for a
    # Megatron-family row: `project_case` prices it with measure/torch_native/step.py instead of Megatron's projection
    torch_native: Optional[TorchNativeStack] = None
    # the run routes by its learned router (a card's functional `pretrain` run, "natural routing" in the notes), not
    # force-balanced as every benchmark row (bench/data/COLUMNS.md "MoE rows"); measure/projection/moe_routing.py
    natural_routing: bool = False
    # the row's `software` column (STACK:VERSION, bench/data/COLUMNS.md), None where the source does not say; its
    # generation's knobs are already in `recipe` (`row_software`)
    software: Optional[str] = None
    # DeepSpeed's engine around Megatron's layers (Megatron-DeepSpeed; bench/deepspeed_rows.py), None for a row DeepSpeed
    # did not run: `project_case` prices it with measure/deepspeed/step.py
    deepspeed: Optional[DeepSpeedEngine] = None

    def run_options(self) -> dict:
        """measure.projection.project.project's keyword arguments that describe how the run executed, not its recipe: every
        bench that projects a row passes these, so a run option added here reaches all of them."""
        return {"cuda_graph_scope": self.cuda_graph_scope, "fp8_attention": self.fp8_attention,
                "fused_grouped_mlp": self.fused_grouped_mlp, "natural_routing": self.natural_routing}


class RunSkip(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    model: str
    reason: str


def row_sharding(text: str) -> tuple[DataParallelSharding, Optional[FsdpShardingStrategy]] | str:
    """How a row's data-parallel replicas hold their state, from its `zero_or_fsdp` cell, or the reason it cannot be
    priced. PyTorch FSDP1 is priced by the ZeRO stage it is (torch.distributed.fsdp.ShardingStrategy docs,
    https://pytorch.org/docs/stable/fsdp.html: FULL_SHARD shards parameters, gradients and optimizer state = ZeRO-3;
    SHARD_GRAD_OP shards gradients and optimizer state and keeps parameters whole after forward = ZeRO-2; NO_SHARD is
    DDP): FULL_SHARD takes torch FSDP2's ZeRO-3 arithmetic, SHARD_GRAD_OP Megatron-FSDP optim_grads (ZeRO-2), never
    Megatron's distributed optimizer (ZeRO-1), which would hold every weight and gradient whole. HYBRID_SHARD (sharded
    within a node, replicated across) is refused by name; an empty cell or "DDP (FSDP=0)" (Megatron-Bridge tables,
    whose perf recipes use the distributed optimizer) is the distributed optimizer; "DDP (no distributed optimizer)" is plain
    DDP."""
    z = (text or "").strip()
    upper = z.upper().replace("-", "_")
    if "HYBRID_SHARD" in upper:
        return f"zero_or_fsdp {z}: PyTorch FSDP HYBRID_SHARD (sharded within a node, replicated across) is not modelled"
    if "FSDP2" in upper:
        return DataParallelSharding.torch_fsdp2, None
    if "MEGATRON_FSDP" in upper:
        return DataParallelSharding.megatron_fsdp, None
    if "FULL_SHARD" in upper or re.search(r"ZERO_?3", upper):
        return DataParallelSharding.torch_fsdp2, None
    if "SHARD_GRAD_OP" in upper or re.search(r"ZERO_?2", upper):
        return DataParallelSharding.megatron_fsdp, FsdpShardingStrategy.optim_grads
    # "DDP (no distributed optimizer)": 2021-era Megatron-LM (--DDP-impl local / torch, before --use-distributed-optimizer
    # existed: examples/sc21/CONFIG.sh @de7dc40f) holds the whole optimizer state on every replica, like FSDP1 NO_SHARD
    if "NO_SHARD" in upper or re.search(r"NO DISTRIBUTED OPTIMIZER", upper.replace("_", " ")):
        return DataParallelSharding.none, None
    if not z or upper.startswith("DDP") or re.search(r"ZERO_?1", upper):
        return DataParallelSharding.distributed_optimizer, None
    return f"zero_or_fsdp {z[:40]}: not a sharding bench/runs.py prices (DDP, ZeRO-1/2/3, FSDP1 FULL_SHARD / SHARD_GRAD_OP, FSDP2, Megatron-FSDP)"


def row_outcome(r: dict, measured: dict) -> Optional[str]:
    """'ran' or 'oom' from the row's `outcome` column (bench/data/COLUMNS.md), never from the notes: a note that says
    "did not OOM" or "OOM without expandable segments, fixed by ..." describes a run, not its outcome. A file without
    the column (another publication's rows read with --csv) counts a row with a measured figure as ran; a row with
    neither says nothing of its outcome and is skipped."""
    value = (r.get("outcome") or "").strip().lower()
    if value in ("ran", "oom"):
        return value
    if not value and measured:
        return "ran"
    return None


def shown_outcome(r: dict) -> str:
    return repr((r.get("outcome") or "")[:20]) if r.get("outcome") else "missing"


def row_hardware(text: str) -> tuple[str, int] | str:
    """(profile name, GPUs per node) of a row's hardware cell, or the reason it has none. A cell that states a memory
    size ("A100-SXM4-40GB", "A100 40 GB") must match the profile's own (the size in its name): an A100 40 GB is not the
    80 GB part, whose capacity would call its OOMs fits. A bare "A100" is the 80 GB part only when the cell says so."""
    upper = (text or "").upper()
    hit = next(((key, prof, g) for key, prof, g in HARDWARE if key in upper), None)
    if hit is None:
        return f"hardware {text} has no profile"
    key, prof, gpn = hit
    stated = re.search(r"(\d+)\s*GB\b", upper)
    bundled = re.search(r"(\d+)gb$", prof)
    if bundled and stated and int(stated.group(1)) != int(bundled.group(1)):
        return f"hardware {text}: {stated.group(1)} GB of HBM, but the bundled {key} profile ({prof}) has {bundled.group(1)} GB"
    if bundled and not stated and key == "A100":
        return f"hardware {text}: the A100 ships with 40 or 80 GB; the row does not say which"
    return prof, gpn


def _int(x: Optional[str]) -> Optional[int]:
    try:
        return int(float(x))
    except (TypeError, ValueError):
        return None


def precision_fp8(text: str) -> bool:
    """The row trains its linears in an fp8 format (what Transformer Engine's fp8_dot_product_attention needs)."""
    p = _precision(text)
    return p is not None and p.is_fp8


def _precision(text: str) -> Optional[Precision]:
    p = (text or "").upper()
    if "NVFP4" in p:
        return Precision.nvfp4
    if p.startswith("FP16"):
        return Precision.fp16
    if "MXFP8" in p or "FP8-MX" in p:
        return Precision.mxfp8
    if "BLOCKWISE" in p:
        return Precision.fp8_blockwise
    if "FP8" in p:
        return Precision.fp8_tensorwise
    return Precision.bf16


# Transformer Engine's per-tensor current-scaling recipe landed 2025-03-07 (TransformerEngine PR #1471, commit 77fa1e596)
# and first shipped in TE v2.2 (tagged 2025-04-03). A row published as plain "FP8" by a stack released before that month
# trained with delayed scaling, the one per-tensor recipe before it (NeMo's fp8 "hybrid" with an amax history).
FP8_CURRENT_SCALING_SINCE = "2025-04"


def fp8_recipe_of_its_time(precision: Precision, published: str, software: Optional[str]) -> Precision:
    """The row's precision with a plain "FP8" (no recipe named) read as delayed scaling where its software predates
    current scaling (`FP8_CURRENT_SCALING_SINCE`); any other precision, or software that cannot be placed, unchanged."""
    if precision != Precision.fp8_tensorwise or (published or "").strip().upper() != "FP8" or not software:
        return precision
    try:
        month = resolve(software).month
    except SoftwareError:
        return precision
    return Precision.fp8_delayed if month < FP8_CURRENT_SCALING_SINCE else precision


def _recompute(text: str) -> Recompute:
    t = (text or "").lower()
    if t.startswith("full"):
        return Recompute(granularity=RecomputeGranularity.full, method="uniform", num_layers=1)
    if t.startswith("selective"):
        mods = [m for m in RecomputeModule if re.search(rf"\b{m.value}\b", t)]
        return Recompute.selective(*mods) if mods else Recompute.none()
    return Recompute.none()


# a row built from its shape columns whose notes say its input and output embeddings are one matrix ("tied embeddings":
# Megatron GPT's default, NARAYANAN21 / MCORE24-era scripts, BLOOM, MPT), never "untied embeddings"
TIED_EMBEDDINGS = re.compile(r"(?<!un)tied embeddings", re.IGNORECASE)
# ... and whose notes say it learns a position table (GPT-2 / Megatron GPT / MPT style, max_seq x hidden), not RoPE / ALiBi
LEARNED_POSITIONS = re.compile(r"\blearned positions?\b", re.IGNORECASE)


def _row_model(r: dict) -> Optional[ModelSpec]:
    stem = MODEL_FILES.get(r["model"])
    if stem:
        return load_model(stem)
    h, layers, heads = _int(r["hidden"]), _int(r["layers"]), _int(r["heads"])
    if not (h and layers and heads):
        return None
    widths = re.match(r"\s*(\d+)\s*dense\s*/\s*(\d+)\s*expert", r["ffn_hidden"] or "")
    ffn = int(widths.group(1)) if widths else _int(r["ffn_hidden"]) or 4 * h
    gpt = ffn == 4 * h
    experts, topk = _int(r.get("num_experts")), _int(r.get("topk"))
    # an MoE row (num_experts / topk columns): every layer routed over `num_experts` experts of the expert width
    # ("D dense / E expert" in ffn_hidden, else ffn_hidden: Mixtral- and Grok-1-style MoE, where no layer is dense)
    if experts and experts > 1 and not topk:
        return None  # routed experts without the number each token visits: the shape is incomplete
    moe = dict(num_experts=experts, moe_router_topk=topk, moe_ffn_hidden_size=int(widths.group(2)) if widths else ffn) \
        if experts and experts > 1 else {}
    return ModelSpec(name=r["model"], num_layers=layers, hidden_size=h, ffn_hidden_size=ffn, num_attention_heads=heads,
                     num_query_groups=_int(r["kv_heads"]) or heads, kv_channels=h // heads, vocab_size=_int(r["vocab"]) or 51200,
                     max_position_embeddings=max(_int(r["seq_len"]) or 1, 1),
                     activation=Activation.gelu if gpt else Activation.swiglu,
                     normalization=Normalization.layernorm if gpt else Normalization.rmsnorm,
                     tied_embeddings=TIED_EMBEDDINGS.search(r.get("notes") or "") is not None,
                     learned_position_embeddings=LEARNED_POSITIONS.search(r.get("notes") or "") is not None, **moe)


def even_layout(num_layers: int, mtp_layers: int, stages: int) -> str:
    """A Megatron `--pipeline-model-parallel-layout` spreading embedding (E), decoder layers (t), MTP (m)
    and loss (L) as evenly as possible over PP*VPP stages, extra units on the later stages; the
    published recipes for such models (DeepSeek-V3, Kimi-K2) use a hand-written layout of this kind."""
    units = ["E"] + ["t"] * num_layers + ["m"] * mtp_layers + ["L"]
    base, extra = divmod(len(units), stages)
    sizes = [base + (1 if i >= stages - extra else 0) for i in range(stages)]
    out, pos = [], 0
    for n in sizes:
        out.append("".join(units[pos:pos + n]))
        pos += n
    return "|".join(out)


def _bridge_release(r: dict) -> Optional[str]:
    """The Megatron-Bridge release (performance-summary rows) or card commit (`card@<sha>`) a row ran, if any."""
    m = re.search(r"release (\S+)", r["notes"]) if "docs/performance-summary" in r["source"] else None
    # verification cards: the tuned "canonical" recipe (pretrain_performance and its weak-scaling points) at the
    # commit the card cites; plain `pretrain` items are functional runs, not the benchmark preset
    card = re.search(r"model_verification_cards/.*@([0-9a-f]{8}) \[items\.pretrain_(performance|weak_scaling)", r["source"])
    return m.group(1) if m else f"card@{card.group(1)}" if card else None


def _preset_fields(r: dict, release: Optional[str], model: ModelSpec, tp: int, pp: int, vpp: int, ep: int, mbs: int,
                   assumed: list) -> dict:
    """Recipe fields an MBR row leaves empty, from its release's Megatron-Bridge benchmark preset (see module doc);
    `release`: `_bridge_release(r)`."""
    if release is None:
        return {}
    # a card's text that names no VP leaves the canonical recipe's virtual stages unstated: take the preset's
    vpp_unstated = release.startswith("card@") and not r["vpp"] and pp > 1
    p = preset_for(release, r["model"], r["hardware"], r["precision"], tp, pp, None if vpp_unstated else vpp, ep, mbs,
                   _int(r["gbs"]))
    if p is None:
        return {}
    out: dict = {}
    scope = graph_scope(p.get("cuda_graph_impl"), p.get("cuda_graph_scope"))
    if scope:
        out["cuda_graph_scope"] = scope
        assumed.append(f"CUDA graphs {','.join(sorted(scope))} (preset {release})")
    if p.get("fp8_dot_product_attention") and precision_fp8(r["precision"]):
        out["fp8_attention"] = True
        assumed.append(f"fp8 dot-product attention (preset {release})")
    if p.get("cutedsl_fused_grouped_mlp") and model.is_moe:
        out["fused_grouped_mlp"] = True
        assumed.append(f"fused grouped MLP (preset {release})")
    if vpp_unstated and (p.get("virtual_pipeline_model_parallel_size") or 1) > 1:
        out["vpp"] = p["virtual_pipeline_model_parallel_size"]
        assumed.append(f"vpp={out['vpp']} (preset {release})")
    if model.is_moe:
        # megatron/bridge/training/flex_dispatcher_backend.py apply_flex_dispatcher_backend: HybridEP on sm_80/90/100,
        # DeepEP only on Ampere, Hopper, B200 and B300 (skipped on GB200/GB300, leaving the alltoall dispatcher)
        backend = p.get("moe_flex_dispatcher_backend")
        flex = backend == "hybridep" or (backend == "deepep" and not r["hardware"].upper().startswith("GB"))
        out["moe_dispatcher"] = MoeDispatcher.flex if flex else MoeDispatcher.alltoall
        out["overlap_moe_expert_parallel_comm"] = bool(p.get("moe_a2a_overlap"))
        assumed.append(f"moe_dispatcher={out['moe_dispatcher'].value} (preset {release})")
        if out["overlap_moe_expert_parallel_comm"]:
            assumed.append(f"overlap_moe_expert_parallel_comm (preset {release})")
    if not r["recompute"]:
        mods = [RecomputeModule(x) for x in (p.get("recompute_modules") or []) if x in RecomputeModule._value2member_map_]
        if p.get("recompute_num_layers"):
            # scripts/performance/utils/overrides.py _set_recompute_overrides: num_layers -> full, block
            out["recompute"] = Recompute(granularity=RecomputeGranularity.full, method=RecomputeMethod.block,
                                         num_layers=p["recompute_num_layers"])
        elif mods:
            out["recompute"] = Recompute.selective(*mods)
        if "recompute" in out:
            assumed.append(f"recompute from preset {release}")
    offloaded = p.get("cpu_offloading_num_layers")
    if offloaded and "recompute" not in out and not r["recompute"] and pp == 1:
        # the preset's CPU activation offloading (Megatron allows it at PP 1 without recompute only)
        out["cpu_offloading_num_layers"] = offloaded
        assumed.append(f"cpu offloading of {offloaded} layers (preset {release})")
    return out


# flags a row's notes quote from the run's own command line (bench/data/COLUMNS.md): its pipeline layout, fp8 weights for
# the parameter all-gather, and that it trained without the bundled config's MTP layers ("no MTP")
STATED_LAYOUT = re.compile(r'--pipeline-model-parallel-layout "([^"]+)"')
STATED_FP8_PARAM_GATHER = re.compile(r"--fp8-param-gather\b")
NO_MTP = re.compile(r"\bno MTP\b")

# a MoE row whose notes say it routed naturally (the cards' functional `pretrain` runs: "Natural routing")
NATURAL_ROUTING = re.compile(r"\bnatural routing\b", re.IGNORECASE)

# Mean tokens per example of the datasets rows name as packed ("SQuAD packed to 4096": NeMo's SFT performance runs
# fine-tune on SQuAD, NeMo Framework user guide 24.07 performance_summary.md "[finetune]" rows, with packed sequences,
# sft_peft/packed_sequence.html). SQuAD v1.1: 98,169 examples (87,599 train + 10,570 validation) in 94.06 MiB
# (tensorflow.org/datasets/catalog/squad, "Dataset size"), 1,005 bytes each with its context, question, answer, title
# and id; at 4 bytes of English text per token (OpenAI's rule of thumb for BPE tokenizers) ~250 tokens, less the id
# and title fields (~40 bytes): 240. An estimate from the dataset's published size, not from any row.
PACKED_DATASET_MEAN_TOKENS = {"squad": 240}


def packed_mean_tokens(notes: str, seq: int) -> Optional[int]:
    """Mean tokens per packed document of a row whose notes say `<dataset> packed to <seq>`; None when not packed or
    the dataset is not in PACKED_DATASET_MEAN_TOKENS."""
    m = re.search(r"(\w+) packed to (\d+)", notes)
    if m is None or int(m.group(2)) != seq:
        return None
    return PACKED_DATASET_MEAN_TOKENS.get(m.group(1).lower())


def row_stated_fields(r: dict) -> set[str]:
    """The Recipe fields a row's own columns state (the rest are bench assumptions a generation may overrule)."""
    stated = {"sequence_parallel"} if r["sequence_parallel"] else set()
    return stated | ({"dp_sharding"} if (r["zero_or_fsdp"] or "").strip() else set())


def row_software(r: dict, model: ModelSpec, job: JobSpec, recipe: Recipe, assumed: list) -> tuple[Recipe, Optional[str]] | str:
    """(the recipe as the row's software generation runs it, the software) or the reason the row cannot be priced.
    A torch-native stack keeps its recipe (bench/run_slices.py reports those rows as their own slice); an empty cell
    keeps the newest generation's knobs, as every projection without --software does."""
    text = (r.get("software") or "").strip()
    if not text:
        return recipe, None
    try:
        gen = resolve(text)
        if gen.torch_native:
            return recipe, gen.software
        recipe, notes = apply_generation(gen, model, job, recipe, stated=row_stated_fields(r))
    except SoftwareError as exc:
        return f"software: {exc}"
    assumed += [f"{note} (software {gen.software})" for note in notes]
    if not recipe.overlap_grad_reduce and TORCH_DDP.search(r["notes"]):
        # Megatron-LM v2's --DDP-impl torch is torch's DistributedDataParallel, whose bucketed all-reduce runs during
        # the backward (https://pytorch.org/docs/stable/notes/ddp.html, "overlaps gradient communication with backward
        # computation"): the overlap a generation without --overlap-grad-reduce lacks only under its default local DDP
        recipe = recipe.model_copy(update={"overlap_grad_reduce": True})
        assumed.append("gradient all-reduce overlapped by torch DDP (--DDP-impl torch, as the row states)")
    return recipe, gen.software


def row_case(r: dict) -> RunCase | RunSkip:
    rid, name = r["source_id"], r["model"]

    def skip(reason: str) -> RunSkip:
        return RunSkip(id=rid, model=name, reason=reason)

    hw = row_hardware(r["hardware"])
    if isinstance(hw, str):
        return skip(hw)
    torch_native = torch_native_stack(r)
    if torch_native is not None and refusal(torch_native):
        return skip(refusal(torch_native))
    if "task=LoRA" in r["notes"]:
        return skip("LoRA fine-tuning (frozen base weights) is not modelled")
    precision = _precision(r["precision"])
    if precision is None:
        return skip(f"precision {r['precision']} not in Precision")
    precision = fp8_recipe_of_its_time(precision, r["precision"], r.get("software"))
    gpus, seq, gbs, mbs = _int(r["gpus"]), _int(r["seq_len"]), _int(r["gbs"]), _int(r["mbs"])
    tp, pp, cp = _int(r["tp"]) or 1, _int(r["pp"]) or 1, _int(r["cp"]) or 1
    if not (gpus and gbs and r["tp"] and r["pp"]):
        return skip("incomplete recipe (GPUs, GBS, TP or PP unpublished)")
    if not seq:
        return skip("no sequence length")
    dp_pub = _int(r["dp"])
    if dp_pub and "derived" not in r["notes"] and dp_pub * tp * pp * cp != gpus:
        return skip(f"published DP*TP*PP*CP = {dp_pub * tp * pp * cp} != {gpus} GPUs")
    if gpus % (tp * pp * cp):
        return skip(f"{gpus} GPUs not divisible by TP*PP*CP = {tp * pp * cp}")
    assumed = []
    if not mbs:
        dp = gpus // (tp * pp * cp)
        mbs = gbs // dp if rid.startswith("TTITAN") and gbs % dp == 0 else 1
        assumed.append(f"mbs={mbs}")
    model = _row_model(r)
    if model is None:
        return skip(f"model {name} not bundled and row has no shape")
    if model.mtp_num_layers and NO_MTP.search(r["notes"]):  # the run trained without the config's MTP layers
        model = model.model_copy(update={"mtp_num_layers": 0})
        assumed.append("no MTP (as the row states)")
    stem = MODEL_FILES.get(name)  # the bundled config the row runs, if any
    bridge = "Megatron-Bridge" in r["source"]
    training = BRIDGE_MODEL_TRAINING.get(stem) if bridge else None
    if training:
        model = ModelSpec.model_validate({**model.model_dump(), **training})
        assumed.append(", ".join(f"{k}={v}" for k, v in training.items()) + " (Megatron-Bridge recipe)")
    bf16_layers = BRIDGE_NVFP4_BF16_LAYERS.get(stem) if bridge and precision == Precision.nvfp4 else None
    if bf16_layers:
        assumed.append(f"first/last {bf16_layers[0]}/{bf16_layers[1]} layers in bf16 (Megatron-Bridge NVFP4 recipe)")
    vpp = _int(r["vpp"]) or 1
    ep, etp = _int(r["ep"]) or 1, _int(r["etp"])
    release = _bridge_release(r)
    preset = _preset_fields(r, release, model, tp, pp, vpp, ep, mbs, assumed)
    vpp = preset.pop("vpp", vpp)
    deepspeed = deepspeed_engine(r)
    if deepspeed is not None and deepspeed_refusal(deepspeed, pp, vpp):
        return skip(deepspeed_refusal(deepspeed, pp, vpp))
    graphs = preset.pop("cuda_graph_scope", frozenset())
    stated = re.search(r"--cuda-graph-scope ([a-z_]+(?: [a-z_]+)*)", r["notes"])
    if not graphs and stated:  # the capture the row's own command states (no preset to take it from)
        graphs = graph_scope("transformer_engine", stated.group(1).split())
    for source, scopes in STATED_GRAPH_SCOPES if not graphs else ():  # the capture its publication's text states
        if source.search(r["source"]):
            graphs = graph_scope("transformer_engine", scopes)
            break
    fp8_attention = preset.pop("fp8_attention", False)
    fused_grouped_mlp = preset.pop("fused_grouped_mlp", False)
    if etp is None and ep > 1 and tp > 1 and "Megatron-Bridge" in r["source"]:
        # Megatron-Bridge perf presets set expert_tensor_parallel_size=1 for every MoE model (e.g.
        # scripts/performance/configs/qwen/qwen3_workload_base_configs.py BASE_QWEN3_235B_A22B_CONFIG,
        # deepseek_workload_base_configs.py BASE_DEEPSEEK_V3_CONFIG); Megatron's own default (ETP = TP)
        # would make TP2/PP8/EP32 on 256 GPUs an impossible expert grid.
        etp = 1
        assumed.append("etp=1 (Megatron-Bridge preset)")
    stages = pp * vpp
    extra = {}
    stated_layout = STATED_LAYOUT.search(r["notes"])
    if stated_layout:  # the run's own --pipeline-model-parallel-layout, quoted in the notes
        extra = dict(pipeline_layout=stated_layout.group(1))
        assumed.append(f"pipeline layout {extra['pipeline_layout']} (as the row states)")
    elif model.num_layers % stages:
        if (model.num_layers + 2) % stages == 0:
            extra = dict(account_for_embedding_in_pipeline_split=True, account_for_loss_in_pipeline_split=True)
            assumed.append("account-for-embedding/loss in pipeline split")
        else:
            extra = dict(pipeline_layout=even_layout(model.num_layers, model.mtp_num_layers, stages))
            assumed.append(f"pipeline layout {extra['pipeline_layout']}")
    sharding = row_sharding(r["zero_or_fsdp"])
    if isinstance(sharding, str):
        return skip(sharding)
    sharding, strategy = sharding
    if strategy is not None:
        preset["fsdp_sharding_strategy"] = strategy
        assumed.append(f"{r['zero_or_fsdp']} as ZeRO-2 (Megatron-FSDP optim_grads memory)")
    sp = tp > 1 and r["sequence_parallel"].lower() != "false"
    if tp > 1 and not r["sequence_parallel"]:
        assumed.append("sequence_parallel")
    if model.is_moe and re.search(r"EP overlap on|expert-parallel communication overlap", r["notes"]):
        preset["overlap_moe_expert_parallel_comm"] = True  # stated by the row ("EP overlap on", card text)
    elif re.search(r"EP overlap off", r["notes"]):
        preset["overlap_moe_expert_parallel_comm"] = False
    stated_tp_overlap = (r.get("tp_comm_overlap") or "").strip().lower()
    if stated_tp_overlap in ("true", "false"):
        # the tp_comm_overlap column (bench/data/COLUMNS.md): TE userbuffers, priced for speed and memory where stated
        preset["tp_comm_overlap"] = stated_tp_overlap == "true" and sp
    elif stated_tp_overlap:
        return skip(f"tp_comm_overlap {stated_tp_overlap!r}: the column says true, false or nothing (bench/data/COLUMNS.md)")
    if not r["recompute"] and "recompute" not in preset:
        assumed.append("recompute none")
    optimizer = Optimizer.muon if "muon" in r["notes"].lower() else Optimizer.adam
    bf16_optimizer = ((stem or name, hw[0]) in BRIDGE_BF16_OPTIMIZER and precision == Precision.bf16
                      and re.search(r"Megatron-Bridge (skills|examples/model_verification_card)", r["source"]) is not None)
    if bf16_optimizer:
        preset["grad_reduce_in_bf16"] = True
        assumed.append("precision-aware optimizer, bf16 main grads and moments (Bridge H100 recipe)")
    elif BRIDGE_PERF_SOURCE.search(r["source"]) and precision != Precision.fp16:
        preset["grad_reduce_in_bf16"] = True
        assumed.append("bf16 main grads (Bridge performance recipe, grad_reduce_in_fp32 False)")
    if STATED_FP8_PARAM_GATHER.search(r["notes"]) and precision.is_fp8:
        preset["fp8_param_gather"] = True  # --fp8-param-gather quoted from the run's command
    if BRIDGE_PERF_SOURCE.search(r["source"]):
        if precision in BRIDGE_FP8_PARAM_GATHER and stem not in BRIDGE_OWN_PARAM_GATHER:
            preset["fp8_param_gather"] = True
            assumed.append("fp8 param gather (Bridge performance precision)")
        elif precision == Precision.nvfp4 and stem not in BRIDGE_NO_FP4_PARAM_GATHER \
                and release in BRIDGE_FP4_PARAM_GATHER_RELEASES:
            preset["fp4_param_gather"] = True
            assumed.append("fp4 param gather (Bridge performance precision)")
    try:
        recipe = Recipe(tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, etp=etp, mbs=mbs, sequence_parallel=sp,
                        recompute=preset.pop("recompute", None) or _recompute(r["recompute"]), dp_sharding=sharding,
                        # torch FSDP2 gathers parameters itself; --overlap-param-gather is a distributed-optimizer /
                        # Megatron-FSDP flag (megatron-rules.md [34]) the row never set
                        overlap_param_gather=sharding != DataParallelSharding.torch_fsdp2,
                        schedule=PipelineSchedule.interleaved if vpp > 1 else PipelineSchedule.one_f_one_b, **extra, **preset)
        packed = packed_mean_tokens(r["notes"], seq)
        if packed:
            assumed.append(f"packed sequences, {packed} tokens per document on average (bench/runs.py PACKED_DATASET_MEAN_TOKENS)")
        job = JobSpec(seq_length=seq, global_batch_size=gbs, precision=precision, optimizer=optimizer,
                      optimizer_moments_bf16=bf16_optimizer, packed_mean_tokens=packed,
                      **(dict(bf16_layers_at_start=bf16_layers[0], bf16_layers_at_end=bf16_layers[1]) if bf16_layers else {}))
    except ValueError as exc:
        return skip(f"invalid spec: {str(exc).splitlines()[0]}")
    generation = row_software(r, model, job, recipe, assumed)
    if isinstance(generation, str):
        return skip(generation)
    recipe, software = generation
    profile, gpn = hw
    if gpus % gpn:
        gpn = 1
    measured = {k: float(r[k]) for k in MEASURED if r[k] and re.match(r"^[0-9.eE+-]+$", r[k])}
    if "mem_per_gpu_gib" in measured and BRIDGE_LOGGED_MEMORY.search(r["source"]):
        measured["mem_per_gpu_gib"] /= GB_PER_GIB
        assumed.append("peak memory in decimal GB (Megatron-Bridge memory metrics), converted to GiB")
    outcome = row_outcome(r, measured)
    if outcome is None:
        return skip(f"outcome {shown_outcome(r)}: the outcome column says ran or oom (bench/data/COLUMNS.md)")
    return RunCase(id=rid, model=model, job=job, recipe=recipe, placement=Placement(hardware=profile, num_nodes=gpus // gpn, gpus_per_node=gpn),
                   hardware=profile, measured=measured, outcome=outcome, precision_published=r["precision"],
                   source=r["source"], assumed=tuple(assumed), cuda_graph_scope=graphs, fp8_attention=fp8_attention,
                   fused_grouped_mlp=fused_grouped_mlp, natural_routing=model.is_moe and NATURAL_ROUTING.search(r["notes"]) is not None,
                   bridge_release=release, torch_native=torch_native, software=software, deepspeed=deepspeed,
                   memory_after_first_iteration=re.search(r"after iteration 1\b", r["notes"]) is not None)


def project_case(case: RunCase, profile: HardwareProfile) -> Projection:
    """The row's step priced by the model of the stack it ran: torch-native rows by measure/torch_native/step.py
    (FSDP's own overlap, eager or compiled kernels, torchao float8, async TP), Megatron-DeepSpeed rows by
    measure/deepspeed/step.py (DeepSpeed's pipeline engine), every other row by Megatron's projection
    (measure/projection/project.py) with its run options."""
    if case.torch_native is not None:
        return project_torch_native(case.model, case.job, case.recipe, case.placement, profile, case.torch_native)
    if case.deepspeed is not None:
        return project_megatron_deepspeed(case.model, case.job, case.recipe, case.placement, profile, case.deepspeed)
    return project(case.model, case.job, case.recipe, case.placement, profile, **case.run_options())


def load_all(csv_path: Path | str = RUNS_CSV) -> tuple[list[RunCase], list[RunSkip]]:
    """All rows of the file: (expressible cases, skips with reasons)."""
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = [row_case(r) for r in rows]
    return [c for c in out if isinstance(c, RunCase)], [s for s in out if isinstance(s, RunSkip)]


def load_runs(csv_path: Path | str = RUNS_CSV) -> list[RunCase]:
    """The expressible rows of runs.csv as cases (see `load_all` for the skips)."""
    return load_all(csv_path)[0]
