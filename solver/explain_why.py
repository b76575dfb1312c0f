"""Why nothing fits, in words: the rules that reject every recipe, why a pinned value fails, the memory gap, and
the human lines of an explanation (solver/explain.py finds the conflict and the remedies; this module says them in
the options the user typed: `solve`'s own flags, not Megatron's)."""
from __future__ import annotations

from constraints.rules.features import FLEX_MIN_COMPUTE_CAPABILITY, NO_FP8_FIX, flex_hardware_gap
from constraints.rules.fp4 import nvfp4_fallback_precisions
from constraints.rules.registry import RuleInput, check_rules, recipe_free_violations
from constraints.spec import Recipe
from solver.fewest_gpus import CountScreen
from solver.variants import supports_flex

GIB = 1024 ** 3
MAX_NODES_FACTOR = 64  # solver/explain.fewest_fitting_nodes scans up to this many times the user's nodes

_FLAGS = {"sp": "--sequence-parallel", "dp_sharding": "--dp-sharding", "tp_comm_overlap": "--tp-comm-overlap",
          "ep_comm_overlap": "--ep-comm-overlap", "moe_dispatcher": "--moe-dispatcher", "uneven_stages": "--uneven-stages",
          "acc_split": "--account-for-embedding/loss split"}


def flag_of(axis: str) -> str:
    return _FLAGS.get(axis, f"--{axis}")


def recipe_free_blockers(model, job, placement, profile) -> list[str]:
    """Rules that read no recipe field (constraints.rules.registry: reads="") and fail: they reject every recipe, so they are
    the whole reason the space is empty (e.g. a sequence longer than the position embeddings, FP8 on a part
    without FP8 tensor cores)."""
    out = []
    for v in recipe_free_violations(RuleInput(model, job, Recipe(), placement.world_size, profile)):
        if v.severity == "error":
            fix = (f"use --precision {' or '.join(nvfp4_fallback_precisions(profile))}" if v.rule == "nvfp4_hardware"
                   else _solve_option(v.fix))
            out.append(f"rule {v.rule}: {v.message} (fix: {fix})")
    return out


# Megatron precision flags in a rule's fix -> the job option `solve` takes instead (precision is not a recipe axis)
_PRECISION_OPTION = (("--fp8-recipe tensorwise", "--precision fp8-tensorwise"), ("--fp8-recipe blockwise", "--precision fp8-blockwise"),
                     ("--fp8-recipe delayed", "--precision fp8-delayed"), ("--fp8-recipe mxfp8", "--precision mxfp8"),
                     ("--bf16", "--precision bf16"), ("--fp16", "--precision fp16"))


def _solve_option(fix: str) -> str:
    """A recipe-free rule's fix in the options `solve` takes (the rules speak Megatron flags for `check`)."""
    if fix == NO_FP8_FIX:  # precision_supported on a part without FP8: train in bf16
        return "use --precision bf16"
    for flag, option in _PRECISION_OPTION:
        if fix.startswith("use " + flag) or fix == flag:
            return fix.replace(flag, option, 1)
    return fix


def pin_reasons(model, job, placement, profile, axis: str, values, others: dict | None = None) -> list[str]:
    """Why a pinned value is illegal where the rules can tell: the rules that fail for a recipe with this axis set
    and pass without it (e.g. TP 3: 8 GPUs and 32 heads are not divisible by 3). The user's other pins (`others`,
    solve's pins) are set in both recipes, so `--vpp 3 --pp 2` is judged at PP 2, not at the default PP 1. Empty when
    the value is legal there (it conflicts only with memory, or with pins the rules do not read together)."""
    if axis not in ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs"):
        return []
    context = recipe_pins({k: v for k, v in (others or {}).items() if k != axis})
    try:
        base = failing_rules(model, job, placement, profile, Recipe(**context))
    except ValueError:
        context, base = {}, failing_rules(model, job, placement, profile, Recipe())
    reasons = []
    for value in list(values)[:3]:
        try:
            bad = failing_rules(model, job, placement, profile, Recipe(**with_schedule({**context, axis: value})))
        except ValueError:
            continue
        reasons += [f"{flag_of(axis)} {value}: {msg} ({rule})" for rule, msg in bad.items() if rule not in base]
    return reasons


def flex_hardware_reason(profile) -> str:
    """Why a pinned flex dispatcher gives no recipe on this part: solve tries flex only where its backends run
    (solver/variants.supports_flex), and the rule that says so (flex_dispatcher_hardware) is a warning, which no
    conflict names, so the pin's reason is said here."""
    return (f"--moe-dispatcher flex: its DeepEP / HybridEP backends need an NVIDIA GPU of compute capability "
            f"{FLEX_MIN_COMPUTE_CAPABILITY:.1f} or newer (Hopper, Blackwell); {profile.name} {flex_hardware_gap(profile)}")


