"""Per-rank activation sums as integer coefficients over a handful of per-layer byte values.

Why: `constraints.memory.per_rank.chunk_activation` sums, per chunk, per-layer bytes that depend only on the layer
shape (TP, CP, EP, ETP, MBS, SP, recompute modules) — the structure (which layers a rank holds, what full
recompute keeps) only decides *how many* of each. Splitting the two lets the solver price a million
recipes with numpy (solver/tables/memory.py) from a few hundred structures and a few thousand shapes, with
the same integer arithmetic: tests/constraints/memory/test_activation_coef.py holds `evaluate` equal to chunk_activation. CPU offloading
(`Recipe.cpu_offloading_num_layers`, which the solver does not search and keeps at 0) is chunk_activation's alone.

Values (one set per layer shape; `values_of`): one PL per layer kind (`kind_keys`: PLd / PLm = bytes of one
dense / MoE transformer layer; for a hybrid model one per pattern symbol M, *, -, E) under selective or no
recompute (activations.layer_bytes), INP = a checkpointed layer input (layer_input_bytes), EMB = embedding
activations (embedding_bytes), OUT = output-layer activations (output_bytes).
"""
from __future__ import annotations

from dataclasses import dataclass

from constraints.memory import activations as act
from constraints.models.hybrid_pattern import LAYER_SYMBOLS
from constraints.models.params import padded_vocab_size
from constraints.spec import ModelSpec, Recipe, RecomputeGranularity, RecomputeMethod
from constraints.stages import Chunk

TRANSFORMER_KINDS = (False, True)  # ModelSpec.layer_kinds of a transformer: dense, MoE


def kind_keys(model: ModelSpec) -> tuple:
    """The layer kinds the coefficients count, in column order: (dense, MoE) for a transformer (both always, so its
    table layout does not depend on which occur), the four pattern symbols (M, *, -, E) for a hybrid model."""
    return LAYER_SYMBOLS if model.is_hybrid else TRANSFORMER_KINDS


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class RankCoef:
    """One pipeline rank: sums[0] = sum_k n_kind[k]*PL[k] + n_inp*INP + n_emb_layers*EMB, sums[1] = n_emb*EMB,
    sums[2] = n_out*OUT, working = max(sum_k w[k]*PL[k] for w in working), else 0 (k over `kind_keys`)."""

    n_kind: tuple[int, ...]
    n_inp: int
    n_emb_layers: int
    n_emb: int
    n_out: int
    working: tuple[tuple[int, ...], ...]
    vpp: int


def full_recompute_key(recipe: Recipe) -> tuple:
    """What of the recompute setting changes the coefficients: only full recompute's method and N."""
    rc = recipe.recompute
    if rc.granularity != RecomputeGranularity.full:
        return ()
    return (rc.method.value, rc.num_layers or 1)


def _chunk_coef(kinds: list, chunk: Chunk, mtp_kinds: tuple, full: tuple, keys: tuple) -> tuple[list[int], set]:
    """[n per kind..., n_inp, n_emb_layers, n_emb, n_out] and working count tuples of one chunk, mirroring
    constraints.memory.per_rank.chunk_activation term by term (`kinds`: the chunk's layer kinds, `keys`: kind_keys)."""
    n, nk = len(kinds), len(keys)
    c = [0] * (nk + 4)

    def counts(group) -> list[int]:
        return [group.count(k) for k in keys]

    working: set = set()
    if full and n:
        method, k_req = full
        k = min(k_req, n)
        if method == RecomputeMethod.block.value:
            c[nk] += k                                 # first k layers keep only their input
            c[:nk] = counts(kinds[k:])
            # the working set is the largest single layer among the first k
            working |= {tuple(int(j == keys.index(kind)) for j in range(nk)) for kind in set(kinds[:k])}
        else:
            c[nk] += _ceil_div(n, k)                   # one input per group of k layers ("uniform")
            for g in range(0, n, k):
                working.add(tuple(counts(kinds[g:g + k])))
    else:
        c[:nk] = counts(kinds)
    if chunk.mtp:                                      # each MTP block: its layers (ModelSpec.mtp_layer_kinds) + embedding
        for kind in mtp_kinds:
            c[keys.index(kind)] += chunk.mtp
        c[nk + 1] += chunk.mtp
    c[nk + 2] += 1 if chunk.embedding else 0
    c[nk + 3] += (1 if chunk.loss else 0) + chunk.mtp
    return c, working


def rank_coefficients(model: ModelSpec, recipe: Recipe, chunks: list[Chunk]) -> RankCoef:
    """Coefficients of one rank's chunks (recipe supplies only the full-recompute setting)."""
    kinds_all, full, keys = model.layer_kinds, full_recompute_key(recipe), kind_keys(model)
    total = [0] * (len(keys) + 4)
    working: set = set()
    for chunk in chunks:
        c, w = _chunk_coef([kinds_all[i] for i in chunk.layers], chunk, model.mtp_layer_kinds, full, keys)
        total = [x + y for x, y in zip(total, c)]
        working |= w
    nk = len(keys)
    return RankCoef(tuple(total[:nk]), *total[nk:], working=tuple(sorted(working)), vpp=len(chunks))


def values_of(model: ModelSpec, job, recipe: Recipe) -> tuple[int, ...]:
    """(PL per kind..., INP, EMB, OUT) bytes for one micro-batch at this recipe's layer shape."""
    return values_at(model, shape_key(job, recipe), act.recomputed_modules(recipe))


def shape_key(job, recipe: Recipe) -> tuple:
    """Everything of a recipe values_of reads besides the recomputed modules: the per-rank Shape, whether
    checkpointed inputs are sharded over TP, and TP with the vocab multiple (output layer).
    Why a key: the solver prices thousands of recipes that share a few hundred keys (values_at per key)."""
    return (act.shape_of(job, recipe), act.inputs_sharded(recipe), recipe.tp, recipe.make_vocab_size_divisible_by)


def values_at(model: ModelSpec, key: tuple, modules: tuple) -> tuple[int, ...]:
    """values_of from its shape_key and recomputed modules (activations.recomputed_modules) alone; a kind the
    model does not have is 0."""
    sh, sharded, tp, vocab_multiple = key
    present = set(model.layer_kinds) | set(model.mtp_layer_kinds)
    per_kind = tuple(act.kept_layer_bytes(model, sh, k, modules) if k in present else 0 for k in kind_keys(model))
    vocab = padded_vocab_size(model, tp, vocab_multiple)
    return per_kind + (act.checkpoint_input_bytes(model, sh, sharded), act.embedding_bytes(model, sh),
                       act.output_bytes(model, sh, vocab))


def evaluate(coef: RankCoef, values: tuple[int, ...]) -> tuple[list[int], int]:
    """(sums [layers, embedding, output], working set) of one rank — the scalar form of the numpy path."""
    nk = len(coef.n_kind)
    pl, (inp, emb, out) = values[:nk], values[nk:]
    sums = [sum(n * v for n, v in zip(coef.n_kind, pl)) + coef.n_inp * inp + coef.n_emb_layers * emb,
            coef.n_emb * emb, coef.n_out * out]
    working = max((sum(a * v for a, v in zip(w, pl)) for w in coef.working), default=0)
    return sums, working
