"""The rows from publications outside NVIDIA's NeMo / Megatron-Bridge tables (issue 32 item 7: other eras, other
stacks, long context) read as their sources publish them. Each number asserted below is copied from the cited source
(bench/data/SOURCES.md), never from shardplan's own output; the derived tokens/s/GPU are checked against the formula
their notes name, so an edit that breaks the derivation fails here."""
import csv

import pytest

from bench.deepspeed_rows import deepspeed_engine
from bench.runs import RUNS_CSV, RunCase, RunSkip, load_all, row_case
from constraints.spec import DataParallelSharding, PipelineSchedule, Precision, RecomputeGranularity

with open(RUNS_CSV, newline="") as fh:
    ROWS = {r["source_id"]: r for r in csv.DictReader(fh)}
CASES = {c.id: c for c in load_all()[0]}
PREFIXES = ("NARAYANAN21", "MLMREADME21", "KORTHIKANTI22", "MCORE24", "BLOOM22", "MTNLG22", "LLAMA3")


def test_every_row_of_these_publications_becomes_a_case():
    ids = [i for i in ROWS if i.startswith(PREFIXES)]
    assert len(ids) == 42
    # but Narayanan et al. 2021 Table 2's DeepSpeed ZeRO-3 baseline, refused by name (measure/deepspeed/engine.py)
    assert [i for i in ids if i not in CASES] == [f"NARAYANAN21-{n}" for n in range(11, 17)]


def _eq3_tokens_per_s(tflops: float, layers: int, hidden: int, seq: int = 2048, vocab: int = 51200) -> float:
    """Narayanan et al. 2021 (arXiv 2104.04473) eq. 3 per token: 96 l h^2 (1 + s/6h + V/16lh) FLOPs."""
    return tflops * 1e12 / (96 * layers * hidden ** 2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden)))


@pytest.mark.parametrize("rid, layers, hidden, gpus, tp, pp, tflops", [
    ("NARAYANAN21-01", 24, 2304, 32, 1, 1, 137),     # Table 1: 1.7B, 137 TFLOP/s, 44 %
    ("NARAYANAN21-09", 105, 20480, 2520, 8, 35, 163),  # 530B on 2520 GPUs
    ("NARAYANAN21-10", 128, 25600, 3072, 8, 64, 163),  # 1T on 3072 GPUs, 502 PFLOP/s aggregate
])
def test_narayanan_table_1_reads_as_published(rid, layers, hidden, gpus, tp, pp, tflops):
    case = CASES[rid]
    assert case.model.num_layers == layers and case.model.hidden_size == hidden
    assert case.placement.num_nodes * case.placement.gpus_per_node == gpus
    assert (case.recipe.tp, case.recipe.pp) == (tp, pp)
    assert case.measured["tflops_per_gpu"] == tflops
    assert case.measured["tokens_per_s_per_gpu"] == pytest.approx(_eq3_tokens_per_s(tflops, layers, hidden), rel=1e-4)
    # 2021 Megatron-LM: fp16, full recompute, no distributed optimizer (examples/sc21/CONFIG.sh, run_table_1.sh)
    assert case.job.precision == Precision.fp16
    assert case.recipe.recompute.granularity == RecomputeGranularity.full
    assert case.recipe.dp_sharding == DataParallelSharding.none and not case.recipe.sequence_parallel


def test_aggregate_petaflops_of_the_1t_row_match_the_table():
    case = CASES["NARAYANAN21-10"]
    # Table 1: 502.0 PFLOP/s aggregate; the per-GPU 163 is rounded to the TFLOP/s (+-0.5 x 3072 GPUs = +-1.5 PFLOP/s)
    assert case.measured["tflops_per_gpu"] * 3072 / 1000 == pytest.approx(502.0, abs=1.6)


def test_the_sc21_interleaved_recipes_keep_their_virtual_stages():
    case = CASES["NARAYANAN21-06"]  # 76B: 60 layers / PP 4, 5 layers per virtual stage, MBS 2
    assert case.recipe.vpp == 3 and case.recipe.schedule == PipelineSchedule.interleaved and case.recipe.mbs == 2
    assert CASES["NARAYANAN21-10"].recipe.vpp == 1  # the 1T script sets no virtual stages


def test_zero3_rows_are_deepspeed_stage_3_without_model_parallelism():
    row = ROWS["NARAYANAN21-11"]  # Table 2: 174.6B, 384 GPUs, MBS 4, 144 TFLOP/s
    assert (row["tp"], row["pp"], row["mbs"], row["tflops_per_gpu"]) == ("1", "1", "4", "144")
    assert deepspeed_engine(row).zero_stage == 3
    skipped = row_case(row)
    assert isinstance(skipped, RunSkip) and "ZeRO-3" in skipped.reason


def test_megatron_readme_gpt3_example():
    case = CASES["MLMREADME21-01"]  # 1536 x 2048 tokens in ~32 s on 1024 GPUs, 138 TFLOP/s
    assert case.measured["iter_time_s"] == 32 and case.measured["tflops_per_gpu"] == 138
    assert case.measured["tokens_per_s_per_gpu"] == pytest.approx(1536 * 2048 / (32 * 1024), rel=1e-4)


