"""Primus / Megatron-Bridge / --yaml-cfg files built to cost unbounded time or memory are refused in one line, exit 2,
within a memory and a time bound (issue 33): `${NAME:default}` and environment values holding an alias bomb or deep
nesting, references that expand past the budget, and Primus `extends` trees that fan out or loop. The same readers
still read the bundled examples as before (tests/constraints/stacks/test_stack_configs_read.py holds their verdicts)."""
from pathlib import Path

import pytest

from boundary.limits import MAX_DEPTH, MAX_EXTENDS_DEPTH, MAX_STRING_CHARS, MAX_TREE_FILES
from constraints.read import load_check_input
from tests.helpers.bounded_run import assert_one_line_refusal, run_cli_bounded

WORLD = ("--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8")

YAML_CFG = """language_model:
  num_layers: 32
  hidden_size: 4096
  num_attention_heads: 32
  ffn_hidden_size: 14336
  hidden_dropout: "{value}"
model_parallel:
  tensor_model_parallel_size: 1
  bf16: true
micro_batch_size: 1
seq_length: 4096
max_position_embeddings: 4096
global_batch_size: 128
vocab_size: 32000
"""


def _alias_bomb(levels: int = 9) -> str:
    """A YAML flow list of 9^levels leaves written in ~60 bytes a level (billion laughs): 734 bytes in issue 33."""
    names = "abcdefghijk"
    parts = ["&a [x,x,x,x,x,x,x,x,x]"]
    parts += [f"&{names[i]} [" + ",".join([f"*{names[i - 1]}"] * 9) + "]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_an_alias_bomb_in_a_default_is_refused_naming_the_key(tmp_path):
    path = _write(tmp_path, "bomb.yaml", YAML_CFG.format(value="${ACT:" + _alias_bomb() + "}"))
    assert len(Path(path).read_bytes()) < 1024  # before: 3.1 GiB, 40 s, a traceback
    assert_one_line_refusal(run_cli_bounded("check", path, *WORLD), "bomb.yaml", "language_model.hidden_dropout",
                            "alias")


def test_an_alias_bomb_in_the_environment_is_refused_the_same_way(tmp_path):
    path = _write(tmp_path, "env.yaml", YAML_CFG.format(value="${ACT}"))
    run = run_cli_bounded("check", path, *WORLD, env={"ACT": _alias_bomb()})
    assert_one_line_refusal(run, "env.yaml", "language_model.hidden_dropout", "alias")


def test_a_default_nested_3000_deep_is_refused_at_the_depth_limit(tmp_path):
    path = _write(tmp_path, "deep.yaml", YAML_CFG.format(value="${ACT:" + "[" * 3000 + "]" * 3000 + "}"))
    assert_one_line_refusal(run_cli_bounded("check", path, *WORLD), "deep.yaml", f"nested more than {MAX_DEPTH}")


def test_one_value_over_a_strings_limit_once_substituted_is_refused_before_it_is_built(tmp_path):
    path = _write(tmp_path, "long.yaml", YAML_CFG.format(value="${BIG}" * 8))
    run = run_cli_bounded("check", path, *WORLD, env={"BIG": "x" * 20_000})  # 8 x 20,000 > 65,536
    assert_one_line_refusal(run, "long.yaml", "language_model.hidden_dropout", f"{MAX_STRING_CHARS:,} characters")


def test_references_that_expand_past_the_inputs_budget_are_refused(tmp_path):
    # each value stays under one string's limit, together they pass 1 MiB: 40 x 60,000 characters
    body = "".join(f"  k{i}: \"${{BIG}}\"\n" for i in range(40))
    text = YAML_CFG.format(value="0.0").replace("model_parallel:", body + "model_parallel:")
    path = _write(tmp_path, "many.yaml", text)
    run = run_cli_bounded("check", path, *WORLD, env={"BIG": "y" * 60_000})
    assert_one_line_refusal(run, "many.yaml", "expand to over 1 MiB", "shorten the environment values")


def test_a_whole_reference_is_still_typed_as_yaml_and_a_default_that_is_not_yaml_is_text(tmp_path, monkeypatch):
    monkeypatch.setenv("DROP", "0.25")
    loaded = load_check_input(_write(tmp_path, "typed.yaml", YAML_CFG.format(value="${DROP}")), "h100-sxm-80gb", 1, 8)
    assert loaded.case.model.hidden_dropout == 0.25
    monkeypatch.delenv("DROP")
    loaded = load_check_input(_write(tmp_path, "typed2.yaml", YAML_CFG.format(value="${DROP:0.5}")), "h100-sxm-80gb", 1, 8)
    assert loaded.case.model.hidden_dropout == 0.5
    notes = [w.message for w in loaded.warnings]
    assert sum("DROP is not set" in n for n in notes) == 1


EXPERIMENT = """work_group: x
modules:
  pre_trainer:
    framework: megatron
    model: {model}
    overrides:
      tensor_model_parallel_size: 1
"""


def _fan_out(tmp_path: Path, width: int, depth: int) -> str:
    """A Primus model tree `depth` levels deep whose every file extends the `width` files of the next level: width x
    depth files, width^depth paths through them."""
    for d in range(depth):
        for w in range(width):
            bases = [f"l{d + 1}_{j}.yaml" for j in range(width)] if d + 1 < depth else []
            (tmp_path / f"l{d}_{w}.yaml").write_text((f"extends: {bases}\n" if bases else "") + f"k{d}_{w}: 1\n")
    return _write(tmp_path, "exp.yaml", EXPERIMENT.format(model="l0_0.yaml"))


@pytest.mark.parametrize("width,depth", [(3, 14), (4, 12), (64, 4)])
def test_an_extends_tree_that_fans_out_is_refused_at_the_file_budget(tmp_path, width, depth):
    run = run_cli_bounded("check", _fan_out(tmp_path, width, depth), *WORLD)  # before: never ended
    assert_one_line_refusal(run, "extends", f"more than {MAX_TREE_FILES} files", "exp.yaml")


def test_an_extends_cycle_is_refused_naming_the_loop(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: [b.yaml]\nhidden_size: 4096\n")
    (tmp_path / "b.yaml").write_text("extends: [c.yaml]\n")
    (tmp_path / "c.yaml").write_text("extends: [a.yaml]\n")
    run = run_cli_bounded("check", _write(tmp_path, "exp.yaml", EXPERIMENT.format(model="a.yaml")), *WORLD)
    assert_one_line_refusal(run, "a.yaml -> b.yaml -> c.yaml -> a.yaml", "break the cycle")


def test_an_extends_chain_past_the_depth_limit_is_refused(tmp_path):
    for i in range(MAX_EXTENDS_DEPTH + 2):
        (tmp_path / f"c{i}.yaml").write_text(f"extends: c{i + 1}.yaml\n" if i <= MAX_EXTENDS_DEPTH else "hidden_size: 8\n")
    run = run_cli_bounded("check", _write(tmp_path, "exp.yaml", EXPERIMENT.format(model="c0.yaml")), *WORLD)
    assert_one_line_refusal(run, f"more than {MAX_EXTENDS_DEPTH} files chained by extends", "shorten the chain")


def test_files_that_together_hold_too_many_yaml_values_are_refused(tmp_path):
    # each file is under the 10,000-value limit of one file; 8 of them pass the tree's 20,000
    lines = "".join(f"k{i}: [1, 2, 3]\n" for i in range(1500))  # 5 values a line
    names = [f"f{i}.yaml" for i in range(8)]
    for name in names:
        (tmp_path / name).write_text(lines)
    (tmp_path / "m.yaml").write_text(f"extends: {names}\nhidden_size: 4096\n")
    run = run_cli_bounded("check", _write(tmp_path, "exp.yaml", EXPERIMENT.format(model="m.yaml")), *WORLD)
    assert_one_line_refusal(run, "20,000 YAML values", "exp.yaml")


def test_a_base_named_by_two_files_is_read_once_and_merged_in_primuss_order(tmp_path, monkeypatch):
    # Primus (primus/core/config/yaml_loader.py _apply_extends) merges each base's own merge, then the file: m extends
    # [b, c], both extend d; c's merge (d then c) comes last, so d's tensor size wins over b's, and c's layers over d's
    (tmp_path / "d.yaml").write_text("num_layers: 40\nhidden_size: 4096\nffn_hidden_size: 14336\n"
                                     "num_attention_heads: 32\nvocab_size: 32000\nmax_position_embeddings: 4096\n")
    (tmp_path / "b.yaml").write_text("extends: [d.yaml]\nhidden_size: 5120\nnum_layers: 20\n")
    (tmp_path / "c.yaml").write_text("extends: [d.yaml]\nnum_layers: 32\n")
    (tmp_path / "m.yaml").write_text("extends: [b.yaml, c.yaml]\nseq_length: 4096\nglobal_batch_size: 64\n"
                                     "micro_batch_size: 1\nbf16: true\n")
    exp = _write(tmp_path, "exp.yaml", EXPERIMENT.format(model="m.yaml"))
    loaded = load_check_input(exp, "h100-sxm-80gb", 1, 8)
    assert loaded.case.model.num_layers == 32 and loaded.case.model.hidden_size == 4096
    reads = [w.message for w in loaded.warnings if w.message.startswith("read ")]
    assert [Path(r.split()[1]).name for r in reads] == ["d.yaml", "b.yaml", "c.yaml", "m.yaml"]


def test_extends_must_name_files(tmp_path):
    (tmp_path / "m.yaml").write_text("extends: {a: 1}\nhidden_size: 4096\n")
    run = run_cli_bounded("check", _write(tmp_path, "exp.yaml", EXPERIMENT.format(model="m.yaml")), *WORLD)
    assert_one_line_refusal(run, "m.yaml: extends must be a file name or a list of file names")


@pytest.mark.parametrize("extra", ["  window_size: [4095, 0]\n  window_attn_skip_freq: 2\n", "  no_rope_freq: 4\n",
                                   "  num_moe_experts: 8\n  moe_router_topk: 2\n  moe_layer_freq: 2\n"])
def test_a_billion_layers_is_refused_before_a_per_layer_list_is_built(tmp_path, extra):
    text = YAML_CFG.format(value="0.0").replace("  num_layers: 32\n", "  num_layers: 1000000000\n" + extra)
    run = run_cli_bounded("check", _write(tmp_path, "layers.yaml", text), *WORLD)  # before: 3 GB, MemoryError
    assert_one_line_refusal(run, "--num-layers 1,000,000,000 is above the 4096 layers", "num_layers")


def test_bridge_overrides_are_held_to_a_yaml_files_limits(tmp_path):
    many = "model.tensor_model_parallel_size=1\n" + "".join(f"train.x{i}=1\n" for i in range(10_000))
    run = run_cli_bounded("check", _write(tmp_path, "many.txt", many), *WORLD)
    assert_one_line_refusal(run, "many.txt: 10,001 key=value overrides, over the 10,000")
    deep = "model.tensor_model_parallel_size=1\nmodel." + ".".join(["a"] * 40) + "=1\n"
    run = run_cli_bounded("check", _write(tmp_path, "deep.txt", deep), *WORLD)
    assert_one_line_refusal(run, "deep.txt: 'model.a.a", f"nested more than {MAX_DEPTH} levels deep")
