"""QA4 input findings (findings 4, 6, 12 and 14 of a QA round): each user mistake gets one line naming
the field, the option or the file, and the state a user wrote is kept (model flags, env, file modes)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from constraints.models import MODELS_DIR, ModelError, bundled_models, load_model

REPO = Path(__file__).resolve().parents[1]
LLAMA_8B_HF = json.loads((MODELS_DIR / "Llama-3.1-8B.json").read_text())


def run_cli(*args, env=None, cwd=None):
    """The real entry point (shardplan.cli:main), so the `error:` prefix and exit status are what a user sees."""
    full_env = None if env is None else {**os.environ, **env}
    p = subprocess.run([sys.executable, "-m", "shardplan.cli", *args], capture_output=True, text=True,
                       cwd=cwd or REPO, env=full_env)
    return p.returncode, p.stdout, p.stderr


def hf_config(tmp_path, name="cfg.json", drop=(), **changes):
    data = {k: v for k, v in LLAMA_8B_HF.items() if k not in drop}
    data.update(changes)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


# --- finding 6: no silent 4*hidden for a missing intermediate_size ---------------------------------------

def test_every_bundled_model_states_its_ffn_width_and_loads():
    """The new error must not break a bundled config: all 22 load, each FFN width as its config.json says."""
    names = bundled_models()
    assert len(names) == 22
    for name in names:
        raw = json.loads((MODELS_DIR / f"{name}.json").read_text())
        want = raw.get("intermediate_size") or raw.get("n_inner")  # GPT-2 family: n_inner (HF default 4*n_embd)
        assert load_model(name).ffn_hidden_size == want, name


def test_hf_config_without_intermediate_size_is_an_error_naming_it(tmp_path):
    # transformers' LlamaConfig default would be 11008, our old silent default 4*4096 = 16384: neither is safe
    with pytest.raises(ModelError, match=r"intermediate_size") as info:
        load_model(hf_config(tmp_path, drop=("intermediate_size",)))
    assert "\n" not in str(info.value)


def test_hf_config_without_vocab_size_names_it(tmp_path):
    with pytest.raises(ModelError, match=r"no vocab_size; add \"vocab_size\""):
        load_model(hf_config(tmp_path, drop=("vocab_size",)))


# --- finding 12: HF config messages name the field ------------------------------------------------------

def test_hf_config_with_a_quoted_number_names_the_field(tmp_path):
    with pytest.raises(ModelError, match=r"hidden_size must be an integer, got '4096'"):
        load_model(hf_config(tmp_path, hidden_size="4096"))


def test_hf_config_with_a_quoted_expert_count_names_the_field(tmp_path):
    with pytest.raises(ModelError, match=r"num_local_experts must be an integer"):
        load_model(hf_config(tmp_path, num_local_experts="8", num_experts_per_tok=2))


@pytest.mark.parametrize("heads,shown", [(0, "got 0"), (None, "it is missing")])
def test_hf_config_with_no_heads_names_heads(tmp_path, heads, shown):
    with pytest.raises(ModelError, match=rf"positive num_attention_heads \({shown}\)"):
        load_model(hf_config(tmp_path, num_attention_heads=heads))


def test_hf_config_without_model_type_says_model_type_is_missing(tmp_path):
    with pytest.raises(ModelError) as info:
        load_model(hf_config(tmp_path, drop=("model_type",)))
    assert "model_type" in str(info.value) and "num_layers" not in str(info.value)


def test_empty_model_mapping_says_what_is_expected(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text("{}")
    with pytest.raises(ModelError, match=r"empty; give an HF config.json \(with model_type\) or a model YAML"):
        load_model(str(path))


def test_model_yaml_missing_num_layers_still_names_num_layers(tmp_path):
    """A ModelSpec YAML (not an HF config) keeps the YAML reader's field message."""
    path = tmp_path / "m.yaml"
    path.write_text("hidden_size: 64\nffn_hidden_size: 256\nnum_attention_heads: 4\nvocab_size: 1000\n")
    with pytest.raises(ModelError, match=r"field num_layers: Field required"):
        load_model(str(path))


def test_non_utf8_model_file_names_the_file(tmp_path):
    path = tmp_path / "cfg.json"
    path.write_bytes(b"\x00\x01\xff\xfe garbage")
    with pytest.raises(ModelError, match=r"cfg.json: not UTF-8 text"):
        load_model(str(path))


