"""--mtp-use-repeated-layer: one MTP block's weights run at every depth (Megatron-LM @ d98e8a64
megatron/core/transformer/multi_token_prediction.py MultiTokenPredictionBlock._build_layers: "only 1 layer is created
and applied mtp_num_layers times"). Nemotron 3 Super's Megatron-Bridge recipes train it so (mtp_num_layers 2,
mtp_use_repeated_layer True over the HF config's one MTP layer): weights, gradients and optimizer state hold one block,
while activations and FLOPs count every depth."""
from __future__ import annotations

import json

import pytest

from constraints.megatron.argv_to_specs import parse_megatron_args
from constraints.memory.per_rank import memory_report
from constraints.models.load import MODELS_DIR, model_from_mapping
from constraints.models.params import mtp_params, param_counts
from constraints.spec import JobSpec, Recipe
from hardware.profile import load_profile
from measure.projection.flops import megatron_flops
from templates.recipe_args import recipe_to_megatron_args

SUPER = "Nemotron-3-Super-120B-A12B"
MTP_BLOCK_PARAMS = 2_942_324_736  # the release's MTP layer tensors (tests/constraints/memory/test_hybrid_mtp.py)


def _super(depth: int, repeated: bool):
    raw = json.loads((MODELS_DIR / f"{SUPER}.json").read_text())
    m = model_from_mapping({**raw, "num_nextn_predict_layers": depth}, f"{SUPER}-mtp{depth}")
    return m.model_copy(update={"mtp_repeated_layer": repeated})


def test_a_repeated_layer_holds_one_block_of_weights_at_any_depth():
    assert mtp_params(_super(2, True)) == mtp_params(_super(1, False)) == MTP_BLOCK_PARAMS
    assert mtp_params(_super(2, False)) == 2 * MTP_BLOCK_PARAMS
    assert param_counts(_super(2, True), include_mtp=True).total == 123_611_012_096  # the release's tensors, once


@pytest.mark.parametrize("tp,ep", [(1, 8), (2, 64)])
def test_memory_keeps_one_block_of_weights_and_every_depth_of_activations(tp, ep):
    job = JobSpec(seq_length=8192, global_batch_size=512)
    recipe = Recipe(tp=tp, ep=ep, etp=1, sequence_parallel=tp > 1)
    cap = load_profile("gb200-nvl72").hbm_capacity_bytes
    one, two_shared, two = (memory_report(_super(d, r), job, recipe, 64, cap).terms for d, r in ((1, False), (2, True), (2, False)))
    for term in ("weights", "gradients", "optimizer_state"):
        assert two_shared[term] == one[term] < two[term]
    assert two_shared["activations"] == two["activations"] > one["activations"]


def test_flops_count_every_depth_of_a_repeated_layer():
    def flops(m):
        return megatron_flops(m, 8192, 512, 131072)
    assert flops(_super(2, True)) == flops(_super(2, False)) > flops(_super(1, False))


def test_the_flag_is_read_and_rendered_back():
    m = _super(2, True)
    job, recipe = JobSpec(seq_length=8192, global_batch_size=512), Recipe(tp=1, ep=64, etp=1)
    argv = recipe_to_megatron_args(m, job, recipe)
    assert "--mtp-use-repeated-layer" in argv and argv[argv.index("--mtp-num-layers") + 1] == "2"
    back = parse_megatron_args(argv, world_size=64).model
    assert (back.mtp_num_layers, back.mtp_repeated_layer, back.mtp_hybrid_pattern) == (2, True, "*E")
    assert "--mtp-use-repeated-layer" not in recipe_to_megatron_args(_super(2, False), job, recipe)


def test_a_scripts_mtp_flags_override_the_models_depth(tmp_path):
    """--model completes a script's shape, but the MTP depth is the script's training choice (Megatron-Bridge trains
    Super at 2 repeated depths over the HF config's 1): stated MTP flags replace the model's, they are not a conflict."""
    from constraints.read import load_check_input

    args = tmp_path / "args.txt"
    args.write_text("--tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 64 "
                    "--expert-tensor-parallel-size 1 --micro-batch-size 1 --global-batch-size 512 --seq-length 8192 "
                    "--bf16 --mtp-num-layers 2 --mtp-use-repeated-layer\n")
    model = load_check_input(str(args), "gb200-nvl72", 16, 4, model=SUPER).case.model
    assert (model.mtp_num_layers, model.mtp_repeated_layer, model.mtp_hybrid_pattern) == (2, True, "*E")
    args.write_text(args.read_text().replace(" --mtp-num-layers 2 --mtp-use-repeated-layer", ""))
    model = load_check_input(str(args), "gb200-nvl72", 16, 4, model=SUPER).case.model
    assert (model.mtp_num_layers, model.mtp_repeated_layer) == (1, False)  # silent script: the model's own depth


def test_ep_overlap_allows_at_most_one_mtp_layer():
    """TransformerConfig.__post_init__ @ d98e8a64: 'MTP supports at most one layer when enabling
    overlap_moe_expert_parallel_comm' (mtp_num_layers in (None, 0, 1)), a repeated layer included; found by the
    Megatron differential (bench/megatron/diff.py, seed 7)."""
    from constraints.rules.registry import RuleInput, check_rules

    job = JobSpec(seq_length=8192, global_batch_size=512)
    recipe = Recipe(tp=1, ep=64, etp=1, overlap_moe_expert_parallel_comm=True)

    def said(model):
        return [v.message for v in check_rules(RuleInput(model, job, recipe, 64)) if v.rule == "ep_comm_overlap"]
    assert said(_super(1, False)) == []
    assert said(_super(2, True)) == ["--overlap-moe-expert-parallel-comm needs at most one MTP layer (--mtp-num-layers is 2)"]


def test_an_mtp_depth_past_the_bound_is_one_line_naming_the_flag(tmp_path):
    from constraints.read import InputError, load_check_input

    args = tmp_path / "args.txt"
    args.write_text("--tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 64 "
                    "--micro-batch-size 1 --global-batch-size 512 --seq-length 8192 --bf16 --mtp-num-layers 20\n")
    with pytest.raises(InputError, match=r"^--model Nemotron-3-Super-120B-A12B: --mtp-num-layers: .* \(got 20\); fix --mtp-num-layers$"):
        load_check_input(str(args), "gb200-nvl72", 16, 4, model=SUPER)
