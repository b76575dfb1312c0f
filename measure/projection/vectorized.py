"""Vectorised projection: iteration time, tokens/s/GPU and MFU of many recipes at once, with numpy.

Why: the solver ranks millions of recipes, and `measure.projection.project.project` costs ~1 ms each. Every quantity
it forms depends on few recipe axes, so the space splits into small factor tables filled by the scalar
code once per key, and a batch is priced by numpy gathers plus the closed-form schedule arithmetic:
- layer rows keyed by the per-rank shape (TP, CP, EP, ETP, MBS, SP): `measure.projection.layer_cost.layer_parts` of the dense
  and the MoE layer (per-op times once per op), plus the head ops, FLOPs and pipeline p2p bytes; each batch row
  finishes them for its recompute modules, TP / EP overlap and MoE dispatcher in numpy (measure/projection/layer_columns.py);
- stage rows keyed by (PP, VPP, account-for split, full-recompute method/layers, first/last stage layers): per
  distinct pipeline rank, its dense / MoE, fully recomputed, embedding / loss counts (measure/pipeline/stage_rows.py);
- collective spans keyed by (group size, stride) over the placement (`measure.comm.topology.group_span`),
  priced by the alpha-beta formulas of `measure.comm.collectives`, evaluated on arrays.
Result equals `project(..., simulate_pipeline=False)` to rounding (tests/measure/projection/test_vectorized.py holds 1e-9).
Rows whose pipeline split is impossible give NaN.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from constraints.memory.activation_coef import kind_keys
from constraints.spec import DataParallelSharding, JobSpec, ModelSpec, Placement, Recipe, Recompute, RecomputeGranularity
from hardware.profile import HardwareProfile
from measure.comm.collectives_np import all_reduce_np, one_pass_np, span_row
from measure.comm.data_parallel import FSDP_SHARDINGS, exposed_dp_s
from measure.comm.topology import domain_size
from measure.kernels.layer_ops import LayerKind, Phase, head_ops, layer_kind_of, optimizer_ops
from measure.kernels.measured_tables import bundled_table
from measure.kernels.roofline import CostLookup, op_time_s
from measure.pipeline.closed_form import p2p_units_np, staged_closed_form_np
from measure.pipeline.stage_rows import stage_row, stage_width
from measure.projection.factor_table import Axis as _Axis
from measure.projection.factor_table import Factor as _Factor
from measure.projection.flops import flops_per_iteration
from measure.projection.layer_columns import KIND_COLS, RAW_WIDTH, RECOMPUTE_MODULE_COLS, finish_columns, raw_cols
from measure.projection.layer_cost import LayerParts, ep_paired_fraction, layer_parts, recomputed_modules
from measure.projection.recipe_batch import INT_AXES, SCHEDULES, SHARDINGS, RecipeBatch
from measure.projection.recipe_batch import slice_batch as _slice

__all__ = ["Evaluator", "RecipeBatch", "SCHEDULES", "SHARDINGS", "evaluate"]
CHUNK_ROWS = 1 << 15  # rows priced per numpy pass

# layer-row columns: per layer kind (dense, MoE; or a hybrid model's M, *, -, E: Evaluator.kinds) the raw parts
# (measure/projection/layer_columns.py), then the head and per-micro-batch constants
_HEAD_COLS = ("emb_f", "emb_w", "loss_f", "loss_d", "loss_w", "vocab_rows", "p2p_bytes", "flops")


class Evaluator:
    """Prices RecipeBatches for one (model, job, placement, profile[, cost table]); keep one per search.

    Factor tables fill lazily (scalar code once per new key) and persist across calls, so the second
    batch over the same axis values is pure numpy. A batch with a different `base` recipe resets them."""

    def __init__(self, model: ModelSpec, job: JobSpec, placement: Placement, profile: HardwareProfile,
                 cost_table: Optional[CostLookup] = None, fingerprint: Optional[str] = None,
                 shared_parts: Optional[dict] = None) -> None:
        """`shared_parts`: one dict shared by Evaluators of the same (model, job, profile, cost table) at other node
        counts (shardplan sweep). A layer's parts read the placement only through its TP / CP / EP / ETP group spans
        (measure.projection.layer_cost.layer_parts), which follow the scale-up domain size, so entries are keyed by that size,
        the base recipe and the shape's values."""
        self.shared_parts = shared_parts
        if cost_table is None:  # the profile's bundled measured table, as op_time_s would take it
            cost_table, fingerprint = bundled_table(profile.name)
        if cost_table is not None and fingerprint is None:
            fps = cost_table.fingerprints() if hasattr(cost_table, "fingerprints") else []
            fingerprint = fps[0] if len(fps) == 1 else None
        self.model, self.job, self.placement, self.profile = model, job, placement, profile
        self.cost_table, self.fingerprint = cost_table, fingerprint
        self.base: Optional[Recipe] = None
        # the layer kinds in column order (the stage rows count them in the same order), and which occur
        self.kinds = [layer_kind_of(k) for k in kind_keys(model)]
        self.present = [k in set(model.layer_kinds) | set(model.mtp_layer_kinds) for k in kind_keys(model)]

    def _reset(self, base: Recipe) -> None:
        self.base = base
        self.axes = {a: _Axis() for a in INT_AXES + ("first", "last")}
        self.rc_list: list[Recompute] = []
        self.rc_mods: list[tuple] = []      # distinct --recompute-modules sets (decide selective cost)
        self.rc_fulls: list[Recompute] = []  # distinct full-recompute settings (decide per-chunk counts)
        self.rc_map = np.zeros(0, dtype=np.int64)  # global rc -> (mods idx, fulls idx, selective flag)
        self.rc_mask = np.zeros((0, len(RECOMPUTE_MODULE_COLS)))   # rc_mods idx -> 1.0 per layer_ops module it re-runs
        self.layers = _Factor(self._layer_row)
        self.stages = _Factor(self._stage_row)
        self.stage_cols = stage_width(self.model)
        self._parts_cache: dict = {}   # (layer kind, shape key) -> LayerParts
        self._shared = None if self.shared_parts is None else self.shared_parts.setdefault(
            (domain_size(self.profile, self.placement), base.model_dump_json()), {})
        self._op_cache: dict = {}      # (op, phase) -> seconds, shared by every shape
        self._head_rows: dict = {}     # (tp, cp, mbs, sp) -> head columns
        self.dp_spans = _Factor(lambda k: self._span(k, dense=True))
        self.edp_spans = _Factor(lambda k: self._span(k, dense=False))

    # ---- scalar rows -------------------------------------------------------------------------
    def _val(self, axis: str, i: int) -> int:
        return self.axes[axis].values[i]

    def _layer_row(self, key: tuple) -> list[float]:
        """Key (tp, cp, ep, etp, mbs, sp indices) -> raw columns of each layer kind (self.kinds), then the head
        columns: the parts of measure.projection.layer_cost.layer_parts, which read neither recompute, the dispatcher nor the
        overlap flags. `finish_columns` applies those per row in numpy, the arithmetic of layer_cost.finish_parts."""
        ep_free = (key[0], key[1], key[4], key[5])  # layers without experts and the head ops do not read EP / ETP
        row: list[float] = []
        for kind, present in zip(self.kinds, self.present):
            if not present:
                row += [0.0] * RAW_WIDTH
            else:
                row += raw_cols(self._parts(kind, key if kind.has_moe else ep_free))
        head = self._head_rows.get(ep_free)
        if head is None:
            head = self._head_rows[ep_free] = self._head_row(self._shape_recipe(key))
        return row + head

    def _shape_recipe(self, shape: tuple) -> Recipe:
        tp, cp, ep, etp, mbs = (self._val(a, i) for a, i in zip(("tp", "cp", "ep", "etp", "mbs"), shape[:5]))
        return self.base.model_copy(update={"tp": tp, "cp": cp, "ep": ep, "etp": etp, "mbs": mbs, "pp": 1, "vpp": 1,
                                            "sequence_parallel": bool(shape[5]), "recompute": Recompute()})

    def _parts(self, kind: LayerKind, key: tuple) -> LayerParts:
        """measure.projection.layer_cost.layer_parts of one layer kind at one per-rank shape, computed once. Dense keys
        are (tp, cp, mbs, sp) indices: EP / ETP are then read as the batch's first values, which a dense
        layer never uses."""
        parts = self._parts_cache.get((kind, key))
        if parts is None:
            shape = key if len(key) == 6 else (key[0], key[1], 0, 0, key[2], key[3])
            r = self._shape_recipe(shape)
            values = (kind, r.tp, r.cp, r.mbs, r.sequence_parallel) + ((r.ep, r.etp) if len(key) == 6 else ())
            parts = self._shared.get(values) if self._shared is not None else None
            if parts is None:
                parts = layer_parts(self.model, self.job, r, self.placement, self.profile, kind, self.cost_table,
                                    self.fingerprint, self._op_cache)
                if self._shared is not None:
                    self._shared[values] = parts
            self._parts_cache[(kind, key)] = parts
        return parts

    def _head_row(self, r: Recipe) -> list[float]:
        """Embedding / loss times per phase, vocabulary rows, pipeline p2p bytes and model FLOPs."""
        head = [(p, op_time_s(p, self.profile, self.cost_table, self.fingerprint)) for p in head_ops(self.model, self.job, r)]
        emb = [(p, t) for p, t in head if p.op.kind.value == "embedding"]
        loss = [(p, t) for p, t in head if p.op.kind.value != "embedding"]
        vocab_rows = sum(p.op.shape[0] * p.op.shape[1] for p, _ in head
                         if p.phase == Phase.bwd_wgrad and p.op.kind.value == "gemm") // max(1 + self.model.mtp_num_layers, 1)
        t_tok = r.mbs * self.job.seq_length // r.cp
        p2p_bytes = (t_tok // r.tp if r.sp_active else t_tok) * self.model.hidden_size * 2
        return [sum(t for p, t in emb if p.phase == Phase.fwd), sum(t for p, t in emb if p.phase != Phase.fwd),
                *(sum(t for p, t in loss if p.phase == ph) for ph in (Phase.fwd, Phase.bwd_dgrad, Phase.bwd_wgrad)),
                vocab_rows, p2p_bytes, flops_per_iteration(self.model, self.job, r)]

    def _stage_row(self, key: tuple) -> list[float]:
        pp, vpp = self._val("pp", key[0]), self._val("vpp", key[1])
        first, last = self._val("first", key[4]), self._val("last", key[5])
        r = self.base.model_copy(update={"pp": pp, "vpp": vpp, "recompute": self.rc_fulls[key[3]],
                                         "account_for_embedding_in_pipeline_split": bool(key[2]),
                                         "account_for_loss_in_pipeline_split": bool(key[2]),
                                         "first_stage_layers": first or None, "last_stage_layers": last or None})
        return stage_row(self.model, r, self.placement, self.profile)

    def _span(self, key: tuple, dense: bool) -> list[float]:
        w = self.placement.world_size
        pp = self._val("pp", key[2])
        if dense:  # grads reduce over DP x CP ranks, stride TP (measure.comm.topology.recipe_groups)
            tp, cp = self._val("tp", key[0]), self._val("cp", key[1])
            return span_row(w // (tp * pp * cp) * cp, tp, self.profile, self.placement)
        ep, etp = self._val("ep", key[0]), self._val("etp", key[1])
        return span_row(max(w // (etp * ep * pp), 1), etp * ep, self.profile, self.placement)

    # ---- batch arithmetic -------------------------------------------------------------------
    def _recompute_index(self, choices: tuple[Recompute, ...]) -> np.ndarray:
        """Batch-local recompute indices -> rows of self.rc_map (mods idx, fulls idx, selective)."""
        out = []
        for rc in choices:
            if rc not in self.rc_list:
                mods = tuple(sorted(set(rc.modules), key=lambda m: m.value))
                full = (Recompute(granularity=rc.granularity, method=rc.method, num_layers=rc.num_layers)
                        if rc.granularity == RecomputeGranularity.full else Recompute())
                for lst, item in ((self.rc_mods, mods), (self.rc_fulls, full)):
                    if item not in lst:
                        lst.append(item)
                self.rc_list.append(rc)
                self.rc_map = np.array([[self.rc_mods.index(tuple(sorted(set(x.modules), key=lambda m: m.value))),
                                         self.rc_fulls.index(Recompute(granularity=x.granularity, method=x.method, num_layers=x.num_layers)
                                                             if x.granularity == RecomputeGranularity.full else Recompute()),
                                         x.granularity == RecomputeGranularity.selective] for x in self.rc_list], dtype=np.int64)
                self.rc_mask = np.array([[m in recomputed_modules(mods) for m in RECOMPUTE_MODULE_COLS] for mods in self.rc_mods],
                                        dtype=np.float64).reshape(len(self.rc_mods), len(RECOMPUTE_MODULE_COLS))
            out.append(self.rc_list.index(rc))
        return np.array(out, dtype=np.int64)

    def evaluate(self, batch: RecipeBatch) -> dict[str, np.ndarray]:
        """Closed-form projection of every row: iteration_time_s, tokens_per_s_per_gpu, mfu,
        model_tflops_per_gpu, bubble_fraction (arrays of len(batch); NaN where the pipeline split fails)."""
        parts = [self._evaluate(chunk) for _, chunk in self._chunks(batch)]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def evaluate_shardings(self, batch: RecipeBatch, sharding_codes: list[int]) -> np.ndarray:
        """[row, k] closed-form iteration time (s) of every row under each DP sharding `sharding_codes[k]` (indices
        into SHARDINGS; the batch's own dp_sharding is ignored). Why: a sharding changes only the data-parallel
        terms, so the pipeline arithmetic runs once per row instead of once per (row, sharding)."""
        out = np.full((len(batch), len(sharding_codes)), np.nan)
        for lo, chunk in self._chunks(batch):
            st = self._step_terms(chunk)
            for k, code in enumerate(sharding_codes):
                out[lo:lo + len(chunk), k] = self._iteration_s(st, np.full(len(chunk), code, dtype=np.int64))
        return out

    def _chunks(self, batch: RecipeBatch):
        """(first row, slice) of cache-sized blocks (temporaries stay in L2/L3), after resetting the factor tables
        when the batch's base recipe differs; rows with an impossible split come out NaN, without warnings."""
        if batch.base != self.base:
            self._reset(batch.base)
        n = len(batch)
        with np.errstate(divide="ignore", invalid="ignore"):
            for lo in range(0, max(n, 1), CHUNK_ROWS):
                yield lo, _slice(batch, lo, min(lo + CHUNK_ROWS, n))

    def _evaluate(self, batch: RecipeBatch) -> dict[str, np.ndarray]:
        st = self._step_terms(batch)
        total = self._iteration_s(st, np.asarray(batch.dp_sharding, dtype=np.int64))
        world, flops, prof = self.placement.world_size, st["flops"], self.profile
        tokens = self.job.global_batch_size * self.job.seq_length
        return {"iteration_time_s": total, "tokens_per_s_per_gpu": tokens / total / world,
                "mfu": flops / (total * world * prof.peak_tflops.bf16 * 1e12), "model_tflops_per_gpu": flops / total / world / 1e12,
                "bubble_fraction": np.where(st["valid"], st["bubble"], np.nan)}

    def _step_terms(self, batch: RecipeBatch) -> dict[str, np.ndarray]:
        """Per row, everything but the DP sharding's terms: the pipeline step, bubble, the heaviest rank's dense /
        expert parameters, DP / expert-DP spans and sizes, micro-batches, FLOPs."""
        cal, prof, world = self.profile.calibration, self.profile, self.placement.world_size
        tp, pp, vpp, cp, ep, mbs = (np.asarray(getattr(batch, a), dtype=np.int64) for a in ("tp", "pp", "vpp", "cp", "ep", "mbs"))
        etp = np.asarray(batch.etp, dtype=np.int64)
        etp = np.where(etp == 0, tp, etp)
        sp = np.asarray(batch.sp, dtype=bool) & (tp > 1)
        acc = np.asarray(batch.acc_split, dtype=np.int64)
        sched = np.asarray(batch.schedule, dtype=np.int64)
        rc = self._recompute_index(batch.recompute_choices)[np.asarray(batch.recompute, dtype=np.int64)]
        rcm = self.rc_map[rc]
        ix = {a: self.axes[a].index(v) for a, v in (("tp", tp), ("pp", pp), ("vpp", vpp), ("cp", cp), ("ep", ep), ("etp", etp), ("mbs", mbs))}
        n = {a: len(self.axes[a].values) for a in INT_AXES}
        # no TP traffic to hide at TP=1; no userbuffers outside TE's modules (layer_cost.finish_layer_cost)
        tpo = batch.column("tp_comm_overlap").astype(bool) & (tp > 1) & (not batch.base.local_transformer_impl)
        disp, epo = batch.column("moe_dispatcher").astype(np.int64), batch.column("ep_overlap").astype(np.int64)
        L = self.layers.gather([ix["tp"], ix["cp"], ix["ep"], ix["etp"], ix["mbs"], sp.astype(np.int64)],
                               (n["tp"], n["cp"], n["ep"], n["etp"], n["mbs"], 2))
        sel_mask = self.rc_mask[rcm[:, 0]]
        first = self.axes["first"].index(batch.column("first_stage_layers").astype(np.int64))
        last = self.axes["last"].index(batch.column("last_stage_layers").astype(np.int64))
        S = self.stages.gather([ix["pp"], ix["vpp"], acc, rcm[:, 1], first, last],
                               (n["pp"], n["vpp"], 2, len(self.rc_fulls), len(self.axes["first"].values), len(self.axes["last"].values)))
        D = self.dp_spans.gather([ix["tp"], ix["cp"], ix["pp"]], (n["tp"], n["cp"], n["pp"])).T
        E = self.edp_spans.gather([ix["ep"], ix["etp"], ix["pp"]], (n["ep"], n["etp"], n["pp"])).T
        dp = np.maximum(world // (tp * pp * cp), 1)
        m = np.maximum(self.job.global_batch_size // (mbs * dp), 1)
        paired = ep_paired_fraction(pp, vpp, m) if epo.any() else np.zeros(len(tp))
        col_ = []  # per kind: its KIND_COLS, each [row, 1] (0.0 for a kind the model does not have)
        for k, present in enumerate(self.present):
            if not present:  # no layer of this kind: its columns are zero (the stage counts of it are zero too)
                col_.append({c: 0.0 for c in KIND_COLS})
                continue
            col_.append(finish_columns(L[:, k * RAW_WIDTH:(k + 1) * RAW_WIDTH], sel_mask, tpo, disp, epo, cal, paired))
        nk = len(self.kinds)
        head = {c: L[:, nk * RAW_WIDTH + i] for i, c in enumerate(_HEAD_COLS)}
        valid, v, cross = S[:, 0] > 0, S[:, 1], S[:, 2]
        R = S[:, 3:].reshape(len(S), -1, self.stage_cols)  # [row, rank profile, count]
        n_k = [R[:, :, k] for k in range(nk)]         # layers of each kind
        nf_k = [R[:, :, nk + k] for k in range(nk)]   # of which fully recomputed
        emb, loss, voc, mult = (R[:, :, 2 * nk + i] for i in range(4))
        sel = rcm[:, 2:3]

        def per_kind(counts, name):  # sum over kinds of count x the kind's column (kind order: dense then MoE)
            return sum(c * col[name] for c, col in zip(counts, col_))

        # per rank profile, per micro-batch: the sums project() forms per chunk, added over the rank's chunks
        rec = per_kind(nf_k, "R") + sel * per_kind(n_k, "S")
        f = per_kind(n_k, "F") + emb * head["emb_f"][:, None] + loss * head["loss_f"][:, None]
        b = per_kind(n_k, "B") + rec + loss * head["loss_d"][:, None]
        w = per_kind(n_k, "W") + emb * head["emb_w"][:, None] + loss * head["loss_w"][:, None]
        tot = f + b + w
        eff_p2p = cal.p2p_bandwidth_efficiency
        p2p = np.where(cross > 0, head["p2p_bytes"] / (prof.scale_out_bandwidth_gb_per_s * 1e9 * eff_p2p) + prof.scale_out_latency_us * 1e-6,
                       head["p2p_bytes"] / (prof.scale_up_bandwidth_gb_per_s * 1e9 * eff_p2p) + prof.scale_up_latency_us * 1e-6)
        p2p = np.where(pp > 1, p2p * (cal.exposed_comm_fraction if self.base.overlap_p2p_comm else 1.0), 0.0)
        single = (pp == 1) & (v == 1)
        # one stage (PP = VPP = 1): the staged form is m x t and no p2p is exposed, as project()'s single-stage case
        step = staged_closed_form_np(sched, f, b, w, mult, v, m) + p2p_units_np(sched, pp, v, m) * p2p
        busy = m * (mult * tot).sum(axis=1)
        bubble = np.where(single, 0.0, 1.0 - busy / (pp * step))
        # data-parallel reduction and parameter gather on the rank holding the most parameters (bf16)
        dense = per_kind(n_k, "P") + voc * head["vocab_rows"][:, None]
        expert = per_kind(n_k, "E")
        rank_dp = np.argmax(np.where(mult > 0, dense + expert, -1.0), axis=1)[:, None]
        dense_p, expert_p, fwd_w, bwd_w = (np.take_along_axis(x, rank_dp, axis=1)[:, 0] for x in (dense, expert, f, b + w))
        return {"step": step, "bubble": bubble, "valid": valid, "dense_p": dense_p, "expert_p": expert_p, "D": D, "E": E,
                "fwd_window": fwd_w, "bwd_window": bwd_w,
                "m": m, "dp_cp": dp * cp, "edp": np.maximum(world // (etp * ep * pp), 1), "flops": head["flops"],
                "rs_d": one_pass_np(dense_p * 2, D), "rs_e": one_pass_np(expert_p * 2, E)}

    def _iteration_s(self, st: dict, shard_idx: np.ndarray) -> np.ndarray:
        """Iteration time per row under DP sharding `shard_idx` (SHARDINGS indices): the step plus the gradient
        reduction / parameter gather on the heaviest rank (bf16), the optimizer over owned params, the overhead."""
        cal = self.profile.calibration
        dense_p, expert_p, m = st["dense_p"], st["expert_p"], st["m"]
        sharded = shard_idx != SHARDINGS.index(DataParallelSharding.none)
        fsdp = np.isin(shard_idx, [SHARDINGS.index(s) for s in FSDP_SHARDINGS])
        # measure.comm.data_parallel.exposed_dp_s: all-gather costs what reduce-scatter does; unsharded DP all-reduces. The overlap
        # flags are the base recipe's: the solver's candidates set overlap_param_gather with the sharding
        # (solver/space.py: on for every sharded candidate, as Recipe's default), and only the distributed optimizer reads it
        dp_t = exposed_dp_s(sharded, fsdp, st["rs_d"] + st["rs_e"],
                            all_reduce_np(dense_p * 2, st["D"]) + all_reduce_np(expert_p * 2, st["E"]), m,
                            st["fwd_window"], st["bwd_window"], cal.exposed_comm_fraction, self.base.overlap_grad_reduce,
                            self.base.overlap_param_gather)
        owned = np.where(sharded, dense_p / st["dp_cp"] + expert_p / st["edp"], dense_p + expert_p)
        opt = self._optimizer_s(np.maximum(np.nan_to_num(owned).astype(np.int64), 1))
        total = st["step"] + dp_t + opt + cal.step_overhead_s
        return np.where(st["valid"], total, np.nan)

    def _optimizer_s(self, n: np.ndarray) -> np.ndarray:
        """Fused Adam step over n owned params: the roofline of measure.kernels.layer_ops.optimizer_ops, or the
        cost table's exact entry (then priced per distinct n with the scalar code)."""
        if self.cost_table is not None:
            uniq, inv = np.unique(n, return_inverse=True)
            t = np.array([sum(op_time_s(p, self.profile, self.cost_table, self.fingerprint)
                              for p in optimizer_ops(self.model, self.base, int(k))) for k in uniq])
            return t[inv]
        cal = self.profile.calibration
        mem_s = 30.0 * n / (self.profile.hbm_bandwidth_gb_per_s * 1e9 * cal.memory_bound_efficiency)
        return np.maximum(0.0, mem_s) + cal.kernel_launch_us * 1e-6


def evaluate(model: ModelSpec, job: JobSpec, placement: Placement, profile: HardwareProfile, batch: RecipeBatch,
             cost_table: Optional[CostLookup] = None) -> dict[str, np.ndarray]:
    """One-shot `Evaluator(...).evaluate(batch)`; keep an Evaluator instead when pricing many batches."""
    return Evaluator(model, job, placement, profile, cost_table).evaluate(batch)
