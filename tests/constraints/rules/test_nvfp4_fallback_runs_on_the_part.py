"""The fix for NVFP4 on a part without it names only precisions that part runs: on A100 it was told to use MXFP8,
which `precision_supported` then refuses on the same part."""
import pytest

from constraints.models.load import load_model
from constraints.rules.features import precision_supported
from constraints.rules.fp4 import nvfp4_hardware
from constraints.rules.registry import RuleInput
from constraints.spec import JobSpec, Recipe
from hardware.profile import available_profiles, load_profile

SUGGESTED = {"mxfp8": "mxfp8", "tensorwise": "fp8-tensorwise", "delayed": "fp8-delayed", "--bf16": "bf16"}


def judge(rule, profile, precision):
    job = JobSpec(seq_length=4096, global_batch_size=64, precision=precision)
    return rule(RuleInput(model=load_model("Llama-3.1-8B"), job=job, recipe=Recipe(), world_size=8, profile=profile))


@pytest.mark.parametrize("name", available_profiles())
def test_every_precision_the_nvfp4_fix_names_runs_on_the_part(name):
    profile = load_profile(name)
    v = judge(nvfp4_hardware, profile, "nvfp4")
    if v is None:
        return
    named = [p for word, p in SUGGESTED.items() if word in v.fix]
    assert named, v.fix
    for precision in named:
        assert judge(precision_supported, profile, precision) is None, (name, v.fix, precision)


def test_a100_is_told_bf16_and_hopper_is_told_tensorwise():
    a100 = judge(nvfp4_hardware, load_profile("a100-sxm-80gb"), "nvfp4").fix
    assert "mxfp8" not in a100 and "--bf16" in a100
    h100 = judge(nvfp4_hardware, load_profile("h100-sxm-80gb"), "nvfp4").fix
    assert "tensorwise" in h100 and "mxfp8" not in h100
