"""Exact integer bytes per (table row, rank class) with numpy: the arithmetic of constraints.memory.per_rank.

Why rank classes: pipeline ranks that hold the same kinds of layers and the same ends (embedding, loss,
MTP) have the same static bytes and the same activation coefficients; only their in-flight count differs,
and activation bytes never fall as in-flight rises, so a class's peak is its largest in-flight count.
A 64-stage split has 2-5 classes, so peaks are max over a handful of columns, not 64.

Static bytes: constraints.memory.per_rank.static_from_params on rank_params (cached per TP, EP, ETP, class contents).
Activation bytes: constraints.memory.activation_coef coefficients (per split, full-recompute setting, class) times
per-shape values (per TP, CP, EP, ETP, MBS, SP, recompute), in-flight counts from
constraints.memory.in_flight.inflight_chunks, then rank_activation_terms' ceilings, fragmentation and overhead,
through constraints.memory.per_rank.rank_activation_terms on numpy columns. tests/solver/test_core.py holds peaks equal
to memory_report.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from constraints.memory import activations as act
from constraints.memory import per_rank as mem
from constraints.memory.activation_coef import full_recompute_key, kind_keys, rank_coefficients, shape_key, values_at
from constraints.memory.gemm_workspaces import te_gemm_workspace_bytes
from constraints.memory.in_flight import inflight_chunks
from constraints.memory.userbuffers import userbuffer_bytes
from constraints.spec import Recipe
from constraints.stages import rank_chunks
from solver.splits import split_fields
from solver.tables.codes import code_groups, column_ranks, unique_codes
from solver.tables.rules import fast_recipe

_SPLIT_BASE = Recipe()


def unique_table(keys: np.ndarray, fn, width: int) -> tuple[np.ndarray, np.ndarray]:
    """([distinct keys, width] fn values, index of each row's key): fn(key row as a tuple of ints) -> `width`
    ints, evaluated once per distinct key."""
    uniq, inv = unique_codes(keys)
    vals = np.array([fn(tuple(k)) for k in uniq.tolist()], dtype=np.int64).reshape(len(uniq), width)
    return vals, inv


@dataclass
class Split:
    """One pipeline split (PP, VPP, account-for split): each rank's chunks, grouped into classes."""

    chunks: list            # per rank: list[Chunk]
    classes: list[list[int]]  # ranks per class, in first-rank order
    sigs: list = None         # per class: its chunks' (layer kind per layer, embedding, loss, MTP) contents


def make_split(model, pp: int, vpp: int, acc) -> Split:
    """Chunks per rank (constraints.stages.rank_chunks) and the classes of ranks with equal contents."""
    recipe = _SPLIT_BASE.model_copy(update={"pp": pp, "vpp": vpp, **split_fields(acc)})
    chunks = rank_chunks(model, recipe)
    flags = model.layer_kinds
    sig_of: dict = {}
    for rank, cs in enumerate(chunks):
        sig = tuple((tuple(flags[i] for i in c.layers), c.embedding, c.loss, c.mtp) for c in cs)
        sig_of.setdefault(sig, []).append(rank)
    return Split(chunks=chunks, classes=list(sig_of.values()), sigs=list(sig_of))


class MemoryTables:
    """Builds static and activation byte columns for the solver's tables."""

    def __init__(self, space, profile, rc_choices: list, splits: dict, width: int) -> None:
        self.space, self.profile, self.rc = space, profile, rc_choices
        self.model, self.job, self.world = space.model, space.job, space.world_size
        self.splits, self.width = splits, width
        self.split_keys = list(splits)
        self.n_kinds = len(kind_keys(self.model))  # layer-kind values (PL) per shape: activation_coef.kind_keys
        self._static_cache, self._static_recipes, self._class_params_cache = {}, {}, {}
        self._params_recipes, self._params_by_chunk, self._chunk_ids, self._split_chunks = {}, {}, {}, {}
        # full-recompute settings: the only part of recompute the activation coefficients read
        keys = [full_recompute_key(_SPLIT_BASE.model_copy(update={"recompute": rc})) for rc in rc_choices]
        self.full_keys = list(dict.fromkeys(keys))
        self.full_of_rc = np.array([self.full_keys.index(k) for k in keys], dtype=np.int64)
        self.full_rep = [keys.index(k) for k in self.full_keys]
        # recomputed modules (selective recompute): the only part of recompute the activation values read
        mods = [act.recomputed_modules(_SPLIT_BASE.model_copy(update={"recompute": rc})) for rc in rc_choices]
        self.modules = list(dict.fromkeys(mods))
        self.modules_of_rc = np.array([self.modules.index(m) for m in mods], dtype=np.int64)

    # ---- static ------------------------------------------------------------------------------
    def static_row(self, row: tuple, sharding: str) -> list[int]:
        """Static bytes per class of one structural row under one DP sharding (0 past the last class)."""
        tp, pp, vpp, cp, ep, etp, sched, acc = row
        out = [self._static(tp, pp, cp, ep, etp, sharding, params) for params in self._class_params(tp, ep, etp, (pp, vpp, acc))]
        return out + [0] * (self.width - len(out))

    def static_table(self, struct: list[tuple], static_ok: np.ndarray, shardings: list[str]) -> np.ndarray:
        """[struct * n_shard + shard, width] static_row of every (row, sharding) the structural rules accept, 0
        elsewhere: the table build_tables stores, in one call (class params looked up once per row)."""
        n_sh = len(shardings)
        at, vals = [], []
        for i, (tp, pp, vpp, cp, ep, etp, _sched, acc) in enumerate(struct):
            params = self._class_params(tp, ep, etp, (pp, vpp, acc))
            pad = [0] * (self.width - len(params))
            for k, sh in enumerate(shardings):
                if static_ok[i, k]:
                    at.append(i * n_sh + k)
                    vals.append([self._static(tp, pp, cp, ep, etp, sh, p) for p in params] + pad)
        out = np.zeros((len(struct) * n_sh, self.width), dtype=np.int64)
        if at:
            out[np.array(at)] = np.array(vals, dtype=np.int64)
        return out

    def _static(self, tp, pp, cp, ep, etp, sharding: str, params: tuple) -> int:
        """Static bytes of one class, cached per (TP, PP, CP, EP, ETP, sharding, class params): static_from_params
        reads of a recipe only the sharding arithmetic (DP, CP, expert-DP, the sharding, fp8_param_gather), so
        rows that differ in schedule, VPP or split share a value whenever their ranks hold the same counts."""
        key = (tp, pp, cp, ep, etp, sharding, params)
        hit = self._static_cache.get(key)
        if hit is None:
            r = self._static_recipes.get(key[:6])
            if r is None:
                r = self._static_recipes[key[:6]] = fast_recipe(tp, pp, 1, cp, ep, etp, 1, tp > 1, self.rc[0], "1f1b", sharding, False)
            hit = self._static_cache[key] = sum(mem.static_from_params(self.job, r, self.world, *params).values())
        return hit

    def _class_params(self, tp, ep, etp, split_key) -> list:
        """rank_params per class of a split, cached per (TP, EP, ETP, split).

        Built from per-chunk rank_params: a rank's counts are its chunks' sums (dense, expert) and max (largest
        layer), exactly rank_params' loop, and one chunk's counts depend on TP, EP, ETP, the vocab padding
        (rank_params reads only those and the chunks) and the chunk's contents: each layer's MoE flag
        (constraints.models.params.all_layer_params holds one LayerParams per flag), embedding, loss and MTP. So each
        distinct chunk is priced once per (TP, EP, ETP) across all splits, under one recipe per (TP, EP, ETP)."""
        hit = self._class_params_cache.get((tp, ep, etp, split_key))
        if hit is None:
            r = self._params_recipes.get((tp, ep, etp))
            if r is None:
                r = self._params_recipes[(tp, ep, etp)] = fast_recipe(tp, 1, 1, 1, ep, etp, 1, False, self.rc[0], "1f1b", "none", False)
            hit = []
            for chunks in self._class_chunks(split_key):
                dense = expert = biggest = 0
                for chunk_id, chunk in chunks:
                    key = (tp, ep, etp, chunk_id)
                    d, e, b = self._params_by_chunk.get(key) or self._params_by_chunk.setdefault(
                        key, mem.rank_params(self.model, r, [chunk]))
                    dense, expert, biggest = dense + d, expert + e, max(biggest, b)
                hit.append((dense, expert, biggest))
            self._class_params_cache[(tp, ep, etp, split_key)] = hit
        return hit

    def _class_chunks(self, split_key) -> list[list[tuple[int, object]]]:
        """Per class of a split: (content id, chunk) of its first rank's chunks (ids shared across splits)."""
        out = self._split_chunks.get(split_key)
        if out is None:
            split, flags = self.splits[split_key], self.model.layer_kinds
            out = self._split_chunks[split_key] = [
                [(self._chunk_ids.setdefault((tuple(flags[i] for i in c.layers), c.embedding, c.loss, c.mtp), len(self._chunk_ids)), c)
                 for c in split.chunks[ranks[0]]] for ranks in split.classes]
        return out

    # ---- activations -------------------------------------------------------------------------
    def activation(self, cols: dict[str, np.ndarray], frag_ppm: int, overhead_bytes: int) -> np.ndarray:
        """[rows, width] activation-side bytes; cols: struct, tp, pp, vpp, cp, ep, etp, mbs, sp, rc, sched, split,
        m (int arrays; struct indexes the structural row whose TP ... split a row carries, sched indexes the
        schedule domain, split indexes self.split_keys). Keys are found per structural row first (_keyed)."""
        n = len(cols["tp"])
        if n == 0:
            return np.zeros((0, self.width), dtype=np.int64)
        s = cols["struct"]
        self._rep = np.zeros(int(s.max()) + 1, dtype=np.int64)
        self._rep[s] = np.arange(n)  # a row of each structural row
        vals, val_id = self._value_table(cols)
        keys, comm_id = self._keyed(cols, ("tp", "cp", "ep", "pp"), ("mbs", "sp", "tpo"))
        comm = np.array([self._comm((tp, cp, ep, mbs, sp, int(pp > 1), tpo)) for tp, cp, ep, pp, mbs, sp, tpo in keys.tolist()],
                        dtype=np.int64).reshape(-1)[comm_id]
        full_ids = self.full_of_rc[cols["rc"]]
        fulls = np.flatnonzero(np.bincount(full_ids)).tolist()
        self._wmax = max((len(self._coef(s, f, c).working) for s in range(len(self.split_keys))
                          for f in fulls for c in range(len(self.splits[self.split_keys[s]].classes))), default=0)
        sched_names = self.space.domains["schedule"]
        keys, inflight_id = self._keyed(cols, ("sched", "split"), ("m",))
        inflight = np.array([self._inflight(sched_names[k[0]], k[1], k[2]) for k in keys.tolist()],
                            dtype=np.int64).reshape(len(keys), self.width)
        sf_keys, sf_id = self._keyed(cols, ("split",), (), {"full": full_ids})
        nk = self.n_kinds
        pl = [vals[:, i][val_id] for i in range(nk)]
        inp, emb, outb = (vals[:, nk + i][val_id] for i in range(3))
        vpp = np.maximum(cols["vpp"], 1)
        out = np.zeros((n, self.width), dtype=np.int64)
        for c in range(self.width):
            table = np.array([self._coef_flat(sid, fid, c) for sid, fid in sf_keys.tolist()], dtype=np.int64)
            col = lambda i, table=table: table[:, i][sf_id]  # noqa: E731
            # activation_coef.evaluate; a coefficient that is 0 in every row adds 0 and is skipped (same integers).
            # Flat layout (_coef_flat): valid, n per kind, n_inp, n_emb_layers, n_emb, n_out, working tuples
            per_value = [(1 + k, pl[k]) for k in range(nk)] + [(1 + nk, inp), (2 + nk, emb)]
            layers = sum((col(i) * v for i, v in per_value if table[:, i].any()), np.zeros(n, dtype=np.int64))
            sums = [layers, col(3 + nk) * emb, col(4 + nk) * outb]
            groups = [j for j in range(5 + nk, table.shape[1], nk) if table[:, j:j + nk].any()]
            working = np.zeros(n, dtype=np.int64)
            for j in groups:  # max over the working tuples w of sum_k w[k]*PL[k], 0 when none
                working = np.maximum(working, sum((col(j + k) * pl[k] for k in range(nk) if table[:, j + k].any()),
                                                  np.zeros(n, dtype=np.int64)))
            terms = mem.rank_activation_terms(sums, working, vpp, inflight[:, c][inflight_id], comm, frag_ppm, overhead_bytes)
            total = sum(terms.values())
            out[:, c] = total if table[:, 0].all() else np.where(col(0) > 0, total, 0)
        return out

    def _keyed(self, cols: dict, struct_names: tuple, row_names: tuple, extra: dict = None) -> tuple[np.ndarray, np.ndarray]:
        """unique_codes of the named columns (struct_names, then row_names, then `extra` row columns): the
        distinct key rows and each row's index among them. Columns in struct_names are constant per structural
        row, so they are coded once per structural row (self._rep) and joined per row by one gather."""
        row_cols = [cols[k] for k in row_names] + list((extra or {}).values())
        per_struct = np.stack([cols[k][self._rep] for k in struct_names], axis=1)
        _, struct_code = unique_codes(per_struct)
        code, total = struct_code[cols["struct"]], int(struct_code.max()) + 1
        for col in row_cols:
            rank, radix = column_ranks(col)
            code, total = code * radix + rank, total * radix
        assert total < 1 << 62  # a few hundred structural codes times small row ranges
        inv, some_row = code_groups(code)
        keys = np.stack([cols[k][some_row] for k in struct_names] + [c[some_row] for c in row_cols], axis=1)
        return keys, inv

    def _recipe_for(self, tp, cp, ep, mbs, sp, rc, etp=0, pp=1):
        return fast_recipe(tp, pp, 1, cp, ep, etp or None, mbs, bool(sp), self.rc[rc], "1f1b", "none", False)

    def _value_table(self, cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """([distinct, kinds + 3] activation_coef values (PL per kind, INP, EMB, OUT), index per row): a shape key per
        distinct (TP, CP, EP, ETP, MBS, SP) (shape_key reads no recompute field), then values_at once per
        distinct (shape key, recomputed modules): thousands of rows share a few hundred of those."""
        shapes, shape_of_row = self._keyed(cols, ("tp", "cp", "ep", "etp"), ("mbs", "sp"))
        interned: dict = {}
        shape_ids = np.array([interned.setdefault(shape_key(self.job, self._recipe_for(tp, cp, ep, mbs, sp, 0, etp)), len(interned))
                              for tp, cp, ep, etp, mbs, sp in shapes.tolist()], dtype=np.int64)
        keys = list(interned)
        code = shape_ids[shape_of_row] * len(self.modules) + self.modules_of_rc[cols["rc"]]
        inv, some_row = code_groups(code)
        vals = [values_at(self.model, keys[k // len(self.modules)], self.modules[k % len(self.modules)]) for k in code[some_row].tolist()]
        return np.array(vals, dtype=np.int64).reshape(len(some_row), self.n_kinds + 3), inv

    def _comm(self, k):
        """Comm buffers of a row, with TE's userbuffers where it overlaps TP comm and TE's cuBLAS workspaces (the terms
        memory_report adds)."""
        tp, cp, ep, mbs, sp, pp_gt1, tpo = k
        r = self._recipe_for(tp, cp, ep, mbs, sp, 0, pp=2 if pp_gt1 else 1).model_copy(update={"tp_comm_overlap": bool(tpo)})
        return [mem.comm_buffer_bytes(self.model, r, act.shape_of(self.job, r)) + userbuffer_bytes(self.model, self.job, r)
                + te_gemm_workspace_bytes(self.profile.compute_capability, self.model, r)]

    def _coef(self, split_id: int, full_id: int, c: int):
        cache = self.__dict__.setdefault("_coef_cache", {})
        key = (split_id, full_id, c)
        if key not in cache:
            split = self.splits[self.split_keys[split_id]]
            if c >= len(split.classes):
                cache[key] = None
            else:
                r = _SPLIT_BASE.model_copy(update={"recompute": self.rc[self.full_rep[full_id]]})
                cache[key] = rank_coefficients(self.model, r, split.chunks[split.classes[c][0]])
        return cache[key]

    def _coef_flat(self, split_id: int, full_id: int, c: int) -> list[int]:
        """[valid, n per kind..., n_inp, n_emb_layers, n_emb, n_out] + the working tuples, padded to the widest."""
        coef = self._coef(split_id, full_id, c)
        w, nk = max(self._wmax, 1), self.n_kinds
        if coef is None:
            return [0] * (5 + nk + nk * w)
        pairs = list(coef.working) + [(0,) * nk] * (w - len(coef.working))
        return [1, *coef.n_kind, coef.n_inp, coef.n_emb_layers, coef.n_emb, coef.n_out] + [x for p in pairs for x in p]

    def _inflight(self, sched: str, split_id: int, m: int) -> list[int]:
        pp, vpp, acc = self.split_keys[split_id]
        split = self.splits[(pp, vpp, acc)]
        r = fast_recipe(1, pp, vpp, 1, 1, None, 1, False, self.rc[0], sched, "none", acc)
        out = [0] * self.width
        for c, ranks in enumerate(split.classes):
            out[c] = max(inflight_chunks(r, rank, m) for rank in ranks)
        return out
