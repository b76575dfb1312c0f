"""Megatron-FSDP --data-parallel-sharding-strategy: no_shard / optim / optim_grads / optim_grads_params shard
nothing / the optimizer state / also the gradients / also the parameters over DP x CP (Megatron-LM
megatron/core/distributed/fsdp/src/README.md, zero_dp_strategy 0-3). Read from a launch script, priced by memory,
written back by render."""
from __future__ import annotations

import pytest

from constraints.megatron.argv_to_specs import MegatronArgsError, parse_megatron_args
from constraints.memory.per_rank import static_from_params
from constraints.read import load_check_input
from constraints.spec import DataParallelSharding, FsdpShardingStrategy, JobSpec, Recipe

PARAMS = 8_030_261_248  # Llama-3.1-8B total parameters (published count); divisible by DP = 8
BIGGEST = 128_256 * 4_096  # its largest single layer: the embedding (vocab x hidden)
DP = 8
MODEL = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
         "--micro-batch-size 1 --global-batch-size 32 --bf16 --vocab-size 32000")
FSDP = " --use-megatron-fsdp --ckpt-format fsdp_dtensor"


def _static_bytes(strategy: FsdpShardingStrategy) -> int:
    r = Recipe(dp_sharding=DataParallelSharding.megatron_fsdp, fsdp_sharding_strategy=strategy)
    return sum(static_from_params(JobSpec(seq_length=4096, global_batch_size=64), r, DP, PARAMS, 0, BIGGEST).values())


def test_each_strategy_saves_exactly_what_it_does_not_shard():
    # by hand, per parameter: bf16 weight 2 B, fp32 main grad 4 B, Adam fp32 master + m + v 12 B (Korthikanti et
    # al. 2022 sec. 4 mixed precision; ZeRO paper, Rajbhandari et al. 2020, sec. 3); a shard is PARAMS / DP.
    # ZeRO-3 also gathers the biggest layer twice (current + prefetch, bf16) and holds its fp32 full grad;
    # ZeRO-2 holds only that full grad (its weights are whole).
    shard = PARAMS // DP
    zero3 = shard * (2 + 4 + 12) + 2 * BIGGEST * 2 + BIGGEST * 4
    assert _static_bytes(FsdpShardingStrategy.optim_grads_params) == zero3
    assert _static_bytes(FsdpShardingStrategy.optim_grads) - zero3 == (PARAMS - shard) * 2 + BIGGEST * 4 - BIGGEST * 8
    assert _static_bytes(FsdpShardingStrategy.optim) - zero3 == (PARAMS - shard) * (2 + 4) - BIGGEST * 8
    assert _static_bytes(FsdpShardingStrategy.no_shard) - zero3 == (PARAMS - shard) * (2 + 4 + 12) - BIGGEST * 8


def test_optim_is_the_distributed_optimizer_and_no_shard_is_ddp():
    job = JobSpec(seq_length=4096, global_batch_size=64)
    fsdp = Recipe(dp_sharding=DataParallelSharding.megatron_fsdp)
    for strategy, plain in ((FsdpShardingStrategy.optim, DataParallelSharding.distributed_optimizer),
                            (FsdpShardingStrategy.no_shard, DataParallelSharding.none)):
        got = static_from_params(job, fsdp.model_copy(update={"fsdp_sharding_strategy": strategy}), DP, PARAMS, 0, BIGGEST)
        assert got == static_from_params(job, Recipe(dp_sharding=plain), DP, PARAMS, 0, BIGGEST)


@pytest.mark.parametrize("strategy", [s.value for s in FsdpShardingStrategy])
def test_a_launch_script_with_the_flag_is_read_not_refused(tmp_path, strategy):
    p = tmp_path / "train.sh"
    p.write_text("#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
                 f"{MODEL}{FSDP} --data-parallel-sharding-strategy {strategy}\n")
    loaded = load_check_input(str(p), "h100-sxm-80gb", None, None)
    assert loaded.case.recipe.fsdp_sharding_strategy == FsdpShardingStrategy(strategy)
    assert "--data-parallel-sharding-strategy" not in loaded.unknown_flags + loaded.ignored_flags


def test_without_megatron_fsdp_the_flag_changes_nothing_and_a_bad_value_is_refused():
    plain = parse_megatron_args((MODEL + " --use-distributed-optimizer --data-parallel-sharding-strategy optim").split())
    assert plain.recipe.fsdp_sharding_strategy == FsdpShardingStrategy.optim_grads_params  # Megatron reads it only with FSDP
    with pytest.raises(MegatronArgsError, match="--data-parallel-sharding-strategy zero2"):
        parse_megatron_args((MODEL + FSDP + " --data-parallel-sharding-strategy zero2").split())


@pytest.mark.parametrize("strategy", list(FsdpShardingStrategy))
def test_render_writes_the_strategy_and_parsing_reads_it_back(strategy):
    from constraints.models.load import load_model
    from templates.recipe_args import recipe_to_megatron_args

    model, job = load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=64)
    recipe = Recipe(dp_sharding=DataParallelSharding.megatron_fsdp, fsdp_sharding_strategy=strategy)
    args = recipe_to_megatron_args(model, job, recipe)
    assert args[args.index("--data-parallel-sharding-strategy") + 1] == strategy.value
    back = parse_megatron_args(args).recipe
    assert (back.dp_sharding, back.fsdp_sharding_strategy) == (DataParallelSharding.megatron_fsdp, strategy)
