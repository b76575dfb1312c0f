"""parse_megatron_args: Megatron defaults when flags are absent, the three example shapes end to end, flags
reported as unknown / ignored, one-line errors for bad values, and every runs.csv row that
runs_to_megatron.py can express."""
import csv
import json
import subprocess
import sys

import pytest

from constraints.megatron.argv_to_specs import MegatronArgsError, parse_megatron_args
from constraints.megatron.launch_script import extract_argv
from constraints.spec import (
    Activation,
    CpCommType,
    DataParallelSharding,
    MoeDispatcher,
    Normalization,
    PipelineSchedule,
    Precision,
    RecomputeGranularity,
    RecomputeMethod,
    RecomputeModule,
)
from tests.helpers.builders import REPO

SCRIPTS = REPO / "tests" / "data" / "scripts"
BASE = ["--num-layers", "24", "--hidden-size", "2048", "--num-attention-heads", "16", "--seq-length", "2048",
        "--max-position-embeddings", "2048", "--vocab-size", "50257", "--micro-batch-size", "1",
        "--global-batch-size", "64", "--bf16"]


def parse(*extra: str, **kw):
    return parse_megatron_args(BASE + list(extra), **kw)


def test_megatron_defaults_for_absent_flags():
    c = parse()
    m, r = c.model, c.recipe
    # arguments.py defaults: LayerNorm, GeLU, biases on, tied embeddings, learned absolute positions, dropout 0.1
    assert m.normalization is Normalization.layernorm and m.activation is Activation.gelu
    assert m.attention_bias and m.mlp_bias and m.tied_embeddings and m.learned_position_embeddings
    assert (m.hidden_dropout, m.attention_dropout) == (0.1, 0.1)
    assert m.ffn_hidden_size == 4 * 2048 and m.kv_channels == 2048 // 16 and m.num_query_groups == 16
    assert (r.tp, r.pp, r.vpp, r.cp, r.ep, r.etp) == (1, 1, 1, 1, 1, None)
    assert r.dp_sharding is DataParallelSharding.none and r.schedule is PipelineSchedule.one_f_one_b
    assert not r.overlap_grad_reduce and not r.overlap_param_gather and r.overlap_p2p_comm
    assert r.moe_dispatcher is MoeDispatcher.allgather and not r.moe_grouped_gemm
    assert not r.cross_entropy_loss_fusion and r.make_vocab_size_divisible_by == 128
    assert r.recompute.granularity is RecomputeGranularity.none
    assert c.job.precision is Precision.bf16 and c.unknown_flags == [] and c.ignored_flags == []


def test_swiglu_ffn_default_is_two_thirds_rounded_to_64():
    # validate_args: int((4h * 2/3) / 64) * 64 = int(5461.33/64)*64 = 5440 for h=2048
    assert parse("--swiglu").model.ffn_hidden_size == 5440


def test_model_flags_rope_rmsnorm_untied_gqa_no_bias():
    c = parse("--position-embedding-type", "rope", "--normalization", "RMSNorm", "--untie-embeddings-and-output-weights",
              "--group-query-attention", "--num-query-groups", "4", "--disable-bias-linear", "--swiglu",
              "--hidden-dropout", "0", "--attention-dropout", "0.0", "--qk-layernorm", "--kv-channels", "256")
    m = c.model
    assert not m.learned_position_embeddings and m.normalization is Normalization.rmsnorm and not m.tied_embeddings
    assert m.num_query_groups == 4 and not m.attention_bias and not m.mlp_bias and m.qk_layernorm
    assert m.kv_channels == 256 and m.hidden_dropout == 0.0


def test_gqa_flag_without_count_is_megatron_default_one_group():
    assert parse("--group-query-attention").model.num_query_groups == 1


def test_moe_layer_freq_int_and_list_forms_mla_and_mtp():
    c = parse("--num-experts", "8", "--moe-layer-freq", "2")
    assert c.model.layer_is_moe == tuple(i % 2 == 0 for i in range(24))
    assert c.model.moe_router_topk == 2 and c.model.moe_ffn_hidden_size == 4 * 2048  # Megatron defaults
    c = parse("--num-experts", "8", "--moe-layer-freq", "([0]*3+[1]*21)", "--moe-shared-expert-intermediate-size", "512",
              "--moe-router-enable-expert-bias", "--multi-latent-attention", "--q-lora-rank", "1536", "--mtp-num-layers", "1")
    m = c.model
    assert m.layer_is_moe[:4] == (False, False, False, True) and m.num_moe_layers == 21
    assert m.moe_shared_expert_intermediate_size == 512 and m.moe_router_score_bias
    assert (m.q_lora_rank, m.kv_lora_rank, m.qk_head_dim, m.qk_pos_emb_head_dim, m.v_head_dim) == (1536, 32, 128, 64, 128)
    assert m.mtp_num_layers == 1 and m.kv_channels == 128 + 64  # MLA head dim = nope + rope parts
    assert m.moe_router_bias and not parse("--num-experts", "8", "--disable-bias-linear").model.moe_router_bias
    with pytest.raises(MegatronArgsError, match="--moe-layer-freq gives 5 entries"):
        parse("--num-experts", "8", "--moe-layer-freq", "[1]*5")
    with pytest.raises(MegatronArgsError, match="--moe-layer-freq"):
        parse("--num-experts", "8", "--moe-layer-freq", "__import__('os')")


