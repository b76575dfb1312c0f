"""An HF config of a family shardplan has no reader for is read as a Llama-style decoder, and every part of that
reading which may change the answer is said: the family, an embedding tie the config leaves to transformers' family
default, a window the reader cannot place, a gated-MLP guess, and the keys it did not read. Bundled configs, whose
families are read by name, read with no note."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from constraints.models import bundled_models, load_model, model_from_mapping
from constraints.params import param_counts
from shardplan.cli import cli

# google/gemma-2-9b config.json (huggingface.co/google/gemma-2-9b, transformers 4.42); 9,241,705,984 parameters
# (model card / safetensors index). Gemma2Config defaults tie_word_embeddings to True.
GEMMA2_9B = {
    "architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "attn_logit_softcapping": 50.0,
    "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": 1, "final_logit_softcapping": 30.0, "head_dim": 256,
    "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "gemma2",
    "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8, "pad_token_id": 0,
    "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096,
    "torch_dtype": "float32", "transformers_version": "4.42.0.dev0", "use_cache": True, "vocab_size": 256000,
}
GEMMA2_9B_PARAMS = 9_241_705_984


@pytest.mark.parametrize("name", bundled_models())
def test_bundled_configs_read_with_no_note(name):
    assert load_model(name).config_notes == ()


def test_an_unknown_family_is_read_llama_style_and_says_what_it_left_out():
    notes = model_from_mapping(dict(GEMMA2_9B), "gemma-2-9b").config_notes
    text = "\n".join(notes)
    assert "model_type 'gemma2' is not a family shardplan reads by name" in text
    assert "tie_word_embeddings is absent" in text
    assert "sliding_window=4096 is not applied" in text
    assert "hidden_act 'gelu_pytorch_tanh' of an unknown family is read as a gated" in text
    for key in ("attn_logit_softcapping=50.0", "final_logit_softcapping=30.0", "query_pre_attn_scalar=256"):
        assert key in text
    for harmless in ("rope_theta", "rms_norm_eps", "bos_token_id"):
        assert harmless not in text


def test_the_llama_style_count_of_gemma2_differs_only_by_what_the_notes_name():
    untied = param_counts(model_from_mapping(dict(GEMMA2_9B), "gemma-2-9b")).total
    tied_model = model_from_mapping({**GEMMA2_9B, "tie_word_embeddings": True}, "gemma-2-9b")
    tied = param_counts(tied_model).total
    # the untied reading adds one output matrix (vocab x hidden), which the tie note warns of
    assert untied - tied == 256_000 * 3_584
    # Gemma 2 has two more RMSNorms per layer (post-attention, post-MLP) than the Llama-style reading counts
    assert GEMMA2_9B_PARAMS - tied == 2 * 42 * 3_584
    assert not any("tie_word_embeddings" in n for n in tied_model.config_notes)


def test_a_plain_gelu_mlp_of_an_unknown_family_is_not_called_gated():
    cfg = {**GEMMA2_9B, "model_type": "somefamily", "hidden_act": "gelu", "tie_word_embeddings": False}
    cfg.pop("sliding_window")
    notes = model_from_mapping(cfg, "x").config_notes
    assert not any("gated" in n for n in notes) and not any("tie_word_embeddings" in n for n in notes)


def test_check_and_solve_show_the_notes(tmp_path):
    path = tmp_path / "gemma-2-9b.json"
    path.write_text(json.dumps(GEMMA2_9B))
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(f"model: {path}\nhardware: h100-sxm-80gb\nnodes: 1\ngpus_per_node: 8\n"
                      "job: {seq_length: 4096, global_batch_size: 64}\nrecipe: {tp: 2, mbs: 1}\n")
    out = CliRunner().invoke(cli, ["check", str(recipe), "--format", "json"])
    assert out.exit_code in (0, 1), out.output
    warned = [w for w in json.loads(out.output)["warnings"] if w["rule"] == "model_config"]
    assert len(warned) == len(model_from_mapping(dict(GEMMA2_9B), "g").config_notes) == 5
    out = CliRunner().invoke(cli, ["solve", "--model", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "1",
                                   "--gpus-per-node", "8", "--seq-length", "4096", "--global-batch-size", "64",
                                   "--top", "1", "--proposer", "none", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert any("attn_logit_softcapping" in n for n in json.loads(out.output)["model_notes"])
