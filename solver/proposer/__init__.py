"""Proposers: cross-axis hints (built-in rules or an LLM) that steer the solver, never decide for it.

Modules, one idea each:
- hints.py: the hint schema (pin / forbid / prefer values or ranges, cross-axis combinations) and its
  validation against the legal values of the tables within the user's pins; drops come with a reason.
- legal.py: per-axis columns of the tables (legal values, preference -> CP-SAT hint index).
- ledger.py: evaluated recipes (projection, memory) and the context a proposer reads.
- rules.py: the built-in, offline, deterministic rule proposer (the default); each hint names its rule.
- llm.py: an OpenAI-compatible chat-completions proposer (urllib, bounded retries, JSON extraction),
  prompt from templates/proposer_prompt.j2.
- loop.py: `solve_with_proposer` — rounds of propose -> restricted sub-searches -> ledger, then the full
  solve over the user's space hinted with the best ledger entry, every shown recipe re-verified.
- report.py / cli_options.py: the HintReport, its text form, and the click options for `solve`.
"""
from __future__ import annotations

# loop.py is not re-exported here: it imports OR-Tools, and the hint schema and report (imported by shardplan's
# results, on the path of `shardplan --help`) must not pull it in; import it as solver.proposer.loop.
from solver.proposer.hints import Hint, Rejected, validate_hints
from solver.proposer.summary import HintReport, format_hint_report

__all__ = ["Hint", "HintReport", "Rejected", "format_hint_report", "validate_hints"]
