"""The CLI in a child process held to a memory and a time bound, for tests of hostile input.

Why a child with RLIMIT_AS and a timeout, not a timed assertion: a hostile input that is not refused takes gigabytes
or never ends; in the test process it would take the whole suite down, and a wall-clock assertion fails on a busy
machine for the wrong reason. Here such an input ends as a MemoryError (exit 3) or a timeout, both test failures that
say what happened, and a refused input is one `error:` line with exit status 2 whatever the machine's load.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from typing import NamedTuple, Optional

from tests.helpers.builders import REPO

# A `check` or `sweep` of a real config peaks under 0.6 GiB of address space here (Python, numpy, OR-Tools mapped);
# the hostile inputs of issue 33 took 3.1 GiB and more
MEMORY_BOUND_BYTES = 1 << 30
# a refusal comes in ~1 s alone; the bound is generous for a machine shared by several test runs
TIME_BOUND_S = 90


class BoundedRun(NamedTuple):
    returncode: Optional[int]  # None: it ran past the time bound
    stdout: str
    stderr: str


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND_BYTES, MEMORY_BOUND_BYTES))


def run_cli_bounded(*args: str, env: Optional[dict[str, str]] = None, cwd=None) -> BoundedRun:
    """`python -m shardplan.cli.main ARGS` under MEMORY_BOUND_BYTES of address space and TIME_BOUND_S seconds; `env`
    entries are added to this process's environment."""
    full_env = {**os.environ, **(env or {})}
    try:
        p = subprocess.run([sys.executable, "-m", "shardplan.cli.main", *args], capture_output=True, text=True,
                           cwd=cwd or REPO, env=full_env, timeout=TIME_BOUND_S, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired as exc:
        def text(out) -> str:  # TimeoutExpired keeps bytes even with text=True
            return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
        return BoundedRun(None, text(exc.stdout), text(exc.stderr))
    return BoundedRun(p.returncode, p.stdout, p.stderr)


def assert_one_line_refusal(run: BoundedRun, *words: str) -> str:
    """The run ended in time and memory with exit 2 and one `error:` line holding each of `words`; returns the line."""
    assert run.returncode is not None, f"ran past {TIME_BOUND_S} s: {run.stderr[-300:]}"
    assert run.returncode == 2, f"exit {run.returncode}: {run.stderr[-500:]}"
    assert run.stderr.startswith("error: ") and run.stderr.count("\n") == 1, run.stderr[:500]
    assert "Traceback" not in run.stderr
    for word in words:
        assert word in run.stderr, (word, run.stderr)
    return run.stderr.strip()
