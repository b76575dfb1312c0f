"""The built-in rule proposer (default, offline, deterministic): known trade-offs as small named rules.

Each rule reads the model, cluster, job, legal values and the ledger, and returns raw hints (validated
like any other proposer's) or suggestions outside the searched axes. A rule proposes only values from
`ctx.legal`, so its hints pass validation; the loop drops repeats, so later rounds add only what the
ledger newly justifies. The thresholds are ours (stated here); each trade-off cites where it comes from.
"""
from __future__ import annotations

from typing import Callable

from solver.proposer.ledger import ProposerContext, Suggestion

LONG_SEQUENCE_TOKENS = 32768    # Llama 3 (Dubey et al. 2024, Table 4): CP=1 at 8K tokens, CP=16 at 131K
BUBBLE_SHARE = 0.10             # interleave when >= 10 % of the best step is pipeline bubble
EP_COMM_SHARE = 0.10            # keep all-to-all inside the scale-up domain when >= 10 % of the step
MOE_HEADROOM_FRACTION = 0.15    # memory is tight when the best recipe keeps < 15 % of usable HBM free
LARGER_MBS_HEADROOM_FRACTION = 0.25  # a larger micro-batch is worth a try when >= 25 % of usable HBM is free

RuleFn = Callable[[ProposerContext], list]
RULES: list[tuple[str, RuleFn]] = []


def rule(name: str):
    def register(fn: RuleFn) -> RuleFn:
        RULES.append((name, fn))
        return fn
    return register


def _pin(axes: dict, why: str) -> dict:
    return {"action": "pin", "axes": axes, "rationale": why}


def _ints(ctx: ProposerContext, axis: str) -> list[int]:
    return [v for v in ctx.legal.get(axis, []) if isinstance(v, int) and not isinstance(v, bool)]


def _moe_recompute(ctx: ProposerContext) -> list[str]:
    return [r for r in ctx.legal.get("recompute", []) if r.startswith("selective:") and "moe_act" in r.split(":")[1].split("+")]


@rule("tp_within_scale_up")
def tp_within_scale_up(ctx: ProposerContext) -> list:
    """TP all-reduces every layer; keep it on NVLink/xGMI (Narayanan et al. 2021, sec. 3.3, takeaway #1)."""
    inside = [t for t in _ints(ctx, "tp") if t <= ctx.scale_up_gpus]
    outside = [t for t in _ints(ctx, "tp") if t > ctx.scale_up_gpus]
    if not (inside and outside):
        return []
    return [{"action": "forbid", "axes": {"tp": outside},
             "rationale": f"TP above the {ctx.scale_up_gpus}-GPU scale-up domain sends per-layer all-reduces over the NIC"}]


@rule("sp_with_tp")
def sp_with_tp(ctx: ProposerContext) -> list:
    """SP shards the TP-replicated LayerNorm/dropout activations at no extra comm volume (Korthikanti et al. 2022, sec. 4.2.2)."""
    tps = [t for t in _ints(ctx, "tp") if t > 1]
    if not tps or True not in ctx.legal.get("sp", []):
        return []
    return [_pin({"tp": tps, "sp": [True]}, "with TP>1, sequence parallelism saves activation memory for free")]


@rule("cp_for_long_sequences")
def cp_for_long_sequences(ctx: ProposerContext) -> list:
    """Attention activations grow with the sequence; CP splits it (Llama 3 used CP=16 at 131K tokens)."""
    cps = [c for c in _ints(ctx, "cp") if c > 1]
    if ctx.job.seq_length < LONG_SEQUENCE_TOKENS or not cps:
        return []
    return [_pin({"cp": cps}, f"sequence {ctx.job.seq_length} >= {LONG_SEQUENCE_TOKENS}: split it with context parallelism")]


def _ep_inside(ctx: ProposerContext) -> list[int]:
    return [e for e in _ints(ctx, "ep") if 1 < e <= ctx.scale_up_gpus]


