"""The propose/solve loop: hints steer but never decide — user pins hold, failed or useless sub-searches are
survived, the final recipes are re-verified by check_case, and the report says whether hints changed the answer."""
from __future__ import annotations

import dataclasses

import pytest

import solver.proposer.loop as loop_mod
from solver.cpsat.solve import solve_cpsat
from solver.proposer.loop import ProposerConfig, solve_with_proposer
from tests.helpers.proposer import TINY, assert_all_legal, tables_for


class Scripted:
    """A proposer replaying fixed raw hints per round (the last round repeats)."""

    kind = "scripted"

    def __init__(self, rounds):
        self.rounds, self.calls = rounds, 0

    def propose(self, ctx):
        self.calls += 1
        return [("test:scripted", self.rounds[min(self.calls, len(self.rounds)) - 1])]

    def suggestions(self, ctx):
        return []


@pytest.fixture(scope="module")
def tiny():
    return tables_for(pins=TINY)


@pytest.fixture(scope="module")
def plain(tiny):
    return solve_cpsat(tiny, k=3)


def test_user_pins_bound_every_hint_and_answer(tiny):
    result, report = solve_with_proposer(tiny, k=3, pins={"tp": [2]}, config=ProposerConfig(subsearch_k=1))
    assert_all_legal(tiny, result)
    assert {r.recipe.tp for r in result.ranked} == {2}
    sp_hint = next(u.hint for u in report.used if u.hint.source == "rule:sp_with_tp")
    assert sp_hint.axes["tp"] == [2]


def test_a_hint_outside_the_pins_is_rejected(tiny):
    prop = Scripted([[{"action": "pin", "axes": {"tp": 4}}]])
    result, report = solve_with_proposer(tiny, k=3, pins={"tp": [2]}, config=ProposerConfig(max_rounds=1), proposer=prop)
    assert_all_legal(tiny, result)
    assert "tp=4 is not a legal value here (those within your pins: 2)" in report.rejected[0].reason


def test_a_hint_whose_recipes_do_not_fit_finds_nothing_and_changes_nothing(plain):
    # Llama-3.1-8B at seq 32768 without recompute does not fit at TP=1/PP=1; the final answer still comes from the full space
    tables = tables_for(seq=32768, gbs=8, pins={**TINY, "recompute": ["none", "full:uniform:1"]})
    prop = Scripted([[{"action": "pin", "axes": {"tp": 1, "pp": 1, "recompute": "none"}}]])
    result, report = solve_with_proposer(tables, k=2, config=ProposerConfig(max_rounds=1), proposer=prop)
    assert_all_legal(tables, result)
    use = report.used[0]
    assert use.status == "searched" and use.num_found == 0 and use.best_time_us is None
    assert report.final_hint_axes is None and report.unhinted_compared_by == "not_needed"


def test_final_recipes_are_reverified_and_an_illegal_one_is_dropped(tiny, monkeypatch):
    def lying_solver(tables, k, pins=None, margin_fraction=0.0, max_time_s=60.0, hint=None):
        res = solve_cpsat(tables, k, pins=pins, margin_fraction=margin_fraction, max_time_s=max_time_s, hint=hint)
        bad = dataclasses.replace(res.ranked[0], recipe=res.ranked[0].recipe.model_copy(update={"tp": 3}))
        return dataclasses.replace(res, ranked=[bad] + res.ranked)

    monkeypatch.setattr(loop_mod, "solve_cpsat", lying_solver)
    result, report = solve_with_proposer(tiny, k=3, config=ProposerConfig(kind="none"))
    assert_all_legal(tiny, result)
    assert all(r.recipe.tp != 3 for r in result.ranked) and report.reverified == 4
    assert len(report.dropped_by_check) == 1 and "'tp': 3" in report.dropped_by_check[0]


def test_solver_without_a_hint_parameter_is_tolerated(tiny, plain, monkeypatch):
    def no_hint_solver(tables, k, pins=None, margin_fraction=0.0, max_time_s=60.0):
        return solve_cpsat(tables, k, pins=pins, margin_fraction=margin_fraction, max_time_s=max_time_s)

    monkeypatch.setattr(loop_mod, "solve_cpsat", no_hint_solver)
    result, report = solve_with_proposer(tiny, k=3, config=ProposerConfig(subsearch_k=1))
    assert [r.key for r in result.ranked] == [r.key for r in plain.ranked]
    assert report.final_hint_axes is not None and not report.hint_accepted


