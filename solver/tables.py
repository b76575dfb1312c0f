"""Factor tables over small keys: legality from the rule functions, exact integer bytes per pipeline rank,
and an integer-microsecond lower bound on the projected step time.

Why factor: the recipe space is a product of ~12 axes (millions of points) but every quantity depends on
few of them. Three tables carry everything:
- structural rows (TP, PP, VPP, CP, EP, ETP, schedule, account-for split) x DP sharding -> static bytes
  per pipeline rank (constraints.memory.static_terms on that rank's chunks);
- activation rows = structural row x (MBS, SP, recompute) -> in-flight activation bytes per rank (from
  constraints.memory's chunk activation, constraints.schedule.inflight_chunks, comm buffers) and a
  lower bound on the step time in integer microseconds (measure.project.layer_cost per layer kind);
- a candidate is (activation row, sharding); its exact peak is max over ranks of static + activation,
  the same sum constraints.memory.memory_report forms (a test holds the two equal on every answer).
Legality: each rule function is called on recipes of the table whose axes it reads (RULE_GROUPS); a rule
not named there is judged on the structural table. Every answer is re-verified by check_case anyway.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from constraints import activations as act
from constraints import memory as mem
from constraints.params import padded_vocab_size
from constraints.rules import RULES, RuleInput, check_rules
from constraints.schedule import inflight_chunks, num_microbatches
from constraints.spec import PipelineSchedule, Recipe
from constraints.stages import StageSplitError, rank_chunks
from solver.space import SearchSpace, make_recipe, recompute_choices, recompute_name

# Rules that read the micro-batch size (batch table) or SP / recompute (activation table); the rest read
# only structural axes and DP sharding. A test checks factorised verdicts against check_rules.
BATCH_RULES = {"global_batch_divisible", "interleaved_microbatches"}
ACTIVATION_RULES = {"sequence_parallel_needs_tp", "sequence_parallel_divides_seq", "tp_comm_overlap_needs_sp",
                    "moe_sequence_parallel", "full_recompute_args", "selective_recompute_args", "fp8_delayed_recompute",
                    "distribute_saved_activations", "cpu_offloading", "zero_bubble_no_recompute",
                    "moe_act_needs_grouped_gemm", "ep_comm_overlap"}
US = 1_000_000


def _rules_named(names: set[str]):
    check_rules  # noqa: B018  (importing check_rules registers the feature rules)
    import constraints.rules_features  # noqa: F401
    return [fn for fn in RULES if fn.__name__ in names]


def _errors(fns, x: RuleInput) -> bool:
    return any(v is not None and v.severity == "error" for v in (fn(x) for fn in fns))


@dataclass
class Tables:
    space: SearchSpace
    profile: object
    usable_bytes: int
    rc_choices: list
    struct: list[tuple]                   # (tp, pp, vpp, cp, ep, etp, schedule, acc_split)
    shardings: list[str]
    static_ok: np.ndarray                 # [struct, sharding] bool: structural rules hold
    static_bytes: np.ndarray              # [struct*nshard + shard, rank] int64, 0 past PP
    act_rows: list[tuple]                 # (struct index, mbs, sp, rc index)
    act_struct: np.ndarray                # [act] struct index
    act_bytes: np.ndarray                 # [act, rank] int64 incl. comm buffers and framework overhead
    lb_us: np.ndarray                     # [act] int64 lower bound on projected iteration time
    counts: dict = field(default_factory=dict)

    def recipe(self, a: int, shard: int) -> Recipe:
        s, mbs, sp, rc = self.act_rows[a]
        tp, pp, vpp, cp, ep, etp, sched, acc = self.struct[s]
        return make_recipe(tp, pp, vpp, cp, ep, etp, mbs, sp, self.rc_choices[rc], sched, self.shardings[shard], acc)

    def peak_bytes(self, a: np.ndarray, shard: np.ndarray) -> np.ndarray:
        """Exact peak bytes (max over pipeline ranks) of candidates (a, shard)."""
        return (self.static_bytes[self.act_struct[a] * len(self.shardings) + shard] + self.act_bytes[a]).max(axis=1)


def _struct_rows(space: SearchSpace, profile) -> list[tuple]:
    d, model, world = space.domains, space.model, space.world_size
    fns = [fn for fn in _all_rules() if fn.__name__ not in BATCH_RULES | ACTIVATION_RULES]
    rows = []
    for tp, pp, cp in itertools.product(d["tp"], d["pp"], d["cp"]):
        if world % (tp * pp * cp):
            continue
        for vpp, sched, acc in itertools.product(d["vpp"], d["schedule"], d["acc_split"]):
            # account-for-embedding/loss only where the layers do not split evenly (prunes duplicates)
            if acc and model.num_layers % (pp * vpp) == 0:
                continue
            for ep, etp in itertools.product(d["ep"], d["etp"]):
                r = make_recipe(tp, pp, vpp, cp, ep, etp, 1, tp > 1, recompute_choices(model)[0], sched, d["dp_sharding"][0], acc)
                if not _errors(fns, RuleInput(model, space.job, r, world, profile)):
                    rows.append((tp, pp, vpp, cp, ep, etp, sched, acc))
    return rows


@lru_cache(maxsize=None)
def _all_rules():
    import constraints.rules_features  # noqa: F401
    return tuple(RULES)


def build_tables(space: SearchSpace, profile, margin_fraction: float = 0.0) -> Tables:
    model, job, world = space.model, space.job, space.world_size
    cal = profile.calibration
    usable = profile.hbm_capacity_bytes * (mem.PPM - round(margin_fraction * mem.PPM)) // mem.PPM
    rcs_all = recompute_choices(model)
    rc_idx = [i for i, r in enumerate(rcs_all) if recompute_name(r) in space.domains["recompute"]]
    shardings = list(space.domains["dp_sharding"])
    struct = _struct_rows(space, profile)
    max_pp = max([s[1] for s in struct], default=1)
    sfns = [fn for fn in _all_rules() if fn.__name__ not in BATCH_RULES | ACTIVATION_RULES]
    static_ok = np.zeros((len(struct), len(shardings)), dtype=bool)
    static_bytes = np.zeros((len(struct) * len(shardings), max_pp), dtype=np.int64)
    chunks_of = {}
    for i, (tp, pp, vpp, cp, ep, etp, sched, acc) in enumerate(struct):
        base = make_recipe(tp, pp, vpp, cp, ep, etp, 1, tp > 1, rcs_all[0], sched, shardings[0], acc)
        chunks_of[i] = rank_chunks(model, base)
        for k, sh in enumerate(shardings):
            r = make_recipe(tp, pp, vpp, cp, ep, etp, 1, tp > 1, rcs_all[0], sched, sh, acc)
            if _errors(sfns, RuleInput(model, job, r, world, profile)):
                continue
            static_ok[i, k] = True
            for rank, chunks in enumerate(chunks_of[i]):
                static_bytes[i * len(shardings) + k, rank] = sum(mem.static_terms(model, job, r, world, chunks).values())
    bfns, afns = _rules_named(BATCH_RULES), _rules_named(ACTIVATION_RULES)
    act_rows, act_list, lb = [], [], []
    layer_time = _LayerTimes(space, profile)
    acts = _ActivationSums(model, job)
    rc_names = [recompute_name(r) for r in rcs_all]
    sigs = {i: acts.signature(c) for i, c in chunks_of.items()}
    for i, (tp, pp, vpp, cp, ep, etp, sched, acc) in enumerate(struct):
        if not static_ok[i].any():
            continue
        # activation rules read SP, recompute and structure, never MBS: judge them once per (sp, rc)
        sp_rc = []
        for sp, rci in itertools.product(space.domains["sp"], rc_idx):
            if sp and tp == 1:
                continue
            r = make_recipe(tp, pp, vpp, cp, ep, etp, 1, sp, rcs_all[rci], sched, shardings[0], acc)
            if not _errors(afns, RuleInput(model, job, r, world, profile)):
                sp_rc.append((sp, rci))
        for mbs in space.domains["mbs"]:
            r0 = make_recipe(tp, pp, vpp, cp, ep, etp, mbs, tp > 1, rcs_all[0], sched, shardings[0], acc)
            if _errors(bfns, RuleInput(model, job, r0, world, profile)):
                continue
            m = max(num_microbatches(job.global_batch_size, mbs, max(r0.dp(world), 1)), 1)
            for sp, rci in sp_rc:
                r = make_recipe(tp, pp, vpp, cp, ep, etp, mbs, sp, rcs_all[rci], sched, shardings[0], acc)
                act_rows.append((i, mbs, sp, rci))
                lkey = (tp, cp, ep, etp, mbs, sp and tp > 1, rc_names[rci])
                act_list.append(acts.per_rank(r, chunks_of[i], sigs[i], lkey, m, cal, max_pp))
                lb.append(layer_time.lower_bound_us(r, chunks_of[i], lkey, m))
    n = len(act_rows)
    return Tables(space=space, profile=profile, usable_bytes=usable, rc_choices=rcs_all, struct=struct, shardings=shardings,
                  static_ok=static_ok, static_bytes=static_bytes, act_rows=act_rows,
                  act_struct=np.array([a[0] for a in act_rows], dtype=np.int64),
                  act_bytes=np.array(act_list, dtype=np.int64).reshape(n, max_pp), lb_us=np.array(lb, dtype=np.int64),
                  counts={"declared": space.size(), "structural_rows": len(struct), "activation_rows": n})


def _layer_key(r: Recipe) -> tuple:
    """Every recipe field the per-layer activation bytes and layer costs read."""
    return (r.tp, r.cp, r.ep, r.etp, r.mbs, r.sequence_parallel, recompute_name(r.recompute))


class _ActivationSums:
    """Per-rank bytes memory_report adds on top of static_terms: in-flight activations, embedding and output
    activations, recompute working set, comm buffers, fragmentation, framework overhead — the same terms,
    combined the same way (ceil over VPP), from constraints.memory's own functions. Chunk results are
    cached by (layer key, the chunk's layer kinds and ends), which is all chunk_activation reads."""

    def __init__(self, model, job) -> None:
        self.model, self.job = model, job
        self.flags = model.moe_layers
        self.chunk_cache: dict = {}
        self.rank_cache: dict = {}

    def signature(self, all_chunks) -> tuple:
        """What chunk_activation reads of each chunk: its layers' kinds and whether it holds the ends."""
        return tuple(tuple((tuple(self.flags[i] for i in c.layers), c.embedding, c.loss, c.mtp) for c in chunks)
                     for chunks in all_chunks)

    def _rank_sums(self, recipe: Recipe, all_chunks, lkey: tuple, sig: tuple) -> tuple:
        key = (lkey, sig)
        hit = self.rank_cache.get(key)
        if hit is not None:
            return hit
        model, job = self.model, self.job
        sh = act.shape_of(job, recipe)
        per_layer = {f: act.layer_bytes(model, sh, f, recipe) for f in set(self.flags)}
        vocab = padded_vocab_size(model, recipe.tp, recipe.make_vocab_size_divisible_by)
        ranks = []
        for chunks, sigs in zip(all_chunks, key[1]):
            sums, working = [0, 0, 0], 0
            for chunk, sig in zip(chunks, sigs):
                ck = (key[0], sig)
                res = self.chunk_cache.get(ck)
                if res is None:
                    res = self.chunk_cache[ck] = mem.chunk_activation(model, recipe, sh, chunk, per_layer, vocab)
                layers, emb, outp, work = res
                sums[0], sums[1], sums[2] = sums[0] + layers, sums[1] + emb, sums[2] + outp
                working = max(working, work)
            ranks.append((sums, working, len(chunks)))
        out = self.rank_cache[key] = (ranks, mem.comm_buffer_bytes(model, recipe, sh))
        return out

    def per_rank(self, recipe: Recipe, all_chunks, sig: tuple, lkey: tuple, m: int, cal, width: int) -> list[int]:
        ranks, comm = self._rank_sums(recipe, all_chunks, lkey, sig)
        frag_ppm = round(cal.activation_fragmentation_fraction * mem.PPM)
        out = [0] * width
        for rank, (sums, working, vpp) in enumerate(ranks):
            terms = mem.rank_activation_terms(sums, working, vpp, inflight_chunks(recipe, rank, m), comm, frag_ppm,
                                              cal.framework_overhead_bytes)
            out[rank] = sum(terms.values())
        return out


class _LayerTimes:
    """A lower bound on measure.project's iteration time from its per-layer costs (cached per layer key).

    The simulated step is at least (a) the busiest rank's work, m * sum of its layers' F+B+W, and (b) for
    the last rank, the first micro-batch's forward and the last one's backward through every earlier
    rank's first chunk plus its own work. Head ops, recompute, p2p, DP comm and the optimizer only add."""

    def __init__(self, space: SearchSpace, profile) -> None:
        self.space, self.profile = space, profile
        self.flags = space.model.moe_layers
        self.cache: dict = {}
        self.split_cache: dict = {}

    def _costs(self, r: Recipe, key: tuple):
        from measure.layer_ops import LayerKind
        from measure.project import layer_cost

        if key not in self.cache:
            sp = self.space
            kinds = {False: LayerKind.dense, True: LayerKind.moe}
            out = {}
            for flag in set(self.flags):
                lc = layer_cost(sp.model, sp.job, r, sp.placement, self.profile, kinds[flag and sp.model.is_moe])
                out[flag] = (lc.fwd + lc.tp_fwd + lc.ep_fwd + lc.cp_fwd + lc.dgrad + lc.tp_bwd + lc.ep_bwd + lc.cp_bwd,
                             lc.wgrad)
            self.cache[key] = out
        return self.cache[key]

    def lower_bound_us(self, r: Recipe, all_chunks, lkey: tuple, m: int) -> int:
        key = (lkey, r.pp, r.vpp, r.account_for_embedding_in_pipeline_split)
        hit = self.split_cache.get(key)
        if hit is None:
            costs, flags = self._costs(r, lkey), self.flags
            busy = [sum(costs[flags[i]][0] + costs[flags[i]][1] for c in chunks for i in c.layers) for chunks in all_chunks]
            chain = sum(costs[flags[i]][0] for chunks in all_chunks[:-1] for i in chunks[0].layers)
            hit = self.split_cache[key] = (max(busy), busy[-1], chain)
        top, last, chain = hit
        step = max(m * top, m * last + chain) + self.profile.calibration.step_overhead_s
        return int(step * US)  # floor: never above the projection's integer microseconds