@pytest.mark.parametrize("rid, iteration_s, gbs, gpus, mfu", [
    ("KORTHIKANTI22-02", 1.10, 4, 8, 0.415),      # 22B present work, MFU 41.5 %
    ("KORTHIKANTI22-08", 71.49, 512, 512, 0.563),  # 1T present work, MFU 56.3 %
    ("KORTHIKANTI22-09", 39.15, 2240, 2240, 0.542),  # 530B at DP 8, MFU 54.2 %
])
def test_korthikanti_table_5_iteration_times(rid, iteration_s, gbs, gpus, mfu):
    case = CASES[rid]
    assert case.measured["iter_time_s"] == iteration_s and case.measured["mfu"] == mfu
    assert case.measured["tokens_per_s_per_gpu"] == pytest.approx(gbs * 2048 / (iteration_s * gpus), rel=1e-4)
    assert case.recipe.sequence_parallel
    assert case.recipe.recompute.granularity == RecomputeGranularity.selective


def test_korthikanti_baseline_is_full_recompute_without_sequence_parallelism():
    case = CASES["KORTHIKANTI22-03"]  # 175B, full recompute 18.13 s, interleaved with 3 stages
    assert case.measured["iter_time_s"] == 18.13 and case.recipe.vpp == 3
    assert case.recipe.recompute.granularity == RecomputeGranularity.full and not case.recipe.sequence_parallel


def test_megatron_core_h100_weak_scaling_row():
    case = CASES["MCORE24-09"]  # 462B on 6144 H100s: TP 8, PP 16, DP 48, batch 3072, 459.9 TFLOP/s, MFU 47 %
    assert (case.recipe.tp, case.recipe.pp, case.job.global_batch_size, case.job.seq_length) == (8, 16, 3072, 4096)
    assert case.model.vocab_size == 131072
    assert case.measured["tflops_per_gpu"] == 459.9 and case.measured["mfu"] == 0.47
    # Megatron's num_floating_point_operations @core_r0.8.0 for MHA, ffn 4h: 12 l h^2 (2 + s/h + 4 + V/2lh) per token
    h, layers, s, v = 18432, 112, 4096, 131072
    assert case.measured["tokens_per_s_per_gpu"] == pytest.approx(459.9e12 / (12 * layers * h * h * (2 + s / h + 4 + v / (2 * layers * h))), rel=1e-4)
    assert ROWS["MCORE24-09"]["tp_comm_overlap"] == "true" and ROWS["MCORE24-09"]["software"] == "megatron-core:0.8.0"


def test_bloom_log_line():
    case = CASES["BLOOM22-01"]  # 'samples per second: 19.561 | TFLOPs: 149.77', 104.70 s/iteration, GBS 2048
    assert (case.recipe.tp, case.recipe.pp, case.recipe.mbs) == (4, 12, 2)
    assert case.job.precision == Precision.bf16 and case.recipe.dp_sharding == DataParallelSharding.distributed_optimizer
    assert case.measured["tokens_per_s_per_gpu"] == pytest.approx(19.561 * 2048 / 384, rel=1e-4)
    assert case.measured["iter_time_s"] == 104.70


def test_mt_nlg_tflops_match_their_iteration_times():
    """MT-NLG's published TFLOP/s equal eq. 3 at its published iteration times (the basis of the rows' full recompute)."""
    for rid, tflops in (("MTNLG22-01", 126), ("MTNLG22-02", 121), ("MTNLG22-03", 113)):
        case = CASES[rid]
        assert isinstance(case, RunCase) and case.measured["tflops_per_gpu"] == tflops
        derived = _eq3_tokens_per_s(tflops, 105, 20480, vocab=50272)
        assert case.measured["tokens_per_s_per_gpu"] == pytest.approx(derived, rel=0.006)


def test_llama3_long_context_row():
    case = CASES["LLAMA3-03"]  # Table 4: 16,384 GPUs, TP 8, CP 16, PP 16, DP 8, seq 131,072, 380 TFLOP/s, 38 %
    assert (case.recipe.tp, case.recipe.cp, case.recipe.pp, case.job.seq_length) == (8, 16, 16, 131072)
    assert case.job.global_batch_size == 16 * 8
    assert case.measured == {"tflops_per_gpu": 380.0, "mfu": 0.38}


@pytest.mark.parametrize("prefix, software", [
    ("NARAYANAN21", "megatron-lm:2021-04"), ("KORTHIKANTI22", "megatron-lm:2022-05"), ("MCORE24", "megatron-core:0.8.0"),
    ("BLOOM22", "megatron-deepspeed:2022-07"), ("MTNLG22", "megatron-deepspeed:2022-01"), ("LLAMA3", "other:2024-07"),
])
def test_each_publication_states_its_software(prefix, software):
    assert {r["software"] for i, r in ROWS.items() if i.startswith(prefix)} == {software}
