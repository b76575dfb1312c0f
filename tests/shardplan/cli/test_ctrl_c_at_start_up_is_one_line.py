"""A Ctrl-C while the CLI was still importing its modules (the first second of every command) raised KeyboardInterrupt
before shardplan.cli.main.main could catch it, and Python printed a traceback (found by QA with `timeout -s INT 0.5`). The
console command now enters through shardplan_entry, which imports the CLI inside its own handler."""
from __future__ import annotations

import subprocess
import sys

from tests.helpers.builders import REPO

# the import of shardplan.cli.main raises KeyboardInterrupt, as a Ctrl-C landing during it does
INTERRUPTED_IMPORT = """
import builtins
real = builtins.__import__
def interrupted(name, *args, **kwargs):
    if name == "shardplan.cli.main":
        raise KeyboardInterrupt
    return real(name, *args, **kwargs)
builtins.__import__ = interrupted
import shardplan_entry
shardplan_entry.main()
"""


def test_an_interrupt_while_importing_exits_130_with_one_line():
    p = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 130 and p.stderr == "interrupted\n", p.stderr


def test_the_console_command_is_that_entry():
    text = (REPO / "pyproject.toml").read_text()
    assert 'shardplan = "shardplan_entry:main"' in text and 'py-modules = ["shardplan_entry"]' in text
    p = subprocess.run([sys.executable, "-c", "import shardplan_entry, sys; sys.argv = ['shardplan', '--help']; "
                        "shardplan_entry.main()"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0 and "solve" in p.stdout
