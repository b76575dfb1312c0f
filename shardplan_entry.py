"""The `shardplan` console command: the CLI, with Ctrl-C during start-up said in one line.

Why a module of its own, outside the packages: importing `shardplan.cli.main` loads pydantic, numpy, OR-Tools and the
rules (about a second); a Ctrl-C in that second raised KeyboardInterrupt before shardplan.cli.main.main could catch it, and
Python printed a traceback. This module imports nothing of shardplan until it is inside the handler. A SIGTERM in that
second ends the process at once with 143 (nothing is written yet); from then on shardplan/cli/termination.py unwinds
it like Ctrl-C.
"""
from __future__ import annotations

import os
import signal
import sys


def _terminated_at_start_up(signum, frame) -> None:
    sys.stderr.write("terminated\n")
    sys.stderr.flush()
    os._exit(143)


def main() -> None:
    signal.signal(signal.SIGTERM, _terminated_at_start_up)
    try:
        from shardplan.cli.main import main as run_cli
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
        os._exit(130)
    run_cli()


if __name__ == "__main__":
    main()
