"""check and solve results say which model they judged and its exact parameter count, so a user can confirm the config
was read as meant. The counts are the published ones docs/facts/models/params.json records with their sources
(Llama-3.1-70B: 70,553,706,496 on its model card; Llama-3.1-8B: 8,030,261,248, its HF safetensors total)."""
from __future__ import annotations

import json

from shardplan import api
from tests.helpers.builders import REPO

PUBLISHED = json.loads((REPO / "docs" / "facts" / "models" / "params.json").read_text())["models"]


def test_check_reports_the_models_exact_parameters():
    result = api.check("constraints/examples/llama3-70b-h100.yaml").to_json()
    assert result["model"] == "Llama-3.1-70B"
    assert result["model_params"]["total"] == PUBLISHED["Llama-3.1-70B"]["total_params"] == 70_553_706_496


def test_solve_json_names_the_model_and_its_parameters():
    data = api.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, seq_length=8192, global_batch_size=64, top=1).to_json()
    assert data["model"] == "Llama-3.1-8B"
    assert data["model_params"] == {"total": 8_030_261_248, "active": 8_030_261_248}
    assert PUBLISHED["Llama-3.1-8B"]["total_params"] == 8_030_261_248