# --- finding 4: check FILE --model X must not silently replace the file's model -------------------------

A5_ARGS = ("--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention "
           "--num-query-groups 8 --vocab-size 128256 --swiglu --untie-embeddings-and-output-weights --normalization RMSNorm "
           "--disable-bias-linear --tensor-model-parallel-size 2 --micro-batch-size 1 "
           "--global-batch-size 16 --seq-length 4096 --bf16\n")


def test_model_option_that_contradicts_the_arguments_is_an_error_naming_the_flag(tmp_path):
    args = tmp_path / "a5.txt"
    args.write_text(A5_ARGS)
    rc, out, err = run_cli("check", str(args), "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8",
                           "--model", "Llama-3.1-70B", "--json")
    assert rc == 2 and out == ""
    assert err.startswith("error: --model Llama-3.1-70B: the arguments say --num-layers 32, but Llama-3.1-70B has 80;")
    assert "drop --model" in err and len(err.strip().splitlines()) == 1


def test_model_option_that_agrees_completes_the_arguments(tmp_path):
    """a5 lacks --max-position-embeddings: --model fills it in, and the stated flags match Llama-3.1-8B."""
    from solver.inputs import load_check_input

    args = tmp_path / "a5.txt"
    args.write_text(A5_ARGS)
    loaded = load_check_input(str(args), "h100-sxm-80gb", 1, 8, model="Llama-3.1-8B")
    assert loaded.case.model == load_model("Llama-3.1-8B") and loaded.case.recipe.tp == 2


def test_switch_that_contradicts_the_model_is_named(tmp_path):
    from solver.inputs import InputError, load_check_input

    args = tmp_path / "a.txt"
    args.write_text(A5_ARGS.replace("--swiglu", "--swiglu --qk-layernorm"))
    with pytest.raises(InputError, match=r"give --qk-layernorm, which Llama-3.1-8B does not use"):
        load_check_input(str(args), "h100-sxm-80gb", 1, 8, model="Llama-3.1-8B")


def test_gqa_groups_of_the_arguments_are_compared(tmp_path):
    from solver.inputs import InputError, load_check_input

    args = tmp_path / "a.txt"
    args.write_text(A5_ARGS.replace("--group-query-attention --num-query-groups 8 ", ""))  # MHA: 32 groups
    with pytest.raises(InputError, match=r"--num-query-groups 32, but Llama-3.1-8B has 8; .* or add "
                                         r"--group-query-attention --num-query-groups 8$"):
        load_check_input(str(args), "h100-sxm-80gb", 1, 8, model="Llama-3.1-8B")


@pytest.mark.parametrize("name", bundled_models())
def test_rendered_arguments_agree_with_their_own_model(tmp_path, name):
    """No false conflict: `render`'s model flags for every bundled model match that model under --model."""
    import shlex

    from constraints.spec import JobSpec, Recipe
    from solver.inputs import load_check_input
    from templates.megatron_args import recipe_to_megatron_args

    model = load_model(name)
    args = tmp_path / "args.txt"
    args.write_text(" ".join(shlex.quote(a) for a in recipe_to_megatron_args(model, JobSpec(seq_length=4096, global_batch_size=64), Recipe())))
    assert load_check_input(str(args), "h100-sxm-80gb", 8, 8, model=name).case.model == model


def test_partial_model_flags_name_the_missing_ones(tmp_path):
    from solver.inputs import InputError, load_check_input

    args = tmp_path / "a5.txt"
    args.write_text(A5_ARGS)
    with pytest.raises(InputError, match=r"^--model: the arguments lack --max-position-embeddings; add it, or pass --model"):
        load_check_input(str(args), "h100-sxm-80gb", 1, 8)


# --- finding 12: check's file, YAML key and launch-script messages ---------------------------------------

