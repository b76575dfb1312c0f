"""Each rule's declared `reads` (constraints.rules.registry.rule) covers every Recipe field its verdict depends on.

Why: solver/tables/rules.py memoises a rule's verdict by the values of the fields it declares, so an
undeclared read would make the solver silently disagree with `check`. For random inputs (models, jobs,
world sizes, hardware, env, flags and every Recipe field drawn from pools that reach each rule's branches)
this re-draws all fields a rule does not declare and requires the identical verdict (message included).
"""
from __future__ import annotations

import random

import pytest

from constraints.models.load import load_model
from constraints.rules.registry import RULES, RuleInput
from constraints.spec import (
    AttentionBackend,
    CpCommType,
    DataParallelSharding,
    FsdpShardingStrategy,
    JobSpec,
    MoeDispatcher,
    PipelineSchedule,
    Recipe,
    Recompute,
    RecomputeGranularity,
    RecomputeMethod,
    RecomputeModule,
)
from hardware.profile import load_profile

M = RecomputeModule
POOLS = {
    "tp": [1, 2, 3, 4, 8], "pp": [1, 2, 3, 4, 8], "vpp": [1, 2, 3, 4], "cp": [1, 2, 3, 4], "ep": [1, 2, 4, 8, 16],
    "etp": [None, 1, 2, 4], "mbs": [1, 2, 3, 4], "sequence_parallel": [False, True],
    "recompute": [Recompute.none(), Recompute.selective(M.core_attn), Recompute.selective(M.core_attn, M.moe_act),
                  Recompute.selective(M.layernorm, M.mlp), Recompute.selective(M.mla_up_proj, M.moe),
                  Recompute.selective(M.shared_experts), Recompute.full(RecomputeMethod.uniform, 1),
                  Recompute.full(RecomputeMethod.block, 4), Recompute.full(RecomputeMethod.block, 40),
                  Recompute(granularity=RecomputeGranularity.full), Recompute(modules=(M.core_attn,)),
                  Recompute(granularity=RecomputeGranularity.selective, method=RecomputeMethod.uniform, num_layers=1)],
    "dp_sharding": list(DataParallelSharding), "fsdp_sharding_strategy": list(FsdpShardingStrategy), "schedule": list(PipelineSchedule),
    "first_stage_layers": [None, 1, 3, 15], "last_stage_layers": [None, 2, 17],
    "account_for_embedding_in_pipeline_split": [False, True], "account_for_loss_in_pipeline_split": [False, True],
    "pipeline_layout": [None, "Et*16|t*16L", "Et*8|t*8|t*8|t*8L", "Et*3|t*4|t*4|t*3L", "Ex|tL"],
    "microbatch_group_size": [None, 2, 3, 4], "overlap_p2p_comm": [True, False], "overlap_grad_reduce": [True, False],
    "overlap_param_gather": [True, False], "tp_comm_overlap": [False, True], "moe_dispatcher": list(MoeDispatcher),
    "moe_grouped_gemm": [True, False], "overlap_moe_expert_parallel_comm": [False, True], "fp8_param_gather": [False, True],
    "fp4_param_gather": [False, True], "grad_reduce_in_bf16": [False, True],
    "cross_entropy_loss_fusion": [True, False], "num_distributed_optimizer_instances": [1, 2, 3],
    "cp_comm_type": list(CpCommType), "hierarchical_cp_sizes": [None, (2, 2), (2,), (3,)],
    "distribute_saved_activations": [False, True], "moe_shared_expert_overlap": [False, True],
    "cpu_offloading_num_layers": [0, 1], "make_vocab_size_divisible_by": [128, 64],
    "attention_backend": list(AttentionBackend), "masked_softmax_fusion": [True, False],
    "attention_softmax_in_fp32": [False, True], "local_transformer_impl": [False, True],
    "defer_embedding_wgrad_compute": [False, True], "wgrad_deferral_limit": [0, 2], "compiled_loss_fusion": [False, True],
}
MODELS = ["Llama-3.1-8B", "Mixtral-8x7B-v0.1", "Moonlight-16B-A3B", "gpt-oss-20b", "GPT-3-175B", "Llama-2-13b"]
JOBS = [JobSpec(seq_length=4096, global_batch_size=64), JobSpec(seq_length=2048, global_batch_size=48, precision="fp8-delayed"),
        JobSpec(seq_length=4100, global_batch_size=16, precision="mxfp8", optimizer="muon"),
        JobSpec(seq_length=6000, global_batch_size=24, precision="fp16")]
ENVS = [None, {}, {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}]
FLAGS = [{}, {"use_tp_pp_dp_mapping": True}]


def _verdict(fn, x):
    try:
        return fn(x)
    except Exception as exc:  # a raise is a verdict too; it must not depend on undeclared fields either
        return (type(exc).__name__, str(exc))


def test_pools_cover_every_recipe_field_and_reads_name_real_fields():
    assert set(POOLS) == set(Recipe.model_fields)
    for fn in RULES:
        assert fn.reads is not None, f"{fn.__name__}: declare reads= (the solver memoises by them)"
        assert fn.reads <= set(Recipe.model_fields), (fn.__name__, fn.reads - set(Recipe.model_fields))


@pytest.mark.parametrize("seed", range(4))
def test_verdicts_do_not_move_when_undeclared_fields_move(seed):
    rng = random.Random(seed)
    models = [load_model(n) for n in MODELS]
    profiles = [load_profile("h100-sxm-80gb"), load_profile("a100-sxm-80gb"), load_profile("b200"),
                load_profile("h100-sxm-80gb").model_copy(update={"compute_capability": 7.0})]

    def draw(fields):
        return {f: rng.choice(POOLS[f]) for f in fields}

    moved = 0
    for _ in range(120):
        base = Recipe().model_copy(update=draw(POOLS))
        ctx = dict(model=rng.choice(models), job=rng.choice(JOBS), world_size=rng.choice([8, 12, 16, 24, 48]),
                   profile=rng.choice(profiles), flags=rng.choice(FLAGS), env=rng.choice(ENVS))
        for fn in RULES:
            want = _verdict(fn, RuleInput(recipe=base, **ctx))
            free = [f for f in POOLS if f not in fn.reads]
            for _ in range(3):
                other = base.model_copy(update=draw(free))
                assert _verdict(fn, RuleInput(recipe=other, **ctx)) == want, (fn.__name__, base, other)
                moved += other != base
    assert moved > 1000  # the re-draws really changed recipes


def test_rules_register_in_one_order_whichever_module_is_imported_first():
    import subprocess
    import sys

    code = ("import {0}, constraints.rules.features; from constraints.rules.registry import RULES, layers_split; "
            "print(' '.join(f.__name__ for f in RULES))")
    orders = {subprocess.run([sys.executable, "-c", code.format(m)], capture_output=True, text=True, check=True).stdout
              for m in ("constraints.rules.registry", "constraints.rules.attention", "constraints.rules.pipeline")}
    assert len(orders) == 1
    assert orders.pop().split() == [fn.__name__ for fn in RULES]
