"""A Megatron-Bridge key that is no field of its section's dataclasses (a typo Bridge never applies) is an error
naming the nearest real field; a real field shardplan has no Megatron flag for stays "not modelled"
(constraints.stacks.field_names over the fields dumped in constraints.stacks.bridge_fields)."""
import subprocess
import sys

import pytest

from constraints.read import InputError, load_check_input
from constraints.stacks.field_names import bridge_fields, unknown_bridge_key
from tests.helpers.builders import REPO

DATA = REPO / "tests" / "data" / "stack_configs"


def test_a_misspelt_model_field_is_exit_2_naming_the_real_one():
    p = subprocess.run([sys.executable, "-m", "shardplan.cli.main", "check", str(DATA / "bridge-misspelt-tp.yaml"),
                        "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8"],
                       capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1
    assert p.stderr.startswith("error: model.tensor_model_paralel_size: no such field in Megatron-Bridge's model config")
    assert p.stderr.rstrip().endswith("did you mean model.tensor_model_parallel_size?")


def test_a_real_field_without_a_megatron_flag_stays_not_modelled(tmp_path):
    fixed = tmp_path / "bridge.yaml"
    fixed.write_text((DATA / "bridge-misspelt-tp.yaml").read_text().replace("paralel", "parallel")
                     .replace("grad_reduce_in_fp32: true", "grad_reduce_in_fp32: true\n  average_in_collective: true"))
    loaded = load_check_input(str(fixed), "h100-sxm-80gb", 1, 8)
    assert loaded.case.recipe.tp == 4
    # DistributedDataParallelConfig's; Megatron's flag is --ddp-average-in-collective, another dest
    assert "ddp.average_in_collective" in loaded.unknown_flags
    assert "ddp.grad_reduce_in_fp32" not in loaded.unknown_flags  # read: mixed_precision decides it (bridge_precision.py)


@pytest.mark.parametrize("path,message", [
    ("ddp.grad_reduce_in_fp32", None),
    ("model.activation_func", None),  # a TransformerConfig field (a mapping in the YAML)
    ("model.teacher", None),  # DistillationProvider's: a TransformerConfig subclass, not a GPTModelProvider
    ("model._target_", None),
    ("env_vars.NCCL_DEBUG", None),
    ("optimizer.finetune_lr", "optimizer.finetune_lr: no such field"),  # a recipe function's argument, not a field
    ("train.micro_batch_sise", "did you mean train.micro_batch_size?"),
    ("mixed_precision.fp8_recepe", "did you mean mixed_precision.fp8_recipe?"),
])
def test_field_or_not(path, message):
    got = unknown_bridge_key(path)
    assert (got is None) if message is None else (message in got)


def test_the_dump_holds_the_core_config_fields_of_each_section():
    # Megatron-Core's ModelParallelConfig / TransformerConfig / DistributedDataParallelConfig / OptimizerConfig
    assert {"tensor_model_parallel_size", "num_moe_experts", "kv_channels", "recompute_granularity"} <= bridge_fields("model")
    assert {"overlap_grad_reduce", "bucket_size", "data_parallel_sharding_strategy"} <= bridge_fields("ddp")
    assert {"lr", "use_distributed_optimizer", "adam_beta2"} <= bridge_fields("optimizer")
    assert {"micro_batch_size", "global_batch_size", "train_iters"} <= bridge_fields("train")
    assert bridge_fields("env_vars") is None


def test_an_override_file_with_a_misspelt_key_is_refused(tmp_path):
    overrides = tmp_path / "overrides.txt"
    overrides.write_text((DATA / "bridge-overrides-legal.txt").read_text() + "\nddp.overlap_grad_reduse=true\n")
    with pytest.raises(InputError, match=r"ddp.overlap_grad_reduse: .*did you mean ddp.overlap_grad_reduce\?"):
        load_check_input(str(overrides), "h100-sxm-80gb", 1, 8)


def test_every_configcontainer_section_is_read_as_bridge(tmp_path):
    """A YAML with ConfigContainer's fault-tolerance section is still a Bridge config (it was once refused as an
    unknown shape); the section's fields are real, so they stay "not modelled"."""
    with_ft = tmp_path / "bridge.yaml"
    text = (DATA / "bridge-misspelt-tp.yaml").read_text().replace("paralel", "parallel")
    with_ft.write_text(text + "\nnvrx_straggler:\n  enabled: false\ninprocess_restart:\n  enabled: false\n")
    loaded = load_check_input(str(with_ft), "h100-sxm-80gb", 1, 8)
    assert loaded.case.recipe.tp == 4
    assert {"nvrx_straggler.enabled", "inprocess_restart.enabled"} <= set(loaded.unknown_flags)
