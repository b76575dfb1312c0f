"""Published recipes against our rules, memory model, projection and solver (issue 5, "Against published recipes").

Why: a published recipe ran, so it is legal in Megatron and fits on the card; where we say otherwise
the rule, the memory model or the row's stated assumptions (bench/runs.py) is wrong until shown
otherwise. And the solver's claim to find faster recipes is only worth something next to what
experts actually ran.

Rows of bench/data/runs.csv are grouped by (model, hardware, GPUs, sequence, global batch,
precision). Per distinct published recipe of a group: legality (constraints.check.check_case, the
violated rules), fit under our memory model, the closed-form projected tokens/s/GPU
(measure.projection.project.project(..., simulate_pipeline=False)), its rank among the legal, fitting candidates
of our default search space (solver.space + solver.tables.build, every candidate priced by
measure.projection.vectorized.Evaluator, which equals that closed form), the axes where it lies outside that space,
our solver's top pick (solver.workflow.solve_case, k=1) and its projected gain, priced the same closed
form way, and the measured tokens/s/GPU (median over the group's rows with that recipe).

Run: `.venv/bin/python -m bench.published.recipes [--max-gpus 256] [--time-limit 60] [--group-timeout 180]
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

from bench.published.space import recipe_label

# Known verdicts that are not rule bugs: (rule, source-substring) -> why the rule is right for Megatron-LM.
NOT_MEGATRON = {
    ("torch_fsdp2", "Automodel"): "NeMo AutoModel is PyTorch-native, not Megatron-LM: its FSDP2 composes with PP/EP, while Megatron's "
                                  "--use-torch-fsdp2 requires PP=1 and EP=1 (docs/facts/megatron-rules.md [37])",
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
            if _same_recipe(same[0].recipe, c.recipe) and same[0].model == c.model:
                same.append(c)
                break
        else:
            recipes.append([c])
    return out


def _same_recipe(a, b) -> bool:
    """Equal recipes, counting an unset ETP as the TP it defaults to (Megatron: ETP defaults to TP)."""
    return a.model_copy(update={"etp": a.etp_effective}) == b.model_copy(update={"etp": b.etp_effective})


def not_megatron_notes(row: dict) -> list[str]:
    """Why a violation on this row is right for Megatron-LM although the recipe ran (another framework)."""
    return [text for (rule, src), text in NOT_MEGATRON.items() if rule in row.get("violations", []) and src in row.get("source", "")]


def summarize(rows: list[dict]) -> dict:
    """Groups, published legal / fits shares, median rank and median projected gain over the table rows."""
    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    n = len(rows)
    megatron = [r for r in rows if not r.get("not_megatron")]
    return {"groups": len({tuple(r["group"]) for r in rows}), "published_recipes": n, "rows": sum(len(r["ids"]) for r in rows),
            "legal_pct": 100.0 * sum(bool(r["legal"]) for r in rows) / n if n else None,
            "not_megatron": n - len(megatron),
            "legal_megatron_pct": 100.0 * sum(bool(r["legal"]) for r in megatron) / len(megatron) if megatron else None,
            "fits_pct": 100.0 * sum(bool(r["legal"] and r["fits"]) for r in rows) / n if n else None,
            "ranked": sum(r.get("rank") is not None for r in rows),
            "median_rank": med([r.get("rank") for r in rows]),
            "median_gain_pct": med([r.get("gain_pct") for r in rows]),
            "gains_vs_solver_pick": sum(r.get("gain_pct") is not None and r.get("top_tps") is not None for r in rows),
            "in_space_pct": (100.0 * sum(not r.get("outside") for r in rows if r.get("outside") is not None)
                             / max(sum(r.get("outside") is not None for r in rows), 1))}


def _fmt(x: Optional[float], spec: str, none: str = "—") -> str:
    return none if x is None else format(x, spec)


def short_note(row: dict) -> str:
    """The table's note column: why rank / top pick are missing, in a few words (the JSON keeps the full note)."""
    note = row.get("note", "")
    out = [text for key, text in (("max-gpus", "not ranked: > --max-gpus"), ("space not priced", "not ranked: timeout"),
                                  ("solve not done", "solve timeout, gain vs best priced"), ("failed", "rank/solve failed"))
           if key in note]
    if row.get("not_megatron"):
        out.append("not a Megatron-LM recipe")
    if "oom" in row.get("outcome", []):
        out.append("published: OOM")
    return "; ".join(out)


