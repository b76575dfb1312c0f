"""Stack configs hold values the way a Python namespace does, not the way a command line spells them: a tuple-typed
flag's pair (`window_size: [128, 0]`, Megatron's tuple_type) and a per-layer list (`window_attn_skip_freq: [1, 0, ...]`,
moe_freq_type) are read as the flag's text; two keys setting a flag that changes nothing shardplan judges
(Primus's `layernorm_epsilon` and `norm_epsilon`, both --norm-epsilon) are a note, not a refusal; and Megatron-LM's
validate_args-only assert on TE cross-entropy fusion is not held against a stack that runs it (AMD-AGI/Primus fd1eeabb
examples/mlperf/gpt_oss_20b/configs/MI355/gpt_oss_20B-FP8-mlperf-pretrain.yaml sets all of these and was refused)."""
from __future__ import annotations

import shutil

from constraints.read import load_check_input
from shardplan.verdict import check_and_project
from tests.helpers.builders import TESTS

DATA = TESTS / "data" / "stack_configs"


def _primus(tmp_path, extra: str) -> dict:
    for name in ("test_llama_8b.yaml", "test_llama_base.yaml"):
        shutil.copy(DATA / name, tmp_path / name)
    text = (DATA / "primus-llama8b-legal.yaml").read_text().replace("      load: null\n", "      load: null\n" + extra)
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return check_and_project(load_check_input(str(path), "mi300x", 1, 8))


def test_a_window_pair_and_a_per_layer_skip_list_are_read():
    from constraints.stacks.keys import flags_for_dest

    assert flags_for_dest("window_size", [128, 0], "overrides.window_size") == ["--window-size", "128,0"]
    assert flags_for_dest("window_attn_skip_freq", [1, 0, 1, 0], "overrides.window_attn_skip_freq") == \
        ["--window-attn-skip-freq", "[1,0,1,0]"]


def test_a_primus_config_with_sliding_windows_every_other_layer(tmp_path):
    out = _primus(tmp_path, "      window_size: [128, 0]\n      window_attn_skip_freq: [" + ", ".join(["1", "0"] * 16) + "]\n")
    assert out["json"]["legal"], out["json"]["violations"]


def test_two_keys_of_a_no_effect_flag_are_a_note(tmp_path):
    out = _primus(tmp_path, "      norm_epsilon: 1.0e-6\n      layernorm_epsilon: 1.0e-5\n")
    assert out["json"]["legal"]
    assert any("--norm-epsilon" in w["message"] and "changes nothing" in w["message"] for w in out["json"]["warnings"])


def test_te_cross_entropy_fusion_in_a_stack_config_is_not_megatron_lm_s_exit(tmp_path):
    out = _primus(tmp_path, "      cross_entropy_loss_fusion: true\n      cross_entropy_fusion_impl: te\n")
    assert out["json"]["legal"], out["json"]["violations"]


def test_a_recipe_only_the_stack_defines_is_said_to_be_not_modelled(tmp_path):
    """Primus's backend adds an `mxfp4` FP4 recipe (primus/backends/megatron/core/enums.py) that Megatron-LM's
    --fp4-recipe choices (nvfp4, custom) do not have: one line, exit 2, saying so."""
    import pytest

    from constraints.read import InputError

    with pytest.raises(InputError, match="Primus's mxfp4 recipe, is not modelled"):
        _primus(tmp_path, "      fp4: e2m1\n      fp4_recipe: mxfp4\n")
