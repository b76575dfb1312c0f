"""Megatron-LM's command-line flags: how each one is parsed, and which ones shardplan reads or knowingly ignores.

Why a table: to split an argument list correctly we must know, for every Megatron flag (including those
shardplan does not model), whether it takes a value and how many. The dumped argparse data lives in
constraints.megatron.flag_table (its docstring gives the FLAG:CODE[~] format); this module turns it into
`FlagInfo` records and holds shardplan's own sorting of the flags.

Flags shardplan models are `MODELLED` (they set ModelSpec / JobSpec / Recipe fields), `RULE_FLAGS`
(kept in `MegatronConfig.raw` for legality rules) and `PROJECTION_FLAGS` (how the run executes, which the
projection reads from `raw`). Everything else is "not understood by shardplan" and
is reported, never silently dropped.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from constraints.megatron.flag_table import TABLE


@dataclass(frozen=True)
class FlagInfo:
    """How argparse reads one Megatron option string."""

    flag: str
    nargs: Union[int, str]  # 0 switch, 1 one value, "+" / "*" lists, 3 exactly three values
    value_type: str  # "int" | "float" | "str" | "switch"
    store_false: bool  # a `--no-...`-style switch that turns a default-on feature off
    no_effect: bool  # listed `~` in the table: ignored by shardplan on purpose

    @property
    def takes_value(self) -> bool:
        return self.nargs != 0


_TYPES = {"i": "int", "f": "float", "s": "str"}


def _parse_table(text: str) -> dict[str, FlagInfo]:
    flags: dict[str, FlagInfo] = {}
    for tok in text.split():
        flag, code = tok.split(":")
        no_effect = code.endswith("~")
        code = code.rstrip("~")
        if code in ("T", "F"):
            flags[flag] = FlagInfo(flag, 0, "switch", code == "F", no_effect)
            continue
        rest = code[1:]
        nargs: Union[int, str] = 1 if rest == "" else (int(rest) if rest.isdigit() else rest)
        flags[flag] = FlagInfo(flag, nargs, _TYPES[code[0]], False, no_effect)
    return flags


FLAGS: dict[str, FlagInfo] = _parse_table(TABLE)

# Flags that set a field of ModelSpec / JobSpec / Recipe (see constraints/megatron/model.py, megatron_recipe.py,
# megatron_job.py).
MODELLED: frozenset[str] = frozenset("""
--num-layers --data-parallel-sharding-strategy --hidden-size --ffn-hidden-size --num-attention-heads --group-query-attention --num-query-groups
--kv-channels --max-position-embeddings --position-embedding-type --no-position-embedding
--use-rotary-position-embeddings --normalization --swiglu --squared-relu --quick-geglu --activation-func-clamp-value
--glu-linear-offset --disable-bias-linear --add-qkv-bias
--untie-embeddings-and-output-weights --hidden-dropout --attention-dropout --qk-layernorm --vocab-size
--make-vocab-size-divisible-by --padded-vocab-size --seq-length --encoder-seq-length
--num-experts --moe-router-topk --moe-ffn-hidden-size --moe-shared-expert-intermediate-size --moe-layer-freq --moe-latent-size
--moe-router-enable-expert-bias --moe-router-num-groups --moe-router-group-topk --multi-latent-attention --q-lora-rank --kv-lora-rank --qk-head-dim
--qk-pos-emb-head-dim --v-head-dim --mtp-num-layers --softmax-type
--micro-batch-size --global-batch-size --bf16 --fp16 --fp8-format --fp8-recipe --optimizer
--tensor-model-parallel-size --pipeline-model-parallel-size --num-layers-per-virtual-pipeline-stage
--num-virtual-stages-per-pipeline-rank --pipeline-model-parallel-layout --decoder-first-pipeline-num-layers
--decoder-last-pipeline-num-layers --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split
--microbatch-group-size-per-virtual-pipeline-stage --no-overlap-p2p-communication
--context-parallel-size --cp-comm-type --hierarchical-context-parallel-sizes
--expert-model-parallel-size --expert-tensor-parallel-size --sequence-parallel
--recompute-granularity --recompute-method --recompute-num-layers --recompute-modules --recompute-activations
--distribute-saved-activations --use-distributed-optimizer --use-megatron-fsdp --use-torch-fsdp2
--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap --moe-token-dispatcher-type --moe-grouped-gemm
--overlap-moe-expert-parallel-comm --fp8-param-gather --grad-reduce-in-bf16 --cross-entropy-loss-fusion
--num-distributed-optimizer-instances --moe-shared-expert-overlap --cpu-offloading-num-layers
--window-size --window-attn-skip-freq --no-rope-freq --qk-l2-norm --hybrid-layer-pattern --hybrid-override-pattern
--mamba-num-heads --mamba-head-dim --mamba-state-dim --mamba-num-groups
--use-precision-aware-optimizer --exp-avg-dtype --exp-avg-sq-dtype --main-grads-dtype
--attention-backend --no-masked-softmax-fusion --attention-softmax-in-fp32 --apply-query-key-layer-scaling --transformer-impl
--defer-embedding-wgrad-compute --wgrad-deferral-limit
--mtp-use-repeated-layer --first-last-layers-bf16 --num-layers-at-start-in-bf16 --num-layers-at-end-in-bf16
--rotary-scaling-factor --yarn-original-max-position-embeddings --yarn-beta-fast --yarn-beta-slow
--yarn-correction-range-round-to-int --no-yarn-correction-range-round-to-int --mscale --mscale-all-dim
""".split())

# Flags no spec field holds but that a rule reads: legality rules over `MegatronConfig.raw` (constraints/rules/*.py),
# Megatron's own refusals (constraints/megatron/refusals.py), values refused as not modelled
# (constraints/megatron/unmodelled.py). tests/constraints/megatron/test_flag_table_reads.py checks each is read by one of them; a flag
# read by none is reported as not understood.
RULE_FLAGS: frozenset[str] = frozenset("""
--use-tp-pp-dp-mapping --moe-enable-deepep --checkpoint-activations --step-batch-size-schedule
--fp4-format --fp4-recipe --fp4-param-gather
--ckpt-format --no-gradient-accumulation-fusion
--moe-router-pre-softmax --moe-router-score-function --moe-router-load-balancing-type
--tensor-parallel-num-weight-shards --expert-tensor-parallel-num-weight-shards
--batch-size --model-parallel-size --cross-entropy-fusion-impl --deterministic-mode
""".split())


# Flags no spec field holds that the projection reads as how the run executes (constraints/megatron/run_flags.py: CUDA graph
# capture, which measure/kernels/cuda_graphs.py prices); understood, and passed to the projection by `check`.
PROJECTION_FLAGS: frozenset[str] = frozenset("""
--cuda-graph-impl --cuda-graph-modules --cuda-graph-scope --enable-cuda-graph --external-cuda-graph
--moe-router-force-load-balancing
""".split())


# every flag some reader takes: anything else is reported as not understood (or as having no effect)
READ_FLAGS: frozenset[str] = MODELLED | RULE_FLAGS | PROJECTION_FLAGS


def lookup(flag: str) -> FlagInfo | None:
    """The Megatron parse rule for an option string, or None if Megatron-LM has no such flag."""
    return FLAGS.get(flag)


def _check_tables() -> None:
    """Our hand lists must name real Megatron flags, or a typo would silently mark a flag unknown."""
    bad = sorted(READ_FLAGS - FLAGS.keys())
    assert not bad, f"not Megatron-LM flags: {bad}"
    both = sorted(f for f in READ_FLAGS if FLAGS[f].no_effect)
    assert not both, f"marked both understood and no-effect: {both}"


_check_tables()
