"""A forced render must not hide what makes a recipe illegal (the megatron_diff 'lossy render' class): fields a legal
recipe never sets are still written, so `check` on the script reports the same rule as `check` on the recipe."""
import pytest

from constraints.case import Case
from constraints.check import check_case
from constraints.megatron.argv_to_specs import parse_megatron_args
from constraints.models.load import load_model
from constraints.spec import JobSpec, Placement, Recipe, Recompute, RecomputeMethod, RecomputeModule
from hardware.profile import load_profile
from templates.recipe_args import recipe_to_megatron_args

PROF = load_profile("h100-sxm-80gb")
JOB = JobSpec(seq_length=4096, global_batch_size=64)
PLACE = Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8)
SELECTIVE_WITH_N = Recompute(granularity="selective", modules=(RecomputeModule.core_attn,), method=RecomputeMethod.block,
                             num_layers=2)


@pytest.mark.parametrize("recipe", [Recipe(tp=2, sequence_parallel=True, ep=2), Recipe(tp=2, sequence_parallel=True, recompute=SELECTIVE_WITH_N)])
def test_check_on_the_rendered_args_sees_the_same_violation(recipe):
    model = load_model("Llama-3.1-8B")
    direct = {v.rule for v in check_case(Case(model=model, job=JOB, recipe=recipe, placement=PLACE), PROF).violations
              if v.severity == "error"}
    assert direct, "the recipe must be illegal for this test to mean anything"
    cfg = parse_megatron_args(recipe_to_megatron_args(model, JOB, recipe), world_size=8)
    case = Case(model=cfg.model, job=cfg.job, recipe=cfg.recipe, placement=PLACE)
    rendered = {v.rule for v in check_case(case, PROF, flags=dict(cfg.raw), env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"}).violations
                if v.severity == "error"}
    assert direct <= rendered
