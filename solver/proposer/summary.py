"""What `solve` says about the proposer: hints used and rejected, per-round best, and whether the hints
changed the answer. A pydantic model, so `--json` prints `report.model_dump(mode="json")` as is."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from solver.proposer.hints import Hint, Rejected
from solver.proposer.ledger import Suggestion


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HintUse(_Model):
    """One validated hint and what the loop did with it."""

    round: int
    hint: Hint
    status: str = Field(description="searched | applied (forbid/prefer) | skipped: why | failed: why")
    best_time_us: Optional[int] = Field(None, description="best projected step of its sub-search")
    num_found: int = 0


class RoundSummary(_Model):
    round: int
    proposed: int = 0
    kept: int = 0
    repeated: int = Field(0, description="valid hints already made in an earlier round (not searched again)")
    rejected: int = 0
    subsearches: int = 0
    best_time_us: Optional[int] = Field(None, description="best step found in this round's sub-searches")
    best_axes: Optional[dict[str, Any]] = None
    improved: bool = False
    error: Optional[str] = None


class HintReport(_Model):
    kind: str = Field(description="none | rules | llm")
    used: list[HintUse] = []
    rejected: list[Rejected] = []
    rounds: list[RoundSummary] = []
    suggestions: list[Suggestion] = []
    stopped: str = Field("", description="why the rounds ended: max_rounds | patience | budget | no_new_hints | error")
    final_hint_axes: Optional[dict[str, Any]] = Field(None, description="ledger best given to the final solve as CP-SAT hint")
    hint_accepted: bool = Field(False, description="the final solve took the CP-SAT hint")
    final_top_axes: Optional[dict[str, Any]] = None
    unhinted_top_axes: Optional[dict[str, Any]] = None
    changed_result: bool = Field(False, description="the final top recipe differs from the unhinted solve's")
    unhinted_compared_by: str = Field("", description="proof (both proven exact top-K) | rerun | not_needed")
    reverified: int = Field(0, description="final recipes re-checked by check_case")
    dropped_by_check: list[str] = Field([], description="final recipes check_case refused (never shown)")


def _fmt_time(us: Optional[int]) -> str:
    return "-" if us is None else f"{us / 1e6:.3f} s"


# dropped hints printed below the table; the rest are counted (a reply of 1,000 hints would print 2,000 lines)
MAX_DROPPED_SHOWN = 20


def format_hint_report(report: HintReport) -> str:
    """The proposer's ledger as a plain-text block (`solve -v`, below the recipe table): rounds, hints used and
    dropped, advice, and whether the hints changed the top recipe."""
    if report.kind == "none":
        return "proposer: none"
    lines = [f"proposer: {report.kind}, {len(report.rounds)} round(s), stopped: {report.stopped or '-'}"]
    for r in report.rounds:
        extra = f", error: {r.error}" if r.error else ""
        lines.append(f"  round {r.round}: {r.kept} new hint(s), {r.repeated} repeated, {r.rejected} rejected, {r.subsearches} sub-search(es), "
                     f"best {_fmt_time(r.best_time_us)}{' (improved)' if r.improved else ''}{extra}")
    for u in report.used:
        lines.append(f"  used  [{u.hint.source}] {u.hint.describe()}: {u.status}"
                     + (f", best {_fmt_time(u.best_time_us)}" if u.best_time_us is not None else "")
                     + (f"  # {_printable(u.hint.rationale, 100)}" if u.hint.rationale else ""))
    for rej in report.rejected[:MAX_DROPPED_SHOWN]:
        lines.append(f"  dropped [{rej.source}{f', round {rej.round}' if rej.round else ''}] {_short(rej.hint)}: {rej.reason}")
    if len(report.rejected) > MAX_DROPPED_SHOWN:  # an endpoint's flood of hints is counted, not printed (JSON holds all)
        lines.append(f"  ... and {len(report.rejected) - MAX_DROPPED_SHOWN} more dropped hint(s) (--format json lists them)")
    for s in report.suggestions:
        lines.append(f"  suggest [{s.rule}] {s.text}")
    if report.final_hint_axes is not None:
        lines.append(f"  final solve hinted with the best ledger recipe ({'taken' if report.hint_accepted else 'ignored by the solver'})")
    lines.append("  hints changed the top recipe: " + ("yes" if report.changed_result else "no")
                 + (f" (compared by {report.unhinted_compared_by})" if report.unhinted_compared_by else ""))
    for d in report.dropped_by_check:
        lines.append(f"  not shown (check_case refused): {d}")
    return "\n".join(lines)


def format_hint_notes(report: HintReport) -> str:
    """What `solve` prints below the table without -v: only what a user acts on: the proposer's advice outside the
    searched axes, a round that failed, a final recipe check_case refused; empty when there is none. Why: the ledger
    (format_hint_report, rounds and hints) follows every solve with 8-10 lines that seldom change the answer, and
    `hint_report`'s changed_result says whether they did; -v prints it."""
    lines = [f"suggest [{s.rule}] {s.text}" for s in report.suggestions]
    lines += [f"proposer: round {r.round} failed: {r.error} (-v prints the ledger)" for r in report.rounds if r.error]
    lines += [f"not shown (check_case refused): {d}" for d in report.dropped_by_check]
    return "\n".join(lines)


def _printable(text: str, limit: int) -> str:
    """Untrusted text shown on a terminal: printable characters only (no escape sequences), one line, cut."""
    s = "".join(ch if ch.isprintable() else "?" for ch in text)
    return s if len(s) <= limit else s[:limit - 3] + "..."


def _short(v: Any) -> str:
    return _printable(repr(v), 100)
