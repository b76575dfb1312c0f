"""Per-rank activation sums as integer coefficients over a handful of per-layer byte values.

Why: `constraints.memory.chunk_activation` sums, per chunk, per-layer bytes that depend only on the layer
shape (TP, CP, EP, ETP, MBS, SP, recompute modules) — the structure (which layers a rank holds, what full
recompute keeps) only decides *how many* of each. Splitting the two lets the solver price a million
recipes with numpy (solver/table_memory.py) from a few hundred structures and a few thousand shapes, with
the same integer arithmetic: tests/test_activation_coef.py holds `evaluate` equal to chunk_activation.

Values (one set per layer shape; `values_of`): PLd / PLm = bytes of one dense / MoE layer under selective
or no recompute (activations.layer_bytes), INP = a checkpointed layer input (layer_input_bytes), EMB =
embedding activations (embedding_bytes), OUT = output-layer activations (output_bytes).
"""
from __future__ import annotations

from dataclasses import dataclass

from constraints import activations as act
from constraints.params import padded_vocab_size
from constraints.spec import ModelSpec, Recipe, RecomputeGranularity, RecomputeMethod
from constraints.stages import Chunk

VALUE_NAMES = ("PLd", "PLm", "INP", "EMB", "OUT")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class RankCoef:
    """One pipeline rank: sums[0] = n_dense*PLd + n_moe*PLm + n_inp*INP + n_emb_layers*EMB,
    sums[1] = n_emb*EMB, sums[2] = n_out*OUT, working = max(a*PLd + b*PLm for (a, b) in working), else 0."""

    n_dense: int
    n_moe: int
    n_inp: int
    n_emb_layers: int
    n_emb: int
    n_out: int
    working: tuple[tuple[int, int], ...]
    vpp: int


def full_recompute_key(recipe: Recipe) -> tuple:
    """What of the recompute setting changes the coefficients: only full recompute's method and N."""
    rc = recipe.recompute
    if rc.granularity != RecomputeGranularity.full:
        return ()
    return (rc.method.value, rc.num_layers or 1)


def _chunk_coef(flags: list[bool], chunk: Chunk, last_flag: bool, full: tuple) -> tuple[list[int], set]:
    """[n_dense, n_moe, n_inp, n_emb_layers, n_emb, n_out] and working (a, b) pairs of one chunk, mirroring
    constraints.memory.chunk_activation term by term."""
    n = len(flags)
    c = [0, 0, 0, 0, 0, 0]
    working: set = set()
    if full and n:
        method, k_req = full
        k = min(k_req, n)
        if method == RecomputeMethod.block.value:
            c[2] += k                                  # first k layers keep only their input
            tail = flags[k:]
            c[0] += tail.count(False)
            c[1] += tail.count(True)
            head = flags[:k]
            working |= {(1, 0)} if False in head else set()
            working |= {(0, 1)} if True in head else set()
        else:
            c[2] += _ceil_div(n, k)                    # one input per group of k layers ("uniform")
            for g in range(0, n, k):
                grp = flags[g:g + k]
                working.add((grp.count(False), grp.count(True)))
    else:
        c[0] += flags.count(False)
        c[1] += flags.count(True)
    if chunk.mtp:                                      # each MTP block: one last-kind layer + embedding
        c[1 if last_flag else 0] += chunk.mtp
        c[3] += chunk.mtp
    c[4] += 1 if chunk.embedding else 0
    c[5] += (1 if chunk.loss else 0) + chunk.mtp
    return c, working


def rank_coefficients(model: ModelSpec, recipe: Recipe, chunks: list[Chunk]) -> RankCoef:
    """Coefficients of one rank's chunks (recipe supplies only the full-recompute setting)."""
    flags_all, full = model.moe_layers, full_recompute_key(recipe)
    last_flag = flags_all[-1] if flags_all else False
    total = [0, 0, 0, 0, 0, 0]
    working: set = set()
    for chunk in chunks:
        c, w = _chunk_coef([flags_all[i] for i in chunk.layers], chunk, last_flag, full)
        total = [x + y for x, y in zip(total, c)]
        working |= w
    return RankCoef(*total, working=tuple(sorted(working)), vpp=len(chunks))


def values_of(model: ModelSpec, job, recipe: Recipe) -> tuple[int, int, int, int, int]:
    """(PLd, PLm, INP, EMB, OUT) bytes for one micro-batch at this recipe's layer shape."""
    return values_at(model, shape_key(job, recipe), act.recomputed_modules(recipe))


def shape_key(job, recipe: Recipe) -> tuple:
    """Everything of a recipe values_of reads besides the recomputed modules: the per-rank Shape, whether
    checkpointed inputs are sharded over TP, and TP with the vocab multiple and loss fusion (output layer).
    Why a key: the solver prices thousands of recipes that share a few hundred keys (values_at per key)."""
    return (act.shape_of(job, recipe), act.inputs_sharded(recipe), recipe.tp, recipe.make_vocab_size_divisible_by,
            recipe.cross_entropy_loss_fusion)


def values_at(model: ModelSpec, key: tuple, modules: tuple) -> tuple[int, int, int, int, int]:
    """values_of from its shape_key and recomputed modules (activations.recomputed_modules) alone."""
    sh, sharded, tp, vocab_multiple, fused_loss = key
    pld = act.kept_layer_bytes(model, sh, False, modules) if False in model.moe_layers else 0
    plm = act.kept_layer_bytes(model, sh, True, modules) if True in model.moe_layers else 0
    vocab = padded_vocab_size(model, tp, vocab_multiple)
    return (pld, plm, act.checkpoint_input_bytes(model, sh, sharded), act.embedding_bytes(model, sh),
            act.output_bytes(model, sh, vocab, fused_loss))


def evaluate(coef: RankCoef, values: tuple[int, int, int, int, int]) -> tuple[list[int], int]:
    """(sums [layers, embedding, output], working set) of one rank — the scalar form of the numpy path."""
    pld, plm, inp, emb, out = values
    sums = [coef.n_dense * pld + coef.n_moe * plm + coef.n_inp * inp + coef.n_emb_layers * emb,
            coef.n_emb * emb, coef.n_out * out]
    working = max((a * pld + b * plm for a, b in coef.working), default=0)
    return sums, working
