"""The input boundary (`boundary/`): special files, oversized files, alias bombs and deep nesting are refused
in one line, quickly, by every reader (recipe, model, hardware profile, cost table, launch script)."""
from __future__ import annotations

import os
import time

import pytest

from boundary.errors import InputRefused
from boundary.limits import MAX_ALIASES, MAX_DEPTH, MIB
from boundary.parse import load_json, load_yaml
from boundary.read import read_text
from boundary.show import shown
from constraints.case import CaseError, load_case_yaml
from constraints.models.load import ModelError, load_model
from hardware.profile import ProfileError, load_profile
from measure.kernels.cost_table import CostTable, CostTableError

# Each reader with the error type its callers catch.
READERS = [
    (load_case_yaml, CaseError, "r.yaml"),
    (load_model, ModelError, "m.yaml"),
    (load_profile, ProfileError, "p.yaml"),
    (CostTable.load, CostTableError, "t.json"),
]


def _alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("reader,error,name", READERS)
def test_directory_is_refused_by_every_reader(tmp_path, reader, error, name):
    d = tmp_path / name
    d.mkdir()
    with pytest.raises(error, match="a directory, not a regular file"):
        reader(str(d))


@pytest.mark.parametrize("reader,error,name", READERS)
def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path, reader, error, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(error, match=r"a FIFO \(named pipe\), not a regular file"):
        reader(str(fifo))
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("reader,error,name", READERS)
def test_symlink_to_a_device_is_refused(tmp_path, reader, error, name):
    link = tmp_path / name
    link.symlink_to("/dev/zero")
    with pytest.raises(error, match="a character device, not a regular file"):
        reader(str(link))