@rule("ep_within_scale_up")
def ep_within_scale_up(ctx: ProposerContext) -> list:
    """MoE all-to-all is bandwidth-bound; the scale-up link is several times the NIC (profile bandwidths).
    Fires for MoE models before anything is known, then only while all-to-all is a large share of the step."""
    eps = _ep_inside(ctx)
    best = ctx.ledger.best()
    if not ctx.model.is_moe or not eps:
        return []
    if best is not None and best.time_shares.get("ep_comm", 0.0) < EP_COMM_SHARE:
        return []
    share = f"all-to-all is {100 * best.time_shares['ep_comm']:.0f} % of the best step; " if best else ""
    return [_pin({"ep": eps}, share + f"keep EP inside the {ctx.scale_up_gpus}-GPU scale-up domain")]


@rule("interleave_large_bubble")
def interleave_large_bubble(ctx: ProposerContext) -> list:
    """The interleaved schedule divides the 1F1B bubble by VPP (Narayanan et al. 2021, sec. 2.2.2)."""
    vpps = [v for v in _ints(ctx, "vpp") if v > 1]
    if "interleaved" not in ctx.legal.get("schedule", []) or not vpps:
        return []
    best = ctx.ledger.best()
    if best is not None and best.axes["pp"] > 1 and best.bubble_fraction >= BUBBLE_SHARE:
        why = f"the best recipe so far spends {100 * best.bubble_fraction:.0f} % in the pipeline bubble at PP={best.axes['pp']}"
        return [_pin({"pp": [best.axes["pp"]], "schedule": ["interleaved"], "vpp": vpps}, why)]
    if best is None and 1 not in _ints(ctx, "pp"):
        return [_pin({"schedule": ["interleaved"], "vpp": vpps}, "every candidate pipelines (PP>1): interleave to cut the bubble")]
    return []


@rule("zero_bubble_large_bubble")
def zero_bubble_large_bubble(ctx: ProposerContext) -> list:
    """Zero-bubble schedules split the backward into input and weight gradients and fill the bubble with the
    latter; ZB-H1 keeps 1F1B's memory with about a third of its bubble (Qi et al. 2024, ICLR, sec. 3)."""
    zb = [s for s in ("zb-h1", "zbv") if s in ctx.legal.get("schedule", [])]
    best = ctx.ledger.best()
    if not zb or best is None or best.axes["pp"] <= 1 or best.bubble_fraction < BUBBLE_SHARE:
        return []
    why = f"{100 * best.bubble_fraction:.0f} % bubble at PP={best.axes['pp']}: fill it with weight-gradient work"
    return [_pin({"pp": [best.axes["pp"]], "schedule": zb}, why)]


@rule("larger_microbatch_with_headroom")
def larger_microbatch_with_headroom(ctx: ProposerContext) -> list:
    """A larger micro-batch makes larger GEMMs (higher efficiency) and fewer pipeline steps, at more activation
    memory (Narayanan et al. 2021, sec. 3.4); try it on the best layout when memory is left over."""
    best = ctx.ledger.best()
    if best is None or best.headroom_fraction < LARGER_MBS_HEADROOM_FRACTION:
        return []
    bigger = [m for m in _ints(ctx, "mbs") if m > best.axes["mbs"]]
    if not bigger:
        return []
    axes = {a: [best.axes[a]] for a in ("tp", "pp", "cp", "ep")}
    axes["mbs"] = bigger
    return [_pin(axes, f"the best recipe leaves {100 * best.headroom_fraction:.0f} % of HBM free: spend it on a larger micro-batch")]


