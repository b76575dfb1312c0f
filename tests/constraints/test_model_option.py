"""`check FILE --model X` completes the file's model flags or contradicts them, never silently replaces the file's
model: a disagreement is an error naming the flag."""
from __future__ import annotations

import pytest

from constraints.models.load import bundled_models, load_model
from tests.helpers.builders import A5_ARGS, run_cli

# --- finding 4: check FILE --model X must not silently replace the file's model -------------------------

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
    from constraints.read import load_check_input

    args = tmp_path / "a5.txt"
    args.write_text(A5_ARGS)
    loaded = load_check_input(str(args), "h100-sxm-80gb", 1, 8, model="Llama-3.1-8B")
    assert loaded.case.model == load_model("Llama-3.1-8B") and loaded.case.recipe.tp == 2


def test_switch_that_contradicts_the_model_is_named(tmp_path):
    from constraints.read import InputError, load_check_input

    args = tmp_path / "a.txt"
    args.write_text(A5_ARGS.replace("--swiglu", "--swiglu --qk-layernorm"))
    with pytest.raises(InputError, match=r"give --qk-layernorm, which Llama-3.1-8B does not use"):
        load_check_input(str(args), "h100-sxm-80gb", 1, 8, model="Llama-3.1-8B")


def test_gqa_groups_of_the_arguments_are_compared(tmp_path):
    from constraints.read import InputError, load_check_input

    args = tmp_path / "a.txt"
    args.write_text(A5_ARGS.replace("--group-query-attention --num-query-groups 8 ", ""))  # MHA: 32 groups
    with pytest.raises(InputError, match=r"--num-query-groups 32, but Llama-3.1-8B has 8; .* or add "
                                         r"--group-query-attention --num-query-groups 8$"):
        load_check_input(str(args), "h100-sxm-80gb", 1, 8, model="Llama-3.1-8B")


@pytest.mark.parametrize("name", bundled_models())
def test_rendered_arguments_agree_with_their_own_model(tmp_path, name):
    """No false conflict: `render`'s model flags for every bundled model match that model under --model."""
    import shlex

    from constraints.read import load_check_input
    from constraints.spec import JobSpec, Recipe
    from templates.recipe_args import recipe_to_megatron_args

    model = load_model(name)
    args = tmp_path / "args.txt"
    args.write_text(" ".join(shlex.quote(a) for a in recipe_to_megatron_args(model, JobSpec(seq_length=4096, global_batch_size=64), Recipe())))
    assert load_check_input(str(args), "h100-sxm-80gb", 8, 8, model=name).case.model == model


def test_partial_model_flags_name_the_missing_ones(tmp_path):
    from constraints.read import InputError, load_check_input

    args = tmp_path / "a5.txt"
    args.write_text(A5_ARGS)
    with pytest.raises(InputError, match=r"^--model: the arguments lack --max-position-embeddings; add it, or pass --model"):
        load_check_input(str(args), "h100-sxm-80gb", 1, 8)


def test_switch_the_arguments_leave_out_is_compared_too(tmp_path):
    """arguments that state a model shape but omit --swiglu build Megatron's default GeLU MLP; a --model with
    SwiGLU is a different network, so it is refused rather than silently swapped in."""
    from constraints.read import InputError, load_check_input

    args = tmp_path / "a.txt"
    args.write_text(A5_ARGS.replace("--swiglu ", ""))
    with pytest.raises(InputError, match=r"--swiglu"):
        load_check_input(str(args), "h100-sxm-80gb", 1, 8, model="Llama-3.1-8B")


def test_qk_layernorm_with_mla_is_not_a_conflict_with_deepseek_v3(tmp_path):
    """Megatron's MLA spec normalises DeepSeek's q/kv latents when --qk-layernorm is given; --model DeepSeek-V3 (whose
    config has no qk norm field) must accept it, while a non-MLA model still refuses a --qk-layernorm it lacks."""
    from constraints.read import InputError, load_check_input

    mla = ("--num-layers 61 --hidden-size 7168 --num-attention-heads 128 --multi-latent-attention --qk-layernorm "
           "--q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 --swiglu "
           "--normalization RMSNorm --untie-embeddings-and-output-weights --disable-bias-linear --seq-length 4096 "
           "--micro-batch-size 1 --global-batch-size 1024 --bf16 --tensor-model-parallel-size 8 "
           "--pipeline-model-parallel-size 16 --expert-model-parallel-size 64\n")
    args = tmp_path / "dsv3.args"
    args.write_text(mla)
    loaded = load_check_input(str(args), "h100-sxm-80gb", 128, 8, model="DeepSeek-V3")
    assert loaded.case.model.name == "DeepSeek-V3"
    dense = tmp_path / "llama.args"
    dense.write_text("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --group-query-attention "
                     "--num-query-groups 8 --swiglu --qk-layernorm --seq-length 4096 --micro-batch-size 1 --global-batch-size 64 "
                     "--bf16\n")
    with pytest.raises(InputError, match="--qk-layernorm"):
        load_check_input(str(dense), "h100-sxm-80gb", 1, 8, model="Llama-3.1-8B")