@pytest.mark.parametrize("name", ["bad2.yaml", "bad2.sh", "args.txt"])
def test_non_utf8_file_names_the_file_and_what_was_expected(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"\x00\x01\xff\xfe garbage")
    rc, out, err = run_cli("check", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8")
    assert rc == 2 and out == ""
    assert err == f"error: {path}: not UTF-8 text (byte 0xff at offset 2); give a YAML recipe, a Megatron launch script or an argument file\n"


def test_binary_utf8_file_names_the_file(tmp_path):
    from solver.inputs import InputError, load_check_input

    path = tmp_path / "r.yaml"
    path.write_bytes(b"\x00\x01 garbage")
    with pytest.raises(InputError, match=r"r.yaml: a binary file \(NUL byte at offset 0\); give a YAML recipe"):
        load_check_input(str(path), None, None, None)


def test_yaml_nodes_zero_is_reported_under_the_key_written(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("model: Llama-3.1-8B\nhardware: h100-sxm-80gb\nnodes: 0\ngpus_per_node: 8\n"
                    "job: {seq_length: 4096, global_batch_size: 64}\nrecipe: {tp: 1}\n")
    rc, _, err = run_cli("check", str(path))
    assert rc == 2 and err == "error: nodes: Input should be greater than 0 (got 0)\n"


UNSET_TP_SCRIPT = """#!/bin/bash
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py \\
  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention --num-query-groups 8 \\
  --seq-length 4096 --max-position-embeddings 131072 --swiglu --normalization RMSNorm --untie-embeddings-and-output-weights \\
  --position-embedding-type rope --vocab-size 128256 --disable-bias-linear \\
  --micro-batch-size 1 --global-batch-size 64 --bf16 --tensor-model-parallel-size $TP_SIZE
"""


def test_launch_script_variable_set_in_the_environment_is_read_and_warned(tmp_path, monkeypatch):
    from solver.inputs import load_check_input

    script = tmp_path / "s.sh"
    script.write_text(UNSET_TP_SCRIPT)
    monkeypatch.setenv("TP_SIZE", "2")
    loaded = load_check_input(str(script), "h100-sxm-80gb", None, None)
    assert loaded.case.recipe.tp == 2
    assert [(w.rule, w.severity) for w in loaded.warnings] == [("env_variable", "warning")]
    assert "took TP_SIZE=2 from the environment" in loaded.warnings[0].message


def test_launch_script_variable_from_the_environment_through_the_cli(tmp_path):
    script = tmp_path / "s.sh"
    script.write_text(UNSET_TP_SCRIPT)
    rc, out, err = run_cli("check", str(script), "--hardware", "h100-sxm-80gb", "--json", "--no-projection",
                           env={"TP_SIZE": "4"})
    assert rc in (0, 1), err
    assert json.loads(out)["recipe"]["tp"] == 4


def test_launch_script_variable_unset_everywhere_says_how_to_set_it(tmp_path, monkeypatch):
    from solver.inputs import InputError, load_check_input

    script = tmp_path / "s.sh"
    script.write_text(UNSET_TP_SCRIPT)
    monkeypatch.delenv("TP_SIZE", raising=False)
    with pytest.raises(InputError, match=r"uses \$TP_SIZE, which is not set; set TP_SIZE in the script or in the "
                                         r"environment \(TP_SIZE=VALUE shardplan check \.\.\.\)"):
        load_check_input(str(script), "h100-sxm-80gb", None, None)


def test_variable_the_script_sets_is_not_taken_from_the_environment(tmp_path, monkeypatch):
    from solver.inputs import load_check_input

    script = tmp_path / "s.sh"
    script.write_text(UNSET_TP_SCRIPT.replace("#!/bin/bash\n", "#!/bin/bash\nTP_SIZE=8\n"))
    monkeypatch.setenv("TP_SIZE", "2")
    loaded = load_check_input(str(script), "h100-sxm-80gb", None, None)
    assert loaded.case.recipe.tp == 8 and loaded.warnings == []


# --- finding 14: atomic writes keep the file's mode ------------------------------------------------------

@pytest.mark.parametrize("mode", [0o644, 0o640, 0o755])
def test_atomic_write_keeps_the_existing_mode(tmp_path, mode):
    from constraints.case import atomic_write_text

    path = tmp_path / "table.json"
    path.write_text("{}")
    os.chmod(path, mode)
    atomic_write_text(path, '{"a": 1}')
    assert path.read_text() == '{"a": 1}' and stat.S_IMODE(path.stat().st_mode) == mode


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_write_gives_a_new_file_the_umask_mode(tmp_path, umask, mode):
    from constraints.case import atomic_write_text

    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "SUMMARY.md", "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "SUMMARY.md").stat().st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["SUMMARY.md"]  # no temp file left behind


# --- finding 12: `measure` input errors follow the house rule (`error: <option>: ...`, exit 2) ----------

TINY_4_HEADS = "num_layers: 2\nhidden_size: 64\nffn_hidden_size: 128\nnum_attention_heads: 4\nvocab_size: 128\n"


def _measure(tmp_path, *args):
    model = tmp_path / "tiny.yaml"
    model.write_text(TINY_4_HEADS)
    return run_cli("measure", "--model", str(model), "--out", str(tmp_path / "t.json"), *args)


def test_measure_seq_length_zero_names_the_option(tmp_path):
    rc, _, err = _measure(tmp_path, "--seq-length", "0", "--device", "cpu")
    assert rc == 2 and err == "error: --seq-length: Input should be greater than 0 (got 0)\n"


def test_measure_tp_that_divides_no_head_count_names_the_option(tmp_path):
    rc, _, err = _measure(tmp_path, "--seq-length", "32", "--tp", "3", "--device", "cpu")
    assert rc == 2
    assert err.splitlines()[-1] == ("error: --tp: no recipe in the space can shape this model's kernels "
                                    "(num_attention_heads=4 not divisible by tp=3); give --tp values that divide the model's sizes")
    assert not (tmp_path / "t.json").exists()


def test_measure_unknown_model_is_exit_2(tmp_path):
    rc, _, err = run_cli("measure", "--model", "Llama-9", "--seq-length", "32", "--out", str(tmp_path / "t.json"))
    assert rc == 2 and err.startswith("error: --model: unknown model 'Llama-9'") and err.count("\n") == 1


def test_measure_cuda_on_cpu_only_torch_names_the_option(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    rc, _, err = _measure(tmp_path, "--seq-length", "32", "--device", "cuda")
    assert rc == 2 and err.startswith("error: --device cuda: CUDA/ROCm is not available") and err.count("\n") == 1


def test_switch_the_arguments_leave_out_is_compared_too(tmp_path):
    """Review 4: arguments that state a model shape but omit --swiglu build Megatron's default GeLU MLP; a --model with
    SwiGLU is a different network, so it is refused rather than silently swapped in."""
    from solver.inputs import InputError, load_check_input

    args = tmp_path / "a.txt"
    args.write_text(A5_ARGS.replace("--swiglu ", ""))
    with pytest.raises(InputError, match=r"--swiglu"):
        load_check_input(str(args), "h100-sxm-80gb", 1, 8, model="Llama-3.1-8B")


def test_secret_environment_values_are_not_printed(tmp_path, monkeypatch):
    """Review 4: check output lands in CI logs; a variable named like a credential is reported by name only."""
    from solver.inputs import load_check_input

    monkeypatch.setenv("WANDB_API_KEY", "wb_SECRET456")
    monkeypatch.setenv("TP_SIZE", "2")
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\nexport WANDB_API_KEY\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
                      + A5_ARGS.strip().replace("--tensor-model-parallel-size 2", "--tensor-model-parallel-size $TP_SIZE")
                      + " --max-position-embeddings 131072 --wandb-exp-name x --wandb-api-key $WANDB_API_KEY\n")
    loaded = load_check_input(str(script), "h100-sxm-80gb", 1, 8)
    text = " ".join(w.message for w in loaded.warnings)
    assert "wb_SECRET456" not in text and "WANDB_API_KEY=<redacted>" in text and "TP_SIZE=2" in text
    assert loaded.case.recipe.tp == 2


def test_a_sourced_file_is_named_not_ignored(tmp_path):
    """QA finding 13c: `source ./cluster_env.sh` may set what the verdict depends on; check says it did not read it."""
    from solver.inputs import load_check_input

    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\nsource ./cluster_env.sh\n. /etc/profile.d/nccl.sh\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
                      + A5_ARGS.strip() + " --max-position-embeddings 131072\n")
    loaded = load_check_input(str(script), "h100-sxm-80gb", 1, 8)
    sourced = [w for w in loaded.warnings if w.rule == "sourced_file"]
    assert [("./cluster_env.sh" in w.message, "/etc/profile.d/nccl.sh" in w.message) for w in sourced] == [(True, False), (False, True)]
