"""Rule fixes found by bench/megatron/diff.py (shardplan vs Megatron-LM's own parse_args + validate_args +
TransformerConfig on the same rendered arguments, NVIDIA/Megatron-LM snapshot 2026-08-22). Each test pins the
verdict on the recipe the differential run flagged (ids are from `--n 2000 --seed 0`), with Megatron's verdict on
that recipe's rendered arguments in the docstring."""
from constraints.check import check_case
from constraints.models.load import load_model
from constraints.rules.registry import RuleInput, check_rules
from constraints.spec import JobSpec, Recipe, Recompute, RecomputeModule
from hardware.profile import load_profile
from templates.recipe_args import recipe_to_megatron_args
from tests.helpers.builders import make_case


def _errors(case, flags=None):
    report = check_case(case, load_profile(case.placement.hardware), flags=flags)
    return {v.rule for v in report.violations}


def _arg(args, flag):
    return args[args.index(flag) + 1]


def test_rope_seq_beyond_config_renders_a_position_limit_megatron_accepts():
    """r0-0: Nemotron-4-340B (RoPE, config max_position_embeddings 4096) at seq 16384 was rendered with
    --max-position-embeddings 4096; Megatron: "max_position_embeddings (4096) must be greater than or equal to
    seq_length (16384)" (arguments.py validate_args). The script now states max(config, seq); the recipe stays legal."""
    case = make_case("Nemotron-4-340B", hardware="h200-sxm-141gb", seq=16384, gbs=16, precision="fp16",
                     tp=4, cp=2, mbs=2, sequence_parallel=True, cp_comm_type="allgather")
    args = recipe_to_megatron_args(case.model, case.job, case.recipe)
    assert int(_arg(args, "--max-position-embeddings")) == 16384
    assert "position_embeddings_cover_seq" not in _errors(case)


def test_megatron_args_with_short_rope_position_limit_are_illegal():
    """The same check on an argument list that itself says --max-position-embeddings 4096 with --seq-length 16384:
    Megatron rejects it for any position type, so check must too."""
    case = make_case("Nemotron-4-340B", hardware="h200-sxm-141gb", seq=16384, gbs=16, tp=4, cp=2, mbs=2, sequence_parallel=True)
    assert "position_embeddings_cover_seq" in _errors(case, flags={"--max-position-embeddings": 4096})
    assert "position_embeddings_cover_seq" not in _errors(case.model_copy(update={"job": JobSpec(seq_length=4096, global_batch_size=16)}),
                                                          flags={"--max-position-embeddings": 4096})


def test_learned_position_table_still_bounds_seq():
    """GPT-3-175B has a learned 2048-entry table: no rendered value can grow it."""
    case = make_case("GPT-3-175B", seq=4096, gbs=64, tp=8)
    assert "position_embeddings_cover_seq" in _errors(case)


def test_ep_overlap_excludes_shared_expert_overlap():
    """r0-32: DeepSeek-V3 on 16x8 MI300X, TP8 EP16 ETP8 with --overlap-moe-expert-parallel-comm and
    --moe-shared-expert-overlap was legal here; Megatron: "disable moe_shared_expert_overlap when enabling
    overlap_moe_expert_parallel_comm" (transformer_config.py TransformerConfig.__post_init__)."""
    case = make_case("DeepSeek-V3", hardware="mi300x", nodes=16, seq=2048, gbs=64, precision="fp16", tp=8, ep=16, etp=8, mbs=2,
                     sequence_parallel=True, recompute=Recompute.selective(RecomputeModule.mlp),
                     overlap_moe_expert_parallel_comm=True, moe_shared_expert_overlap=True)
    assert "ep_comm_overlap" in _errors(case)
    assert "ep_comm_overlap" not in _errors(case.model_copy(update={"recipe": case.recipe.model_copy(update={"moe_shared_expert_overlap": False})}))


def test_shared_expert_overlap_dispatcher_only_with_shared_experts():
    """r0-253 (Llama-3.1-70B, dense) and a Mixtral (no shared experts) with --moe-shared-expert-overlap and the allgather
    dispatcher: Megatron checks the dispatcher only under `moe_shared_expert_intermediate_size is not None`
    (TransformerConfig.__post_init__), so both are accepted; Moonlight (shared experts) is still rejected."""
    kw = dict(moe_dispatcher="allgather", moe_shared_expert_overlap=True)
    assert "shared_expert_overlap_dispatcher" not in _errors(make_case("Llama-3.1-70B", nodes=4, gbs=16, tp=4, pp=4, vpp=2,
                                                                       schedule="interleaved", sequence_parallel=True, **kw))
    assert "shared_expert_overlap_dispatcher" not in _errors(make_case("Mixtral-8x7B-v0.1", ep=8, **kw))
    assert "shared_expert_overlap_dispatcher" in _errors(make_case("Moonlight-16B-A3B", ep=8, **kw))