def test_failing_subsearch_is_recorded_not_raised(tiny, plain, monkeypatch):
    def flaky(tables, k, pins=None, margin_fraction=0.0, max_time_s=60.0, hint=None):
        if pins and pins.get("tp") == [4]:
            raise RuntimeError("scripted sub-search failure")
        return solve_cpsat(tables, k, pins=pins, margin_fraction=margin_fraction, max_time_s=max_time_s, hint=hint)

    monkeypatch.setattr(loop_mod, "solve_cpsat", flaky)
    prop = Scripted([[{"action": "pin", "axes": {"tp": 4}}, {"action": "pin", "axes": {"tp": 2}}]])
    result, report = solve_with_proposer(tiny, k=3, config=ProposerConfig(max_rounds=1), proposer=prop)
    assert [r.key for r in result.ranked] == [r.key for r in plain.ranked]
    assert report.used[0].status == "failed: RuntimeError: scripted sub-search failure" and report.used[1].status == "searched"


def test_unproven_final_is_compared_with_an_unhinted_rerun(tiny, monkeypatch):
    # a solver whose answer depends on the hint and never proves: the report must say the hints changed the top recipe
    def hint_sensitive(tables, k, pins=None, margin_fraction=0.0, max_time_s=60.0, hint=None):
        res = solve_cpsat(tables, k, pins=pins, margin_fraction=margin_fraction, max_time_s=max_time_s)
        ranked = res.ranked if hint is None else list(reversed(res.ranked))
        return dataclasses.replace(res, ranked=ranked, proven_optimal=False)

    monkeypatch.setattr(loop_mod, "solve_cpsat", hint_sensitive)
    prop = Scripted([[{"action": "pin", "axes": {"tp": 2}}]])
    result, report = solve_with_proposer(tiny, k=3, config=ProposerConfig(max_rounds=1), proposer=prop)
    assert_all_legal(tiny, result)
    assert report.unhinted_compared_by == "rerun" and report.changed_result
    assert report.final_top_axes != report.unhinted_top_axes


def test_rounds_stop_after_patience_without_improvement(tiny, plain):
    # round 1 pins the plain optimum's TP, so no later round can improve on it
    best_tp = plain.ranked[0].recipe.tp
    others = [t for t in (1, 2, 4) if t != best_tp]
    prop = Scripted([[{"action": "pin", "axes": {"tp": best_tp}}]] + [[{"action": "pin", "axes": {"tp": t}}] for t in others])
    _, report = solve_with_proposer(tiny, k=2, config=ProposerConfig(max_rounds=10, patience=2), proposer=prop)
    assert [r.improved for r in report.rounds] == [True, False, False]
    assert report.stopped == "patience" and prop.calls == 3
    assert report.rounds[0].best_time_us == plain.ranked[0].time_us


def test_budget_stops_the_rounds(tiny):
    prop = Scripted([[{"action": "pin", "axes": {"tp": 2}}]])
    result, report = solve_with_proposer(tiny, k=2, config=ProposerConfig(budget_s=1e-9), proposer=prop)
    assert_all_legal(tiny, result)
    assert report.stopped == "budget" and prop.calls == 0


def test_prefer_only_reply_seeds_the_final_solve(tiny, plain):
    prop = Scripted([[{"action": "prefer", "axes": {"tp": 2, "dp_sharding": "none"}}]])
    result, report = solve_with_proposer(tiny, k=3, config=ProposerConfig(max_rounds=1), proposer=prop)
    assert [r.key for r in result.ranked] == [r.key for r in plain.ranked]
    assert report.used[0].status == "applied: CP-SAT solution hint"
    assert (report.final_hint_axes["tp"], report.final_hint_axes["dp_sharding"]) == (2, "none") and report.hint_accepted


def test_hints_capped_in_one_round_are_searched_in_the_next(tiny):
    two = [{"action": "pin", "axes": {"tp": 1}}, {"action": "pin", "axes": {"tp": 2}}]
    prop = Scripted([two])
    _, report = solve_with_proposer(tiny, k=2, config=ProposerConfig(max_rounds=3, patience=3, max_subsearches_per_round=1),
                                    proposer=prop)
    statuses = [(u.round, u.hint.axes["tp"], u.status) for u in report.used]
    assert statuses[:3] == [(1, [1], "searched"), (1, [2], "skipped: round cap"), (2, [2], "searched")]
    assert report.stopped == "no_new_hints" and len(report.rounds) == 3


def test_each_round_and_the_final_solve_are_their_own_progress_step(tiny):
    from contextlib import contextmanager

    labels = []

    @contextmanager
    def record(label):
        labels.append(label)
        yield

    prop = Scripted([[{"action": "pin", "axes": {"tp": 2}}], [{"action": "pin", "axes": {"tp": 1}}]])
    _, report = solve_with_proposer(tiny, k=3, config=ProposerConfig(max_rounds=2, patience=5), proposer=prop, step=record)
    rounds = [lab for lab in labels if " round " in lab]
    assert len(rounds) == len(report.rounds) == 2
    assert rounds[0].endswith("round 1 of at most 2") and rounds[1].endswith("round 2 of at most 2")
    assert labels[-1] == "final CP-SAT solve over the whole space"
