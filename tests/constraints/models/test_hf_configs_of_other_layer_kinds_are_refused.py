"""HF configs the generic reader would have priced as another model (a QA pass over 27 unbundled families, counts checked
against transformers building each model on the meta device): hybrid Mamba and linear-attention families, a mixture of
experts described in a family's own keys, per-layer widths, and transformers' per-family embedding-tying default.
Configs: tests/data/hf_other/ (StarCoder2-7B and ERNIE-4.5-21B-A3B as published); the others below are cut to the keys
that decide the reading."""
from __future__ import annotations

import json

import pytest

from constraints.models.load import ModelError, load_model, model_from_mapping
from constraints.models.params import param_counts
from tests.helpers.builders import TESTS

DATA = TESTS / "data" / "hf_other"
LLAMA_LIKE = {"hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 4, "num_hidden_layers": 4,
              "intermediate_size": 4096, "vocab_size": 32000, "max_position_embeddings": 4096, "hidden_act": "silu"}


@pytest.mark.parametrize("extra, says", [
    ({"model_type": "jamba", "attn_layer_period": 8}, "Mamba and attention layers"),
    ({"model_type": "falcon_h1"}, "Mamba-2 mixer beside attention"),
    ({"model_type": "minimax"}, "linear-attention"),
    # Granite 4.0-H names its kinds per layer
    ({"model_type": "somehybrid", "layer_types": ["mamba", "mamba", "mamba", "attention"]}, "layer_types holds 'mamba'"),
    ({"model_type": "somehybrid", "mamba_d_state": 128}, r"Mamba state keys \(mamba_d_state\)"),
])
def test_layers_that_are_not_softmax_attention_are_refused_by_name(extra, says):
    with pytest.raises(ModelError, match=says):
        model_from_mapping({**LLAMA_LIKE, **extra}, "m")


def test_a_moe_in_a_familys_own_keys_is_refused_not_priced_dense():
    # ERNIE-4.5-21B-A3B: moe_num_experts / moe_k / moe_num_shared_experts; read dense it counted 3.35 B of 21.8 B
    with pytest.raises(ModelError, match=r"describes experts in keys shardplan does not read \(moe_num_experts=64"):
        load_model(str(DATA / "ernie-4.5-21b-a3b.json"))


def test_per_layer_widths_and_an_unknown_top_k_key_are_named():
    # Hunyuan-A13B: moe_intermediate_size one per layer, experts per token as moe_topk
    with pytest.raises(ModelError, match="moe_intermediate_size is a per-layer list"):
        model_from_mapping({**LLAMA_LIKE, "model_type": "hunyuan", "num_experts": 64, "moe_topk": [8] * 4,
                            "moe_intermediate_size": [3072] * 4}, "m")
    with pytest.raises(ModelError, match=r"its own expert keys \(moe_topk="):
        model_from_mapping({**LLAMA_LIKE, "model_type": "hunyuan", "num_experts": 64, "moe_topk": [8] * 4}, "m")


def test_starcoder2_reads_a_tied_plain_gelu_mlp_as_transformers_builds_it():
    """Starcoder2Config: tie_word_embeddings True, hidden_act gelu_pytorch_tanh on a two-matrix c_fc / c_proj MLP
    (huggingface/transformers configuration_starcoder2.py, modeling_starcoder2.py). Read as untied GeGLU it counted
    10,116,960,768; transformers builds 7,173,923,840. The remaining 1,364,480 (0.02 %) are the MLP, norm and
    attention-output biases the config's use_bias adds, which the generic reader does not count (a note says so)."""
    model = load_model(str(DATA / "starcoder2-7b.json"))
    assert model.tied_embeddings and model.activation.value == "gelu"
    assert abs(param_counts(model).total - 7_173_923_840) / 7_173_923_840 < 0.001
    assert any("read as tied" in n for n in model.config_notes)


@pytest.mark.parametrize("model_type", ["gemma", "gemma2", "gemma3_text", "cohere", "cohere2", "starcoder2", "smollm3"])
def test_families_that_tie_by_default_read_tied_when_the_key_is_absent(model_type):
    assert model_from_mapping({**LLAMA_LIKE, "model_type": model_type}, "m").tied_embeddings
    assert not model_from_mapping({**LLAMA_LIKE, "model_type": model_type, "tie_word_embeddings": False}, "m").tied_embeddings


def test_the_published_configs_are_the_ones_read():
    assert json.loads((DATA / "ernie-4.5-21b-a3b.json").read_text())["moe_num_experts"] == 64


def test_an_unknown_family_with_latent_attention_is_said_to_be_read_deepseek_style():
    # DeepSeek-V3.2-Exp (model_type deepseek_v32): MLA is applied from kv_lora_rank, so the note must not say Llama-style
    mla = {**LLAMA_LIKE, "model_type": "deepseek_v32", "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
           "qk_rope_head_dim": 64, "v_head_dim": 128}
    notes = "\n".join(model_from_mapping(mla, "m").config_notes)
    assert "read as a DeepSeek-style decoder (multi-latent attention" in notes and "Llama-style" not in notes