def failing_rules(model, job, placement, profile, recipe) -> dict[str, str]:
    """rule name -> message of every error the rules find in `recipe`."""
    return {v.rule: v.message for v in check_rules(RuleInput(model, job, recipe, placement.world_size, profile))
            if v.severity == "error"}


# solve's pinned axes that are Recipe fields of the same name and value (the rest are derived or not fields)
_RECIPE_PIN_AXES = ("tp", "pp", "vpp", "cp", "ep", "etp", "mbs", "schedule", "dp_sharding", "moe_dispatcher")


def recipe_pins(pins: dict) -> dict:
    """The pins that are Recipe fields, first value of each, with the schedule a pinned VPP implies."""
    return with_schedule({a: pins[a][0] for a in _RECIPE_PIN_AXES if pins.get(a)})


def with_schedule(fields: dict) -> dict:
    """A VPP above 1 takes the interleaved schedule unless the schedule is given, as the solver pairs them."""
    if fields.get("vpp", 1) > 1 and "schedule" not in fields:
        return {**fields, "schedule": "interleaved"}
    return fields


def pin_pair_reasons(model, job, placement, profile, pins: dict, axes: list[str]) -> list[str]:
    """Why pins fail together when none says why alone (`--schedule zb-h1 --pp 1`: the schedule is not a numeric
    axis and PP 1 is legal): the rules that fail for a recipe with all of them set (the first value of each) and
    pass for the default recipe; when the pins are the defaults themselves (`--tp 1 --pp 1 --cp 1` with a global
    batch DP 8 does not divide), every rule that recipe fails."""
    fields = recipe_pins({a: pins[a] for a in axes if a in pins})
    if len(fields) < 2:
        return []
    try:
        together = failing_rules(model, job, placement, profile, Recipe(**fields))
    except ValueError:
        return []
    base = failing_rules(model, job, placement, profile, Recipe())
    named = " ".join(f"{flag_of(a)} {v}" for a, v in fields.items() if a in axes)
    own = {rule: msg for rule, msg in together.items() if rule not in base} or together
    return [f"{named}: {msg} ({rule})" for rule, msg in own.items()]


def conflict_reasons(model, job, placement, profile, pins: dict, conflict: list[str], tables, margin: float) -> list[str]:
    """One readable line per reason behind the conflict: the rules a pinned value fails on its own, and for memory
    the smallest exact peak of the legal recipes (and the lower bound any recipe carries) against usable HBM."""
    flags = {flag_of(a): a for a in pins}
    why: list[str] = []
    for name in conflict:
        if name in flags:
            why += pin_reasons(model, job, placement, profile, flags[name], pins[flags[name]], pins)
    if "flex" in pins.get("moe_dispatcher", ()) and not supports_flex(profile):  # also where memory fails as well
        why.append(flex_hardware_reason(profile))
    if not why:
        why += pin_pair_reasons(model, job, placement, profile, pins, [flags[n] for n in conflict if n in flags])
    if "memory_fits" in conflict and len(tables.cand_peak):
        bound = CountScreen(model, job, profile, margin).min_peak_bytes(placement.world_size)
        why.append(f"memory: the smallest peak of the {len(tables.cand_peak):,} legal recipes on {placement.world_size} GPUs is "
                   f"{tables.cand_peak.min() / GIB:.2f} GiB, above the {tables.usable_bytes / GIB:.2f} GiB usable"
                   + (f"; the model's weights, gradients and optimizer state alone, with the framework's "
                      f"{profile.calibration.framework_overhead_bytes / GIB:.2f} GiB reserve, need at least "
                      f"{bound / GIB:.2f} GiB per GPU" if bound > tables.usable_bytes else ""))
    return why


def format_explanation(expl: dict) -> list[str]:
    """The human lines for a 'nothing fits' explanation (explain_infeasible's dict): the conflict, why, and what fits."""
    conflict = [("memory (no legal recipe fits in HBM)" if c == "memory_fits" else c) for c in expl.get("conflict", [])]
    lines = ["nothing fits: " + (" + ".join(conflict) if conflict else "no conflict found")]
    lines += [f"  why: {w}" for w in expl.get("why", [])]
    rem = [f"{r} (the fewest that fit)" if expl.get("fewest_nodes") and r == f"use {expl['fewest_nodes']} nodes" else r
           for r in expl.get("remedies", [])]
    if rem:
        lines.append("  would fit (each verified on a legal recipe): " + "; ".join(rem))
    elif "remedies" in expl:
        lines.append(f"  no single change tried fits (more nodes up to {MAX_NODES_FACTOR}x, half the global batch or "
                     "sequence, recompute, FP8, larger-HBM part, dropping a pin)")
    return lines


