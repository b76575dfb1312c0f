"""torchtitan's per-op activation-checkpoint policy recomputes wk, wo and w3 of a Llama block's seven matmuls."""
from __future__ import annotations

import pytest

from constraints.models.load import load_model
from measure.torch_native.activation_checkpoint import recompute_s, recomputed_matmul_share
from measure.torch_native.stack import ActivationCheckpoint


def test_llama3_8b_recomputes_its_second_fourth_and_sixth_matmul():
    # Llama 3.1 8B: hidden 4096, 32 query heads and 8 KV heads of 128, FFN 14336 (its HF config.json).
    # wq 4096x4096, wk and wv 4096x1024, wo 4096x4096, w1 / w3 / w2 4096x14336: wk + wo + w3 = 79,691,776 of 218,103,808
    assert recomputed_matmul_share(load_model("Llama-3.1-8B")) == pytest.approx(79_691_776 / 218_103_808)


def test_per_layer_policy_recomputes_every_second_block_in_full():
    model = load_model("Llama-3.1-8B")
    again = [recompute_s(ActivationCheckpoint.selective_layer, model, [], 1.5, i) for i in range(4)]
    assert again == [1.5, 0.0, 1.5, 0.0]
    assert recompute_s(ActivationCheckpoint.full, model, [], 1.5, 1) == 1.5
    assert recompute_s(ActivationCheckpoint.none, model, [], 1.5, 0) == 0.0
