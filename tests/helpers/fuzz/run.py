"""Run one fuzz case and judge it: exit 0, 1 or 2 within a time limit, no traceback, one `error:` line on exit 2,
the README's JSON shape on exit 0 / 1, nothing that was not ours overwritten or deleted, no output path onto an
input, no control character on the terminal, what a writer wrote reads back to the same recipe, Markdown whose
headings and rows come only from shardplan, an API that raises only ShardplanError, and a folder that racing or
SIGTERM-ed writers leave whole.

Why in-process: a fresh interpreter costs ~0.7 s of imports, which would make ten thousand cases take hours;
the CLI's `main` is called with its argv and its streams captured, and a SIGALRM stops a case that runs past
its limit (a hang). bench/fuzz.py runs this in a worker process it can replace when one dies. Only the process
cases (racing writers, SIGTERM) start real processes.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.fuzz.choice import Case

REPO = Path(__file__).resolve().parents[3]

CHECK_KEYS = {"legal", "fits", "violations", "memory", "projection"}
SOLVE_KEYS = {"recipes", "proven_optimal"}
MAX_STDERR_CHARS = 4000  # one error line, bounded (the alias bomb once printed 351 MB)
# C0 controls except tab and newline, DEL, and C1: what a terminal acts on instead of showing (ECMA-48)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
# the recipe fields a writer must carry through its file and back (the parallel layout and the batch)
READBACK_FIELDS = ("tp", "pp", "vpp", "cp", "ep", "mbs", "sequence_parallel", "dp_sharding", "schedule")
LEFTOVER = re.compile(r"(\.tmp$|^\.shardplan-staging-|^\.shardplan-probe\.)")


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so the CLI's `except Exception` cannot swallow it."""


@dataclass
class Outcome:
    rc: int
    out: str
    err: str
    seconds: float
    hung: bool = False
    extra: dict = None  # what a case's second step saw: the read-back verdicts, the API's exception


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
        elif isinstance(content, tuple) and content[0] == "HARDLINK":
            os.link(folder / content[1], path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content.replace("{dir}", str(folder)), errors="surrogateescape")


def argv_for(case: Case, folder: Path) -> list[str]:
    return [a.replace("{dir}", str(folder)) for a in case.argv]


def _on_alarm(signum, frame):
    raise Hang()


