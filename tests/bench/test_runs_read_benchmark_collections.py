"""The rows of four publications outside NVIDIA's NeMo / Megatron-Bridge performance tables (issue 32 item 7) read as
their sources publish them: NVIDIA's DGX Cloud LLM Benchmarking Collection v24.11.1 (NVIDIA/dgxc-benchmarking @35a9aecc,
NeMo launcher recipes on DGX H100), MosaicML LLM Foundry's MPT training benchmarks (mosaicml/llm-foundry
scripts/train/benchmarking/README.md @5e85bd62d, PyTorch FSDP on H100), NVIDIA's DeepSeek-V3 GB200 optimisation
write-up (NVIDIA/Megatron-LM docs/discussions @eb0783b6) and BAAI's FlagPerf Megatron cases (FlagOpen/FlagPerf
@1b5a0303, H100 and H800). Every number below is copied from the cited README, recipe or
write-up (bench/data/SOURCES.md), never from shardplan's output."""
import csv
import re

import pytest

from bench.runs import RUNS_CSV, load_all
from constraints.models.params import param_counts
from constraints.spec import DataParallelSharding, FsdpShardingStrategy, Precision, RecomputeGranularity, RecomputeModule

with open(RUNS_CSV, newline="") as fh:
    ROWS = {r["source_id"]: r for r in csv.DictReader(fh)}
CASES = {c.id: c for c in load_all()[0]}


@pytest.mark.parametrize("prefix, count", [("DGXC24", 64), ("MOSAICMPT", 70), ("MLMDSV3GB", 2), ("FLAGPERF", 8)])
def test_every_row_of_these_publications_becomes_a_case(prefix, count):
    ids = [i for i in ROWS if i.startswith(prefix + "-")]
    assert len(ids) == count
    assert [i for i in ids if i not in CASES] == []


def test_dgxc_tokens_per_gpu_follow_the_readme_formula():
    # README: throughput in tokens per second = sequence length * global batch size / training step time
    for rid in (i for i in ROWS if i.startswith("DGXC24-")):
        r = ROWS[rid]
        tokens = int(r["seq_len"]) * int(r["gbs"]) / float(r["iter_time_s"]) / int(r["gpus"])
        assert float(r["tokens_per_s_per_gpu"]) == pytest.approx(tokens, rel=0.01), rid


@pytest.mark.parametrize("rid, model, gpus, gbs, step_s, tokens_s, mfu", [
    ("DGXC24-01", "GPT-3-175B", 128, 256, 8.91, 58843, 0.4993),        # README_175b.md BF16, TP4 PP8 VP12
    ("DGXC24-27", "Nemotron-4-340B", 128, 32, 4.61, 28432, 0.5538),    # README_340b.md BF16, TP8 PP8 VP12
    ("DGXC24-64", "Llama-3.1-405B", 2304, 1008, 12.35, 668626, 0.3887),  # README_405b.md FP8, TP8 PP9 CP2 VP7
])
def test_dgxc_rows_read_as_published(rid, model, gpus, gbs, step_s, tokens_s, mfu):
    case = CASES[rid]
    assert case.model.name == model and case.placement.world_size == gpus and case.job.global_batch_size == gbs
    assert case.measured["iter_time_s"] == step_s and case.measured["mfu"] == mfu
    assert case.measured["tokens_per_s_per_gpu"] == pytest.approx(tokens_s / gpus, abs=0.05)


def test_dgxc_recipes_carry_their_yaml_settings():
    n340 = CASES["DGXC24-27"]  # nemotron4-340b-synth.yaml: selective recompute; launch.sh: ub_tp_comm_overlap=True
    assert (n340.recipe.tp, n340.recipe.pp, n340.recipe.vpp) == (8, 8, 12)
    assert n340.recipe.recompute.granularity == RecomputeGranularity.selective
    assert RecomputeModule.core_attn in n340.recipe.recompute.modules
    assert n340.recipe.tp_comm_overlap and n340.software == "nemo:24.09"
    l8 = CASES["DGXC24-46"]  # llama3.1_8b.yaml FP8 on 128 GPUs: TP1 CP2, no SP, no userbuffers
    assert (l8.recipe.tp, l8.recipe.cp, l8.recipe.sequence_parallel, l8.recipe.tp_comm_overlap) == (1, 2, False, False)
    assert l8.job.precision == Precision.fp8_delayed  # the yaml's fp8_hybrid with amax history 1024: delayed scaling
    assert CASES["DGXC24-06"].software == "nemo:24.05"  # nemo_megatron/setup.sh imports nemo:24.05


def test_nemotron4_15b_is_built_from_its_recipe_shape():
    # nemotron4-15b-synth.yaml: 32 layers, hidden 6144, ffn 24576, 48 heads, 8 query groups, vocab 256000, untied
    model = CASES["DGXC24-11"].model
    assert (model.num_layers, model.hidden_size, model.ffn_hidden_size) == (32, 6144, 24576)
    assert (model.num_attention_heads, model.num_query_groups, model.vocab_size) == (48, 8, 256000)
    assert not model.tied_embeddings
    # 15.6 B parameters (arXiv 2402.16819: "15-billion-parameter"; 3.1 B of them in the two 256000 x 6144 embeddings)
    assert param_counts(model).total == pytest.approx(15.6e9, rel=0.01)


def test_mpt_models_match_the_published_parameter_counts():
    # the table's NumParams: tied embeddings and a learned max_seq x d_model position table (which is why the count
    # grows with the sequence length); an untied build misses by 0.6 % (70B) to 31 % (125M)
    for rid in (i for i in ROWS if i.startswith("MOSAICMPT-")):
        published = int(re.search(r"NumParams (\d+)", ROWS[rid]["notes"]).group(1))
        model = CASES[rid].model
        assert model.tied_embeddings and model.learned_position_embeddings
        assert param_counts(model).total == pytest.approx(published, rel=0.001), rid


