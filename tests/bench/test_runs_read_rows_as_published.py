"""bench/runs.py reads each published row as what it is (issue 32 item 4): an unbundled MoE model from its MoE columns,
PyTorch FSDP1 by its ZeRO stage (or refused by name), the outcome from its column (never from a word in the notes),
and the part by the memory size the row states."""
import csv

import pytest

from bench.runs import RUNS_CSV, RunCase, RunSkip, row_case
from constraints.memory.per_rank import memory_report
from constraints.models.params import param_counts
from constraints.spec import DataParallelSharding, FsdpShardingStrategy
from hardware.profile import load_profile

with open(RUNS_CSV, newline="") as fh:
    COLUMNS = csv.DictReader(fh).fieldnames

# Grok-1 as xai-org/grok-1 publishes it (model.py / run.py @ main): 64 layers, d_model 6144, 48 query heads, 8 KV
# heads, widening factor 8 -> FFN 32768, 8 experts with 2 per token, vocabulary 131072; "314B parameters" (README)
GROK1 = dict(model="Grok-1", hidden="6144", layers="64", heads="48", kv_heads="8", ffn_hidden="32768", num_experts="8",
             topk="2", vocab="131072")


def row(**cells) -> dict:
    base = dict(source_id="TEST-001", source="test", model="Llama3-8B", hardware="H100-SXM-80GB", gpus="8", gbs="32",
                mbs="1", tp="1", pp="1", seq_len="4096", precision="BF16", notes="", outcome="ran", tokens_per_s_per_gpu="1000")
    return {c: "" for c in COLUMNS} | base | cells


def test_an_unbundled_moe_row_is_priced_as_moe_with_its_experts():
    case = row_case(row(**GROK1, gpus="64", tp="8", pp="8", ep="1", dp="1"))
    assert isinstance(case, RunCase)
    assert case.model.num_experts == 8 and case.model.moe_router_topk == 2 and case.model.moe_ffn_hidden_size == 32768
    total = param_counts(case.model).total
    assert abs(total / 314e9 - 1) < 0.02  # the published 314B; a dense reading would be ~5x smaller in FFN weights


def test_a_dense_and_expert_width_pair_gives_both_widths():
    case = row_case(row(**{**GROK1, "ffn_hidden": "18432 dense / 2048 expert", "num_experts": "256", "topk": "8"}))
    assert case.model.ffn_hidden_size == 18432 and case.model.moe_ffn_hidden_size == 2048


def test_experts_without_topk_leave_the_shape_incomplete():
    assert isinstance(row_case(row(**{**GROK1, "topk": ""})), RunSkip)


@pytest.mark.parametrize("cell, sharding, strategy", [
    ("FSDP1 FULL_SHARD", DataParallelSharding.torch_fsdp2, None),
    ("FULL_SHARD", DataParallelSharding.torch_fsdp2, None),
    ("FSDP1 SHARD_GRAD_OP", DataParallelSharding.megatron_fsdp, FsdpShardingStrategy.optim_grads),
    ("NO_SHARD", DataParallelSharding.none, None),
    ("DDP (FSDP=0)", DataParallelSharding.distributed_optimizer, None),
])
def test_fsdp1_is_priced_by_its_zero_stage(cell, sharding, strategy):
    case = row_case(row(model="Llama3-70B", gpus="64", zero_or_fsdp=cell))
    assert case.recipe.dp_sharding == sharding
    if strategy is not None:
        assert case.recipe.fsdp_sharding_strategy == strategy


def test_full_shard_holds_less_than_the_distributed_optimizer():
    """Llama-3.1-70B on 64 GPUs, TP1: ZeRO-3 shards the 140 GB of bf16 weights; ZeRO-1 would hold them whole."""
    h100 = load_profile("h100-sxm-80gb")

    def peak(cell):
        c = row_case(row(model="Llama3-70B", gpus="64", zero_or_fsdp=cell))
        return memory_report(c.model, c.job, c.recipe, 64, h100.hbm_capacity_bytes).peak_bytes

    assert peak("FULL_SHARD") < peak("SHARD_GRAD_OP") < peak("DDP (FSDP=0)")


