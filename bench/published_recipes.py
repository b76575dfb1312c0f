"""Published recipes against our rules, memory model, projection and solver (issue 5, "Against published recipes").

Why: a published recipe ran, so it is legal in Megatron and fits on the card; where we say otherwise
the rule, the memory model or the row's stated assumptions (bench/runs.py) is wrong until shown
otherwise. And the solver's claim to find faster recipes is only worth something next to what
experts actually ran.

Rows of ../shared/validation/runs.csv are grouped by (model, hardware, GPUs, sequence, global batch,
precision). Per distinct published recipe of a group: legality (constraints.check.check_case, the
violated rules), fit under our memory model, the closed-form projected tokens/s/GPU
(measure.project.project(..., simulate_pipeline=False)), its rank among the legal, fitting candidates
of our default search space (solver.space + solver.tables, every candidate priced by
measure.vectorized.Evaluator, which equals that closed form), the axes where it lies outside that space,
our solver's top pick (solver.cli_solve.solve_case, k=1) and its projected gain, priced the same closed
form way, and the measured tokens/s/GPU (median over the group's rows with that recipe).

Run: `.venv/bin/python -m bench.published_recipes [--max-gpus 256] [--time-limit 60] [--group-timeout 180]
[--method exhaustive|cpsat] [--jobs 2] [--json out.json]`. A group larger than --max-gpus or slower than
--group-timeout keeps its legality/fit/projection columns and says why rank and top pick are missing.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time
from typing import Any, Optional

GIB = 1024 ** 3
# Known verdicts that are not rule bugs: (rule, source-substring) -> why the rule is right for Megatron-LM.
NOT_MEGATRON = {
    ("torch_fsdp2", "Automodel"): "NeMo AutoModel is PyTorch-native, not Megatron-LM: its FSDP2 composes with PP/EP, while Megatron's "
                                  "--use-torch-fsdp2 requires PP=1 and EP=1 (../shared/facts/megatron-rules.md [37])",
}


# ---------------------------------------------------------------- pure parts (tested)
def group_key(case) -> tuple:
    """Rows compared with each other: same model, hardware, GPU count, sequence, global batch and precision."""
    return (case.model.name, case.hardware, case.placement.world_size, case.job.seq_length, case.job.global_batch_size,
            case.job.precision.value)


def group_cases(cases) -> dict[tuple, list[list]]:
    """key -> list of recipe groups (cases with an identical Recipe), both in first-seen order."""
    out: dict[tuple, list[list]] = {}
    for c in cases:
        recipes = out.setdefault(group_key(c), [])
        for same in recipes:
            if same[0].recipe == c.recipe and same[0].model == c.model:
                same.append(c)
                break
        else:
            recipes.append([c])
    return out


def outside_space(recipe, domains: dict[str, list]) -> list[str]:
    """Axes where `recipe` lies outside the solver's candidate domains (so it cannot be in our list)."""
    from solver.space import recompute_name

    out = []
    for axis, value in (("tp", recipe.tp), ("pp", recipe.pp), ("vpp", recipe.vpp), ("cp", recipe.cp), ("ep", recipe.ep),
                        ("mbs", recipe.mbs)):
        if value not in domains[axis]:
            out.append(f"{axis}={value} not in {{{','.join(str(v) for v in domains[axis] if v is not None)}}}")
    if recipe.etp is not None and recipe.etp not in domains["etp"]:
        out.append(f"etp={recipe.etp}")
    rc = recompute_name(recipe.recompute)
    if rc not in domains["recompute"]:
        out.append(f"recompute {rc}")
    if recipe.dp_sharding.value not in domains["dp_sharding"]:
        out.append(f"sharding {recipe.dp_sharding.value}")
    if recipe.schedule.value not in domains["schedule"]:
        out.append(f"schedule {recipe.schedule.value}")
    if recipe.pipeline_layout or recipe.first_stage_layers or recipe.last_stage_layers:
        out.append("custom pipeline layout")
    return out


def rank_among(published_tps: float, candidate_tps) -> tuple[int, int]:
    """(number of candidates projected strictly faster, candidates priced); NaN candidates are ignored."""
    n = faster = 0
    for t in candidate_tps:
        if t != t:  # NaN: impossible pipeline split
            continue
        n += 1
        faster += t > published_tps
    return faster, n


