"""Recipe -> Megatron-LM arguments, one flag family at a time.

Expected values are the models' published HF configs (bundled under constraints/models) and Megatron-LM's own
flag spellings (megatron/training/arguments.py @ d98e8a64, as dumped into constraints/megatron/flags.py).
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from constraints.megatron.flags import FLAGS
from constraints.models.load import bundled_models, load_model
from constraints.spec import (
    CpCommType,
    DataParallelSharding,
    JobSpec,
    ModelSpec,
    MoeDispatcher,
    Optimizer,
    Precision,
    Recipe,
    Recompute,
    RecomputeMethod,
    RecomputeModule,
)
from templates.recipe_args import (
    GROUPS,
    RenderPaths,
    megatron_arg_groups,
    moe_layer_freq_string,
    needs_cuda_device_max_connections_1,
    recipe_to_megatron_args,
)

JOB = JobSpec(seq_length=4096, global_batch_size=256)


def args_of(model: str | ModelSpec, recipe: Recipe | None = None, job: JobSpec = JOB, **kw) -> list[str]:
    m = load_model(model) if isinstance(model, str) else model
    return recipe_to_megatron_args(m, job, recipe or Recipe(), **kw)


def value(args: list[str], flag: str) -> str:
    assert flag in args, f"{flag} missing from {args}"
    return args[args.index(flag) + 1]


def values(args: list[str], flag: str) -> list[str]:
    i = args.index(flag) + 1
    out = []
    while i < len(args) and not args[i].startswith("--"):
        out.append(args[i])
        i += 1
    return out


# --- every flag exists in Megatron-LM with the arity we give it ------------------------------------------

@pytest.mark.parametrize("name", bundled_models())
def test_every_flag_is_a_megatron_flag_with_matching_arity(name):
    recipes = [Recipe(tp=2, pp=2, vpp=2, cp=2, sequence_parallel=True, tp_comm_overlap=True,
                      recompute=Recompute.selective(RecomputeModule.core_attn, RecomputeModule.mlp)),
               Recipe(tp=1, pp=4, recompute=Recompute.full(RecomputeMethod.block, 2),
                      dp_sharding=DataParallelSharding.megatron_fsdp, microbatch_group_size=4, overlap_p2p_comm=False)]
    job = JOB.model_copy(update={"precision": Precision.fp8_delayed})
    for recipe in recipes:
        args = args_of(name, recipe, job)
        flags = [i for i, a in enumerate(args) if a.startswith("--")]
        for n, i in enumerate(flags):
            info = FLAGS.get(args[i])
            assert info is not None, f"{args[i]} is not a Megatron-LM flag"
            got = (flags[n + 1] if n + 1 < len(flags) else len(args)) - i - 1
            if info.nargs in ("+", "*"):
                assert got >= (1 if info.nargs == "+" else 0), args[i]
            else:
                assert got == info.nargs, f"{args[i]} takes {info.nargs} value(s), got {got}"


def test_groups_cover_flat_list_in_order():
    m, r = load_model("Mixtral-8x7B-v0.1"), Recipe(tp=2, ep=4, sequence_parallel=True)
    groups = megatron_arg_groups(m, JOB, r)
    assert tuple(groups) == GROUPS
    assert [a for g in groups.values() for a in g] == recipe_to_megatron_args(m, JOB, r)
    assert megatron_arg_groups(load_model("Llama-2-7b"), JOB, Recipe())["moe"] == []


# --- model ------------------------------------------------------------------------------------------------

def test_dense_llama2_7b_model_flags():
    a = args_of("Llama-2-7b")
    # Llama-2-7b config.json: 32 layers, hidden 4096, intermediate 11008, 32 heads (MHA), vocab 32000
    assert [value(a, f) for f in ("--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads")] == \
        ["32", "4096", "11008", "32"]
    assert "--group-query-attention" not in a and "--kv-channels" not in a
    for flag in ("--swiglu", "--disable-bias-linear", "--untie-embeddings-and-output-weights"):
        assert flag in a
    assert value(a, "--normalization") == "RMSNorm" and value(a, "--position-embedding-type") == "rope"
    assert value(a, "--seq-length") == "4096" and value(a, "--max-position-embeddings") == "4096"
    assert value(a, "--attention-dropout") == "0" and value(a, "--hidden-dropout") == "0"
    # no tokenizer given: a placeholder HF tokenizer (listed in the script's header), never NullTokenizer on real data
    assert value(a, "--vocab-size") == "32000" and value(a, "--tokenizer-type") == "HuggingFaceTokenizer"
    assert value(a, "--tokenizer-model") == "/path/to/tokenizer"


def test_gqa_llama31_70b():
    a = args_of("Llama-3.1-70B")
    assert "--group-query-attention" in a and value(a, "--num-query-groups") == "8"  # num_key_value_heads 8


def test_kv_channels_only_when_head_dim_differs():
    # Qwen3-235B-A22B: hidden 4096, 64 heads, head_dim 128 (not 4096/64 = 64)
    assert value(args_of("Qwen3-235B-A22B"), "--kv-channels") == "128"
    assert "--qk-layernorm" in args_of("Qwen3-235B-A22B")
    assert "--kv-channels" not in args_of("Llama-3.1-8B")


def test_gpt3_style_gelu_layernorm_tied_learned_positions():
    a = args_of("GPT-3-175B")
    assert "--swiglu" not in a and "--squared-relu" not in a
    assert value(a, "--normalization") == "LayerNorm"
    assert value(a, "--position-embedding-type") == "learned_absolute"
    assert "--untie-embeddings-and-output-weights" not in a and "--disable-bias-linear" not in a


def test_squared_relu_nemotron():
    assert "--squared-relu" in args_of("Nemotron-4-340B")


def test_bias_only_on_attention_adds_qkv_bias():
    m = load_model("Llama-3.1-8B").model_copy(update={"attention_bias": True})
    a = args_of(m)
    assert "--disable-bias-linear" in a and "--add-qkv-bias" in a
    assert "--add-qkv-bias" not in args_of("Llama-3.1-8B")


def test_dropout_from_model():
    m = load_model("Llama-2-7b").model_copy(update={"hidden_dropout": 0.1, "attention_dropout": 0.05})
    a = args_of(m)
    assert value(a, "--hidden-dropout") == "0.1" and value(a, "--attention-dropout") == "0.05"


def test_mla_deepseek_v3():
    a = args_of("DeepSeek-V3")
    # DeepSeek-V3 config.json: q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head_dim 128
    assert "--multi-latent-attention" in a and "--group-query-attention" not in a
    assert [value(a, f) for f in ("--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim",
                                  "--v-head-dim")] == ["1536", "512", "128", "64", "128"]
    assert value(a, "--mtp-num-layers") == "1"
    assert "--q-lora-rank" not in args_of("Moonlight-16B-A3B")  # q_lora_rank null: no q compression


# --- MoE --------------------------------------------------------------------------------------------------

def test_moe_deepseek_v3():
    a = args_of("DeepSeek-V3", Recipe(ep=8, etp=1))
    # 256 routed experts, top-8, moe_intermediate 2048, 1 shared expert, first_k_dense_replace 3 of 61 layers
    assert [value(a, f) for f in ("--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size",
                                  "--moe-shared-expert-intermediate-size")] == ["256", "8", "2048", "2048"]
    assert value(a, "--moe-layer-freq") == "([0]*3+[1]*58)"
    assert "--moe-router-enable-expert-bias" in a and value(a, "--moe-router-score-function") == "sigmoid"
    assert value(a, "--expert-model-parallel-size") == "8" and value(a, "--expert-tensor-parallel-size") == "1"


def test_moe_mixtral_and_dispatcher():
    a = args_of("Mixtral-8x7B-v0.1", Recipe(ep=8, moe_dispatcher=MoeDispatcher.flex, moe_grouped_gemm=False))
    assert [value(a, f) for f in ("--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size")] == ["8", "2", "14336"]
    assert "--moe-layer-freq" not in a and "--moe-grouped-gemm" not in a
    assert value(a, "--moe-token-dispatcher-type") == "flex"
    assert value(a, "--moe-router-load-balancing-type") == "aux_loss"
    assert "--expert-tensor-parallel-size" not in a  # etp None = TP (Megatron default)
    assert "--moe-grouped-gemm" in args_of("Mixtral-8x7B-v0.1")


def test_moe_layer_freq_string_evaluates_to_pattern():
    pattern = (False, True, True, False, False, True)
    text = moe_layer_freq_string(pattern)
    assert text == "([0]*1+[1]*2+[0]*2+[1]*1)"
    assert eval(text) == [int(p) for p in pattern]  # Megatron's moe_freq_type evaluates this expression


# --- parallelism ------------------------------------------------------------------------------------------

def test_tp_pp_vpp_and_sequence_parallel():
    a = args_of("Llama-3.1-70B", Recipe(tp=8, pp=4, vpp=5, sequence_parallel=True, tp_comm_overlap=True))
    assert value(a, "--tensor-model-parallel-size") == "8" and value(a, "--pipeline-model-parallel-size") == "4"
    assert value(a, "--num-virtual-stages-per-pipeline-rank") == "5"
    assert "--sequence-parallel" in a and "--tp-comm-overlap" in a
    b = args_of("Llama-3.1-70B", Recipe(tp=1, sequence_parallel=True, tp_comm_overlap=True))
    # SP is dropped at TP=1; --tp-comm-overlap stays, so check on the script still finds tp_comm_overlap_needs_sp
    assert "--sequence-parallel" not in b and "--tp-comm-overlap" in b
    assert "--num-virtual-stages-per-pipeline-rank" not in b and "--expert-model-parallel-size" not in b


def test_pipeline_layout_replaces_vpp_flag():
    r = Recipe(pp=8, vpp=4, pipeline_layout="Et*3|(tt|)*29,m|L")
    a = args_of("DeepSeek-V3", r)
    assert value(a, "--pipeline-model-parallel-layout") == "Et*3|(tt|)*29,m|L"
    assert "--num-virtual-stages-per-pipeline-rank" not in a


def test_uneven_stages_and_account_for():
    a = args_of("Llama-3.1-70B", Recipe(pp=4, first_stage_layers=19, last_stage_layers=19))
    assert value(a, "--decoder-first-pipeline-num-layers") == "19"
    assert value(a, "--decoder-last-pipeline-num-layers") == "19"
    b = args_of("Llama-3.1-70B", Recipe(pp=2, account_for_embedding_in_pipeline_split=True,
                                        account_for_loss_in_pipeline_split=True, microbatch_group_size=4,
                                        overlap_p2p_comm=False))
    assert "--account-for-embedding-in-pipeline-split" in b and "--account-for-loss-in-pipeline-split" in b
    assert value(b, "--microbatch-group-size-per-virtual-pipeline-stage") == "4"
    assert "--no-overlap-p2p-communication" in b


def test_context_parallel():
    a = args_of("Llama-3.1-70B", Recipe(cp=4, cp_comm_type=CpCommType.a2a_p2p, hierarchical_cp_sizes=(2, 2)))
    assert value(a, "--context-parallel-size") == "4" and value(a, "--cp-comm-type") == "a2a+p2p"
    assert values(a, "--hierarchical-context-parallel-sizes") == ["2", "2"]
    assert "--context-parallel-size" not in args_of("Llama-3.1-70B")


def test_recompute_variants():
    sel = args_of("DeepSeek-V3", Recipe(recompute=Recompute.selective(RecomputeModule.mla_up_proj, RecomputeModule.moe_act)))
    assert value(sel, "--recompute-granularity") == "selective"
    assert values(sel, "--recompute-modules") == ["mla_up_proj", "moe_act"]
    assert "--recompute-method" not in sel
    full = args_of("Llama-2-7b", Recipe(tp=2, recompute=Recompute.full(RecomputeMethod.uniform, 1),
                                        distribute_saved_activations=True))
    assert value(full, "--recompute-granularity") == "full" and value(full, "--recompute-method") == "uniform"
    assert value(full, "--recompute-num-layers") == "1" and "--distribute-saved-activations" in full
    assert "--recompute-granularity" not in args_of("Llama-2-7b")


def test_data_parallel_sharding_and_overlap():
    dist = args_of("Llama-2-7b")
    assert "--use-distributed-optimizer" in dist and "--overlap-grad-reduce" in dist and "--overlap-param-gather" in dist
    ddp = args_of("Llama-2-7b", Recipe(dp_sharding=DataParallelSharding.none, overlap_param_gather=False))
    assert "--use-distributed-optimizer" not in ddp and "--overlap-param-gather" not in ddp
    # --overlap-param-gather needs dist-opt: a recipe that sets it anyway is illegal, and its (--force) script says
    # so too, rather than quietly running something else than the recipe check judged
    forced = args_of("Llama-2-7b", Recipe(dp_sharding=DataParallelSharding.none, overlap_param_gather=True))
    assert "--use-distributed-optimizer" not in forced and "--overlap-param-gather" in forced
    mf = args_of("Llama-2-7b", Recipe(dp_sharding=DataParallelSharding.megatron_fsdp))
    assert "--use-megatron-fsdp" in mf and value(mf, "--data-parallel-sharding-strategy") == "optim_grads_params"
    assert value(mf, "--ckpt-format") == "fsdp_dtensor"  # validate_args requires it for Megatron-FSDP
    f2 = args_of("Llama-2-7b", Recipe(dp_sharding=DataParallelSharding.torch_fsdp2))
    assert "--use-torch-fsdp2" in f2 and "--no-gradient-accumulation-fusion" in f2
    assert "--use-distributed-optimizer" not in f2
    no_overlap = args_of("Llama-2-7b", Recipe(overlap_grad_reduce=False, overlap_param_gather=False))
    assert "--overlap-grad-reduce" not in no_overlap and "--overlap-param-gather" not in no_overlap


# --- precision, batch, data -------------------------------------------------------------------------------

@pytest.mark.parametrize("precision,fmt,recipe", [
    (Precision.fp8_delayed, "hybrid", "delayed"), (Precision.fp8_tensorwise, "hybrid", "tensorwise"),
    (Precision.fp8_blockwise, "e4m3", "blockwise"), (Precision.mxfp8, "e4m3", "mxfp8"),
])
def test_fp8_recipes(precision, fmt, recipe):
    a = args_of("Llama-3.1-8B", job=JOB.model_copy(update={"precision": precision}))
    assert "--bf16" in a and value(a, "--fp8-format") == fmt and value(a, "--fp8-recipe") == recipe


def test_fp16_bf16_and_optimizer_and_batch():
    a = args_of("Llama-2-7b", Recipe(mbs=2), job=JOB.model_copy(update={"precision": Precision.fp16,
                                                                        "optimizer": Optimizer.muon}))
    assert "--fp16" in a and "--bf16" not in a and value(a, "--optimizer") == "muon"
    assert value(a, "--micro-batch-size") == "2" and value(a, "--global-batch-size") == "256"


def test_vocab_and_paths():
    paths = RenderPaths(data_path="/d/x_text_document", tokenizer_model="meta-llama/Llama-3.1-8B", checkpoint_dir="/ck")
    a = args_of("Llama-3.1-8B", Recipe(make_vocab_size_divisible_by=64), paths=paths)
    assert value(a, "--vocab-size") == "128256" and value(a, "--make-vocab-size-divisible-by") == "64"
    assert value(a, "--tokenizer-type") == "HuggingFaceTokenizer" and value(a, "--tokenizer-model") == paths.tokenizer_model
    assert value(a, "--data-path") == "/d/x_text_document" and value(a, "--save") == "/ck"


def test_cuda_device_max_connections_rule():
    assert needs_cuda_device_max_connections_1(Recipe(tp=2), 9.0)
    assert needs_cuda_device_max_connections_1(Recipe(cp=2), 8.0)
    assert not needs_cuda_device_max_connections_1(Recipe(tp=1), 9.0)
    assert not needs_cuda_device_max_connections_1(Recipe(tp=2), 10.0)  # Blackwell: no requirement
    assert not needs_cuda_device_max_connections_1(Recipe(tp=2, dp_sharding=DataParallelSharding.megatron_fsdp), 9.0)


# --- property: the parser reads back every recipe field the arguments carry -------------------------------

_BOOLS = ("sequence_parallel", "overlap_p2p_comm", "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
          "moe_grouped_gemm", "overlap_moe_expert_parallel_comm", "fp8_param_gather", "cross_entropy_loss_fusion",
          "distribute_saved_activations", "moe_shared_expert_overlap", "account_for_embedding_in_pipeline_split",
          "account_for_loss_in_pipeline_split")
_RECOMPUTES = (Recompute.none(), Recompute.selective(RecomputeModule.core_attn, RecomputeModule.mlp),
               Recompute.full(RecomputeMethod.uniform, 1), Recompute.full(RecomputeMethod.block, 2))


def _read_back_equivalent(model: ModelSpec, r: Recipe) -> Recipe:
    """The recipe the arguments can express: fields that do nothing in this combination are not written, and
    the parser gives Megatron's defaults for them (each is a no-op in Megatron too)."""
    update: dict = {}
    if not model.is_moe:  # MoE flags are written only for MoE models
        update.update(moe_dispatcher=MoeDispatcher.allgather, moe_grouped_gemm=False, moe_shared_expert_overlap=False,
                      overlap_moe_expert_parallel_comm=False)
    if not r.sp_active:  # validate_args turns SP off at TP=1
        update["sequence_parallel"] = False
    if r.cp == 1:  # CP communication settings are written only with CP
        update.update(cp_comm_type=CpCommType.p2p, hierarchical_cp_sizes=None)
    return r.model_copy(update=update)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.sampled_from(["Llama-3.1-8B", "Mixtral-8x7B-v0.1", "DeepSeek-V3", "gpt-oss-20b"]),
       st.fixed_dictionaries({"tp": st.sampled_from([1, 2, 8]), "pp": st.sampled_from([1, 2, 4]),
                              "cp": st.sampled_from([1, 2]), "ep": st.sampled_from([1, 4]), "etp": st.sampled_from([None, 1]),
                              "mbs": st.sampled_from([1, 2]), "recompute": st.sampled_from(_RECOMPUTES),
                              "dp_sharding": st.sampled_from(list(DataParallelSharding)),
                              "moe_dispatcher": st.sampled_from(list(MoeDispatcher)),
                              "cp_comm_type": st.sampled_from(list(CpCommType)),
                              "num_distributed_optimizer_instances": st.sampled_from([1, 2]),
                              "cpu_offloading_num_layers": st.sampled_from([0, 2]),
                              "make_vocab_size_divisible_by": st.sampled_from([64, 128]),
                              **{b: st.booleans() for b in _BOOLS}}),
       st.sampled_from(list(Precision)), st.sampled_from(list(Optimizer)))
def test_parser_reads_back_every_field_the_arguments_carry(name, fields, precision, optimizer):
    """Legal or not (render --force writes illegal ones too), what the recipe says comes back from its argv."""
    from constraints.megatron.argv_to_specs import parse_megatron_args

    model = load_model(name)
    if not model.is_moe:
        fields = {**fields, "ep": 1, "etp": None}
    recipe = Recipe(**fields)
    job = JobSpec(seq_length=4096, global_batch_size=64, precision=precision, optimizer=optimizer)
    parsed = parse_megatron_args(recipe_to_megatron_args(model, job, recipe))
    assert parsed.unknown_flags == []
    assert parsed.job == job
    assert parsed.recipe == _read_back_equivalent(model, recipe)