def format_table(rows: list[dict]) -> str:
    head = ("| model | hw | GPUs | seq | GBS | prec | published recipe | legal | fits | proj tok/s/GPU | rank | outside our space "
            "| top pick | top tok/s/GPU | gain | measured tok/s/GPU | note |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        m, hw, w, s, gbs, prec = r["group"]
        legal = "yes" if r["legal"] else "NO: " + ", ".join(r["violations"])
        fits = ("—" if not r["legal"] and r["peak_gib"] is None
                else "yes" if r["fits"] else f"NO ({r['peak_gib']:.0f}/{r['usable_gib']:.0f} GiB, {r['dominant']})")
        rank = "—" if r.get("rank") is None else f"{r['rank']}/{r.get('candidates', '?')}"
        lines.append(f"| {m} | {hw} | {w} | {s} | {gbs} | {prec} | {r['recipe']} | {legal} | {fits} | {_fmt(r.get('proj_tps'), ',.0f')} "
                     f"| {rank} | {'; '.join(r.get('outside') or []) or ('—' if r.get('outside') is None else 'in')} "
                     f"| {r.get('top') or '—'} | {_fmt(r.get('top_tps'), ',.0f')} "
                     f"| {_fmt(r.get('gain_pct'), '+.0f')}{'%' if r.get('gain_pct') is not None else ''} "
                     f"| {_fmt(r.get('measured_tps'), ',.0f')} | {short_note(r)} |")
    return "\n".join(lines)


def format_summary(s: dict) -> str:
    return (f"{s['groups']} groups, {s['published_recipes']} distinct published recipes ({s['rows']} rows): "
            f"legal {_fmt(s['legal_pct'], '.0f')}% ({_fmt(s['legal_megatron_pct'], '.0f')}% of the {s['published_recipes'] - s['not_megatron']} "
            f"Megatron-LM ones), legal and fitting {_fmt(s['fits_pct'], '.0f')}%, "
            f"inside our default search space {_fmt(s['in_space_pct'], '.0f')}%; ranked {s['ranked']}: median rank "
            f"{_fmt(s['median_rank'], '.0f')}, median projected gain of our top pick {_fmt(s['median_gain_pct'], '+.1f')}% "
            f"({s['gains_vs_solver_pick']} against the solver's pick, the rest against the best priced candidate)")


def evaluate_group(key, recipe_groups, max_gpus: int, method: str, time_limit_s: float, group_timeout_s: float) -> list[dict]:
    """Table rows of one group, run in a child process so a slow solve is cut at group_timeout_s."""
    from bench.published.groups import group_worker

    ctx = mp.get_context("spawn")  # not fork: groups start from pool threads, and fork copies their held locks
    parent, child = ctx.Pipe(duplex=False)
    do_rank = key[2] <= max_gpus
    proc = ctx.Process(target=group_worker, args=(child, key, recipe_groups, do_rank, method, time_limit_s), daemon=True)
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
        notes += not_megatron_notes(row)
        row["not_megatron"] = bool(not_megatron_notes(row))
        if "oom" in row["outcome"]:
            notes.append("row reports OOM")
        row["note"] = "; ".join(notes)
        rows.append(row)
    return rows


def run(cases, max_gpus: int, method: str, time_limit_s: float, group_timeout_s: float, jobs: int = 1,
        only: Optional[str] = None, log=sys.stderr) -> list[dict]:
    groups = group_cases(cases)
    keys = [k for k in groups if not only or any(o.strip().lower() in " ".join(map(str, k)).lower() for o in only.split("|"))]
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
    lines += ["", "### Published recipes reported OOM that we say fit", ""]
    for r in rows:
        if r.get("legal") and r.get("fits") and r["outcome"] == ["oom"]:
            lines.append(f"- {', '.join(r['ids'])} {r['group'][0]} {r['group'][1]} x{r['group'][2]} {r['recipe']}: our peak "
                         f"{r['peak_gib']:.1f} GiB <= usable {r['usable_gib']:.1f} GiB (largest term {r['dominant']})")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    from bench.runs import load_all

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-gpus", type=int, default=256, help="rank and solve only groups up to this many GPUs")
    ap.add_argument("--time-limit", type=float, default=60.0, help="CP-SAT time limit per solve (s)")
    ap.add_argument("--group-timeout", type=float, default=180.0, help="wall-clock limit per group (s)")
    ap.add_argument("--method", choices=["exhaustive", "cpsat"], default="exhaustive")
    ap.add_argument("--jobs", type=int, default=1, help="groups evaluated at once")
    ap.add_argument("--only", default=None, help="substring(s) of the group key, '|'-separated (e.g. 'Llama-2-7b|GPT-3')")
    ap.add_argument("--json", dest="json_path", default=None, help="also write rows and summary as JSON here")
    ap.add_argument("--from-json", dest="from_json", default=None, help="re-print the report of an earlier --json run")
    args = ap.parse_args(argv)
    cases, skips = load_all()
    if args.from_json:
        with open(args.from_json) as fh:
            rows = [dict(r, group=tuple(r["group"]), not_megatron=bool(not_megatron_notes(r)),
                         **{k: int(r[k]) for k in ("rank", "rank_faster", "candidates") if isinstance(r.get(k), str)})
                    for r in json.load(fh)["rows"]]
    else:
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
