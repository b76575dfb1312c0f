"""`check --suggest`: the nearest legal, fitting recipe to a hand-written one, re-verified by check."""
from __future__ import annotations

from constraints.case import Case
from constraints.check import check_case
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Recipe
from hardware.profile import load_profile
from solver.suggest import suggest_fix

PL = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)


def test_illegal_tp_is_moved_to_the_nearest_legal_value_and_the_rest_kept():
    model, job = load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=32)
    case = Case(model=model, job=job, recipe=Recipe(tp=3, pp=2, mbs=1, sequence_parallel=True), placement=PL)
    assert not check_case(case, load_profile(PL.hardware)).legal
    out = suggest_fix(case)
    assert out["found"] and "tp" in out["changes"] and out["changes"]["tp"]["from"] == 3
    fixed = Recipe(**out["recipe"])
    assert check_case(case.model_copy(update={"recipe": fixed}), load_profile(PL.hardware)).ok
    assert out["changed_axes"] == len(out["changes"])  # every changed field is counted


def test_uneven_split_counts_as_a_change_when_the_answer_drops_it():
    model, job = load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=32)
    # 32 layers over PP 4 with first/last 7: a legal uneven split, made illegal by TP 3
    case = Case(model=model, job=job, recipe=Recipe(tp=3, pp=4, first_stage_layers=7, last_stage_layers=7), placement=PL)
    out = suggest_fix(case)
    assert out["found"]
    fixed = Recipe(**out["recipe"])
    kept_uneven = fixed.first_stage_layers is not None
    assert kept_uneven == ("uneven_stages" not in out["changes"])


def test_fields_not_searched_keep_the_users_values():
    model, job = load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=32)
    user = Recipe(tp=3, pp=2, mbs=1, make_vocab_size_divisible_by=64, cross_entropy_loss_fusion=True,
                  overlap_grad_reduce=True, dp_sharding="distributed_optimizer")
    case = Case(model=model, job=job, recipe=user, placement=PL)
    out = suggest_fix(case)
    fixed = Recipe(**out["recipe"])
    assert (fixed.make_vocab_size_divisible_by, fixed.cross_entropy_loss_fusion) == (64, True)
    assert "make_vocab_size_divisible_by" not in out["changes"] and "cross_entropy_loss_fusion" not in out["changes"]
    assert check_case(case.model_copy(update={"recipe": fixed}), load_profile(PL.hardware)).ok


def test_an_unfused_backend_is_kept_and_the_search_moves_what_makes_it_illegal():
    # the backend is not searched, so it is kept: CP 2 (illegal with it) goes to 1, local's TP 16 to a divisor of
    # the 8 query groups (the fastest such); a dense model's dispatcher settings are kept too (they change nothing),
    # so exactly one axis changes
    model, job = load_model("Llama-3.1-8B"), JobSpec(seq_length=4096, global_batch_size=32)
    for recipe, axis, legal in ((Recipe(tp=4, cp=2, sequence_parallel=True, attention_backend="unfused",
                                        moe_dispatcher="allgather"), "cp", {1}),
                                (Recipe(tp=16, sequence_parallel=True, attention_backend="local"), "tp", {1, 2, 4, 8})):
        placement = PL if recipe.tp < 16 else Placement(hardware="h100-sxm-80gb", num_nodes=2, gpus_per_node=8)
        case = Case(model=model, job=job, recipe=recipe, placement=placement)
        out = suggest_fix(case)
        assert out["found"] and list(out["changes"]) == [axis] and out["changes"][axis]["to"] in legal, out["changes"]
        fixed = Recipe(**out["recipe"])
        assert fixed.attention_backend == recipe.attention_backend and fixed.moe_dispatcher == recipe.moe_dispatcher
        assert check_case(case.model_copy(update={"recipe": fixed}), load_profile(PL.hardware)).ok


def test_the_search_answers_the_violations_of_rules_that_read_what_it_varies():
    from solver.suggest import answers

    # memory, and rules that read searched fields (world_divisible reads tp pp cp; layers_split the split fields)
    assert answers("memory_fits") and answers("world_divisible") and answers("layers_split")
    # a launch setting keeps its own fix (export CUDA_DEVICE_MAX_CONNECTIONS=1), though the rule reads tp and cp
    assert not answers("cuda_device_max_connections")
    # a rule that reads no recipe field fails for every recipe alike (a sequence longer than the position table)
    assert not answers("position_embeddings_cover_seq") and not answers("precision_supported")
    # a flag Megatron refuses while the script is read is no rule of the registry
    assert not answers("megatron_exits")
