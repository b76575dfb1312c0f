"""`solve --objective fewest-gpus`: the smallest node count whose best recipe reaches a throughput target.

Why a scan and not one model: the world size fixes DP, the micro-batch count and which collectives cross
nodes, so every node count is its own space (own tables). Total throughput is not monotone in the node
count (batch divisibility, PP bubbles), so counts are taken in increasing order and the first whose best
recipe (the exact throughput solve's first answer) reaches the target wins.

Why screens: a big MoE model needs dozens of full solves, most of them at counts that cannot win. A count
is skipped, without building its tables, only when a bound that holds under the projection proves its
best total tokens/s is below the target (CountScreen; the two that prove 'no recipe' first):
- memory: even perfectly sharded static state (constraints.memory.per_rank's own bytes per parameter, every
  parameter stored once across the world) plus the framework reserve exceeds usable HBM, so no recipe fits;
- empty: no TP x PP x CP from the domains divides the world with the global batch divisible by MBS x DP
  and a pipeline split that exists (even, account-for, or an uneven first/last pair where the space
  allows them), so the space has no legal recipe (the rules global_batch_divisible and world_divisible,
  and the stage splits build_tables drops);
- throughput: every GPU at the fastest FLOP rate the projection's roofline can price a kernel at (peak
  for the dtype times the calibration's top efficiency) over the Megatron FLOPs per token (measure/projection/flops.py,
  least vocabulary padding) is below the target: MFU at most that top efficiency (~0.71 on H100).
The answer is the plain scan's: a skipped count provably has best < target, and the largest count is never
skipped (its solve is the reported result when nothing reaches the target). `prune=False` is the plain scan.
"""
from __future__ import annotations

import itertools
from typing import Callable, Optional

from boundary.errors import ShardplanError
from boundary.numbers import bounded_float
from constraints.memory import per_rank as mem
from constraints.models.params import padded_vocab_size
from constraints.spec import Recipe, Recompute
from constraints.stages import StageSplitError, rank_chunks
from measure.kernels.layer_ops import gemm_dtype
from measure.kernels.roofline import peak_flops
from measure.projection.flops import flops_per_token
from solver.space import SpaceError, bf16_layers_error, build_space, make_recipe
from solver.splits import split_choices, split_fields
from solver.tables.rules import schedule_vpp_pairs


class TargetError(ShardplanError):
    """--objective fewest-gpus without a usable --target-tokens-per-s."""


