"""Nothing but ShardplanError (and KeyboardInterrupt) leaves the API, and its subclass says the kind (issue 33: the
misuses below raised TypeError, ValueError, AttributeError, RecursionError, MemoryError or an internal alarm). A bug
that reaches the edge stays a bug: InternalError keeps it as __cause__, and the CLI reports its type and place, exit 3.
"""
from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

import shardplan
import shardplan.api
from boundary.errors import ArgumentError, InputFileError, InternalError, LimitExceeded, NotLegal
from shardplan.cli.main import main
from templates.render_input import RenderRefused
from tests.helpers.builders import REPO

EXAMPLE = shardplan.examples.path("llama3-70b-h100")
JOB = dict(seq_length=4096, global_batch_size=8)


def _deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


# the misuses, each with the argument its message must name
MISUSES = [
    (lambda: shardplan.solve(model=None, hardware="h100-sxm-80gb", nodes=1, **JOB), "model"),
    (lambda: shardplan.solve("Llama-3.1-8B", "h100-sxm-80gb", "8", **JOB), "nodes"),
    (lambda: shardplan.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, top="3", **JOB), "top"),
    (lambda: shardplan.solve("Llama-3.1-8B", ["h100"], 1, **JOB), "hardware"),
    (lambda: shardplan.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, max_memory_fraction="0.9", **JOB), "max_memory_fraction"),
    (lambda: shardplan.solve("Llama-3.1-8B", "h100-sxm-80gb", 1, recompute="most", **JOB), "recompute"),
    (lambda: shardplan.render(EXAMPLE, data_path=["/data/a", "/data/b"]), "data_path"),
    (lambda: shardplan.render(EXAMPLE, data_path=_deep_list(100_000)), "data_path"),
    (lambda: shardplan.sweep("Llama-3.1-8B", "h100-sxm-80gb", None, **JOB), "nodes"),
    (lambda: shardplan.sweep("Llama-3.1-8B", "h100-sxm-80gb", list(range(1, 301)), **JOB), "nodes"),
    (lambda: shardplan.sweep("Llama-3.1-8B", "h100-sxm-80gb", range(1, 100_000), **JOB), "nodes"),
    (lambda: shardplan.check(EXAMPLE, nodes=True), "nodes"),
    (lambda: shardplan.calibrate("run.log", "h100-sxm-80gb"), "logs"),
]


@pytest.mark.parametrize("call, argument", MISUSES, ids=[m[1] + str(i) for i, m in enumerate(MISUSES)])
def test_each_misuse_is_an_argument_error_naming_it(call, argument):
    with pytest.raises(ArgumentError) as refused:
        call()
    assert str(refused.value).startswith((argument + ":", argument + "[")) and refused.value.argument == argument


@pytest.mark.parametrize("raised, kind, words", [
    (RecursionError("maximum recursion depth exceeded"), LimitExceeded, "recursion limit"),
    (MemoryError(), LimitExceeded, "ran out of memory"),
    (PermissionError(13, "Permission denied", "/data/recipe.yaml"), InputFileError, "'/data/recipe.yaml': cannot be read"),
    (KeyError("oops"), InternalError, "internal error in check(): KeyError: 'oops'"),
    (ValueError("an internal invariant"), InternalError, "internal error in check(): ValueError"),
])
def test_anything_else_inside_is_sorted_into_a_kind(monkeypatch, raised, kind, words):
    def broken(*args, **kwargs):
        raise raised

    monkeypatch.setattr(shardplan.api, "check_and_project", broken)
    with pytest.raises(kind) as caught:
        shardplan.check(EXAMPLE)
    assert words in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.__cause__ is raised


class CallersTimeout(BaseException):
    """A caller's own timeout, raised from its alarm as a BaseException (as the fuzz harness's Hang is)."""


@pytest.mark.parametrize("control", [KeyboardInterrupt, asyncio.CancelledError, CallersTimeout])
def test_ctrl_c_and_a_callers_control_flow_are_never_wrapped(monkeypatch, control):
    def interrupted(*args, **kwargs):
        raise control

    monkeypatch.setattr(shardplan.api, "check_and_project", interrupted)
    with pytest.raises(control):
        shardplan.check(EXAMPLE)


def test_an_illegal_render_is_not_legal_and_keeps_its_problems():
    with pytest.raises(NotLegal) as refused:
        shardplan.render(EXAMPLE, nodes=3)
    assert isinstance(refused.value, RenderRefused) and refused.value.problems


def test_the_cli_reports_a_wrapped_bug_as_internal_with_its_own_type_and_place(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr(shardplan.api, "check_and_project", broken)
    with pytest.raises(SystemExit) as exit_info:
        main(["check", str(EXAMPLE)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 3
    assert err.startswith("internal error: KeyError: 'oops' at test_api_raises_only_shardplan_errors.py:"), err


def test_the_cli_names_the_option_where_the_api_names_the_argument(capsys):
    """Past click's own ranges (it bounds --seq-length below only), the API's bound speaks, in the option's name."""
    with pytest.raises(SystemExit) as exit_info:
        main(["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--seq-length", "99999999999",
              "--global-batch-size", "8"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.startswith("error: --seq-length: input should be less than or equal to 16777216 (got 99999999999)"), err
    assert err.count("\n") == 1
    with pytest.raises(SystemExit) as exit_info:
        main(["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--seq-length", "8192",
              "--global-batch-size", "8", "--max-time", "nan"])
    assert exit_info.value.code == 2 and capsys.readouterr().err.startswith("error: --max-time: input should be a finite number")


def test_a_limit_shorter_than_arming_the_alarm_is_a_time_limit_and_the_process_lives_on():
    """`max_time_s=1e-9` fired the alarm before its `try:` (issue 33: an internal alarm leaked, then SIGALRM killed the
    interpreter, exit 142). In a fresh interpreter, as the alarm is process-wide."""
    code = ("import time, shardplan\n"
            "for _ in range(3):\n"
            "    try:\n"
            "        shardplan.solve('Llama-3.1-8B', 'h100-sxm-80gb', 1, seq_length=4096, global_batch_size=8, max_time_s=1e-9)\n"
            "    except shardplan.LimitExceeded as exc:\n"
            "        print(type(exc).__name__)\n"
            "time.sleep(0.2)\n"
            "print('alive')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["SolveTimeLimit"] * 3 + ["alive"]
