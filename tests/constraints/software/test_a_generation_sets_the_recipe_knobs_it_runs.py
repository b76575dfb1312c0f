"""A generation is applied through the recipe knobs the projection prices (constraints/software/apply.py)."""
import pytest

from constraints.models.load import load_model
from constraints.software.apply import apply_generation, solve_pins
from constraints.software.generation import SoftwareError, newest, resolve
from constraints.spec import DataParallelSharding, JobSpec, MoeDispatcher, Recipe, Recompute, RecomputeModule

DENSE = load_model("Llama-3.1-8B")
MOE = load_model("Mixtral-8x7B-v0.1")
JOB = JobSpec(seq_length=2048, global_batch_size=512, precision="fp16")


def test_2021_runs_local_modules_plain_ddp_and_no_overlap_where_the_recipe_is_silent():
    recipe, notes = apply_generation(resolve("megatron-lm:2021-04"), DENSE, JOB, Recipe(tp=2))
    assert recipe.local_transformer_impl
    assert recipe.dp_sharding == DataParallelSharding.none and not recipe.overlap_param_gather
    assert not recipe.overlap_grad_reduce and not recipe.sp_active
    assert len(notes) == 3 and any("Transformer Engine" in n for n in notes)  # SP is off by default: no note


def test_the_newest_generation_changes_nothing():
    recipe = Recipe(tp=2, sequence_parallel=True)
    assert apply_generation(newest(), DENSE, JOB, recipe) == (recipe, [])


@pytest.mark.parametrize("recipe, words", [
    (Recipe(dp_sharding="distributed_optimizer"), ["distributed optimizer", "since 2022-02"]),
    (Recipe(tp=2, sequence_parallel=True), ["sequence parallelism", "since 2022-04"]),
    (Recipe(recompute=Recompute.selective(RecomputeModule.core_attn)), ["selective recompute"]),
])
def test_a_stated_knob_the_generation_lacks_is_refused_in_one_line(recipe, words):
    with pytest.raises(SoftwareError) as exc:
        apply_generation(resolve("megatron-lm:2021-04"), DENSE, JOB, recipe)
    assert "\n" not in str(exc.value) and all(w in str(exc.value) for w in words)


def test_fp8_needs_transformer_engine():
    with pytest.raises(SoftwareError, match="Transformer Engine"):
        apply_generation(resolve("megatron-lm:2022-06"), DENSE, JobSpec(seq_length=2048, global_batch_size=512, precision="fp8-tensorwise"), Recipe())


def test_before_deepep_the_dispatcher_is_alltoall():
    # a bench assumption (nothing stated, as bench/runs.py passes for a row silent on it) is overruled
    recipe, _ = apply_generation(resolve("nemo:24.07"), MOE, JOB, Recipe(ep=8, moe_dispatcher="flex"), stated=set())
    assert recipe.moe_dispatcher == MoeDispatcher.alltoall
    with pytest.raises(SoftwareError, match="flex dispatcher"):
        apply_generation(resolve("nemo:24.07"), MOE, JOB, Recipe(ep=8, moe_dispatcher="flex"))


def test_solve_keeps_to_the_generation_and_refuses_what_it_cannot_search():
    assert solve_pins(resolve("nemo:24.07"), MOE, {}) == {"moe_dispatcher": ["alltoall"], "ep_comm_overlap": [False],
                                                          "dp_sharding": ["distributed_optimizer", "none"]}
    assert solve_pins(newest(), MOE, {}) == {}
    with pytest.raises(SoftwareError, match="moe-dispatcher flex"):
        solve_pins(resolve("nemo:24.07"), MOE, {"moe_dispatcher": ["flex"]})
    with pytest.raises(SoftwareError, match="check a recipe with --software"):
        solve_pins(resolve("megatron-lm:2021-04"), DENSE, {})


def test_torch_native_stacks_are_refused():
    with pytest.raises(SoftwareError, match="torch-native"):
        apply_generation(resolve("torchtitan:2025-06"), DENSE, JOB, Recipe())


def test_before_megatron_fsdp_the_sharding_is_the_distributed_optimizer():
    # Megatron FSDP landed in NVIDIA/Megatron-LM d165a8548b (2025-02-26); NeMo 24.07 predates it
    recipe, notes = apply_generation(resolve("nemo:24.07"), DENSE, JOB, Recipe(dp_sharding="megatron_fsdp"), stated=set())
    assert recipe.dp_sharding == DataParallelSharding.distributed_optimizer and "since 2025-02" in notes[0]
    with pytest.raises(SoftwareError, match="Megatron FSDP"):
        apply_generation(resolve("nemo:24.07"), DENSE, JOB, Recipe(dp_sharding="megatron_fsdp"))
    with pytest.raises(SoftwareError, match="dp-sharding megatron_fsdp"):
        solve_pins(resolve("nemo:24.07"), DENSE, {"dp_sharding": ["megatron_fsdp"]})
    assert "dp_sharding" not in solve_pins(resolve("megatron-bridge:25.09"), DENSE, {})
