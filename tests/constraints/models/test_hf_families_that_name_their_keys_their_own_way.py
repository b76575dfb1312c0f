"""Families that name their shape or experts their own way are refused in words that lead to a right model, never to
a misread one (found by QA). DBRX keeps d_model / n_heads / n_layers at the top and its experts in `ffn_config`:
it was refused for a missing hidden_size with "copy it from the model's HF config.json", and a user who did so got
a 132 B MoE planned as a 15 B dense model. Falcon names its MLP activation `activation` (transformers FalconConfig,
default "gelu"), which was not read, so Falcon-40B's MLP was priced gated: +38 % parameters."""
from __future__ import annotations

import json

import pytest

from constraints.models.load import ModelError, load_model
from constraints.models.params import param_counts

# DBRX's config.json as the hub lays it out (databricks/dbrx-base), trimmed to the keys that matter here
DBRX = {"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40, "max_seq_len": 32768,
        "vocab_size": 100352, "attn_config": {"clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000},
        "ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4}, "tie_word_embeddings": False}


def _write(tmp_path, data: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_experts_nested_in_a_family_mapping_are_refused_before_any_missing_key(tmp_path):
    with pytest.raises(ModelError, match=r"ffn_config\.moe_num_experts=16") as info:
        load_model(_write(tmp_path, DBRX))
    assert "copy it from" not in str(info.value) and "model YAML" in str(info.value)
    # the dense keys added as the old message asked: still refused for its experts, never read as a dense model
    patched = {**DBRX, "hidden_size": 6144, "num_attention_heads": 48, "num_hidden_layers": 40, "intermediate_size": 10752}
    with pytest.raises(ModelError, match=r"ffn_config\.moe_num_experts"):
        load_model(_write(tmp_path, patched))


def test_a_shape_key_under_another_name_is_named_in_the_refusal(tmp_path):
    refined_web = {"model_type": "RefinedWeb", "hidden_size": 8192, "n_head": 128, "n_head_kv": 8, "n_layer": 60,
                   "vocab_size": 65024, "parallel_attn": True}
    with pytest.raises(ModelError, match=r"no num_attention_heads; model_type 'RefinedWeb' names it its own way \(n_head=128\)"):
        load_model(_write(tmp_path, refined_web))


def test_falcon_activation_key_gives_a_plain_gelu_mlp(tmp_path):
    """Falcon-40B (tiiuae/falcon-40b config.json, new layout): 60 layers, hidden 8192, 128 heads, 8 KV heads, a plain
    4 x 8192 GELU MLP, vocabulary 65024, untied. Read with `activation`, the count is within 0.1 % of the model card's
    ~41.8 B (attention and MLP without biases, the card's figure also counts its layer norms)."""
    falcon = {"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128, "num_hidden_layers": 60,
              "num_kv_heads": 8, "new_decoder_architecture": True, "parallel_attn": True, "vocab_size": 65024,
              "activation": "gelu", "intermediate_size": 32768, "bias": False, "tie_word_embeddings": False}
    model = load_model(_write(tmp_path, falcon))
    assert model.activation.value == "gelu"
    assert abs(param_counts(model).total / 41.8e9 - 1) < 0.01
