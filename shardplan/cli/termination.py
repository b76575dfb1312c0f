"""SIGTERM ends a command as Ctrl-C does: through every `finally` on the way out, so nothing half-written is left.

Why: Python's default SIGTERM action kills the process where it stands, so `kill PID` (or a scheduler's time limit,
a container stop) during `solve --render` left the hidden staging folder and `.tmp` files that Ctrl-C never leaves
(issue 33). The handler raises `Terminated`, a KeyboardInterrupt, in the main thread: the writers in
boundary/write.py remove their temp files and staging folders on any exception, and the CLI exits 143 (128 + 15,
the status a shell reports for a process SIGTERM killed) instead of Ctrl-C's 130.
"""
from __future__ import annotations

import signal
import threading

EXIT_TERMINATED = 143  # 128 + SIGTERM (15): what `bash` reports for a process SIGTERM ended
EXIT_INTERRUPTED = 130  # 128 + SIGINT (2)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: unwinds like Ctrl-C (a BaseException, so no `except Exception` on the way swallows it)."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def terminate_like_interrupt() -> None:
    """Install the SIGTERM handler (main thread only: Python runs signal handlers there and nowhere else)."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, _raise_terminated)


def exit_status(exc: BaseException) -> int:
    """143 when `exc` (or what click wrapped into Abort) is a SIGTERM, else 130 (Ctrl-C)."""
    while exc is not None:
        if isinstance(exc, Terminated):
            return EXIT_TERMINATED
        exc = exc.__cause__ or exc.__context__
    return EXIT_INTERRUPTED
