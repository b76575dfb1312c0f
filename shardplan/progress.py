"""Progress on stderr for steps that take over a second (tables, CP-SAT, proposer rounds, sweeps).

Why this shape: stdout carries the answer (`--format json` must stay parseable), so progress goes to stderr only,
and only when stderr is a terminal or the user asked (`--progress`, or `configure(True)` from Python). A step that
ends within `DELAY_S` prints nothing; a longer one shows a rich spinner with its label, then one line with its time.

Use: `with step("building tables"): ...` anywhere above solver/ (the API, the CLI, the sweep).
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional

from boundary.terminal import strip_control, unfiltered

DELAY_S = 1.0
_enabled: Optional[bool] = None  # None: on when stderr is a terminal


def configure(enabled: Optional[bool]) -> None:
    """True: always show progress on stderr; False: never; None: only when stderr is a terminal."""
    global _enabled
    _enabled = enabled


def enabled() -> bool:
    if _enabled is not None:
        return _enabled
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


@contextmanager
def step(label: str, delay_s: float = DELAY_S) -> Iterator[None]:
    """Show `label` with a spinner on stderr once the step has run `delay_s`; then `label: N.N s`."""
    if not enabled():
        yield
        return
    from rich.console import Console
    from rich.text import Text

    label = strip_control(label)  # a label may name the user's hardware file: drawn as plain text, never as codes

    console = Console(file=unfiltered(sys.stderr))  # the spinner's own control codes; the label is shardplan's text
    state: dict = {}
    lock = threading.Lock()

    def start() -> None:
        with lock:
            if state.get("done"):
                return
            state["status"] = console.status(Text(label))  # Text: a '[' in a path is not rich markup
            state["status"].start()

    t0 = time.perf_counter()
    timer = threading.Timer(delay_s, start)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            status = state.get("status")
        if status is not None:
            status.stop()
            console.print(f"{label}: {time.perf_counter() - t0:.1f} s", highlight=False, markup=False)
