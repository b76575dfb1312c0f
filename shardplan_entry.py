"""The `shardplan` console command: the CLI, with Ctrl-C during start-up said in one line.

Why a module of its own, outside the packages: importing `shardplan.cli.main` loads pydantic, numpy, OR-Tools and the
rules (about a second); a Ctrl-C in that second raised KeyboardInterrupt before shardplan.cli.main.main could catch it, and
Python printed a traceback. This module imports nothing of shardplan until it is inside the handler.
"""
from __future__ import annotations

import os
import sys


def main() -> None:
    try:
        from shardplan.cli.main import main as run_cli
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
        os._exit(130)
    run_cli()


if __name__ == "__main__":
    main()