class CountScreen:
    """Proofs that a node count cannot reach a total tokens/s target, without solving it.

    Built once per command (model, job, profile, memory margin, and the same pins and ranges the solve
    gets); the world-independent parts (parameter count, FLOPs per token, fastest FLOP rate) are computed
    once, the per-world part is domain arithmetic and cached pipeline splits."""

    def __init__(self, model, job, profile, margin_fraction: float = 0.0, pins: Optional[dict] = None,
                 ranges: Optional[dict] = None) -> None:
        error = bf16_layers_error(job)  # its bounds size memory without --first-last-layers-bf16 layers
        if error:
            raise SpaceError(error)
        self.model, self.job, self.profile = model, job, profile
        self.pins, self.ranges = dict(pins or {}), dict(ranges or {})
        # the solver's usable bytes, same arithmetic as solver/tables.build_tables
        self.usable_bytes = profile.hbm_capacity_bytes * (mem.PPM - round(margin_fraction * mem.PPM)) // mem.PPM
        self._splits: dict[tuple, bool] = {}
        self._state_bytes: Optional[int] = None
        self._per_gpu_rate: Optional[float] = None
        self._flops_per_token: Optional[float] = None

    # ---- memory --------------------------------------------------------------------------------
    def state_bytes(self) -> int:
        """Static bytes of the whole model stored exactly once: bytes per parameter (constraints.memory.per_rank's
        static_from_params on one parameter of a recipe made by solver.space.make_recipe, so the optimizer
        and weight bytes are those of every recipe the space holds) times
        every parameter one pipeline stage at TP=EP=1 holds (rank_params: least vocabulary padding, MTP).
        Any recipe stores each parameter's weight, gradient and optimizer state at least once across the
        world (TP/EP shards times their group sizes cover a layer; DP/CP/expert-DP shards cover the state),
        so its most loaded GPU holds at least ceil(this / world)."""
        if self._state_bytes is None:
            etp = 1 if self.model.is_moe else None
            ref = make_recipe(1, 1, 1, 1, 1, etp, 1, False, Recompute.none(), "1f1b", "megatron_fsdp", False)
            dense, expert, _ = mem.rank_params(self.model, ref, rank_chunks(self.model, ref)[0])
            per_param = sum(mem.static_from_params(self.job, ref, 1, 1, 0, 0).values())
            self._state_bytes = per_param * (dense + expert)
        return self._state_bytes

    def min_peak_bytes(self, world_size: int) -> int:
        """A lower bound on any recipe's exact peak at this world size: the static bound plus the framework
        reserve every rank's activation terms carry (constraints.memory.per_rank.rank_activation_terms)."""
        return -(-self.state_bytes() // world_size) + self.profile.calibration.framework_overhead_bytes

    # ---- throughput ----------------------------------------------------------------------------
    def max_tokens_per_s(self, world_size: int) -> float:
        """Total tokens/s no recipe's projection exceeds: world x fastest per-GPU FLOP rate / FLOPs per token.
        measure/kernels/roofline.py prices a matmul at FLOPs / (peak(dtype) x efficiency) or slower, the efficiency
        at most the calibration curve's top (times the fp8 factor for fp8, times grouped factors <= 1 for
        grouped GEMMs), and attention at FLOPs / (bf16 peak x attention efficiency); other kernels carry no
        FLOPs. Those kernels' FLOPs summed over the world cover Megatron's count (attention backward is priced
        at 2.5x forward where Megatron counts 2x, more than the MLA '+1' norm terms it adds; held by
        tests/solver/test_fewest_gpus.py), and each GPU's step is at least its own kernels' time."""
        if self._per_gpu_rate is None:
            cal, dtype = self.profile.calibration, gemm_dtype(self.job)
            top = max(y for _, y in cal.gemm_efficiency)
            fp8 = cal.fp8_gemm_relative_efficiency if dtype == "fp8" else 1.0
            bf16 = peak_flops(self.profile, "bf16")
            # GEMMs of the job's precision; bf16 GEMMs (output layer, router); attention (bf16)
            self._per_gpu_rate = max(peak_flops(self.profile, dtype) * top * fp8, bf16 * top, bf16 * cal.attention_efficiency)
            self._flops_per_token = flops_per_token(self.model, self.job.seq_length, padded_vocab_size(self.model, 1))
        return world_size * self._per_gpu_rate / self._flops_per_token

    # ---- empty space ---------------------------------------------------------------------------
    def _split_exists(self, pp: int, vpp: int, split) -> bool:
        """Whether constraints.stages can lay the layers out as this split value (False, True = account-for,
        or an uneven (first, last) pair), the same layout build_tables' make_split asks for."""
        key = (pp, vpp, split)
        if key not in self._splits:
            try:
                rank_chunks(self.model, Recipe(pp=pp, vpp=vpp, **split_fields(split)))
                self._splits[key] = True
            except (StageSplitError, ValueError):
                self._splits[key] = False
        return self._splits[key]

    def _split_values(self, space, pp: int, vpp: int) -> list:
        """Every split value the tables may try at this (PP, VPP): the space's account-for values and the
        uneven (first, last) pairs solver/splits.split_choices gives, the call solver/table_rules.struct_rows
        makes (a superset of what the tables try, so an 'empty' verdict never misses a split they use)."""
        acc_domain = space.domains["acc_split"]
        uneven = True in space.domains.get("uneven_stages", [False])
        return list(acc_domain) + [s for s in split_choices(self.model, pp, vpp, acc_domain, uneven) if not isinstance(s, bool)]

    def space_is_empty(self, placement) -> bool:
        """True when no (TP, PP, CP, MBS, schedule/VPP, split) of the space's domains passes the batch
        divisibility rules and has a pipeline split; a domain error is left for the solve to report."""
        try:
            space = build_space(self.model, self.job, placement, pins=dict(self.pins), ranges=self.ranges)
        except ValueError:
            return False
        d, world, gbs = space.domains, space.world_size, self.job.global_batch_size
        for tp, pp, cp in itertools.product(d["tp"], d["pp"], d["cp"]):
            if world % (tp * pp * cp):
                continue
            dp = world // (tp * pp * cp)
            if not any(gbs % (mbs * dp) == 0 for mbs in d["mbs"]):
                continue
            for _sched, vpp in schedule_vpp_pairs(space, pp):
                if any(self._split_exists(pp, vpp, split) for split in self._split_values(space, pp, vpp)):
                    return False
        return True

    # ---- all screens -------------------------------------------------------------------------
    def skip_reason(self, placement, target_tokens_per_s: float) -> Optional[dict]:
        """None when the count must be solved, else {'skipped': reason, ...bound} proving best < target."""
        world = placement.world_size
        peak = self.min_peak_bytes(world)
        if peak > self.usable_bytes:
            return {"skipped": "memory", "min_peak_bytes": peak, "usable_bytes": self.usable_bytes}
        if self.space_is_empty(placement):
            return {"skipped": "empty_space"}
        bound = self.max_tokens_per_s(world)
        if bound < target_tokens_per_s:
            return {"skipped": "throughput_bound", "max_tokens_per_s": bound}
        return None


def fewest_gpus(placement, target_tokens_per_s: float, solve_at: Callable, screen: Optional[CountScreen] = None,
                prune: bool = True) -> tuple[object, object, object, list[dict]]:
    """solve_at(placement) -> (SolveResult, Tables); returns (result, tables, placement, tried) at the first
    node count whose best projected total tokens/s >= target, or the largest count's answer with
    result.ranked emptied when none reaches it. `tried` lists {nodes, gpus, tokens_per_s} per solved count;
    a count the screen skips has tokens_per_s 0.0 when it provably has no recipe (memory, empty_space) and
    None when only its bound is known (throughput_bound), plus `skipped` and the bound."""
    if target_tokens_per_s is None:
        raise TargetError("--target-tokens-per-s: give the total tokens/s to reach (> 0) with --objective fewest-gpus")
    # 1e15 tokens/s is ~10^6 times the fastest published training run (Llama 3 405B: ~4e7 tokens/s on 16k GPUs)
    bounded_float(target_tokens_per_s, "--target-tokens-per-s", 0.0, 1e15,
                  "give the total tokens/s to reach, a finite positive number", lo_open=True)
    tried: list[dict] = []
    last = None
    for nodes in range(1, placement.num_nodes + 1):
        pl = placement.model_copy(update={"num_nodes": nodes})
        if prune and screen is not None and nodes < placement.num_nodes:
            why = screen.skip_reason(pl, target_tokens_per_s)
            if why is not None:
                none_fits = why["skipped"] != "throughput_bound"
                tried.append({"nodes": nodes, "gpus": pl.world_size, "tokens_per_s": 0.0 if none_fits else None, **why})
                continue
        result, tables = solve_at(pl)
        best = result.ranked[0].projection.tokens_per_s_per_gpu * pl.world_size if result.ranked else 0.0
        tried.append({"nodes": nodes, "gpus": pl.world_size, "tokens_per_s": best})
        last = (result, tables, pl)
        if best >= target_tokens_per_s:
            return result, tables, pl, tried
    result, tables, pl = last
    result.ranked = []
    return result, tables, pl, tried


def target_explanation(tried: list[dict], num_nodes: int) -> Optional[dict]:
    """The explanation when no count reaches the target but some count had a recipe (or was skipped only
    because even its throughput bound falls short): the target is the conflict; None when nothing fitted anywhere."""
    solved = [t for t in tried if t["tokens_per_s"]]
    if not solved and not any(t.get("skipped") == "throughput_bound" for t in tried):
        return None
    more = f"more than {num_nodes} nodes"
    if solved:
        best = max(solved, key=lambda t: t["tokens_per_s"])
        # a count skipped by its bound may have beaten the best solved one (both fall short of the target)
        unsolved = sum(1 for t in tried if t.get("skipped") == "throughput_bound" and t["max_tokens_per_s"] > best["tokens_per_s"])
        more += (f" (best {best['tokens_per_s']:,.0f} tokens/s at {best['nodes']} nodes"
                 + (f" among the counts solved; {unsolved} more skipped, each bounded below the target)" if unsolved else ")"))
    return {"conflict": ["--target-tokens-per-s"], "remedies": [more, "a lower --target-tokens-per-s"]}