def test_hybrid_shard_and_unknown_shardings_are_refused_by_name():
    hybrid = row_case(row(zero_or_fsdp="FSDP1 HYBRID_SHARD"))
    assert isinstance(hybrid, RunSkip) and "HYBRID_SHARD" in hybrid.reason
    other = row_case(row(zero_or_fsdp="colossal gemini"))
    assert isinstance(other, RunSkip) and "colossal gemini" in other.reason


@pytest.mark.parametrize("notes, outcome, expected", [
    ("OOM (fragmentation) without expandable_segments; fixed with expandable segments", "ran", "ran"),
    ("did not OOM", "ran", "ran"),
    ("", "oom", "oom"),
    ("OOM on rank 0", "oom", "oom"),
])
def test_outcome_comes_from_its_column_not_the_notes(notes, outcome, expected):
    assert row_case(row(notes=notes, outcome=outcome)).outcome == expected


def test_a_row_without_outcome_or_measurement_is_skipped():
    skipped = row_case(row(outcome="", tokens_per_s_per_gpu=""))
    assert isinstance(skipped, RunSkip) and "outcome" in skipped.reason
    assert row_case(row(outcome="")).outcome == "ran"  # measured: it ran


def test_every_published_oom_row_says_so_in_its_source_notes():
    with open(RUNS_CSV, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["outcome"] for r in rows} == {"ran", "oom"}
    for r in rows:
        if r["outcome"] == "oom":
            assert "OOM" in r["notes"] or "does-not-fit" in r["notes"], r["source_id"]


@pytest.mark.parametrize("cell", ["A100-SXM4-40GB", "A100 40GB", "A100"])
def test_an_a100_that_is_not_stated_80gb_is_not_the_80gb_part(cell):
    skipped = row_case(row(hardware=cell))
    assert isinstance(skipped, RunSkip) and "A100" in skipped.reason


@pytest.mark.parametrize("cell", ["A100-SXM4-80GB", "A100 80 GB"])
def test_an_80gb_a100_is_the_80gb_part(cell):
    assert row_case(row(hardware=cell)).hardware == "a100-sxm-80gb"


@pytest.mark.parametrize("cell, overlap", [("true", True), ("false", False), ("", False)])
def test_the_tp_comm_overlap_column_is_read_as_stated(cell, overlap):
    case = row_case(row(tp="4", gpus="8", sequence_parallel="true", tp_comm_overlap=cell))
    assert isinstance(case, RunCase) and case.recipe.tp_comm_overlap is overlap


def test_a_tp_comm_overlap_cell_that_is_not_a_boolean_is_refused_by_name():
    skipped = row_case(row(tp="4", gpus="8", tp_comm_overlap="yes"))
    assert isinstance(skipped, RunSkip) and "tp_comm_overlap" in skipped.reason


def test_bridge_llama_rows_state_tp_comm_overlap_from_their_release_scripts():
    with open(RUNS_CSV, newline="") as fh:
        rows = {r["source_id"]: r for r in csv.DictReader(fh)}
    # Llama3-70B H100 FP8 26.04 (overlap on in llama3_llm_pretrain.py) and GB200 NVFP4 (off for nvfp4)
    assert rows["MBR-127"]["tp_comm_overlap"] == "true" and rows["MBR-122"]["tp_comm_overlap"] == "false"
    case = row_case(rows["MBR-127"])
    assert isinstance(case, RunCase) and case.recipe.tp_comm_overlap
    # the 24 Megatron-Bridge Llama rows of releases 26.02-26.06 (other publications state it of their own rows)
    assert sum(r["tp_comm_overlap"] != "" for k, r in rows.items() if k.startswith("MBR-")) == 24
