"""Shared test helpers: bundled models, profiles, and small case builders."""
from __future__ import annotations

from pathlib import Path

import pytest

from constraints.case import Case
from constraints.models import load_model
from constraints.spec import JobSpec, Placement, Recipe

REPO = Path(__file__).resolve().parents[1]


def make_case(model="Llama-3.1-8B", nodes=1, gpus_per_node=8, hardware="h100-sxm-80gb", seq=4096, gbs=64, **recipe) -> Case:
    m = load_model(model) if isinstance(model, str) else model
    return Case(model=m, job=JobSpec(seq_length=seq, global_batch_size=gbs, precision=recipe.pop("precision", "bf16")),
                recipe=Recipe(**recipe), placement=Placement(hardware=hardware, num_nodes=nodes, gpus_per_node=gpus_per_node))


@pytest.fixture
def case_factory():
    return make_case
