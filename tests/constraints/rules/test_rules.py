"""Each legality rule on one legal and one illegal case (the illegal one must trip exactly that rule)."""
import pytest

from constraints.models.load import load_model
from constraints.rules.registry import RULES, RuleInput, check_rules
from constraints.spec import JobSpec, Recipe, Recompute, RecomputeModule
from hardware.profile import load_profile

H100 = load_profile("h100-sxm-80gb")
A100 = load_profile("a100-sxm-80gb")
B200 = load_profile("b200")
NH8 = "Nemotron-H-8B-Base-8K"
SUPER = "Nemotron-3-Super-120B-A12B"


def rin(model="Llama-3.1-8B", world=8, seq=4096, gbs=64, precision="bf16", optimizer="adam", profile=H100, flags=None, env=None,
        bf16_layers=(0, 0), **recipe):
    job = JobSpec(seq_length=seq, global_batch_size=gbs, precision=precision, optimizer=optimizer,
                  bf16_layers_at_start=bf16_layers[0], bf16_layers_at_end=bf16_layers[1])
    return RuleInput(model=load_model(model), job=job, recipe=Recipe(**recipe), world_size=world, profile=profile,
                     flags=flags or {}, env=env)


# rule name -> (legal input kwargs, illegal input kwargs)
CASES = {
    "world_divisible": (dict(tp=2, pp=2), dict(tp=2, pp=3)),
    "expert_grid": (dict(model="Mixtral-8x7B-v0.1", ep=8), dict(model="Mixtral-8x7B-v0.1", world=12, tp=1, ep=8, gbs=48)),
    "expert_dp_matches_dp": (dict(model="Mixtral-8x7B-v0.1", world=16, pp=2, ep=8, etp=1, flags={"use_tp_pp_dp_mapping": True}, tp=8, sequence_parallel=True),
                             dict(model="Mixtral-8x7B-v0.1", world=16, pp=2, ep=4, flags={"use_tp_pp_dp_mapping": True})),
    "distributed_optimizer_instances": (dict(num_distributed_optimizer_instances=2), dict(num_distributed_optimizer_instances=3)),
    "global_batch_divisible": (dict(gbs=64, mbs=2), dict(gbs=60, mbs=2)),
    "pipeline_layout": (dict(pp=2, vpp=1, pipeline_layout="Et*16|t*16L"), dict(pp=2, pipeline_layout="Et*16|t*8|t*8L")),
    "uneven_split_exclusive": (dict(pp=2, first_stage_layers=15, last_stage_layers=17),
                               dict(pp=2, first_stage_layers=15, account_for_loss_in_pipeline_split=True)),
    "layers_split": (dict(pp=4), dict(pp=16, world=16, gbs=64, model="Llama-2-13b")),
    "interleaved_needs_pp": (dict(pp=2, vpp=2, schedule="interleaved"), dict(pp=2, vpp=2, schedule="interleaved", overlap_p2p_comm=False)),
    "schedule_matches_vpp": (dict(pp=2, vpp=2, schedule="interleaved"), dict(pp=2, vpp=1, schedule="interleaved")),
    "interleaved_microbatches": (dict(pp=4, vpp=2, schedule="interleaved", gbs=16), dict(pp=4, vpp=2, schedule="interleaved", gbs=6)),
    "heads_divisible_by_tp": (dict(tp=8), dict(model="Llama-2-13b", tp=16, world=16, gbs=64)),
    "query_groups_vs_tp": (dict(model="Qwen3-30B-A3B", tp=8, world=8), dict(model="Llama-2-13b", tp=16, world=16)),
    "sequence_parallel_needs_tp": (dict(tp=2, sequence_parallel=True), dict(tp=1, sequence_parallel=True)),
    "sequence_parallel_divides_seq": (dict(tp=8, sequence_parallel=True, seq=4096), dict(tp=8, sequence_parallel=True, seq=4100)),
    "tp_comm_overlap_needs_sp": (dict(tp=2, sequence_parallel=True, tp_comm_overlap=True), dict(tp=2, tp_comm_overlap=True)),
    # H100's NVLink domain is one 8-GPU node; GB200 NVL72's is 72 GPUs (multi-node NVLink)
    "tp_comm_overlap_within_nvlink": (dict(tp=8, sequence_parallel=True, tp_comm_overlap=True),
                                      dict(tp=16, world=16, sequence_parallel=True, tp_comm_overlap=True)),
    "context_parallel_seq": (dict(cp=2, seq=4096), dict(cp=4, seq=4100)),
    "position_embeddings_cover_seq": (dict(model="GPT-3-175B", seq=2048, world=8, tp=8), dict(model="GPT-3-175B", seq=4096, world=8, tp=8)),
    "hierarchical_cp": (dict(cp=4, cp_comm_type="a2a+p2p", hierarchical_cp_sizes=(2, 2)), dict(cp=4, cp_comm_type="a2a+p2p")),
    "cp_a2a_heads": (dict(cp=2, tp=2, cp_comm_type="a2a"), dict(model="Llama-2-13b", world=24, cp=3, tp=1, seq=6000, cp_comm_type="a2a", gbs=72)),
    "cuda_device_max_connections": (dict(tp=2, env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"}), dict(tp=2, env={})),
    "experts_divisible_by_ep": (dict(model="Mixtral-8x7B-v0.1", ep=4), dict(ep=2)),
    "expert_tp_on_dense": (dict(tp=2, etp=2), dict(tp=2, etp=1)),
    "moe_bias_needs_etp1": (dict(model="gpt-oss-20b", tp=2, etp=1, ep=4, sequence_parallel=True),
                            dict(model="gpt-oss-20b", tp=2, ep=4, sequence_parallel=True)),
    "moe_sequence_parallel": (dict(model="Mixtral-8x7B-v0.1", tp=2, ep=4, sequence_parallel=True), dict(model="Mixtral-8x7B-v0.1", tp=2, ep=4)),
    "shared_expert_overlap_dispatcher": (dict(model="Moonlight-16B-A3B", moe_shared_expert_overlap=True),
                                         dict(model="Moonlight-16B-A3B", moe_shared_expert_overlap=True, moe_dispatcher="allgather")),
    "flex_dispatcher_hardware": (dict(model="Mixtral-8x7B-v0.1", ep=2, moe_dispatcher="flex"),
                                 dict(model="Mixtral-8x7B-v0.1", ep=2, moe_dispatcher="flex", profile=A100)),
    "flex_dispatcher_group": (dict(model="Mixtral-8x7B-v0.1", ep=2, moe_dispatcher="flex"),
                              dict(model="Mixtral-8x7B-v0.1", moe_dispatcher="flex")),
    "ep_comm_overlap": (dict(model="Mixtral-8x7B-v0.1", ep=8, overlap_moe_expert_parallel_comm=True),
                        dict(model="Mixtral-8x7B-v0.1", ep=1, overlap_moe_expert_parallel_comm=True)),
    "moe_act_needs_grouped_gemm": (dict(model="Mixtral-8x7B-v0.1", recompute=Recompute.selective(RecomputeModule.moe_act)),
                                   dict(model="Mixtral-8x7B-v0.1", recompute=Recompute.selective(RecomputeModule.moe_act), moe_grouped_gemm=False)),
    "grouped_gemm_arch": (dict(model="Mixtral-8x7B-v0.1"), dict(model="Mixtral-8x7B-v0.1", profile=H100.model_copy(update={"compute_capability": 7.0}))),
    "full_recompute_args": (dict(recompute=Recompute.full("uniform", 1)), dict(recompute=Recompute(granularity="full"))),
    "selective_recompute_args": (dict(recompute=Recompute.selective(RecomputeModule.mlp)),
                                 dict(recompute=Recompute.selective(RecomputeModule.mla_up_proj))),
    "fp8_delayed_recompute": (dict(precision="fp8-tensorwise", recompute=Recompute.selective(RecomputeModule.layernorm)),
                              dict(precision="fp8-delayed", recompute=Recompute.selective(RecomputeModule.layernorm))),
    "distribute_saved_activations": (dict(tp=2, recompute=Recompute.full("uniform", 1), distribute_saved_activations=True),
                                     dict(tp=2, sequence_parallel=True, recompute=Recompute.full("uniform", 1), distribute_saved_activations=True)),
    "cpu_offloading": (dict(cpu_offloading_num_layers=2), dict(pp=2, cpu_offloading_num_layers=2)),
    "zero_bubble_no_recompute": (dict(pp=2, schedule="zb-h1"), dict(pp=2, schedule="zb-h1", recompute=Recompute.full("uniform", 1))),
    "overlap_param_gather": (dict(), dict(dp_sharding="none", overlap_param_gather=True)),
    "fp8_param_gather": (dict(precision="fp8-tensorwise", fp8_param_gather=True), dict(fp8_param_gather=True)),
    "torch_fsdp2": (dict(dp_sharding="torch_fsdp2", overlap_param_gather=False), dict(dp_sharding="torch_fsdp2", pp=2, overlap_param_gather=False)),
    "muon_no_fsdp": (dict(optimizer="muon"), dict(optimizer="muon", dp_sharding="megatron_fsdp")),
    "precision_supported": (dict(precision="mxfp8", profile=B200), dict(precision="fp8-tensorwise", profile=A100)),
    "mla_excludes_gqa": (dict(model="DeepSeek-V3", world=64, ep=8, pp=1), None),
    # NVFP4 (constraints/rules/fp4.py)
    "fp4_excludes_fp8": (dict(precision="nvfp4", profile=B200), dict(precision="nvfp4", profile=B200, flags={"--fp8-format": "e4m3"})),
    "fp4_param_gather": (dict(precision="nvfp4", profile=B200, fp4_param_gather=True), dict(fp4_param_gather=True)),
    "fp4_weight_shards": (dict(precision="nvfp4", profile=B200, tp=2, fp4_param_gather=True, flags={"--tensor-parallel-num-weight-shards": 4}),
                          dict(precision="nvfp4", profile=B200, tp=2, flags={"--tensor-parallel-num-weight-shards": 4})),
    "nvfp4_hardware": (dict(precision="nvfp4", profile=B200), dict(precision="nvfp4", profile=H100)),
    "fp4_transformer_engine": (dict(precision="mxfp8", profile=B200), dict(precision="nvfp4", profile=B200)),
    # --first-last-layers-bf16 (constraints/rules/bf16_layers.py); Llama-3.1-8B has 32 layers
    "bf16_layers_delayed_scaling": (dict(precision="fp8-tensorwise", bf16_layers=(1, 1)), dict(precision="fp8-delayed", bf16_layers=(1, 1))),
    "bf16_layers_per_stage": (dict(precision="fp8-tensorwise", pp=4, bf16_layers=(8, 8)),
                              dict(precision="fp8-tensorwise", pp=4, bf16_layers=(1, 9))),
    # hybrid Mamba (constraints/rules/hybrid.py); mamba_fp8_width's illegal case needs a non-bundled shape: tests/constraints/models/test_hybrid_mamba.py
    "hybrid_pipeline_flags": (dict(model=NH8, pp=2, pipeline_layout="Et*26|t*26L"),
                              dict(model=NH8, pp=2, pipeline_layout="Et*26|t*26L", flags={"--pipeline-model-parallel-layout": "Et*26|t*26L"})),
    "hybrid_virtual_pipeline": (dict(model=NH8, pp=2, vpp=2, schedule="interleaved", pipeline_layout="Et*13|t*13|t*13|t*13L"),
                                dict(model=NH8, pp=2, vpp=2, schedule="interleaved")),
    "mamba_heads_split": (dict(model=NH8, tp=8, cp=1), dict(model=NH8, world=16, tp=16, gbs=64)),
    "mamba_fp8_width": (dict(model=NH8, precision="fp8-tensorwise"), None),
    "latent_moe_shared_expert_overlap": (dict(model=SUPER, world=64, ep=64, gbs=64),
                                         dict(model=SUPER, world=64, ep=64, gbs=64, moe_shared_expert_overlap=True)),
    # unfused attention backends (constraints/rules/attention_backend.py)
    "unfused_attention_without_cp": (dict(attention_backend="unfused", cp=1), dict(attention_backend="local", cp=2)),
    "local_attention_query_groups": (dict(attention_backend="local", tp=8), dict(attention_backend="local", tp=16, world=16)),
    "unfused_attention_projection": (dict(attention_backend="flash"), dict(attention_backend="unfused")),
    # per-layer attention variants (constraints/rules/layer_variants.py)
    "no_rope_freq": (dict(model="Llama-4-Scout-17B-16E", world=16, ep=16, flags={"--no-rope-freq": 4}),
                     dict(model="Llama-4-Scout-17B-16E", world=16, ep=16, flags={"--no-rope-freq": 5})),
    "top1_router_pre_softmax": (dict(model="Llama-4-Scout-17B-16E", world=16, ep=16, flags={"--moe-router-topk": 1, "--moe-router-pre-softmax": True}),
                                dict(model="Llama-4-Scout-17B-16E", world=16, ep=16, flags={"--moe-router-topk": 1})),
    # Transformer Engine's context-parallel asserts (TE d0067d0d context_parallel.py attn_forward_func_with_cp)
    "cp_comm_type_for_attention_variant": (dict(model="gpt-oss-20b", cp=2, cp_comm_type="a2a"),
                                           dict(model="gpt-oss-20b", cp=2, cp_comm_type="p2p")),
    # --deterministic-mode (constraints/rules/determinism.py)
    "deterministic_mode": (dict(flags={"--deterministic-mode": True}, cross_entropy_loss_fusion=False, env={"NCCL_ALGO": "Ring"}),
                           dict(flags={"--deterministic-mode": True}, cross_entropy_loss_fusion=False, env={"NCCL_ALGO": "Tree"})),
}


def _rule_names(violations):
    return {v.rule for v in violations}


def test_every_rule_has_cases():
    names = {fn.__name__ for fn in RULES} | {"pipeline_layout"}
    check_rules(rin())  # registers feature rules
    names = {fn.__name__ for fn in RULES}
    covered = set(CASES) | {"one_virtual_pipeline_spec"}
    assert names - covered == set(), f"rules without a legal/illegal test: {names - covered}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_legal_and_illegal(name):
    legal, illegal = CASES[name]
    assert name not in _rule_names(check_rules(rin(**legal))), check_rules(rin(**legal))
    if illegal is None:  # the bundled loaders never produce the illegal combination
        return
    found = [v for v in check_rules(rin(**illegal)) if v.rule == name]
    assert found, f"{name} did not fire on {illegal}"
    assert found[0].fix and "\n" not in found[0].message


def test_fixes_name_a_legal_value():
    v = [v for v in check_rules(rin(model="Llama-2-13b", tp=16, world=16, gbs=64)) if v.rule == "heads_divisible_by_tp"][0]
    assert "tensor-model-parallel-size" in v.fix
    fixed_tp = int(v.fix.split()[-1])
    assert not [x for x in check_rules(rin(model="Llama-2-13b", tp=fixed_tp, world=16, gbs=64)) if x.rule == "heads_divisible_by_tp"]


def test_sequence_parallel_at_tp1_is_a_warning_not_an_error():
    v = [v for v in check_rules(rin(tp=1, sequence_parallel=True)) if v.rule == "sequence_parallel_needs_tp"][0]
    assert v.severity == "warning"


def test_expert_grid_uses_megatron_default_etp_equal_tp():
    """Published Qwen3-235B 256 x H100 TP2/PP8/VP4/EP32 (runs.csv MBR-106) leaves ETP empty. Megatron defaults
    --expert-tensor-parallel-size to TP (megatron-rules.md [2]): 2*32*8 = 512 does not divide 256, so the rule is
    right; the recipe ran with Megatron-Bridge's preset ETP=1 (qwen3_workload_base_configs.py), which bench/runs.py
    now assumes."""
    kw = dict(model="Qwen3-235B-A22B", world=256, tp=2, pp=8, vpp=4, ep=32, gbs=8192, sequence_parallel=True,
              schedule="interleaved", account_for_embedding_in_pipeline_split=True, account_for_loss_in_pipeline_split=True)
    assert "expert_grid" in _rule_names(check_rules(rin(**kw)))
    assert "expert_grid" not in _rule_names(check_rules(rin(etp=1, **kw)))


def test_torch_fsdp2_rejects_pp_and_ep_like_megatron():
    """NeMo AutoModel rows (runs.csv AUTOMODEL-447..450) run FSDP2 with PP and EP; Megatron-LM's --use-torch-fsdp2
    does not support pipeline or expert parallelism (megatron-rules.md [37]; ROCm/Megatron-LM README: "FSDP-v2 is not
    supported with pipeline parallelism, expert parallelism, MCore's distributed optimizer..."), so those rows are
    not Megatron recipes and the rule stays."""
    kw = dict(model="Qwen3-30B-A3B", dp_sharding="torch_fsdp2", overlap_param_gather=False, gbs=512)
    assert "torch_fsdp2" in _rule_names(check_rules(rin(ep=8, **kw)))
    assert "torch_fsdp2" not in _rule_names(check_rules(rin(ep=1, **kw)))


def test_a2a_context_parallelism_scatters_the_key_value_groups_too():
    """TE: "cp_comm_type='a2a' requires num_heads % cp_size == 0 for Q, K, V". Llama-3.1-8B at TP 2 holds 16 query heads
    but 4 key/value groups per rank: CP 8 divides the first, not the second."""
    found = [v for v in check_rules(rin(world=16, tp=2, cp=8, cp_comm_type="a2a", seq=65536, gbs=8)) if v.rule == "cp_a2a_heads"]
    assert found and "key/value groups per TP rank = 4" in found[0].message
    assert not [v for v in check_rules(rin(world=16, tp=2, cp=4, cp_comm_type="a2a", seq=65536, gbs=8)) if v.rule == "cp_a2a_heads"]


@pytest.mark.parametrize("model, kind, legal", [
    ("gpt-oss-20b", "a2a", True), ("gpt-oss-20b", "allgather", False), ("gpt-oss-20b", "p2p", False),  # sinks: a2a only
    ("Mistral-7B-v0.1", "allgather", True), ("Mistral-7B-v0.1", "a2a", True), ("Mistral-7B-v0.1", "p2p", False),
    ("Llama-3.1-8B", "p2p", True),
])
def test_context_parallel_communication_of_windowed_and_sink_attention(model, kind, legal):
    found = [v for v in check_rules(rin(model=model, cp=2, cp_comm_type=kind)) if v.rule == "cp_comm_type_for_attention_variant"]
    assert (not found) is legal


def test_a_micro_batch_group_below_pp_is_named_with_its_own_fix():
    """schedules.py asserts the group (--microbatch-group-size-per-virtual-pipeline-stage) is at least PP; a batch size
    cannot fix that, so the fix names the group."""
    found = [v for v in check_rules(rin(pp=8, vpp=2, schedule="interleaved", microbatch_group_size=4, gbs=8, world=8))
             if v.rule == "interleaved_microbatches"]
    assert found and "at least PP=8" in found[0].message
    assert found[0].fix.startswith("use --microbatch-group-size-per-virtual-pipeline-stage 8")


def test_tp_comm_overlap_across_nodes_of_an_nvl72_rack_is_legal():
    """Multi-node NVLink (GB200 NVL72, 72 GPUs in one NVLink domain): userbuffers use the fabric, TP 16 overlaps."""
    gb200 = load_profile("gb200-nvl72")
    x = rin(tp=16, world=16, sequence_parallel=True, tp_comm_overlap=True, profile=gb200)
    assert "tp_comm_overlap_within_nvlink" not in _rule_names(check_rules(x))