def recipe_label(r) -> str:
    """Short recipe text for the table: TP/PP/VPP/CP/EP/ETP/MBS plus non-default features."""
    parts = [f"TP{r.tp}", f"PP{r.pp}"]
    if r.vpp > 1:
        parts.append(f"VP{r.vpp}")
    if r.cp > 1:
        parts.append(f"CP{r.cp}")
    if r.ep > 1:
        parts.append(f"EP{r.ep}")
    if r.etp is not None and r.etp != r.tp:
        parts.append(f"ETP{r.etp}")
    parts.append(f"MBS{r.mbs}")
    if r.recompute.granularity.value != "none":
        mods = "+".join(m.value for m in r.recompute.modules)
        parts.append(f"rc:{mods}" if mods else f"rc:full/{r.recompute.method.value}{r.recompute.num_layers}")
    if r.dp_sharding.value not in ("distributed_optimizer",):
        parts.append(r.dp_sharding.value)
    return " ".join(parts)


def summarize(rows: list[dict]) -> dict:
    """Groups, published legal / fits shares, median rank and median projected gain over the table rows."""
    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    n = len(rows)
    return {"groups": len({r["group"] for r in rows}), "published_recipes": n, "rows": sum(len(r["ids"]) for r in rows),
            "legal_pct": 100.0 * sum(r["legal"] for r in rows) / n if n else None,
            "fits_pct": 100.0 * sum(bool(r["legal"] and r["fits"]) for r in rows) / n if n else None,
            "ranked": sum(r.get("rank") is not None for r in rows),
            "median_rank": med([r.get("rank") for r in rows]),
            "median_gain_pct": med([r.get("gain_pct") for r in rows]),
            "in_space_pct": (100.0 * sum(not r.get("outside") for r in rows if r.get("outside") is not None)
                             / max(sum(r.get("outside") is not None for r in rows), 1))}


def _fmt(x: Optional[float], spec: str, none: str = "—") -> str:
    return none if x is None else format(x, spec)


