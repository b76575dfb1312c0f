"""At DP x CP = 1 (and expert DP = 1) the distributed optimizer and Megatron-FSDP shard over a group of one: the same run
as plain DDP. `solve` listed each such recipe two or three times (distributed_optimizer, none, megatron_fsdp) with
the same step time; now once, as the distributed optimizer's row. A pinned sharding is still searched."""
from __future__ import annotations

from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement
from hardware.profile import load_profile
from solver.tables.rules import one_sharding_when_nothing_shards
from solver.workflow import solve_case

DOMAIN = ["distributed_optimizer", "none", "megatron_fsdp"]


def test_only_the_distributed_optimizers_row_is_kept_when_nothing_shards():
    assert one_sharding_when_nothing_shards(DOMAIN, [True, True, True], 1, 1) == [True, False, False]
    assert one_sharding_when_nothing_shards(DOMAIN, [False, True, True], 1, 1) == [False, True, True]  # its twin illegal
    assert one_sharding_when_nothing_shards(DOMAIN, [True, True, True], 2, 1) == [True, True, True]    # DP 2 shards
    assert one_sharding_when_nothing_shards(DOMAIN, [True, True, True], 1, 4) == [True, True, True]    # experts shard
    assert one_sharding_when_nothing_shards(["none"], [True], 1, 1) == [True]                          # pinned


def _solve(pins: dict):
    model, job = load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=32)
    place = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=4)
    result, _ = solve_case(model, job, place, load_profile(place.hardware), pins, {}, 6, 0.0, "cpsat", 60.0)
    return result.ranked


def test_a_tp4_solve_on_four_gpus_lists_each_recipe_once():
    ranked = _solve({"tp": [4]})
    keys = [r.recipe.model_copy(update={"dp_sharding": "none", "overlap_param_gather": False}) for r in ranked]
    assert len(ranked) == 6 and len(set(map(repr, keys))) == 6
    assert {r.recipe.dp_sharding.value for r in ranked} == {"distributed_optimizer"}
    assert {r.recipe.dp_sharding.value for r in _solve({"tp": [4], "dp_sharding": ["none"]})} == {"none"}
