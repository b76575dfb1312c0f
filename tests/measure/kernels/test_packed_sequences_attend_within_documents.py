"""Packed sequences (JobSpec.packed_mean_tokens) attend within each document: measure/kernels/packed_attention.py."""
from __future__ import annotations

import pytest

from constraints.models.load import load_model
from constraints.spec import JobSpec, Recipe
from measure.kernels.layer_ops import attention_ops
from measure.kernels.packed_attention import packed_pair_fraction


def test_the_pair_fraction_counts_the_documents_flash_attention_tiles():
    # 4,096 tokens of 240-token documents: 17 whole documents of 2 query tiles (3 128x128 blocks each) and one of 16
    # tokens (1 block), against one causal 4,096 sequence of 32 tiles (32 * 33 / 2 = 528 blocks)
    assert packed_pair_fraction(JobSpec(seq_length=4096, global_batch_size=8, packed_mean_tokens=240)) == \
        pytest.approx((17 * 3 + 1) / 528)
    assert packed_pair_fraction(JobSpec(seq_length=4096, global_batch_size=8)) == 1.0  # not packed
    assert packed_pair_fraction(JobSpec(seq_length=4096, global_batch_size=8, packed_mean_tokens=4096)) == 1.0


def test_only_core_attention_changes_when_a_sample_is_packed():
    model = load_model("llama-3.1-8b")
    recipe = Recipe(tp=1, pp=1, mbs=1)
    whole = attention_ops(model, JobSpec(seq_length=4096, global_batch_size=8), recipe)
    packed = attention_ops(model, JobSpec(seq_length=4096, global_batch_size=8, packed_mean_tokens=240), recipe)
    for a, b in zip(whole, packed):
        ratio = (17 * 3 + 1) / 528 if a.module == "core_attn" else 1.0
        assert b.flops == pytest.approx(a.flops * ratio)