def test_vpp_from_each_of_the_three_flags():
    assert parse("--pipeline-model-parallel-size", "4", "--num-layers-per-virtual-pipeline-stage", "2").recipe.vpp == 3
    r = parse("--pipeline-model-parallel-size", "2", "--num-layers-per-virtual-pipeline-stage", "1",
              "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split").recipe
    assert r.vpp == 13 and r.schedule is PipelineSchedule.interleaved  # (24+2)/2 = 13 per stage
    assert parse("--pipeline-model-parallel-size", "4", "--num-virtual-stages-per-pipeline-rank", "2").recipe.vpp == 2
    r = parse("--pipeline-model-parallel-size", "4", "--pipeline-model-parallel-layout", "Et*3|(t*3|)*6,t*3L").recipe
    assert r.vpp == 2 and r.pipeline_layout.startswith("Et*3")
    with pytest.raises(MegatronArgsError, match="mutually exclusive"):
        parse("--num-virtual-stages-per-pipeline-rank", "2", "--num-layers-per-virtual-pipeline-stage", "3")
    with pytest.raises(MegatronArgsError, match="does not divide"):
        parse("--pipeline-model-parallel-size", "4", "--num-layers-per-virtual-pipeline-stage", "4")


def test_recipe_flags_recompute_sharding_overlap_cp():
    r = parse("--recompute-activations").recipe
    assert r.recompute.granularity is RecomputeGranularity.selective and r.recompute.modules == (RecomputeModule.core_attn,)
    r = parse("--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", "2",
              "--use-torch-fsdp2", "--no-overlap-p2p-communication", "--context-parallel-size", "2",
              "--cp-comm-type", "a2a", "--hierarchical-context-parallel-sizes", "2", "1", "--moe-enable-deepep",
              "--microbatch-group-size-per-virtual-pipeline-stage", "4", "--num-distributed-optimizer-instances", "2",
              "--decoder-first-pipeline-num-layers", "5", "--expert-tensor-parallel-size", "1").recipe
    assert r.recompute.method is RecomputeMethod.block and r.recompute.num_layers == 2
    assert r.dp_sharding is DataParallelSharding.torch_fsdp2 and not r.overlap_p2p_comm
    assert r.cp == 2 and r.cp_comm_type is CpCommType.a2a and r.hierarchical_cp_sizes == (2, 1)
    assert r.moe_dispatcher is MoeDispatcher.flex and r.microbatch_group_size == 4
    assert r.num_distributed_optimizer_instances == 2 and r.first_stage_layers == 5 and r.etp == 1
    assert parse("--use-megatron-fsdp").recipe.dp_sharding is DataParallelSharding.megatron_fsdp


def test_precision_and_fp8_recipe_default_delayed():
    assert parse("--fp8-format", "hybrid").job.precision is Precision.fp8_delayed
    assert parse("--fp8-format", "e4m3", "--fp8-recipe", "mxfp8").job.precision is Precision.mxfp8
    assert parse_megatron_args([a for a in BASE if a != "--bf16"] + ["--fp16"]).job.precision is Precision.fp16


def test_global_batch_default_needs_world_size():
    argv = [a for a in BASE if a not in ("--global-batch-size", "64")] + ["--tensor-model-parallel-size", "2"]
    assert parse_megatron_args(argv, world_size=16).job.global_batch_size == 8  # MBS 1 x DP 8
    with pytest.raises(MegatronArgsError, match="--global-batch-size"):
        parse_megatron_args(argv)


def test_unknown_and_ignored_flags_reported_and_raw_kept():
    c = parse_megatron_args(extract_argv((SCRIPTS / "qwen_moe.args").read_text()).script_args)
    assert "--my-custom-flag (not a Megatron-LM flag)" in c.unknown_flags
    # read (ModelSpec.moe_router_num_groups); without --moe-router-group-topk it limits no routing, as in Megatron
    assert "--moe-router-num-groups" not in c.unknown_flags and c.model.moe_router_num_groups == 8
    assert c.model.moe_router_group_topk is None
    assert "--cuda-graph-impl" not in c.unknown_flags + c.ignored_flags  # read for the projection (constraints/megatron/run_flags.py)
    assert {"--lr", "--save", "--data-path"} <= set(c.ignored_flags)
    assert c.raw["--tp-comm-overlap"] is True and c.raw["--moe-router-num-groups"] == 8
    assert c.raw["--recompute-modules"] == ["moe_act", "layernorm"] and c.raw["--my-custom-flag"] == "7"
    assert c.recipe.vpp == 3 and c.job.precision is Precision.fp8_blockwise and c.model.qk_layernorm


