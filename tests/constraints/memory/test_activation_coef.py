"""The coefficient form of per-rank activations equals constraints.memory.per_rank.chunk_activation exactly,
over every bundled model and a spread of splits, recompute settings and layer shapes."""
from __future__ import annotations

import itertools

import pytest

from constraints.memory import activations as act
from constraints.memory import per_rank as mem
from constraints.memory.activation_coef import evaluate, rank_coefficients, values_of
from constraints.models.load import bundled_models, load_model
from constraints.models.params import padded_vocab_size
from constraints.spec import JobSpec, Recipe, Recompute, RecomputeMethod, RecomputeModule
from constraints.stages import StageSplitError, rank_chunks

RECOMPUTES = [Recompute.none(), Recompute.selective(RecomputeModule.core_attn),
              Recompute.full(RecomputeMethod.uniform, 1), Recompute.full(RecomputeMethod.uniform, 3),
              Recompute.full(RecomputeMethod.block, 1), Recompute.full(RecomputeMethod.block, 5)]


def chunk_activation_sums(model, job, recipe, chunks):
    sh = act.shape_of(job, recipe)
    per_layer = {f: act.layer_bytes(model, sh, f, recipe) for f in set(model.layer_kinds) | set(model.mtp_layer_kinds)}
    vocab = padded_vocab_size(model, recipe.tp, recipe.make_vocab_size_divisible_by)
    sums, working = [0, 0, 0], 0
    for chunk in chunks:
        layers, emb, out, work = mem.chunk_activation(model, recipe, sh, chunk, per_layer, vocab)
        sums = [sums[0] + layers, sums[1] + emb, sums[2] + out]
        working = max(working, work)
    return sums, working


@pytest.mark.parametrize("name", bundled_models())
def test_coefficients_equal_chunk_activation(name):
    model = load_model(name)
    job = JobSpec(seq_length=4096, global_batch_size=64)
    checked = 0
    for pp, vpp, acc, rc, tp in itertools.product((1, 2, 4, 7), (1, 2, 3), (False, True), RECOMPUTES, (1, 4)):
        recipe = Recipe(tp=tp, pp=pp, vpp=vpp, mbs=2, sequence_parallel=tp > 1, recompute=rc,
                        schedule="interleaved" if vpp > 1 else "1f1b", ep=1,
                        account_for_embedding_in_pipeline_split=acc, account_for_loss_in_pipeline_split=acc)
        try:
            all_chunks = rank_chunks(model, recipe)
        except StageSplitError:
            continue
        values = values_of(model, job, recipe)
        for chunks in all_chunks:
            coef = rank_coefficients(model, recipe, chunks)
            assert evaluate(coef, values) == chunk_activation_sums(model, job, recipe, chunks)
            assert coef.vpp == len(chunks)
            checked += 1
    assert checked > 20


@pytest.mark.parametrize("name", [n for n in bundled_models() if load_model(n).is_hybrid])
def test_hybrid_coefficients_count_each_pattern_symbol_under_pipe_segments(name):
    """Hybrid models: one value per pattern symbol (M, *, -, E); pipe segments (a pipeline_layout) split the pattern
    unevenly, and full recompute's groups then mix symbols. Equal to chunk_activation on every rank."""
    model = load_model(name)
    job = JobSpec(seq_length=4096, global_batch_size=64)
    L = model.num_layers
    cuts = [L // 3, L // 3 + 5, L - L // 3 - 5 - L // 3]  # three uneven segments
    assert sum(cuts) == L
    layout = "|".join(("E" if i == 0 else "") + "t" * n + ("L" if i == 2 else "") for i, n in enumerate(cuts))
    for rc in RECOMPUTES:
        recipe = Recipe(tp=2, pp=3, vpp=1, mbs=1, sequence_parallel=True, recompute=rc, pipeline_layout=layout)
        values = values_of(model, job, recipe)
        assert len(values) == 4 + 3 and values[0] > 0 and values[1] > 0  # Mamba and attention layers
        for chunks in rank_chunks(model, recipe):
            coef = rank_coefficients(model, recipe, chunks)
            assert len(coef.n_kind) == 4
            assert evaluate(coef, values) == chunk_activation_sums(model, job, recipe, chunks)
