"""Run one fuzz case in this process and judge it: exit 0, 1 or 2 within a time limit, no traceback, one
`error:` line on exit 2, the README's JSON shape on exit 0 / 1, and nothing that was not ours overwritten.

Why in-process: a fresh interpreter costs ~0.7 s of imports, which would make ten thousand cases take hours;
the CLI's `main` is called with its argv and its streams captured, and a SIGALRM stops a case that runs past
its limit (a hang). bench/fuzz.py runs this in a worker process it can replace when one dies.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.fuzz_cases import Case

CHECK_KEYS = {"legal", "fits", "violations", "memory", "projection"}
SOLVE_KEYS = {"recipes", "proven_optimal"}
MAX_STDERR_CHARS = 4000  # one error line, bounded (the alias bomb once printed 351 MB)


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so the CLI's `except Exception` cannot swallow it."""


@dataclass
class Outcome:
    rc: int
    out: str
    err: str
    seconds: float
    hung: bool = False


def materialise(case: Case, folder: Path) -> None:
    for name, content in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == "FIFO":
            os.mkfifo(path)
        elif content == "DIR":
            path.mkdir()
        elif isinstance(content, tuple) and content[0] == "SYMLINK":
            path.symlink_to(content[1] if content[1].startswith("/") else folder / content[1])
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content.replace("{dir}", str(folder)), errors="surrogateescape")


def argv_for(case: Case, folder: Path) -> list[str]:
    return [a.replace("{dir}", str(folder)) for a in case.argv]


def _on_alarm(signum, frame):
    raise Hang()


def run_case(case: Case, folder: Path, timeout_s: float) -> Outcome:
    """The CLI's exit status, stdout and stderr for `case`, run in this process under a wall-clock alarm."""
    from shardplan.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    start = time.monotonic()
    rc, hung = 0, False
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(argv_for(case, folder))
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Hang:
        rc, hung = -1, True
    except BaseException as exc:  # noqa: BLE001 - anything escaping main is a failure to report, not to raise
        rc = -2
        err.write(f"Traceback (escaped main): {type(exc).__name__}: {exc}"[:MAX_STDERR_CHARS])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return Outcome(rc, out.getvalue(), err.getvalue(), time.monotonic() - start, hung)


def judge(case: Case, outcome: Outcome, folder: Path) -> list[tuple[str, str]]:
    """Failures as (class, detail): hang, traceback, wrong_exit, bare_error (an exit-2 line naming neither a
    field nor a fix: a leaked internal message), data_loss."""
    failures = []
    if outcome.hung:
        return [("hang", f"no answer within the limit ({outcome.seconds:.1f} s)")]
    if "Traceback" in outcome.err or outcome.rc in (3, -2) or "internal error" in outcome.err:
        failures.append(("traceback", outcome.err.strip().splitlines()[-1][:300] if outcome.err.strip() else f"rc {outcome.rc}"))
    elif outcome.rc not in (0, 1, 2):
        failures.append(("wrong_exit", f"exit {outcome.rc}: {outcome.err[:200]}"))
    elif outcome.rc == 2:
        lines = [line for line in outcome.err.strip().splitlines() if not line.startswith("warning")]
        if len(lines) != 1 or not lines[0].startswith("error: ") or len(outcome.err) > MAX_STDERR_CHARS:
            failures.append(("wrong_exit", f"exit 2 without one bounded error line: {outcome.err[:300]!r}"))
        elif not lines[0][7:].startswith("-") and ": " not in lines[0][7:] and "; " not in lines[0]:
            # names neither a field nor a fix: a leaked internal exception message
            failures.append(("bare_error", lines[0][:200]))
    elif case.json_shape:
        failures += _json_failures(case, outcome)
    failures += _data_losses(case, outcome, folder)
    return failures


def _json_failures(case: Case, outcome: Outcome) -> list[tuple[str, str]]:
    try:
        data = json.loads(outcome.out)
    except ValueError:
        return [("wrong_exit", f"exit {outcome.rc} without the JSON document: {outcome.out[:200]!r}")]
    keys = CHECK_KEYS if case.json_shape == "check" else SOLVE_KEYS
    if not isinstance(data, dict) or not keys <= set(data):
        return [("wrong_exit", f"JSON lacks {sorted(keys - set(data or {}))}")]
    if case.json_shape == "check" and (outcome.rc == 0) != bool(data["legal"] and data["fits"]):
        return [("wrong_exit", f"exit {outcome.rc} but legal={data['legal']} fits={data['fits']}")]
    return []


def _data_losses(case: Case, outcome: Outcome, folder: Path) -> list[tuple[str, str]]:
    losses = []
    for name in case.keep:
        want = case.files[name]
        path = folder / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            losses.append(("data_loss", f"{name} was removed"))
            continue
        kind = {"FIFO": stat.S_ISFIFO, "DIR": stat.S_ISDIR}.get(want if isinstance(want, str) else "", stat.S_ISLNK)
        if not kind(st.st_mode):
            losses.append(("data_loss", f"{name} was replaced by another kind of file"))
    existing = folder / "existing.sh"
    if "existing.sh" in case.files and outcome.rc != 0 and existing.exists() and "echo keep" not in existing.read_text():
        losses.append(("data_loss", "existing.sh was overwritten by a failed command"))
    return losses