@rule("selective_before_full")
def selective_before_full(ctx: ProposerContext) -> list:
    """Selective recompute keeps most of full recompute's memory saving at a few % of its FLOPs
    (Korthikanti et al. 2022, sec. 5, Table 4); try none/selective before full."""
    rcs = ctx.legal.get("recompute", [])
    light = [r for r in rcs if not r.startswith("full:")]
    if not light or len(light) == len(rcs):
        return []
    return [_pin({"recompute": light}, "selective recompute costs far less than full; try it first")]


@rule("moe_only_recompute")
def moe_only_recompute(ctx: ProposerContext) -> list:
    """Expert activations dominate MoE layer memory; recomputing only the MoE activation is cheap
    (Megatron-LM --recompute-modules moe_act). Fires for MoE models when memory is tight or unknown."""
    moe = _moe_recompute(ctx)
    best = ctx.ledger.best()
    if not ctx.model.is_moe or not moe:
        return []
    if best is not None and best.headroom_fraction >= MOE_HEADROOM_FRACTION and not best.axes["recompute"].startswith("full:"):
        return []
    return [_pin({"recompute": moe}, "recompute only the MoE activations: most of the memory, little of the compute")]


@rule("moe_cross_axis")
def moe_cross_axis(ctx: ProposerContext) -> list:
    """The combination single-axis sweeps miss: EP inside the scale-up domain, the best PP with interleaving,
    and MoE-only recompute, together (once the ledger has a pipelined MoE recipe to start from)."""
    best = ctx.ledger.best()
    eps, moe, vpps = _ep_inside(ctx), _moe_recompute(ctx), [v for v in _ints(ctx, "vpp") if v > 1]
    if not ctx.model.is_moe or best is None or not eps or not moe:
        return []
    axes = {"ep": [max(eps)], "recompute": moe}
    if best.axes["pp"] > 1 and vpps and "interleaved" in ctx.legal.get("schedule", []):
        axes.update({"pp": [best.axes["pp"]], "schedule": ["interleaved"], "vpp": vpps})
    return [_pin(axes, "largest EP on the scale-up domain, interleaved pipeline and MoE-only recompute together")]


@rule("distributed_optimizer_with_dp")
def distributed_optimizer_with_dp(ctx: ProposerContext) -> list:
    """Sharding Adam state over DP divides its 12 bytes/parameter by DP (ZeRO-1, Rajbhandari et al. 2020, sec. 5.1)."""
    if "distributed_optimizer" not in ctx.legal.get("dp_sharding", []) or len(ctx.legal.get("dp_sharding", [])) < 2:
        return []
    return [{"action": "prefer", "axes": {"dp_sharding": ["distributed_optimizer"]},
             "rationale": "the distributed optimizer shards optimizer state over DP at the cost of one reduce-scatter"}]


def fp8_suggestion(ctx: ProposerContext) -> list[Suggestion]:
    """FP8 GEMMs double peak tensor throughput where the hardware has them (profile peak_tflops.fp8)."""
    p = ctx.profile
    if not p.supports_fp8 or ctx.job.precision.is_fp8 or ctx.job.precision.is_fp4 or not p.peak_tflops.fp8:
        return []
    ratio = p.peak_tflops.fp8 / p.peak_tflops.bf16
    return [Suggestion(rule="fp8_where_supported",
                       text=f"{p.name} has FP8 tensor cores ({ratio:.1f}x bf16 peak); try --precision fp8-tensorwise "
                            "(precision is a job field, so it is not searched)")]


class RuleProposer:
    """Runs every registered rule; hints carry source 'rule:<name>'."""

    kind = "rules"

    def __init__(self, rules=None) -> None:
        self.rules = list(rules if rules is not None else RULES)

    def propose(self, ctx: ProposerContext) -> list[tuple[str, list]]:
        """[(source, raw hints)] per rule that fired."""
        out = []
        for name, fn in self.rules:
            hints = fn(ctx)
            if hints:
                out.append((f"rule:{name}", hints))
        return out

    def suggestions(self, ctx: ProposerContext) -> list[Suggestion]:
        return fp8_suggestion(ctx)
