"""Parameter counts equal the exact counts of docs/facts/models/params.json (HF instantiation on meta)."""
import json

import pytest

from constraints.models.load import ModelError, bundled_models, load_model
from constraints.models.params import padded_vocab_size, param_counts
from tests.helpers.builders import REPO

REF = json.loads((REPO / "docs" / "facts" / "models" / "params.json").read_text())["models"]


def test_every_shared_model_is_bundled():
    assert set(bundled_models()) == set(REF)


@pytest.mark.parametrize("name", sorted(REF))
def test_total_and_active_exact(name):
    counts = param_counts(load_model(name))
    assert counts.total == REF[name]["total_params"]
    assert counts.active == REF[name]["active_params"]
    assert counts.non_embedding == REF[name]["non_embedding_params"]


def test_deepseek_v3_with_mtp_matches_published_breakdown():
    # PARAMS.md: main 671,026,404,352 + MTP 11,610,067,968 = 682,636,472,320
    assert param_counts(load_model("DeepSeek-V3"), include_mtp=True).total == 682_636_472_320


def test_lookup_is_case_insensitive_and_errors_are_one_line(tmp_path):
    assert load_model("llama-3.1-70b").num_layers == 80
    with pytest.raises(ModelError) as exc:
        load_model("Llama-9")
    assert "\n" not in str(exc.value) and "unknown model" in str(exc.value)
    bad = tmp_path / "m.yaml"
    bad.write_text("num_layers: -3\nhidden_size: 64\nffn_hidden_size: 128\nnum_attention_heads: 4\nvocab_size: 100\n")
    with pytest.raises(ModelError, match="num_layers"):
        load_model(str(bad))


def test_model_yaml_with_first_k_dense(tmp_path):
    f = tmp_path / "tiny.yaml"
    f.write_text("num_layers: 4\nhidden_size: 64\nffn_hidden_size: 128\nnum_attention_heads: 4\nvocab_size: 1000\n"
                 "num_experts: 8\nmoe_router_topk: 2\nmoe_ffn_hidden_size: 32\nfirst_k_dense_layers: 1\n")
    m = load_model(str(f))
    assert m.moe_layers == (False, True, True, True)


def test_padded_vocab_follows_megatron():
    # Megatron pads to a multiple of 128 * TP: 128256 is already a multiple of 1024; 151936 -> 152576 at TP=8? 151936 = 1187*128
    m = load_model("Qwen3-8B")
    assert padded_vocab_size(m, 1) == 151936
    assert padded_vocab_size(m, 8) == 152576  # ceil(151936 / 1024) * 1024
