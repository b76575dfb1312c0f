"""propose -> solve a restricted sub-search per hint -> add answers to the ledger -> propose again; then the
full solve over the user's space, hinted with the best ledger entry, every shown recipe re-verified.

Why the final answer is always the full solve: hints are untrusted and only steer. A pin hint becomes a
sub-search (the user's pins narrowed by the hint's values, forbids of the round removed), a prefer hint
becomes the CP-SAT solution hint of those sub-searches, and the best recipe found becomes the CP-SAT
hint of the final solve. The tables are never touched, so no hint can add a recipe the rules refuse,
and check_case re-judges every recipe before it is shown.
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import time
from contextlib import nullcontext
from typing import Optional

from constraints.case import Case
from constraints.check import check_case
from solver.cpsat.solve import SolveResult, check_solve_limits, fitting_index, solve_cpsat
from solver.proposer.config import ProposerConfig, ProposerConfigError
from solver.proposer.hints import Hint, validate_hints
from solver.proposer.ledger import Ledger, ProposerContext, entry_from_ranked
from solver.proposer.legal import AxisColumns
from solver.proposer.llm import LLMError, LLMProposer, client_from_config
from solver.proposer.rules import RuleProposer
from solver.proposer.summary import HintReport, HintUse, RoundSummary

log = logging.getLogger(__name__)


def _takes(param: str) -> bool:
    """solve_cpsat accepts `param` (a test or an older solver may stand in without it)."""
    return param in inspect.signature(solve_cpsat).parameters


def _solve(tables, k, pins, margin, max_time_s, hint, steering: bool = False) -> tuple[SolveResult, bool]:
    """solve_cpsat, with the CP-SAT hint where the solver takes one (tolerates it being dropped). A `steering`
    sub-search has CP-SAT prove its optimum only (minimise), not list its whole answer region: its answers only
    steer, and on Qwen3-235B / 256 GPUs the listings of five sub-searches cost 3.3 s."""
    kw = {"cpsat_enumeration": False} if steering and _takes("cpsat_enumeration") else {}
    taken = hint is not None and _takes("hint")
    if taken:
        kw["hint"] = hint
    return solve_cpsat(tables, k, pins=pins, margin_fraction=margin, max_time_s=max_time_s, **kw), taken


def _make_proposer(config: ProposerConfig):
    if config.kind == "rules":
        return RuleProposer()

    client = client_from_config(config)
    if client is None:
        raise ProposerConfigError("--proposer llm: needs --llm-base-url URL and --llm-model NAME")
    return LLMProposer(client)


def _subsearch_pins(user_pins: dict, legal: dict, hint: Optional[Hint], forbids: list[Hint]) -> dict:
    pins = {a: list(v) for a, v in user_pins.items()}
    if hint is not None:
        pins.update({a: list(v) for a, v in hint.axes.items()})
    for f in forbids:
        (axis, bad), = f.axes.items()
        left = [v for v in pins.get(axis, legal.get(axis, [])) if not any(type(v) is type(b) and v == b for b in bad)]
        if left:  # a forbid never empties an axis: skip it for this sub-search instead
            pins[axis] = left
    return pins


def _pins_key(pins: dict, legal: dict) -> tuple:
    """Identity of a sub-search: a pin allowing every legal value of its axis restricts nothing."""
    out = []
    for a, v in pins.items():
        if set(map(repr, legal.get(a, []))) <= set(map(repr, v)):
            continue
        out.append((a, tuple(sorted(map(repr, v)))))
    return tuple(sorted(out))


class _Loop:
    def __init__(self, tables, k, pins, margin, max_time_s, config: ProposerConfig, proposer=None, step=None) -> None:
        self.step = step or (lambda label: nullcontext())  # wraps each round and the final solve (CLI progress)
        self.tables, self.k, self.pins, self.margin, self.max_time_s, self.config = tables, k, dict(pins or {}), margin, max_time_s, config
        self.proposer = proposer if proposer is not None else _make_proposer(config)
        self.columns = AxisColumns(tables)
        self.legal = self.columns.legal_values(self.pins)
        sp = tables.space
        self.ctx = ProposerContext(model=sp.model, job=sp.job, placement=sp.placement, profile=tables.profile, legal=self.legal,
                                   top_k_region=tables.pruned_lb_us is not None)
        self.ledger: Ledger = self.ctx.ledger
        self.report = HintReport(kind=config.kind, suggestions=self.proposer.suggestions(self.ctx))
        self.tried: set = set()
        self.seen_hints: set = set()
        self.prefers: list[Hint] = []
        self.t0 = time.perf_counter()
        if hasattr(self.proposer, "time_left_s"):  # an LLM request must end inside the loop's budget
            self.proposer.time_left_s = lambda: self.config.budget_s - (time.perf_counter() - self.t0)

    def over_budget(self) -> bool:
        return time.perf_counter() - self.t0 > self.config.budget_s

    def propose(self, summary: RoundSummary) -> Optional[list[Hint]]:
        try:
            batches = self.proposer.propose(self.ctx)
        except LLMError as exc:
            summary.error = str(exc)
            log.warning("proposer round %d: %s", summary.round, exc)
            return None
        kept: list[Hint] = []
        for source, raw in batches:
            hints, rejected = validate_hints(raw, self.legal, source, top_k_region=self.ctx.top_k_region)
            summary.proposed += len(raw) if isinstance(raw, list) else 1
            fresh = [h for h in hints if h.key() not in self.seen_hints]  # a repeat from an earlier round adds nothing
            summary.repeated += len(hints) - len(fresh)
            kept += fresh
            self.report.rejected += [rej.model_copy(update={"round": summary.round}) for rej in rejected]
            self.ctx.rejected_reasons += [f"{_brief(r.hint)}: {r.reason}" for r in rejected]
            summary.rejected += len(rejected)
        summary.kept = len(kept)
        return kept

    def subsearch(self, r: int, hint: Optional[Hint], forbids: list[Hint], prefers: list[Hint], use: Optional[HintUse]):
        """Solve the user's space narrowed by `hint` and the round's forbids; answers go to the ledger.
        Returns the best Ranked found, False when nothing ran (repeat or failure), None when it found nothing."""
        pins = _subsearch_pins(self.pins, self.legal, hint, forbids)
        key = _pins_key(pins, self.legal)
        if key in self.tried:
            if use:
                use.status = "skipped: same sub-search as an earlier hint"
            return False
        self.tried.add(key)
        preferred = {a: v for p in prefers for a, v in p.axes.items()}
        cp_hint = self.columns.best_row_for(preferred, pins) if preferred else None
        try:
            res, _ = _solve(self.tables, self.config.subsearch_k, pins, self.margin, self.max_time_s, cp_hint, steering=True)
        except Exception as exc:  # a hint-driven sub-search is optional steering: record, never abort the solve
            log.warning("sub-search %s failed: %s", pins, exc)
            if use:
                use.status = f"failed: {exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            return False
        origin = f"round {r}: " + (hint.describe() if hint else "forbids only")
        for ranked in res.ranked:
            self.ledger.add(entry_from_ranked(self.columns, ranked, origin))
        best = res.ranked[0] if res.ranked else None
        if use:
            use.status, use.best_time_us, use.num_found = "searched", best.time_us if best else None, len(res.ranked)
            if res.method == "pruned":  # nothing it allows reaches the top K: the pruned rows' bound says how slow
                use.status = f"searched: every recipe it allows ranks at >= {res.bound / 1e6:.3f} s, after the top K"
            elif res.ranked and not res.proven_optimal and self.tables.pruned_lb_us is not None:
                use.status = (f"searched (best of the expanded rows; the rows left out rank at >= "
                              f"{self.tables.pruned_lb_us / 1e6:.3f} s)")
        return best

    def round(self, r: int) -> RoundSummary:
        summary = RoundSummary(round=r)
        self.ctx.round_index = r
        before = self.ledger.best()
        hints = self.propose(summary)
        if hints is None:
            return summary
        pins_h = [h for h in hints if h.action == "pin"]
        forbids = [h for h in hints if h.action == "forbid"]
        prefers = [h for h in hints if h.action == "prefer"]
        for h in forbids + prefers:
            self.report.used.append(HintUse(round=r, hint=h, status="applied: " + ("removed from this round's sub-searches"
                                            if h.action == "forbid" else "CP-SAT solution hint")))
            self.seen_hints.add(h.key())
        self.prefers += prefers
        jobs = [(h, HintUse(round=r, hint=h, status="pending")) for h in pins_h]
        if not jobs and forbids:
            jobs = [(None, None)]
        for i, (h, use) in enumerate(jobs):
            if use:
                self.report.used.append(use)
            if i >= self.config.max_subsearches_per_round or self.over_budget():
                if use:
                    use.status = "skipped: " + ("round cap" if i >= self.config.max_subsearches_per_round else "time budget")
                continue
            if h is not None:
                self.seen_hints.add(h.key())  # tried (or a repeat of a tried sub-search); capped ones may come back
            found = self.subsearch(r, h, forbids, prefers, use)
            if found is False:
                continue
            summary.subsearches += 1
            if found is not None and (summary.best_time_us is None or found.time_us < summary.best_time_us):
                summary.best_time_us = found.time_us
                summary.best_axes = entry_from_ranked(self.columns, found, "round").axes
        after = self.ledger.best()
        summary.improved = after is not None and (before is None or after.time_us < before.time_us)
        return summary

    def run_rounds(self) -> None:
        stale = 0
        self.report.stopped = "max_rounds"
        for r in range(1, self.config.max_rounds + 1):
            if self.over_budget():
                self.report.stopped = "budget"
                break
            with self.step(f"proposer ({self.config.kind}) round {r} of at most {self.config.max_rounds}"):
                summary = self.round(r)
            self.report.rounds.append(summary)
            if summary.error:
                self.report.stopped = "error"
                break
            if summary.kept == 0 and summary.subsearches == 0 and summary.rejected == 0:
                self.report.stopped = "no_new_hints"
                break
            stale = 0 if summary.improved else stale + 1
            if stale >= self.config.patience:
                self.report.stopped = "patience"
                break

    def nothing_fits(self) -> bool:
        """The tables hold no fitting candidate under the user's pins: every sub-search and the final solve would
        only prove infeasibility again (a CP-SAT proof over ~1M one-hot candidates takes about a minute each)."""
        return _fits_none(self.tables, self.pins)

    def final_empty(self) -> SolveResult:
        self.report.unhinted_compared_by = "not_needed"
        return _solve(self.tables, self.k, self.pins or None, self.margin, self.max_time_s, None)[0]

    def final(self) -> SolveResult:
        best = self.ledger.best()
        hint = (best.act, best.shard) if best else None
        if hint is None and self.prefers:  # nothing searched yet: the preferences seed the final solve
            hint = self.columns.best_row_for({a: v for p in self.prefers for a, v in p.axes.items()}, self.pins)
        self.report.final_hint_axes = self.columns.values_of(*hint) if hint else None
        res, taken = _solve(self.tables, self.k, self.pins or None, self.margin, self.max_time_s, hint)
        self.report.hint_accepted = taken
        res = self.reverify(res)
        top = res.ranked[0] if res.ranked else None
        self.report.final_top_axes = entry_from_ranked(self.columns, top, "final").axes if top else None
        if hint is None:
            self.report.unhinted_compared_by, self.report.unhinted_top_axes = "not_needed", self.report.final_top_axes
        elif res.proven_optimal:
            # both runs give the exact top-K under the projection with the same (time, act, shard) tie-break
            self.report.unhinted_compared_by, self.report.unhinted_top_axes = "proof", self.report.final_top_axes
        elif self.config.compare_unhinted:
            plain = self.reverify(_solve(self.tables, self.k, self.pins or None, self.margin, self.max_time_s, None)[0], record=False)
            ptop = plain.ranked[0] if plain.ranked else None
            self.report.unhinted_compared_by = "rerun"
            self.report.unhinted_top_axes = entry_from_ranked(self.columns, ptop, "unhinted").axes if ptop else None
            self.report.changed_result = (ptop.act, ptop.shard) != (top.act, top.shard) if (ptop and top) else (ptop is None) != (top is None)
        return res

    def reverify(self, res: SolveResult, record: bool = True) -> SolveResult:
        """check_case on every recipe about to be shown; a refused one is dropped and named."""
        sp = self.tables.space
        kept = []
        for r in res.ranked:
            rep = check_case(Case(model=sp.model, job=sp.job, recipe=r.recipe, placement=sp.placement), self.tables.profile,
                             margin_fraction=self.margin)
            if rep.ok:
                kept.append(r)
            elif record:
                self.report.dropped_by_check.append(f"{r.recipe.model_dump(mode='json', exclude_defaults=True)}: "
                                                    + ", ".join(v.rule for v in rep.violations))
        if record:
            self.report.reverified = len(res.ranked)
        return dataclasses.replace(res, ranked=kept)


def solve_with_proposer(tables, k: int = 10, pins: Optional[dict] = None, margin_fraction: float = 0.0, max_time_s: float = 60.0,
                        config: Optional[ProposerConfig] = None, proposer=None, step=None) -> tuple[SolveResult, HintReport]:
    """Top-K legal recipes over the user's space (pins = axis -> allowed values), steered by proposer hints.

    `proposer` overrides the one `config.kind` names (tests, custom rule sets). kind 'none' is the plain
    solve (re-verified), with an empty report. `step(label)`, when given, wraps each proposer round and the final
    solve in its own context (shardplan.progress shows each on stderr)."""
    check_solve_limits(k, max_time_s)
    config = config or ProposerConfig()
    if config.kind == "none" and proposer is None:
        loop = _Loop(tables, k, pins, margin_fraction, max_time_s, config, proposer=_NoProposer(), step=step)
        loop.report.stopped = "none"
    else:
        loop = _Loop(tables, k, pins, margin_fraction, max_time_s, config, proposer, step=step)
    if loop.nothing_fits():  # hints only steer among fitting recipes; the proposer's suggestions are kept
        loop.report.stopped = "nothing_fits"
        return loop.final_empty(), loop.report
    if config.kind != "none" or proposer is not None:
        loop.run_rounds()
    with loop.step("final CP-SAT solve over the whole space"):
        return loop.final(), loop.report


def _fits_none(tables, pins: Optional[dict] = None) -> bool:
    try:
        return not len(fitting_index(tables, pins or None))
    except ValueError:  # a pin fitting_index refuses (variant axes): let the solve report it as before
        return False


class _NoProposer:
    kind = "none"

    def propose(self, ctx) -> list:
        return []

    def suggestions(self, ctx) -> list:
        return []


def _brief(raw) -> str:
    s = repr(raw)
    return s if len(s) <= 120 else s[:117] + "..."