@pytest.mark.parametrize("extra, match", [
    (["--tensor-model-parallel-size", "two"], r"--tensor-model-parallel-size expects an integer, got 'two'"),
    (["--tensor-model-parallel-size", "-2"], r"--tensor-model-parallel-size=-2: .*greater than 0"),
    (["--global-batch-size", str(10**18)], r"--global-batch-size=10\^18: .*less than or equal"),
    (["--pipeline-model-parallel-size"], r"--pipeline-model-parallel-size is missing its value"),
    (["--context-parallel-size", "--bf16"], r"--context-parallel-size is missing its value"),
    (["--hidden-dropout", "1.5"], r"--hidden-dropout=1.5"),
    (["--recompute-granularity", "partial"], r"not one of Megatron-LM's full, selective"),
    (["--fp16"], r"--fp16 and --bf16"),
    (["--bf16=1"], r"takes no value"),
    (["--optimizer", "sgd"], r"--optimizer sgd is not modelled"),
    (["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "0"], r"--recompute-num-layers=0"),
    (["--num-experts", "4", "--moe-router-topk", "8"], r"--moe-router-topk=8 exceeds --num-experts=4"),
    (["--recompute-granularity", "selective", "--recompute-modules", "gdn_norm_out"], "not modelled"),
])
def test_bad_values_give_one_line_errors(extra, match):
    with pytest.raises(MegatronArgsError, match=match) as e:
        parse(*extra)
    assert "\n" not in str(e.value)


def test_missing_model_flags_are_listed_not_guessed():
    argv = ["--seq-length", "2048", "--micro-batch-size", "1", "--global-batch-size", "8", "--bf16", "--num-layers", "4"]
    c = parse_megatron_args(argv)
    assert c.model is None and "--vocab-size" in c.model_missing and "--hidden-size" in c.model_missing


@pytest.mark.parametrize("script", ["gpt_dense_distributed.sh", "moe_distributed.sh", "llama_fp8.sh", "srun_layout.sh"])
def test_example_shapes_end_to_end(script):
    # moe_distributed.sh takes its node count from Slurm (NNODES=${SLURM_NNODES:-"2"}): given as Slurm would
    cmd = extract_argv((SCRIPTS / script).read_text(), env={"SLURM_NNODES": "2"})
    c = parse_megatron_args(cmd.script_args, world_size=cmd.num_nodes * cmd.gpus_per_node)
    expect = {
        "gpt_dense_distributed.sh": lambda c: c.recipe.vpp == 4 and c.recipe.tp == 4 and c.model.vocab_size == 50257,
        "moe_distributed.sh": lambda c: c.model.num_moe_layers == 14 and c.recipe.ep == 4 and c.recipe.moe_grouped_gemm
        and c.recipe.overlap_param_gather and c.recipe.dp_sharding is DataParallelSharding.distributed_optimizer,
        "llama_fp8.sh": lambda c: c.job.precision is Precision.fp8_delayed and c.recipe.fp8_param_gather
        and c.recipe.cp == 2 and c.job.global_batch_size == 128 and c.recipe.cross_entropy_loss_fusion,
        "srun_layout.sh": lambda c: c.recipe.vpp == 4 and c.recipe.recompute.granularity is RecomputeGranularity.full,
    }[script]
    assert expect(c)
    assert c.unknown_flags == []


def test_every_expressible_runs_csv_row_parses():
    """bench/tools/runs_to_megatron.py turns every published run into a Megatron command line; our parser reads each."""
    out = subprocess.run([sys.executable, str(REPO / "bench" / "tools" / "runs_to_megatron.py"), str(REPO / "bench" / "data" / "runs.csv")],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    rows = [json.loads(line) for line in out]
    with open(REPO / "bench" / "data" / "runs.csv", newline="") as fh:
        published = sum(1 for _ in csv.DictReader(fh))
    assert len(rows) == published  # one line per published row, expressible or skipped with its reason
    cases = [r for r in rows if "skip" not in r]
    assert len(cases) > 200
    for r in cases:
        c = parse_megatron_args(r["args"], world_size=r["world"], model_name=r["model"])
        assert c.model is not None and c.unknown_flags == [], r["id"]


def test_block_recompute_of_zero_layers_is_no_recompute():
    # block with 0 layers checkpoints none (megatron/core/recompute.py): Megatron runs it as no recompute (Primus's
    # Mixtral-8x22B experiments ship it); uniform with 0 never advances and stays refused (test_bad_values_...)
    r = parse("--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", "0").recipe
    assert r.recompute.granularity is RecomputeGranularity.none