def test_distributed_optimizer_instances_divide_expert_dp():
    """parallel_state.initialize_model_parallel asserts expert_data_parallel_size % num_distributed_optimizer_instances
    == 0 besides (DP*CP) % n: Mixtral-8x7B on 16 GPUs, TP2 EP8 ETP1 has DP*CP 8 but expert-DP 16/(1*8*1) = 2."""
    x = RuleInput(model=load_model("Mixtral-8x7B-v0.1"), job=JobSpec(seq_length=4096, global_batch_size=64),
                  recipe=Recipe(tp=2, ep=8, etp=1, sequence_parallel=True, num_distributed_optimizer_instances=4), world_size=16)
    assert "distributed_optimizer_instances" in {v.rule for v in check_rules(x)}
    ok = RuleInput(model=x.model, job=x.job, recipe=x.recipe.model_copy(update={"num_distributed_optimizer_instances": 2}), world_size=16)
    assert "distributed_optimizer_instances" not in {v.rule for v in check_rules(ok)}


def test_mtp_layer_uniform_recompute_needs_one_layer():
    """DeepSeek-V3 (one MTP layer) with --recompute-method uniform --recompute-num-layers 2: validate_args and
    TransformerConfig accept it, the first training step asserts "recompute_num_layers must be 1 for MTP recompute"
    (multi_token_prediction.py MultiTokenPredictionLayer._checkpointed_forward); block is only skipped there."""
    kw = dict(nodes=8, ep=64, gbs=64)
    assert "full_recompute_args" in _errors(make_case("DeepSeek-V3", recompute=Recompute.full("uniform", 2), **kw))
    assert "full_recompute_args" not in _errors(make_case("DeepSeek-V3", recompute=Recompute.full("uniform", 1), **kw))
    assert "full_recompute_args" not in _errors(make_case("DeepSeek-V3", recompute=Recompute.full("block", 2), **kw))
    assert "full_recompute_args" not in _errors(make_case("Llama-3.1-8B", recompute=Recompute.full("uniform", 2)))


def test_amd_needs_cuda_device_max_connections_1_with_tp():
    """MI300X has no CUDA compute capability in its profile, but Megatron reads torch's device major
    (get_device_arch_version), which ROCm reports as 9 for gfx942: TP>1 without CUDA_DEVICE_MAX_CONNECTIONS=1 is
    rejected by validate_args there as on Hopper (validator run with SM=9: "Using tensor model parallelism or
    context parallelism require setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1")."""
    case = make_case("Llama-3.1-8B", hardware="mi300x", tp=2, sequence_parallel=True)
    profile = load_profile("mi300x")
    bad = check_case(case, profile, env={"CUDA_DEVICE_MAX_CONNECTIONS": "8"})
    good = check_case(case, profile, env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"})
    assert "cuda_device_max_connections" in {v.rule for v in bad.violations}
    assert "cuda_device_max_connections" not in {v.rule for v in good.violations}


def test_moe_act_recompute_on_a_dense_model_needs_an_explicit_grouped_gemm_flag():
    """r0-1104/r0-1287 (Llama-2-7b, Llama-3.1-70B with --recompute-modules moe_act): the script carries no
    --moe-grouped-gemm for a dense model, and Megatron raises "moe_act in recompute_modules is only supported with
    moe_grouped_gemm." (TransformerConfig.__post_init__) whatever the model; the recipe verdict said legal (bf16)."""
    case = make_case("Llama-3.1-8B", recompute=Recompute.selective(RecomputeModule.moe_act))
    assert "moe_act_needs_grouped_gemm" in _errors(case)
    assert "moe_act_needs_grouped_gemm" not in _errors(case, flags={"--moe-grouped-gemm": True})
    assert "moe_act_needs_grouped_gemm" not in _errors(make_case("Mixtral-8x7B-v0.1", ep=8, recompute=Recompute.selective(RecomputeModule.moe_act)))


def test_fixes_name_the_axis_that_can_change():
    """a dense model on a world PP does not divide gets a PP fix from expert_grid (EP is already 1), and
    end-stage layer counts past the model get a bound on those counts, not the PP the recipe already has."""
    from constraints.case import Case
    from constraints.check import check_case
    from constraints.models.load import load_model
    from constraints.spec import JobSpec, Placement, Recipe
    from hardware.profile import load_profile

    prof = load_profile("h100-sxm-80gb")
    job = JobSpec(seq_length=4096, global_batch_size=64)
    dense = Case(model=load_model("Llama-3.1-8B"), job=job, recipe=Recipe(tp=8, pp=3),
                 placement=Placement(hardware="h100-sxm-80gb", num_nodes=8, gpus_per_node=8))
    rules = {v.rule for v in check_case(dense, prof).violations}
    assert "world_divisible" in rules and "expert_grid" not in rules  # TP*PP is world_divisible's to judge
    moe = Case(model=load_model("Mixtral-8x7B-v0.1"), job=job, recipe=Recipe(tp=1, pp=3, ep=1, etp=2),
               placement=Placement(hardware="h100-sxm-80gb", num_nodes=8, gpus_per_node=8))
    grid = [v for v in check_case(moe, prof).violations if v.rule == "expert_grid"]
    assert grid and "--pipeline-model-parallel-size" in grid[0].fix and "expert-model" not in grid[0].fix
    ends = Case(model=load_model("Llama-3.1-8B"), job=job, recipe=Recipe(pp=2, first_stage_layers=40),
                placement=Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8))
    split = [v for v in check_case(ends, prof).violations if v.rule == "layers_split"]
    assert split and "decoder-first/last" in split[0].fix and "pipeline-model-parallel-size" not in split[0].fix