def test_mpt_sharding_and_checkpointing_as_the_table_states():
    seventy = CASES["MOSAICMPT-01"]  # Large Scale table: 70b, 512 GPUs, FULL_SHARD, activation checkpointing True
    assert seventy.recipe.dp_sharding == DataParallelSharding.torch_fsdp2 and seventy.torch_native is not None
    assert seventy.recipe.recompute.granularity == RecomputeGranularity.full
    assert seventy.measured["tokens_per_s_per_gpu"] == 1007 and seventy.measured["tflops_per_gpu"] == 408
    three = CASES["MOSAICMPT-13"]  # 3b on 512 GPUs: SHARD_GRAD_OP (ZeRO-2), no checkpointing
    assert three.recipe.fsdp_sharding_strategy == FsdpShardingStrategy.optim_grads
    assert three.recipe.recompute.granularity == RecomputeGranularity.none
    assert CASES["MOSAICMPT-35"].job.seq_length == 65536 and CASES["MOSAICMPT-35"].software == "llm-foundry:2024-01"


def test_deepseek_v3_gb200_write_up_rows_take_the_stated_command():
    # Megatron-LM docs/discussions/deepseek-v3-gb200-optimization @eb0783b6: 494.46 -> 970.01 TFLOP/s/GPU at
    # TP1/PP8/VPP4/EP32, MBS 1, GBS 2048 on 256 GB200, --pipeline-model-parallel-layout "Et|(tt|)*30L", no MTP stage
    base, final = CASES["MLMDSV3GB-01"], CASES["MLMDSV3GB-02"]
    for case in (base, final):
        assert (case.recipe.tp, case.recipe.pp, case.recipe.vpp, case.recipe.ep) == (1, 8, 4, 32)
        assert case.recipe.pipeline_layout == "Et|(tt|)*30L" and case.model.mtp_num_layers == 0
        assert case.placement.world_size == 256 and case.job.global_batch_size == 2048
        assert case.job.precision == Precision.mxfp8
    assert (base.measured["tflops_per_gpu"], final.measured["tflops_per_gpu"]) == (494.46, 970.01)
    assert base.recipe.recompute.modules == (RecomputeModule.mla_up_proj, RecomputeModule.mlp)  # mlp up_proj
    assert not base.cuda_graph_scope and not base.recipe.fp8_param_gather
    assert final.recipe.recompute.modules == (RecomputeModule.moe_act, RecomputeModule.mlp)
    assert final.cuda_graph_scope == frozenset({"attn", "moe_router", "moe_preprocess"}) and final.recipe.fp8_param_gather
    # the same FLOPs per token (Megatron's count, no MTP) turn both TFLOP/s into tokens/s
    assert final.measured["tokens_per_s_per_gpu"] / base.measured["tokens_per_s_per_gpu"] == pytest.approx(970.01 / 494.46,
                                                                                                          rel=1e-4)


def test_a_row_without_quoted_flags_keeps_the_bundled_mtp_and_an_even_layout():
    # a Megatron-Bridge DeepSeek-V3 row quotes no layout and no "no MTP": the bundled config's MTP layer stays
    bridge = next(c for c in CASES.values() if c.id.startswith("MBR") and c.model.name == "DeepSeek-V3")
    assert bridge.model.mtp_num_layers == 1
    assert not any("as the row states" in a for a in bridge.assumed)


@pytest.mark.parametrize("rid, tokens, params, mfu", [
    ("FLAGPERF-01", 8103, 8e9, 0.393),    # llama3_8B-megatron README: H100 1x8 bf16 PP1DP4TP2, 39.3 %
    ("FLAGPERF-05", 851, 70e9, 0.361),    # llama3_70B-megatron README: H100 8x8 bf16 PP4DP2TP8, 36.1 %
    ("FLAGPERF-08", 908.29, 70e9, 0.386),  # llama2_70B-megatron README: H800 4x8 amp TP4PP8DP1 GAS=1024, 38.6 %
])
def test_flagperf_mfu_is_six_n_tokens_over_the_bf16_peak(rid, tokens, params, mfu):
    # run_pretraining.py: MFU = tokens/p/s x 6 x N / 989e12 (N = 8e9 or 70e9 as its code writes)
    case = CASES[rid]
    assert case.measured["tokens_per_s_per_gpu"] == tokens and case.measured["mfu"] == mfu
    assert tokens * 6 * params / 989e12 == pytest.approx(mfu, abs=0.0006)


def test_flagperf_rows_keep_megatrons_defaults_and_their_part():
    # pretrain_llama3.sh sets no --untie-embeddings-and-output-weights and no rope: Megatron's tied, learned defaults
    llama3 = CASES["FLAGPERF-05"]
    assert llama3.model.tied_embeddings and llama3.model.learned_position_embeddings
    assert (llama3.recipe.tp, llama3.recipe.pp, llama3.job.global_batch_size) == (8, 4, 512)
    assert llama3.software == "megatron-core:0.6.0"
    llama2 = CASES["FLAGPERF-06"]  # FlagScale's Llama2-70B on H800: bundled config (untied, RoPE), GBS 44
    assert llama2.hardware == "h800-sxm-80gb" and llama2.model.name == "Llama-2-70b"
    assert (llama2.recipe.tp, llama2.recipe.pp, llama2.job.global_batch_size) == (8, 4, 44)