def format_table(rows: list[dict]) -> str:
    head = ("| model | hw | GPUs | seq | GBS | prec | published recipe | legal | fits | proj tok/s/GPU | rank | outside our space "
            "| top pick | top tok/s/GPU | gain | measured tok/s/GPU | note |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        m, hw, w, s, gbs, prec = r["group"]
        legal = "yes" if r["legal"] else "NO: " + ", ".join(r["violations"])
        fits = "—" if not r["legal"] and r["peak_gib"] is None else ("yes" if r["fits"] else f"NO ({r['peak_gib']:.0f}/{r['usable_gib']:.0f} GiB, {r['dominant']})")
        rank = "—" if r.get("rank") is None else f"{r['rank']}/{r.get('candidates', '?')}"
        lines.append(f"| {m} | {hw} | {w} | {s} | {gbs} | {prec} | {r['recipe']} | {legal} | {fits} | {_fmt(r.get('proj_tps'), ',.0f')} "
                     f"| {rank} | {'; '.join(r.get('outside') or []) or ('—' if r.get('outside') is None else 'in')} "
                     f"| {r.get('top') or '—'} | {_fmt(r.get('top_tps'), ',.0f')} | {_fmt(r.get('gain_pct'), '+.0f')}{'%' if r.get('gain_pct') is not None else ''} "
                     f"| {_fmt(r.get('measured_tps'), ',.0f')} | {r.get('note', '')} |")
    return "\n".join(lines)


def format_summary(s: dict) -> str:
    return (f"{s['groups']} groups, {s['published_recipes']} distinct published recipes ({s['rows']} rows): "
            f"legal {_fmt(s['legal_pct'], '.0f')}%, legal and fitting {_fmt(s['fits_pct'], '.0f')}%, "
            f"inside our default search space {_fmt(s['in_space_pct'], '.0f')}%; ranked {s['ranked']}: median rank "
            f"{_fmt(s['median_rank'], '.0f')}, median projected gain of our top pick {_fmt(s['median_gain_pct'], '+.1f')}%")


# ---------------------------------------------------------------- per group (impure: rules, memory, projection, solver)
def _verdict(case, profile) -> dict:
    """check_case on one published recipe, plus its closed-form projection when it is legal."""
    from constraints.case import Case
    from constraints.check import check_case
    from measure.project import project

    rep = check_case(Case(model=case.model, job=case.job, recipe=case.recipe, placement=case.placement), profile)
    errors = [v for v in rep.violations if v.rule != "memory_fits"]
    out: dict[str, Any] = {"legal": rep.legal, "fits": rep.fits, "violations": sorted({v.rule for v in errors}),
                           "violation_messages": [f"{v.rule}: {v.message}" for v in errors],
                           "peak_gib": None, "usable_gib": None, "dominant": None, "terms_gib": None, "proj_tps": None}
    if rep.memory is not None:
        terms = rep.memory.terms
        out.update(peak_gib=rep.memory.peak_bytes / GIB, usable_gib=rep.memory.usable_bytes / GIB,
                   dominant=max(terms, key=lambda k: terms[k]), terms_gib={k: round(v / GIB, 2) for k, v in terms.items()})
    if rep.legal and not rep.fits:
        out["fits_with"] = _fitting_recompute(case, profile)
    if rep.legal:
        try:
            out["proj_tps"] = project(case.model, case.job, case.recipe, case.placement, profile,
                                      simulate_pipeline=False).tokens_per_s_per_gpu
        except (RuntimeError, ValueError) as exc:
            out["note"] = f"projection failed: {str(exc).splitlines()[0]}"
    return out


def _fitting_recompute(case, profile) -> Optional[str]:
    """The first recompute choice of our search space (lightest first) under which the recipe fits: tells an
    unstated recompute setting (bench/runs.py assumes none) from a memory-model gap."""
    from constraints.case import Case
    from constraints.check import check_case
    from solver.space import recompute_choices, recompute_name

    for rc in recompute_choices(case.model)[1:]:
        r = case.recipe.model_copy(update={"recompute": rc})
        rep = check_case(Case(model=case.model, job=case.job, recipe=r, placement=case.placement), profile)
        if rep.ok:
            return recompute_name(rc)
    return None


def candidate_batch(tables, a, s):
    """The legal, fitting candidates (act rows a, shardings s) of solver tables as one RecipeBatch."""
    import numpy as np

    from constraints.spec import DataParallelSharding, PipelineSchedule
    from measure.vectorized import SCHEDULES, SHARDINGS, RecipeBatch

    act = [tables.act_rows[i] for i in a]
    st = [tables.struct[row[0]] for row in act]

    def col(vals, dtype=np.int64):
        return np.array(vals, dtype=dtype)

    sched_ix = {v: SCHEDULES.index(PipelineSchedule(v)) for v in {x[6] for x in st}}
    shard_ix = [SHARDINGS.index(DataParallelSharding(v)) for v in tables.shardings]
    return RecipeBatch(tp=col([x[0] for x in st]), pp=col([x[1] for x in st]), vpp=col([x[2] for x in st]), cp=col([x[3] for x in st]),
                       ep=col([x[4] for x in st]), etp=col([x[5] or 0 for x in st]), mbs=col([x[1] for x in act]),
                       sp=col([x[2] for x in act], bool), recompute=col([x[3] for x in act]), schedule=col([sched_ix[x[6]] for x in st]),
                       dp_sharding=col([shard_ix[k] for k in s]), acc_split=col([x[7] for x in st], bool),
                       recompute_choices=tuple(tables.rc_choices), base=tables.recipe(int(a[0]), int(s[0])))


def rank_group(model, job, placement, profile, verdicts: list[dict], recipes: list) -> dict:
    """Price every legal, fitting candidate of our default space; fill rank / outside-space per published recipe."""
    from measure.vectorized import Evaluator
    from solver.exhaustive import fitting_candidates
    from solver.space import build_space
    from solver.tables import build_tables

    t0 = time.perf_counter()
    space = build_space(model, job, placement)
    tables = build_tables(space, profile)
    a, s = fitting_candidates(tables)
    tps = []
    if len(a):
        tps = Evaluator(model, job, placement, profile).evaluate(candidate_batch(tables, a, s))["tokens_per_s_per_gpu"]
    best = float(max((t for t in tps if t == t), default=float("nan"))) if len(a) else None
    for v, r in zip(verdicts, recipes):
        v["outside"] = outside_space(r, space.domains)
        if v.get("proj_tps") is not None and v["fits"]:
            v["rank_faster"], v["candidates"] = rank_among(v["proj_tps"], tps)
            v["rank"] = v["rank_faster"] + 1
    return {"space_candidates": int(len(a)), "closed_form_best_tps": best, "rank_s": time.perf_counter() - t0}


def solve_group(model, job, placement, profile, method: str, time_limit_s: float) -> dict:
    """Our top pick (solve_case, k=1) priced in the same closed form as the published recipes."""
    from measure.project import project
    from solver.cli_solve import solve_case

    t0 = time.perf_counter()
    result, _ = solve_case(model, job, placement, profile, pins={}, bounds={}, k=1, margin=0.0, method=method,
                           time_limit_s=time_limit_s)
    if not result.ranked:
        return {"top": None, "top_note": "solver found no legal, fitting recipe", "solve_s": time.perf_counter() - t0}
    top = result.ranked[0].recipe
    tps = project(model, job, top, placement, profile, simulate_pipeline=False).tokens_per_s_per_gpu
    return {"top": recipe_label(top) + (" SP" if top.sp_active else "") + f" {top.schedule.value}", "top_tps": tps,
            "top_simulated_tps": result.ranked[0].projection.tokens_per_s_per_gpu, "proven_optimal": result.proven_optimal,
            "solve_s": time.perf_counter() - t0}


def _group_worker(conn, key, recipe_groups, do_rank: bool, method: str, time_limit_s: float) -> None:
    """Child process: verdicts first (sent at once), then rank, then solve; each stage sent as it finishes."""
    from hardware.profile import load_profile

    first = recipe_groups[0][0]
    profile = load_profile(first.hardware)
    verdicts = [_verdict(g[0], profile) for g in recipe_groups]
    conn.send(("verdicts", verdicts))
    if not do_rank:
        return
    try:
        info = rank_group(first.model, first.job, first.placement, profile, verdicts, [g[0].recipe for g in recipe_groups])
        conn.send(("rank", (verdicts, info)))
        conn.send(("solve", solve_group(first.model, first.job, first.placement, profile, method, time_limit_s)))
    except Exception as exc:  # noqa: BLE001  (reported per group, never hides the other groups)
        conn.send(("error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))


def evaluate_group(key, recipe_groups, max_gpus: int, method: str, time_limit_s: float, group_timeout_s: float) -> list[dict]:
    """Table rows of one group, run in a child process so a slow solve is cut at group_timeout_s."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    do_rank = key[2] <= max_gpus
    proc = ctx.Process(target=_group_worker, args=(child, key, recipe_groups, do_rank, method, time_limit_s), daemon=True)
    t0 = time.perf_counter()
    proc.start()
    child.close()
    got: dict[str, Any] = {}
    stages = ["verdicts", "rank", "solve"] if do_rank else ["verdicts"]
    while not all(s in got for s in stages) and "error" not in got:
        left = group_timeout_s - (time.perf_counter() - t0)
        if left <= 0 or not parent.poll(left):
            break
        try:
            tag, payload = parent.recv()
        except EOFError:
            break
        got[tag] = payload
    if proc.is_alive():
        proc.terminate()
    proc.join()
    elapsed = time.perf_counter() - t0
    verdicts = got.get("rank", (got.get("verdicts"), None))[0] or [{"legal": None} for _ in recipe_groups]
    info = got["rank"][1] if "rank" in got else {}
    solve = got.get("solve", {})
    if not do_rank:
        why = f"rank and top pick skipped: {key[2]} GPUs > --max-gpus {max_gpus}"
    elif "error" in got:
        why = f"rank/solve failed: {got['error']}"
    elif "rank" not in got:
        why = f"rank and top pick skipped: space not priced within {group_timeout_s:.0f} s"
    elif "solve" not in got:
        why = f"top pick skipped: solve not done within {group_timeout_s:.0f} s"
    else:
        why = solve.get("top_note", "")
    rows = []
    for g, v in zip(recipe_groups, verdicts):
        measured = [c.measured["tokens_per_s_per_gpu"] for c in g if "tokens_per_s_per_gpu" in c.measured]
        row = {"group": key, "ids": [c.id for c in g], "recipe": recipe_label(g[0].recipe), "assumed": list(g[0].assumed),
               "source": g[0].source, "outcome": sorted({c.outcome for c in g}),
               "measured_tps": statistics.median(measured) if measured else None, **v, **info,
               **{k: solve.get(k) for k in ("top", "top_tps", "top_simulated_tps", "proven_optimal", "solve_s")},
               "group_s": round(elapsed, 1)}
        extra = [f"no verdict within {group_timeout_s:.0f} s"] if row.get("legal") is None else []
        if row.get("proj_tps") and row.get("fits"):
            if row.get("top_tps"):
                row["gain_pct"] = 100.0 * (row["top_tps"] / row["proj_tps"] - 1.0)
            elif row.get("closed_form_best_tps"):  # solve cut by the timeout: best candidate of the same priced space
                row["gain_pct"] = 100.0 * (row["closed_form_best_tps"] / row["proj_tps"] - 1.0)
                extra.append("gain vs the best closed-form candidate")
        notes = [n for n in (v.get("note"), why, *extra) if n]
        for (rule, src), text in NOT_MEGATRON.items():
            if rule in row.get("violations", []) and src in row["source"]:
                notes.append(text)
        if "oom" in row["outcome"]:
            notes.append("row reports OOM")
        row["note"] = "; ".join(notes)
        rows.append(row)
    return rows


def run(cases, max_gpus: int, method: str, time_limit_s: float, group_timeout_s: float, jobs: int = 1,
        only: Optional[str] = None, log=sys.stderr) -> list[dict]:
    groups = group_cases(cases)
    keys = [k for k in groups if not only or only.lower() in " ".join(map(str, k)).lower()]
    rows: list[dict] = []
    if jobs <= 1:
        for i, k in enumerate(keys, 1):
            rows += evaluate_group(k, groups[k], max_gpus, method, time_limit_s, group_timeout_s)
            print(f"[{i}/{len(keys)}] {k} {rows[-1]['group_s']} s", file=log, flush=True)
        return rows
    from concurrent.futures import ThreadPoolExecutor  # threads only wait on the child processes

    with ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(evaluate_group, k, groups[k], max_gpus, method, time_limit_s, group_timeout_s) for k in keys]
        for i, (k, f) in enumerate(zip(keys, futures), 1):
            rows += f.result()
            print(f"[{i}/{len(keys)}] {k} {rows[-1]['group_s']} s", file=log, flush=True)
    return rows


def problems_section(rows: list[dict]) -> str:
    """Published recipes we call illegal, and recipes that ran but we say do not fit, with the dominant term."""
    lines = ["### Published recipes we call illegal", ""]
    for r in rows:
        if r.get("legal") is False:
            lines.append(f"- {', '.join(r['ids'])} {r['group'][0]} {r['group'][1]} x{r['group'][2]} {r['recipe']}: "
                         + "; ".join(r["violation_messages"]) + (f" — {r['note']}" if r.get("note") else ""))
    lines += ["", "### Published recipes that ran but do not fit under our memory model", ""]
    for r in rows:
        if r.get("legal") and not r.get("fits") and "ran" in r["outcome"]:
            lines.append(f"- {', '.join(r['ids'])} {r['group'][0]} {r['group'][1]} x{r['group'][2]} {r['recipe']}: peak "
                         f"{r['peak_gib']:.1f} GiB > usable {r['usable_gib']:.1f} GiB, dominant term {r['dominant']} "
                         f"({r['terms_gib'][r['dominant']]:.1f} GiB); "
                         + (f"fits with recompute {r['fits_with']}" if r.get("fits_with") else "no recompute choice makes it fit")
                         + f"; assumed: {', '.join(r['assumed']) or 'nothing'}")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    from bench.runs import load_all

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-gpus", type=int, default=256, help="rank and solve only groups up to this many GPUs")
    ap.add_argument("--time-limit", type=float, default=60.0, help="CP-SAT time limit per solve (s)")
    ap.add_argument("--group-timeout", type=float, default=180.0, help="wall-clock limit per group (s)")
    ap.add_argument("--method", choices=["exhaustive", "cpsat"], default="exhaustive")
    ap.add_argument("--jobs", type=int, default=1, help="groups evaluated at once")
    ap.add_argument("--only", default=None, help="substring filter on the group key (e.g. a model name)")
    ap.add_argument("--json", dest="json_path", default=None, help="also write rows and summary as JSON here")
    args = ap.parse_args(argv)
    cases, skips = load_all()
    rows = run(cases, args.max_gpus, args.method, args.time_limit, args.group_timeout, args.jobs, args.only)
    summary = summarize(rows)
    print(format_table(rows))
    print()
    print("Summary: " + format_summary(summary))
    print(f"Rows not expressible as cases: {len(skips)} (see bench.runs.load_all)")
    print()
    print(problems_section(rows))
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump({"summary": summary, "rows": rows, "skips": [s.model_dump() for s in skips]}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
