"""check reads Primus experiments, Megatron-Bridge recipes / key=value overrides and Megatron --yaml-cfg files into
the Megatron arguments a launch script would pass, names every key it does not understand, and refuses unusable
files in one line (tests/data/stack_configs: written here in those stacks' shapes)."""
import subprocess
import sys

import pytest

from constraints.read import InputError, load_check_input
from constraints.stacks.common import StackConfigError
from constraints.stacks.keys import dests_from_args, flags_for_core_field, flags_for_dest
from tests.helpers.builders import REPO

DATA = REPO / "tests" / "data" / "stack_configs"


def _check(name, hardware="h100-sxm-80gb", gpus=8):
    p = subprocess.run([sys.executable, "-m", "shardplan.cli.main", "check", str(DATA / name), "--hardware", hardware,
                        "--nodes", "1", "--gpus-per-node", str(gpus), "--json"], capture_output=True, text=True, cwd=REPO)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("name,hardware,gpus,rc", [
    ("primus-llama8b-legal.yaml", "mi300x", 8, 0),
    ("primus-illegal-tp.yaml", "mi300x", 6, 1),
    ("primus-no-megatron.yaml", "mi300x", 8, 2),
    ("bridge-llama8b-legal.yaml", "h100-sxm-80gb", 8, 0),
    ("bridge-overrides-legal.txt", "h100-sxm-80gb", 8, 0),
    ("bridge-overrides-illegal-ep.txt", "h100-sxm-80gb", 8, 1),
    ("bridge-conflict.yaml", "h100-sxm-80gb", 8, 2),
    ("bridge-unknown-precision.yaml", "h100-sxm-80gb", 8, 2),
    ("yaml-cfg-gpt-legal.yaml", "h100-sxm-80gb", 8, 0),
    ("yaml-cfg-illegal-schedule.yaml", "h100-sxm-80gb", 8, 1),
    ("yaml-cfg-no-model-parallel.yaml", "h100-sxm-80gb", 8, 2),
])
def test_each_example_gets_its_exit_status_and_one_line_refusals(name, hardware, gpus, rc):
    code, out, err = _check(name, hardware, gpus)
    assert code == rc, err
    if rc == 2:
        assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    else:
        assert '"legal"' in out


def test_primus_follows_the_model_files_extends_chain_and_overrides_win(monkeypatch):
    monkeypatch.delenv("PRIMUS_TP", raising=False)
    loaded = load_check_input(str(DATA / "primus-llama8b-legal.yaml"), "mi300x", 1, 8)
    m = loaded.case.model  # Llama-3.1-8B's shape (Meta's config.json): 32 x 4096, 8 KV groups, FFN 14336
    assert (m.num_layers, m.hidden_size, m.num_query_groups, m.ffn_hidden_size, m.vocab_size) == (32, 4096, 8, 14336, 128256)
    assert m.normalization.value == "RMSNorm" and not m.tied_embeddings and not m.mlp_bias  # from the base file
    assert loaded.case.recipe.tp == 2  # ${PRIMUS_TP:2}: the default, noted
    assert loaded.case.job.seq_length == 8192 and loaded.case.job.global_batch_size == 128
    assert loaded.source == "primus"
    assert loaded.unknown_flags == ["overrides.stderr_sink_level", "overrides.enable_primus_turbo"]
    notes = " ".join(w.message for w in loaded.warnings)
    assert "test_llama_base.yaml" in notes and "PRIMUS_TP is not set" in notes and "pre_trainer.yaml" in notes


def test_primus_takes_an_environment_value_over_the_default(monkeypatch):
    monkeypatch.setenv("PRIMUS_TP", "4")
    loaded = load_check_input(str(DATA / "primus-llama8b-legal.yaml"), "mi300x", 1, 8)
    assert loaded.case.recipe.tp == 4


def test_primus_model_file_missing_is_said_and_the_shape_must_come_from_elsewhere(tmp_path):
    exp = tmp_path / "exp.yaml"
    exp.write_text((DATA / "primus-illegal-tp.yaml").read_text())
    with pytest.raises(InputError, match="--model") as refused:
        load_check_input(str(exp), "mi300x", 1, 6)
    assert "was found neither beside the experiment" in str(refused.value)  # the likely cause, in the same line
    loaded = load_check_input(str(exp), "mi300x", 1, 6, model="Llama-3.1-8B")
    assert any("found neither beside the experiment" in w.message for w in loaded.warnings)


