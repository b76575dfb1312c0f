"""A model whose attention heads do not split into its KV groups is rejected at load time."""
import json

import pytest

from constraints.models.load import load_model
from tests.helpers.builders import REPO

LLAMA_8B = REPO / "constraints" / "models" / "hf_configs" / "Llama-3.1-8B.json"


def test_kv_heads_must_divide_attention_heads(tmp_path):
    cfg = json.loads(LLAMA_8B.read_text())
    cfg["num_key_value_heads"] = 5
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="not divisible by 5 KV heads"):
        load_model(str(path))
    cfg["num_key_value_heads"] = 4  # a divisor of 32 stays a legal GQA model
    path.write_text(json.dumps(cfg))
    assert load_model(str(path)).num_query_groups == 4
