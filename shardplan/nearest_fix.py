"""One source of fixes for `check`: every violation the recipe search can answer quotes its answer as the fix.

Why: each rule computes a fix for its own axis only (constraints/rules/world.py: "use PP 2" for PP 3 on 16 GPUs, while
layers_split says the same and --suggest, searching every axis, answered PP 1), and a rule-local fix is neither checked
for the other rules nor for memory (GPT-3 175B on 8 GPUs was told "use PP 1", which needs 370 GiB a GPU). Here the
nearest legal, fitting recipe (solver/suggest.py: fewest changed fields first, then the projected step, re-verified by
check_case with the user's flags and environment) is searched once; the fix of each violation it answers
(solver.suggest.answers: the memory verdict and the rules that read a searched field) becomes that recipe's changes,
so the fix column, `--suggest`'s table and the JSON's `suggestion` say the same thing. Fixes of other violations (a flag Megatron
refuses, an environment variable) are the rules' own and change no recipe value. When nothing legal fits on the GPUs
given, the fix names the fewest nodes on which a recipe fits, and that recipe.
"""
from __future__ import annotations

from typing import Optional

from boundary.errors import ShardplanError
from shardplan.progress import step

GIB = 1024 ** 3


def attach_search_fixes(loaded, data: dict, margin_fraction: float, profile, suggest: bool) -> None:
    """Search the nearest legal recipe for a check that is illegal or does not fit (`data`: check's JSON, edited in
    place), quote it as the fix of every violation it answers and keep the whole answer as data["suggestion"] (the
    fewest nodes among it, when nothing fits); `suggest` (`--suggest`) searches even when no violation is one the
    search answers. Violations the reader found before the check (LoadedCase.preflight_violations, listed first) keep
    their own fixes: they name a flag Megatron refuses, which the search does not carry."""
    from solver.suggest import answers, suggest_fix  # lazy: imports OR-Tools, which `--help` and `models` must not load

    early = len(getattr(loaded, "preflight_violations", None) or [])
    answered = [v for v in data["violations"][early:] if answers(v["rule"])]
    if not answered and not suggest:
        return
    try:
        with step("searching the nearest legal recipe"):
            suggestion = suggest_fix(loaded.case, margin_fraction=margin_fraction, flags=loaded.flags, env=loaded.env,
                                     validated_by=loaded.validated_by, profile=profile)
    except ShardplanError as exc:  # a job the search cannot lay out (solver.space.SpaceError): the rules' fixes, unverified
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        for violation in answered:
            violation["fix"] += f" (not verified against the other rules and memory: the recipe search cannot run: {why})"
        data["suggestion"] = {"found": False, "message": f"the recipe search cannot run: {why}"}
        return
    text = fix_text(suggestion, loaded.case)
    for i, violation in enumerate(answered):  # one answer for all: said once, the others point to it
        violation["fix"] = text if i == 0 else f"the same fix as {answered[0]['rule']} (one recipe answers them together)"
    data["suggestion"] = suggestion


def fix_text(suggestion: dict, case) -> str:
    """The search's answer for `case` (the user's) as one fix: the Megatron flags to change, or the fewest nodes that
    fit and the flags there, or why there is none."""
    world_size = case.placement.world_size
    gpus = f"{world_size} GPU" + ("" if world_size == 1 else "s")
    if suggestion.get("found"):
        return f"use {flag_changes(case, suggestion)} (the nearest legal recipe that fits: {_fit_words(suggestion)})"
    if "fewest_nodes" not in suggestion:
        return f"{suggestion.get('message', 'no legal recipe found')}: `shardplan solve` lists the legal recipes"
    nodes = suggestion["fewest_nodes"]
    if nodes is None:
        return (f"no legal recipe fits on {gpus}, nor on any node count up to {suggestion['max_nodes']} tried: "
                "`shardplan solve` says why and what would fit")
    head = f"no legal recipe fits on {gpus}: use --nodes {nodes} ({suggestion['fewest_gpus']} GPUs), the fewest that fit"
    there = suggestion.get("at_fewest_nodes") or {}
    if there.get("found"):
        changes = flag_changes(case, there)
        return head + (f", with {changes}" if changes else "") + f" ({_fit_words(there)})"
    return head + f" (`shardplan solve --nodes {nodes}` lists their recipes)"


def flag_changes(case, suggestion: dict) -> str:
    """'--pipeline-model-parallel-size 1, drop --sequence-parallel': how the Megatron arguments of the user's recipe
    (templates/recipe_args.py renders both) become the suggestion's, in the user's flag order, new flags last."""
    from constraints.spec import Recipe

    old = _flags(case.model, case.job, case.recipe)
    new = _flags(case.model, case.job, Recipe.model_validate(suggestion["recipe"]))
    words = [f"drop {flag}" if flag not in new else " ".join([flag, *new[flag]]) for flag in old if new.get(flag) != old[flag]]
    words += [" ".join([flag, *values]) for flag, values in new.items() if flag not in old]
    return ", ".join(words)


def _flags(model, job, recipe) -> dict[str, list[str]]:
    """flag -> its values, from the recipe's rendered Megatron argv."""
    from templates.recipe_args import recipe_to_megatron_args

    out: dict[str, list[str]] = {}
    flag = None
    for arg in recipe_to_megatron_args(model, job, recipe):
        if arg.startswith("--"):
            flag = arg
            out[flag] = []
        elif flag is not None:
            out[flag].append(arg)
    return out


def _fit_words(suggestion: dict) -> str:
    """'peak 36.24 of 79.65 GiB' (and the step time when projected) of one found answer."""
    peak, usable = suggestion.get("peak_bytes"), suggestion.get("usable_bytes")
    out = f"peak {peak / GIB:.2f} of {usable / GIB:.2f} GiB" if peak is not None and usable else ""
    proj: Optional[dict] = suggestion.get("projection")
    if proj:
        out += (", " if out else "") + f"{proj['iteration_time_s']:.3f} s/iteration"
    return out or "verified by check"
