"""A script that launches Megatron-Bridge's performance entry point (scripts/performance/run_recipe.py, or
setup_experiment.py / bootstrap.py / run_script.py) was refused as "no torchrun|python ... pretrain_*.py command", as if
it launched nothing. It runs a Python recipe, which has no pretrain_*.py argument list: the one-line error now names
the entry point and the recipe and family it passes (argument_parser.py `-mr/--model_recipe_name`,
`-m/--model_family_name`), and says which file check reads instead."""
from __future__ import annotations

import pytest

from constraints.megatron.launch_script import LaunchScriptError, extract_argv


def _refusal(text: str, env: dict | None = None) -> str:
    with pytest.raises(LaunchScriptError) as err:
        extract_argv(text, env=env)
    return str(err.value)


def test_run_recipe_is_named_with_its_recipe_and_family():
    msg = _refusal("MODEL=llama\ntorchrun --nproc_per_node 8 scripts/performance/run_recipe.py -m $MODEL "
                   "--model_recipe_name=llama3_8b -ng 8 --gpu b200\n")
    assert msg.startswith("the script runs Megatron-Bridge's run_recipe.py (recipe llama3_8b, family llama)")
    assert "ConfigContainer" in msg and "pretrain_*.py" in msg


def test_setup_experiment_through_a_function_is_named_without_an_unknown_recipe():
    msg = _refusal("go() {\n  python scripts/performance/setup_experiment.py -mr \"$1\" -ng 64\n}\ngo\n")
    assert msg.startswith("the script runs Megatron-Bridge's setup_experiment.py,")  # $1 unset: no recipe named


def test_a_script_with_no_launch_keeps_the_old_refusal():
    assert _refusal("echo hello\n").startswith("no `torchrun|python ... pretrain_*.py` command")


def test_only_the_entry_points_own_flags_name_the_recipe():
    """python's `-m torch.distributed.run` before the script is not Bridge's `-m`; a repeated `-mr` is argparse's last."""
    msg = _refusal("python -m torch.distributed.run --nproc_per_node 8 scripts/performance/run_recipe.py -m llama "
                   "-mr llama3_8b -mr qwen3_8b\n")
    assert msg.startswith("the script runs Megatron-Bridge's run_recipe.py (recipe qwen3_8b, family llama)")


def test_a_file_of_the_same_name_elsewhere_is_not_bridges():
    assert _refusal("python tools/bootstrap.py --install-deps\n").startswith("no `torchrun|python ... pretrain_*.py` command")