@contextlib.contextmanager
def _environment(env: dict):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_cli_in_process(argv: list[str], timeout_s: float, env: dict | None = None) -> Outcome:
    """The CLI's exit status, stdout and stderr for argv, run in this process under a wall-clock alarm."""
    from shardplan.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    start = time.monotonic()
    rc, hung = 0, False
    try:
        with _environment(env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(argv)
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


@contextlib.contextmanager
def _working_directory(folder: Path):
    """contextlib.chdir, which Python 3.10 (the oldest this project supports) lacks."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run_api_call(case: Case, folder: Path, timeout_s: float) -> Outcome:
    """Call `shardplan.<name>(**kwargs)` under the alarm, from the case's folder (a wrong-typed but valid path such as
    render_dir="8" is then written there, not into the checkout); the exception class, if any, goes in `extra`."""
    import shardplan

    name, kwargs = case.call
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    start = time.monotonic()
    raised, message, hung = None, "", False
    err = io.StringIO()
    try:
        with _working_directory(folder), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            getattr(shardplan, name)(**kwargs)
    except Hang:
        hung = True
    except BaseException as exc:  # noqa: BLE001 - the class is what the judge looks at
        raised = exc
        try:
            message = str(exc)
        except Exception:  # noqa: BLE001
            message = "<unprintable message>"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return Outcome(0 if raised is None else 2, "", err.getvalue(), time.monotonic() - start, hung,
                   extra={"raised": raised, "message": message, "call": f"{name}({', '.join(kwargs)})"})


def run_processes(case: Case, folder: Path, timeout_s: float) -> Outcome:
    """Start every argv of the case at once as a real `python -m shardplan.cli.main`; SIGTERM them after the
    case's delay if it has one; wait for all (killed past the limit)."""
    argvs = [[a.replace("{dir}", str(folder)) for a in argv] for argv in case.processes["argvs"]]
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-m", "shardplan.cli.main", *argv], cwd=REPO, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
             for argv in argvs]
    delay = case.processes.get("sigterm_after_s")
    if delay is not None:
        time.sleep(delay)
        for p in procs:
            p.send_signal(signal.SIGTERM)
    errs, rcs, hung = [], [], False
    for p in procs:
        try:
            _, e = p.communicate(timeout=max(1.0, timeout_s - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            p.kill()
            _, e = p.communicate()
            hung = True
        errs.append(e or "")
        rcs.append(p.returncode)
    return Outcome(max(rcs, key=abs), "", "\n".join(errs), time.monotonic() - start, hung, extra={"rcs": rcs})


def run_case(case: Case, folder: Path, timeout_s: float) -> Outcome:
    """Run the case the way its kind asks: the CLI in this process (then, for a writer, its read-back), an API call,
    or real processes."""
    if case.call:
        return run_api_call(case, folder, timeout_s)
    if case.processes:
        return run_processes(case, folder, timeout_s)
    outcome = run_cli_in_process(argv_for(case, folder), timeout_s, case.env)
    if case.readback and outcome.rc == 0 and not outcome.hung:
        def verdict(argv):
            o = run_cli_in_process([a.replace("{dir}", str(folder)) for a in argv], timeout_s)
            try:
                return o.rc, json.loads(o.out), o.err
            except ValueError:
                return o.rc, None, o.err
        outcome.extra = {"written": verdict(case.readback["check"]), "source": verdict(case.readback["same_as"])}
    return outcome


def judge(case: Case, outcome: Outcome, folder: Path) -> list[tuple[str, str]]:
    """Failures as (class, detail): hang, traceback, wrong_exit, bare_error (an exit-2 line naming neither a
    field nor a fix: a leaked internal message), data_loss, terminal (a control character printed), injection (a
    written file that reads back otherwise, or Markdown syntax from a name), api_leak (an API exception that is not
    a ShardplanError), torn_folder (racing or stopped writers left a folder SUMMARY.md does not describe)."""
    if outcome.hung:
        return [("hang", f"no answer within the limit ({outcome.seconds:.1f} s)")]
    if case.call:
        return _api_failures(outcome)
    failures = []
    if case.processes:
        failures += _process_failures(case, outcome, folder)
    elif "Traceback" in outcome.err or outcome.rc in (3, -2) or "internal error" in outcome.err:
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
    if case.must_refuse and outcome.rc != 2:
        failures.append(("data_loss", f"an output onto an input exited {outcome.rc}, not 2: {case.argv[:3]}"))
    bad = CONTROL.search(outcome.out) or CONTROL.search(outcome.err)
    if bad:
        failures.append(("terminal", f"control character {bad.group()!r} printed by {case.argv[:2]}"))
    if outcome.extra and "written" in outcome.extra:
        failures += _readback_failures(outcome.extra)
    if case.markdown:
        failures += _markdown_failures(Path(case.markdown["path"].replace("{dir}", str(folder))))
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


def _readback_failures(extra: dict) -> list[tuple[str, str]]:
    """A rendered file must read back to the recipe it was rendered from; a file shardplan wrote that its own
    reader refuses, or reads otherwise, is an injection (or a writer bug: the same failure to a user)."""
    (src_rc, src, _), (rc, got, err) = extra["source"], extra["written"]
    if src is None or src_rc not in (0, 1):
        return []
    if got is None:
        return [("injection", f"the written file does not read back (exit {rc}): {err.strip()[:200]!r}")]
    diff = {k: (src["recipe"].get(k), got["recipe"].get(k)) for k in READBACK_FIELDS
            if src["recipe"].get(k) != got["recipe"].get(k)}
    return [("injection", f"the written file reads back otherwise: {diff}")] if diff else []


def _markdown_failures(path: Path) -> list[tuple[str, str]]:
    """Every line holding a name's marker `INJECT` also holds the name's start `sp-` (a raw newline would start a
    line of its own: a heading or a row), and every table row has the header's count of unescaped pipes."""
    if not path.is_file():
        return []
    lines = path.read_text(errors="replace").splitlines()
    failures = [("injection", f"{path.name}: a name made the line {line[:80]!r}") for line in lines
                if "INJECT" in line and "sp-" not in line.split("INJECT")[0]]
    rows = [line for line in lines if line.lstrip().startswith("|")]
    if rows:
        width = len(re.findall(r"(?<!\\)\|", rows[0]))
        failures += [("injection", f"{path.name}: a row of another width {row[:80]!r}") for row in rows
                     if len(re.findall(r"(?<!\\)\|", row)) != width]
    return failures[:1]


def _api_failures(outcome: Outcome) -> list[tuple[str, str]]:
    from boundary.errors import ShardplanError

    raised, call = outcome.extra["raised"], outcome.extra["call"]
    if raised is None or isinstance(raised, ShardplanError):
        if raised is not None and ("\n" in outcome.extra["message"].strip() or len(outcome.extra["message"]) > MAX_STDERR_CHARS):
            return [("api_leak", f"{call}: a ShardplanError of more than one bounded line")]
        return []
    if isinstance(raised, KeyboardInterrupt):
        return []
    return [("api_leak", f"{call} raised {type(raised).__name__}: {outcome.extra['message'][:150]}")]


def _process_failures(case: Case, outcome: Outcome, folder: Path) -> list[tuple[str, str]]:
    failures = []
    if "Traceback" in outcome.err:
        failures.append(("traceback", outcome.err.strip().splitlines()[-1][:300]))
    wanted = (0, 1, 2) if case.processes.get("sigterm_after_s") is None else (0, 1, 2, 130, 143, -15)
    if any(rc not in wanted for rc in outcome.extra["rcs"]):
        failures.append(("wrong_exit", f"exits {outcome.extra['rcs']}: {outcome.err.strip()[-200:]!r}"))
    leftovers = [str(p.relative_to(folder)) for p in folder.rglob("*") if LEFTOVER.search(p.name)]
    if leftovers:
        failures.append(("torn_folder", f"left behind {leftovers[:3]}"))
    out = folder / case.processes["folder"]
    summary = out / "SUMMARY.md"
    if summary.is_file():
        text = summary.read_text(errors="replace")
        scripts = {p.name for p in out.glob("*.sh")} | {p.name for p in out.glob("*.sbatch")}
        unlisted = sorted(s for s in scripts if s not in text)
        missing = sorted(set(re.findall(r"[\w.+-]+\.(?:sh|sbatch)", text)) - scripts)
        if unlisted or missing:
            failures.append(("torn_folder", f"SUMMARY.md lists {missing[:3]} that are gone and misses {unlisted[:3]}"))
    return failures


def _content(value) -> bytes | None:
    if isinstance(value, bytes):
        return value
    return value.encode("utf-8", "surrogateescape") if isinstance(value, str) and value not in ("FIFO", "DIR") else None


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
        if isinstance(want, tuple) and want[0] == "HARDLINK":
            target = folder / want[1]
            if not target.exists() or (st.st_dev, st.st_ino) != (os.stat(target).st_dev, os.stat(target).st_ino):
                losses.append(("data_loss", f"{name}, a hard link to {want[1]}, was replaced"))
            continue
        text = _content(want)
        if text is not None:
            text = text.replace(b"{dir}", str(folder).encode())
            if not stat.S_ISREG(st.st_mode) or hashlib.sha256(path.read_bytes()).digest() != hashlib.sha256(text).digest():
                losses.append(("data_loss", f"{name} was changed"))
            continue
        kind = {"FIFO": stat.S_ISFIFO, "DIR": stat.S_ISDIR}.get(want if isinstance(want, str) else "", stat.S_ISLNK)
        if not kind(st.st_mode):
            losses.append(("data_loss", f"{name} was replaced by another kind of file"))
    existing = folder / "existing.sh"
    if "existing.sh" in case.files and outcome.rc != 0 and existing.exists() and "echo keep" not in existing.read_text():
        losses.append(("data_loss", "existing.sh was overwritten by a failed command"))
    return losses