@pytest.mark.parametrize("reader,error,name", READERS[:3])
def test_oversized_file_is_refused_with_the_limit(tmp_path, reader, error, name):
    big = tmp_path / name
    big.write_text("# padding\n" * (MIB // 10 + 1))
    with pytest.raises(error, match=r"1,048,58\d bytes, over the 1 MiB limit"):
        reader(str(big))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_refused(tmp_path):
    f = tmp_path / "r.yaml"
    f.write_text("a: 1\n")
    f.chmod(0)
    with pytest.raises(InputRefused, match="permission denied"):
        read_text(f, "recipe")


@pytest.mark.parametrize("reader,error,name", READERS[:3])
def test_yaml_alias_bomb_is_refused_before_expansion(tmp_path, reader, error, name):
    f = tmp_path / name
    f.write_text(_alias_bomb())
    start = time.monotonic()
    with pytest.raises(error, match=f"more than {MAX_ALIASES} YAML alias uses") as info:
        reader(str(f))
    assert time.monotonic() - start < 5 and len(str(info.value)) < 300


def test_few_aliases_that_expand_widely_are_refused_by_the_node_count():
    # 8 levels of 8 aliases = 64 uses (at the alias limit) but 8**8 = 16.7 M values once expanded
    with pytest.raises(InputRefused, match="more than 100,000 values once aliases are expanded"):
        load_yaml(_alias_bomb(levels=8, width=8), "recipe")


def test_a_real_alias_is_accepted():
    assert load_yaml("a: &x [1, 2]\nb: *x\n", "recipe") == {"a": [1, 2], "b": [1, 2]}


@pytest.mark.parametrize("text", ["[" * 5000, "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 400))])
def test_deep_yaml_is_refused_not_a_recursion_error(text):
    with pytest.raises(InputRefused, match=f"nested more than {MAX_DEPTH} levels"):
        load_yaml(text, "recipe")


def test_deep_json_is_refused_not_a_recursion_error():
    for text in ("[" * 100_000, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)):
        with pytest.raises(InputRefused, match=f"nested more than {MAX_DEPTH} levels"):
            load_json(text, "cost table")
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "cost table") is not None


@pytest.mark.parametrize("text", ['{"a": 1e999}', '{"a": NaN}', '{"a": -Infinity}'])
def test_json_non_finite_numbers_are_refused(text):
    with pytest.raises(InputRefused, match="finite number"):
        load_json(text, "model")


@pytest.mark.parametrize("text", ["a: .inf", "a: .nan", "a: [-.inf]"])
def test_yaml_non_finite_numbers_are_refused(text):
    with pytest.raises(InputRefused, match="non-finite number"):
        load_yaml(text, "recipe")


def test_huge_integer_literal_is_refused_in_one_line():
    with pytest.raises(InputRefused, match="unusable value") as info:
        load_yaml("a: " + "9" * 5000, "recipe")
    assert "\n" not in str(info.value)


def test_shown_bounds_huge_values():
    assert shown("x" * 10_000_000).endswith("(10,000,000 characters)") and len(shown("x" * 10_000_000)) < 120
    assert shown(list(range(10**6))) == "<list of 1,000,000 items>"
    assert shown(5) == "5"


def test_long_model_name_is_an_unknown_model_not_oserror():
    with pytest.raises(ModelError, match=r"unknown model 'xxxx.*\(300 characters\)"):
        load_model("x" * 300)


def test_model_with_zero_heads_is_refused(tmp_path):
    f = tmp_path / "config.json"
    f.write_text('{"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 0, "vocab_size": 50257}')
    with pytest.raises(ModelError, match="a field is zero or out of range"):
        load_model(str(f))


def test_billion_layer_model_is_refused_before_a_per_layer_list(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("num_layers: 1000000000\nhidden_size: 64\nffn_hidden_size: 256\nnum_attention_heads: 4\n"
                 "vocab_size: 1000\nnum_experts: 8\nmoe_router_topk: 2\nmoe_ffn_hidden_size: 64\nfirst_k_dense_layers: 1\n")
    start = time.monotonic()
    with pytest.raises(ModelError, match="num_layers is 1,000,000,000, above the 4096 layers"):
        load_model(str(f))
    assert time.monotonic() - start < 2


def test_hf_config_with_billion_layers_is_refused_before_the_moe_pattern(tmp_path):
    f = tmp_path / "config.json"
    f.write_text('{"model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": '
                 '1000000000, "intermediate_size": 256, "vocab_size": 1000, "n_routed_experts": 8, '
                 '"num_experts_per_tok": 2, "moe_intermediate_size": 64, "first_k_dense_replace": 1}')
    with pytest.raises(ModelError, match="num_hidden_layers is 1,000,000,000"):
        load_model(str(f))


def test_validation_message_of_an_alias_expanded_value_is_bounded(tmp_path):
    # 40 aliases of one 2,000-item list: under both limits, but a 80,000-item value for a string field
    f = tmp_path / "r.yaml"
    items = ", ".join(["1"] * 2000)
    f.write_text(f"model: &m [{items}]\nhardware: [" + ", ".join(["*m"] * 40) + "]\nnodes: 1\ngpus_per_node: 8\n"
                 "job: {seq_length: 8, global_batch_size: 8}\nrecipe: {}\n")
    with pytest.raises((CaseError, ModelError)) as info:
        load_case_yaml(str(f))
    assert len(str(info.value)) < 1000 and "characters)" in str(info.value)


def test_long_yaml_flow_list_stops_at_the_node_limit_quickly():
    # PyYAML's scanner slows quadratically on long flow lists: 500,000 items in 1 MiB took 59 s to parse
    text = "x: [" + ",".join(["1"] * 500_000) + "]\n"
    start = time.monotonic()
    with pytest.raises(InputRefused, match="more than 10,000 YAML values"):
        load_yaml(text, "recipe")
    assert time.monotonic() - start < 10
    assert len(load_yaml("x: [" + ",".join(["1"] * 4096) + "]\n", "model")["x"]) == 4096  # a 4096-layer list is fine


def test_a_yaml_key_given_twice_is_refused_naming_it(tmp_path):
    # YAML keeps the last of two equal keys without a word; a recipe judged on the value the author did not mean is a
    # silently wrong answer, so the file is refused with the key and its line. A `<<` merge may still be overridden.
    from boundary.errors import InputRefused
    from boundary.parse import load_yaml

    with pytest.raises(InputRefused, match=r"key 'mbs' is given twice in one mapping \(line 3\); keep one"):
        load_yaml("recipe:\n  mbs: 1\n  mbs: 2\n", "recipe")
    assert load_yaml("base: &b {tp: 2, mbs: 1}\nrecipe:\n  <<: *b\n  mbs: 4\n", "recipe")["recipe"] == {"tp": 2, "mbs": 4}
