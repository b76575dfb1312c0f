"""The long-context MoE rows (issue 32 item 2) read as published: Megatron-MoE-ModelZoo's Qwen3-235B-A22B H100 table
(best_practice/qwen3/readme.md @e8650517: 32 nodes, TP 4, PP 8, VPP 4, EP 8, CP 1/2/4/8 at 16k/32k/64k/128k, GBS 256,
295/335/368/389 TFLOP/s forced balance) and its GB200 128k MXFP8 row (TP 4, PP 4, VPP 12, CP 4, EP 32, 1150 TFLOP/s),
and the MCore tracker's GB200 BF16 128k point (1117 TFLOP/s, MFU 44.7 %). The tokens/s/GPU column is the published
TFLOP/s over Megatron-LM's own FLOP count per token, the convention the performance summary's own pairs hold."""
import pytest

from bench.run_slices import sequence_slices, throughput_cases
from bench.runs import load_runs
from measure.projection.flops import megatron_flops

ZOO_H100 = {"MOEZOO-761": (16384, 1, 295.0), "MOEZOO-762": (32768, 2, 335.0), "MOEZOO-763": (65536, 4, 368.0),
            "MOEZOO-764": (131072, 8, 389.0)}
QWEN3_235B_VOCAB = 151936  # --make-vocab-size-divisible-by 1187 leaves it unpadded (model_configs/.../Qwen3-235B-A22B.yaml)


@pytest.fixture(scope="module")
def cases():
    return {c.id: c for c in load_runs()}


def test_the_h100_long_context_table_reads_as_published(cases):
    for rid, (seq, cp, tflops) in ZOO_H100.items():
        c = cases[rid]
        r = c.recipe
        assert (c.job.seq_length, r.cp, r.tp, r.pp, r.vpp, r.ep, r.etp, r.mbs) == (seq, cp, 4, 8, 4, 8, 1, 1)
        assert c.placement.world_size == 256 and c.job.global_batch_size == 256 and c.hardware == "h100-sxm-80gb"
        assert c.measured["tflops_per_gpu"] == tflops
        assert {m.value for m in r.recompute.modules} == {"layernorm", "moe"}


def test_tokens_are_the_published_tflops_over_megatrons_flops_per_token(cases):
    for rid in list(ZOO_H100) + ["MOEZOO-767", "MCORETRK-769"]:
        c = cases[rid]
        per_token = megatron_flops(c.model, c.job.seq_length, 1, QWEN3_235B_VOCAB) / c.job.seq_length
        assert c.measured["tokens_per_s_per_gpu"] * per_token / 1e12 == pytest.approx(c.measured["tflops_per_gpu"], rel=1e-4)


def test_the_flop_count_is_the_one_the_performance_summary_reports():
    """Megatron-Bridge's 26.08 summary publishes both figures for Qwen3-235B-A22B at 4k on GB300 (MBR-009: 8816
    tokens/s/GPU, 1306 TFLOP/s/GPU): their ratio is the FLOPs per token the conversion uses, within rounding."""
    c = next(c for c in load_runs() if c.id == "MBR-009")
    per_token = megatron_flops(c.model, 4096, 1, QWEN3_235B_VOCAB) / 4096
    assert per_token == pytest.approx(1306e12 / 8816, rel=2e-3)


def test_gb200_128k_rows_run_the_zoo_layout(cases):
    for rid, precision, tflops in (("MOEZOO-767", "mxfp8", 1150.0), ("MCORETRK-769", "bf16", 1117.0)):
        c = cases[rid]
        r = c.recipe
        assert (c.job.seq_length, r.tp, r.pp, r.vpp, r.cp, r.ep, c.placement.world_size) == (131072, 4, 4, 12, 4, 32, 128)
        assert c.job.precision.value == precision and c.measured["tflops_per_gpu"] == tflops
    assert cases["MCORETRK-769"].measured["mfu"] == 0.447


def test_long_context_rows_enter_the_cross_validation_slices():
    """Every row from 16k on is in bench.cross_validate's `seq>=16k` slice and its own length's."""
    long = {c.id: sequence_slices(c) for c in throughput_cases() if c.id in ZOO_H100 or c.id == "MOEZOO-767"}
    assert long["MOEZOO-761"] == ["seq>=16k", "seq=16k"] and long["MOEZOO-764"] == ["seq>=16k", "seq=128k"]
    assert long["MOEZOO-767"] == ["seq>=16k", "seq=128k"]
    short = next(c for c in throughput_cases() if c.id == "MOEZOO-765")
    assert short.job.seq_length == 4096 and sequence_slices(short) == []


def test_a_row_without_preset_takes_the_capture_its_command_states(cases):
    """MOEZOO-765 ran `--cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router moe_preprocess`; the
    128k MXFP8 command (MOEZOO-767) captures nothing."""
    assert cases["MOEZOO-765"].cuda_graph_scope == {"attn", "moe_router", "moe_preprocess"}
    assert cases["MOEZOO-767"].cuda_graph_scope == frozenset()
