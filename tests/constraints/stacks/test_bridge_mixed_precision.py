"""Megatron-Bridge's mixed_precision decides the precision a run trains with: MixedPrecisionConfig.setup copies its
fields over the model, optimizer and DDP configs (src/megatron/bridge/training/mixed_precision.py @067f987d,
update_config_with_precision_overrides). So a `model.fp4` next to `mixed_precision: bf16_mixed` trains bf16, a
mapping's fp8 recipe defaults to tensorwise (not Megatron's delayed), and the registered recipes carry their
fp8 / fp4 param gather, bf16 layers and gradient-reduce dtype. `render --format bridge` writes the precision there."""
from __future__ import annotations

import pytest
import yaml

from constraints.case import Case
from constraints.models.load import load_model
from constraints.read import load_check_input
from constraints.spec import JobSpec, Placement, Precision, Recipe
from constraints.stacks.bridge_precision import RECIPES, precision_args, recipe_name
from templates.stack_render import render_bridge
from tests.helpers.builders import TESTS

BASE = yaml.safe_load((TESTS / "data" / "stack_configs" / "bridge-llama8b-legal.yaml").read_text())


def _load(tmp_path, mixed, model_extra=None, ddp_extra=None, hardware="b200"):
    data = {**BASE, "model": {**BASE["model"], **(model_extra or {})}, "ddp": {**BASE["ddp"], **(ddp_extra or {})}}
    if mixed is None:
        data.pop("mixed_precision")
    else:
        data["mixed_precision"] = mixed
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_check_input(str(path), hardware, 1, 8)


def test_mixed_precision_overrides_the_model_sections_precision(tmp_path):
    loaded = _load(tmp_path, "bf16_mixed", model_extra={"fp4": "e2m1", "fp4_recipe": "nvfp4"})
    assert loaded.case.job.precision == Precision.bf16
    assert any("model.fp4: 'e2m1' is replaced by mixed_precision's None" in w.message for w in loaded.warnings)
    # without a mixed_precision section the model's fields stand (ConfigContainer.mixed_precision defaults to None)
    assert _load(tmp_path, None, model_extra={"fp4": "e2m1", "bf16": True}).case.job.precision == Precision.nvfp4


def test_a_mappings_fp8_recipe_defaults_to_tensorwise_and_its_bf16_layers_to_none(tmp_path):
    job = _load(tmp_path, {"bf16": True, "fp8": "hybrid"}).case.job
    assert job.precision == Precision.fp8_tensorwise and not job.has_bf16_layers
    job = _load(tmp_path, {"bf16": True, "fp8": "hybrid", "first_last_layers_bf16": True, "num_layers_at_end_in_bf16": 2}).case.job
    assert (job.bf16_layers_at_start, job.bf16_layers_at_end) == (0, 2)


@pytest.mark.parametrize("name,precision,fp8_gather,fp4_gather,layers", [
    ("bf16_with_mxfp8_mixed", Precision.mxfp8, True, False, (0, 0)),
    ("bf16_with_fp8_delayed_scaling_mixed", Precision.fp8_delayed, True, False, (0, 0)),
    ("bf16_with_fp8_current_scaling_mixed", Precision.fp8_tensorwise, True, False, (1, 1)),
    ("bf16_with_fp8_subchannel_scaling_mixed", Precision.fp8_blockwise, False, False, (0, 0)),
    ("nemotron_3_super_bf16_with_nvfp4_mixed", Precision.nvfp4, False, True, (0, 14)),
])
def test_registered_recipes_read_with_all_their_fields(tmp_path, name, precision, fp8_gather, fp4_gather, layers):
    loaded = _load(tmp_path, name)
    job, recipe = loaded.case.job, loaded.case.recipe
    assert job.precision == precision and (job.bf16_layers_at_start, job.bf16_layers_at_end) == layers
    assert (recipe.fp8_param_gather, recipe.fp4_param_gather) == (fp8_gather, fp4_gather)


def test_gradient_reduce_dtype_follows_mixed_precision_over_ddp(tmp_path):
    assert not _load(tmp_path, "bf16_mixed", ddp_extra={"grad_reduce_in_fp32": False}).case.recipe.grad_reduce_in_bf16
    assert _load(tmp_path, {"bf16": True, "grad_reduce_in_fp32": False}).case.recipe.grad_reduce_in_bf16
    assert _load(tmp_path, None, model_extra={"bf16": True}, ddp_extra={"grad_reduce_in_fp32": False}).case.recipe.grad_reduce_in_bf16


def test_every_registered_recipe_names_itself_back():
    for name, fields in RECIPES.items():
        assert recipe_name(fields) == name and precision_args(fields)


def test_bridge_render_writes_precision_where_bridge_reads_it(tmp_path):
    job = JobSpec(seq_length=8192, global_batch_size=64, precision=Precision.nvfp4, bf16_layers_at_end=14)
    case = Case(model=load_model("Llama-3.1-8B"), job=job, recipe=Recipe(tp=2, sequence_parallel=True, fp4_param_gather=True),
                placement=Placement(hardware="b200", num_nodes=1, gpus_per_node=8))
    text = render_bridge(case)
    data = yaml.safe_load(text)
    assert data["mixed_precision"] == "nemotron_3_super_bf16_with_nvfp4_mixed"
    assert not {"fp4", "fp4_recipe", "first_last_layers_bf16", "bf16"} & set(data["model"])
    path = tmp_path / "rendered.yaml"
    path.write_text(text)
    back = load_check_input(str(path), "b200", 1, 8).case
    assert back.job == job and back.recipe.fp4_param_gather


@pytest.mark.parametrize("mixed,message", [
    ({"bf16": True, "fp8": True}, "mixed_precision.fp8: True is not one of e4m3, hybrid"),
    ({"bf16": "yes"}, "mixed_precision.bf16: 'yes' is not true or false"),
    ({"bf16": True, "fp8": "hybrid", "num_layers_at_end_in_bf16": -1}, "mixed_precision.num_layers_at_end_in_bf16: -1"),
    ("bf16_mixd", "mixed_precision: bf16_mixd is not a recipe shardplan knows"),
])
def test_bad_values_are_one_line_errors(tmp_path, mixed, message):
    from constraints.read import InputError

    with pytest.raises(InputError, match=message):
        _load(tmp_path, mixed)
