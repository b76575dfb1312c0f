"""Proposers: cross-axis hints (built-in rules or an LLM) that steer the solver, never decide for it.

Public API:
- `solve_with_proposer(tables, k, pins, margin_fraction, max_time_s, config) -> (SolveResult, HintReport)`
- `ProposerConfig`, `HintReport` (loop), `Hint`, `Rejected`, `validate_hints` (hints)
- `proposer_options`, `config_from_options`, `format_hint_report` (cli_options)
"""
from __future__ import annotations

from solver.proposer.hints import Hint, Rejected, validate_hints
from solver.proposer.loop import HintReport, ProposerConfig, solve_with_proposer

__all__ = ["Hint", "HintReport", "ProposerConfig", "Rejected", "solve_with_proposer", "validate_hints"]