def test_a_primus_override_that_misspells_a_megatron_argument_is_refused_with_the_spelling(tmp_path):
    # Primus sets each override on Megatron's argument namespace: `tensor_model_paralel_size: 2` sets nothing Megatron
    # reads, and judging on would take TP 1; Primus's own keys (stderr_sink_level, enable_primus_turbo) stay as they were
    for f in DATA.glob("*.yaml"):  # the model files the experiment names, beside it
        (tmp_path / f.name).write_text(f.read_text())
    exp = tmp_path / "exp.yaml"
    exp.write_text((DATA / "primus-llama8b-legal.yaml").read_text().replace(
        "tensor_model_parallel_size: ${PRIMUS_TP:2}", "tensor_model_paralel_size: 2"))
    with pytest.raises(InputError, match=r"overrides.tensor_model_paralel_size: .*did you mean "
                                         r"overrides.tensor_model_parallel_size\?"):
        load_check_input(str(exp), "mi300x", 1, 8, model="Llama-3.1-8B")
    assert load_check_input(str(DATA / "primus-llama8b-legal.yaml"), "mi300x", 1, 8).case.recipe.tp == 2


def test_primus_extends_cycle_is_refused_in_one_line(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: [b.yaml]\nnum_layers: 2\n")
    (tmp_path / "b.yaml").write_text("extends: [a.yaml]\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text("modules:\n  pre_trainer:\n    framework: megatron\n    model: a.yaml\n")
    with pytest.raises(InputError, match="extends itself"):
        load_check_input(str(exp), "mi300x", 1, 8)


def test_bridge_yaml_reads_sections_precision_and_env_vars():
    loaded = load_check_input(str(DATA / "bridge-llama8b-legal.yaml"), "h100-sxm-80gb", 1, 8)
    r = loaded.case.recipe
    assert (r.tp, r.pp, r.mbs, r.sequence_parallel) == (2, 2, 1, True)
    assert r.dp_sharding.value == "distributed_optimizer" and r.overlap_grad_reduce and r.overlap_param_gather
    assert loaded.case.job.precision.value == "bf16"  # mixed_precision: bf16_mixed
    assert loaded.case.model.num_query_groups == 8  # num_query_groups implies GQA in Megatron-Core
    assert loaded.env == {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    # ddp.grad_reduce_in_fp32 is read, and bf16_mixed (grad_reduce_in_fp32 True) decides it (bridge_precision.py)
    assert "ddp.grad_reduce_in_fp32" not in loaded.unknown_flags and not r.grad_reduce_in_bf16
    assert "model._target_" in loaded.ignored_flags


def test_a_bridge_model_without_max_position_embeddings_takes_its_seq_length(tmp_path):
    # Megatron-Bridge's GPTModelProvider has no max_position_embeddings; it builds GPTModel with
    # max_sequence_length=seq_length (v0.6.0 gpt_provider.py), so a provider dump without the field is complete
    text = (DATA / "bridge-llama8b-legal.yaml").read_text()
    cfg = tmp_path / "bridge.yaml"
    cfg.write_text("\n".join(line for line in text.splitlines() if "max_position_embeddings" not in line) + "\n")
    loaded = load_check_input(str(cfg), "h100-sxm-80gb", 1, 8)
    assert loaded.case.model.max_position_embeddings == loaded.case.job.seq_length == 8192


def test_a_stack_config_on_given_nodes_counts_the_parts_servers():
    # a Bridge / Primus config has no launcher to say GPUs per node: a node is the profile's server (GB200 NVL72's
    # compute tray holds 4), as `solve` counts it, with a warning naming what was taken
    loaded = load_check_input(str(DATA / "bridge-llama8b-legal.yaml"), "gb200-nvl72", 2, None)
    assert (loaded.case.placement.num_nodes, loaded.case.placement.gpus_per_node) == (2, 4)
    said = [w.message for w in loaded.warnings if w.rule == "gpus_per_node_default"]
    assert said == ["the config does not state GPUs per node: took 4, a gb200-nvl72 server's"]
    with pytest.raises(InputError, match="does not fix the world size"):
        load_check_input(str(DATA / "bridge-llama8b-legal.yaml"), "gb200-nvl72", None, None)


def test_bridge_overrides_equal_the_same_settings_in_yaml(tmp_path):
    import yaml

    tokens = [t for line in (DATA / "bridge-overrides-legal.txt").read_text().splitlines()
              if not line.startswith("#") for t in line.split()]
    tree: dict = {}
    for t in tokens:
        key, value = t.split("=", 1)
        *parents, leaf = key.split(".")
        node = tree
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = yaml.safe_load(value)
    (tmp_path / "same.yaml").write_text(yaml.safe_dump(tree))
    a = load_check_input(str(DATA / "bridge-overrides-legal.txt"), "h100-sxm-80gb", 1, 8)
    b = load_check_input(str(tmp_path / "same.yaml"), "h100-sxm-80gb", 1, 8)
    # each is named after its own file (constraints/read.py UNNAMED_MODEL); all else is the same
    assert a.case.model.model_dump(exclude={"name"}) == b.case.model.model_dump(exclude={"name"})
    assert (a.case.job, a.case.recipe, a.case.placement) == (b.case.job, b.case.recipe, b.case.placement)
    assert a.unknown_flags == b.unknown_flags == []
    assert a.case.model.ffn_hidden_size == 5632 and a.case.job.seq_length == 4096


def test_a_shell_script_of_assignments_is_not_taken_for_bridge_overrides(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("TP=2\nPP=1\n")
    with pytest.raises(InputError) as exc:
        load_check_input(str(script), "h100-sxm-80gb", 1, 8)
    assert "Bridge" not in str(exc.value)


def test_yaml_cfg_maps_core_field_names_and_notes_what_megatron_overwrites(tmp_path):
    loaded = load_check_input(str(DATA / "yaml-cfg-gpt-legal.yaml"), "h100-sxm-80gb", 1, 8)
    m = loaded.case.model
    assert (m.num_layers, m.hidden_size, m.ffn_hidden_size, m.activation.value) == (24, 2048, 8192, "gelu")
    assert loaded.case.recipe.tp == 2 and loaded.case.recipe.recompute.granularity.value == "selective"
    assert loaded.unknown_flags == ["language_model.persist_layer_norm", "model_parallel.timers"]


@pytest.mark.parametrize("dest,value,args", [
    # argparse dests of megatron/training/arguments.py and the config dataclasses' arg_names (Megatron-LM d98e8a64)
    ("add_bias_linear", False, ["--disable-bias-linear"]),
    ("add_bias_linear", True, []),
    ("layernorm_epsilon", 1e-5, ["--norm-epsilon", "1e-05"]),
    ("perform_initialization", False, ["--no-initialization"]),
    ("fp8", "hybrid", ["--fp8-format", "hybrid"]),
    ("offset_sampling_seed_by_dp_rank", False, ["--use-same-sampling-seed-across-dp-ranks"]),
    ("overlap_p2p_comm", False, ["--no-overlap-p2p-communication"]),
    ("tensor_model_parallel_size", 4, ["--tensor-model-parallel-size", "4"]),
    ("recompute_modules", ["core_attn", "mlp"], ["--recompute-modules", "core_attn", "mlp"]),
    ("sequence_parallel", False, []),
    ("lr_decay_iters", None, []),
])
def test_argparse_dest_becomes_the_flag_megatron_reads(dest, value, args):
    assert flags_for_dest(dest, value, dest) == args


def test_keys_megatron_does_not_define_are_not_understood():
    assert flags_for_dest("enable_primus_turbo", True, "x") is None
    assert flags_for_core_field("num_moe_experts", 8, "x", core_names=True) == ["--num-experts", "8"]
    assert flags_for_core_field("num_moe_experts", 8, "x", core_names=False) is None


def test_a_value_of_the_wrong_kind_is_refused_in_one_line():
    with pytest.raises(ValueError, match="switch takes true or false"):
        flags_for_dest("sequence_parallel", 3, "model.sequence_parallel")


def test_dests_from_args_inverts_the_flags():
    args = ["--disable-bias-linear", "--num-layers", "4", "--recompute-modules", "core_attn", "--lr", "1e-4"]
    assert dests_from_args(args) == {"add_bias_linear": False, "num_layers": 4, "recompute_modules": ["core_attn"],
                                     "lr": 1e-4}


def test_stack_config_error_is_a_value_error():
    assert issubclass(StackConfigError, ValueError)


def _primus_checkout(root):
    """A Primus checkout's layout (written here): trainer defaults and a shipped model file with Primus's own keys."""
    modules = root / "primus" / "configs" / "modules" / "megatron"
    models = root / "primus" / "configs" / "models" / "megatron"
    modules.mkdir(parents=True)
    models.mkdir(parents=True)
    (modules / "pre_trainer.yaml").write_text("bf16: true\nuse_distributed_optimizer: true\nlog_interval: 1\n"
                                              "stderr_sink_level: INFO\nhigh_priority_stream_groups: []\n")
    (models / "tiny.yaml").write_text("num_layers: 4\nhidden_size: 1024\nnum_attention_heads: 16\nvocab_size: 32000\n"
                                      "max_position_embeddings: 4096\nswiglu: 1\nconv_bias: false\n")
    exp = root / "examples" / "megatron" / "configs" / "MI300X" / "tiny-pretrain.yaml"
    exp.parent.mkdir(parents=True)
    exp.write_text("modules:\n  pre_trainer:\n    framework: megatron\n    config: pre_trainer.yaml\n"
                   "    model: ${TINY_MODEL:tiny}.yaml\n    overrides:\n      micro_batch_size: 1\n"
                   "      global_batch_size: 8\n      seq_length: 2048\n      use_turbo_attention: true\n")
    return exp


def test_primus_checkout_defaults_count_and_primus_own_keys_are_ignored_not_dropped(tmp_path, monkeypatch):
    monkeypatch.delenv("TINY_MODEL", raising=False)
    loaded = load_check_input(str(_primus_checkout(tmp_path)), "mi300x", 1, 8)
    assert loaded.case.job.precision.value == "bf16"  # from the trainer defaults
    assert loaded.case.recipe.dp_sharding.value == "distributed_optimizer"
    assert loaded.case.model.num_layers == 4 and loaded.case.model.activation.value == "swiglu"  # swiglu: 1
    assert loaded.unknown_flags == ["overrides.use_turbo_attention"]  # the user's key; Primus's own are listed:
    assert {"pre_trainer.yaml:stderr_sink_level", "pre_trainer.yaml:log_interval", "tiny.yaml:conv_bias"} <= \
        set(loaded.ignored_flags)
    assert any("TINY_MODEL is not set" in w.message for w in loaded.warnings)


def test_primus_switch_written_as_zero_or_one_and_empty_lists():
    assert flags_for_dest("sequence_parallel", 1, "x") == ["--sequence-parallel"]
    assert flags_for_dest("sequence_parallel", 0, "x") == []
    assert flags_for_dest("recompute_modules", [], "x") == []


def test_a_refusal_names_the_key_to_add_in_the_configs_own_terms(tmp_path):
    partial = tmp_path / "override.yaml"  # Bridge override files state a few fields; the recipe function the rest
    partial.write_text("model:\n  tensor_model_parallel_size: 1\ntrain:\n  global_batch_size: 8\n")
    with pytest.raises(InputError) as exc:
        load_check_input(str(partial), "h100-sxm-80gb", 1, 8, model="Llama-3.1-8B")
    assert "(in the bridge config: " in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_megatron_bridge_recipe_function_is_refused_in_one_line_saying_it_is_not_run(tmp_path):
    # a Bridge recipe is Python that builds a ConfigContainer (written here in that shape); check never runs code
    recipe = tmp_path / "llama3_8b_recipe.py"
    recipe.write_text("from megatron.bridge.recipes.llama import llama3_8b\n\n\ndef pretrain_config():\n"
                      "    cfg = llama3_8b.pretrain_config()\n    cfg.model.tensor_model_parallel_size = 2\n    return cfg\n")
    for command in ("check", "render"):
        p = subprocess.run([sys.executable, "-m", "shardplan.cli.main", command, str(recipe), "--hardware", "h100-sxm-80gb",
                            "--nodes", "1", "--gpus-per-node", "8"], capture_output=True, text=True, cwd=REPO)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr.strip().splitlines() == [
            "error: llama3_8b_recipe.py is a Megatron-Bridge recipe function, which shardplan does not run; save the "
            "ConfigContainer it builds as a Bridge YAML, or write its key=value overrides to a file, and check that"]
