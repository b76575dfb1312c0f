"""SIGTERM (`kill PID`, a scheduler's time limit) ends a command as Ctrl-C does (issue 33): Python's default action
killed the process mid-write and left the hidden staging folder or a `.tmp` file. The CLI's handler
(shardplan/cli/termination.py) raises in the main thread, the writers' cleanup runs, and the exit status is 143."""
from __future__ import annotations

import subprocess
import sys

from tests.helpers.builders import REPO

EXAMPLE = REPO / "constraints" / "examples" / "llama3-70b-h100.yaml"

# the real entry point, with a SIGTERM sent to itself while the first output is being written (after its temp file
# exists, before the rename): the moment that left a `.tmp` file or a staging folder behind
KILL_MID_WRITE = """
import os, signal, sys, time
import boundary.write as write
real_fsync = write.os.fsync
def fsync_then_sigterm(fd):
    real_fsync(fd)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(10)  # the handler raises here; without one the process dies here
write.os.fsync = fsync_then_sigterm
from shardplan.cli.main import main
main(sys.argv[1:])
"""


def _killed_mid_write(tmp_path, *args):
    return subprocess.run([sys.executable, "-c", KILL_MID_WRITE, *args], capture_output=True, text=True, cwd=REPO,
                          timeout=300)


def test_sigterm_during_a_report_write_leaves_no_temp_file_and_exits_143(tmp_path):
    res = _killed_mid_write(tmp_path, "report", "check", str(EXAMPLE), "-o", str(tmp_path / "r.html"))
    assert res.returncode == 143 and res.stderr.strip().splitlines()[-1] == "terminated", res.stderr
    assert list(tmp_path.iterdir()) == []  # neither the page nor its temp file


def test_sigterm_during_solve_render_leaves_the_folder_as_it_was(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's\n")
    res = _killed_mid_write(tmp_path, "solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1",
                            "--seq-length", "4096", "--global-batch-size", "64", "--top", "2", "--render", str(out))
    assert res.returncode == 143, res.stderr
    assert [p.name for p in out.iterdir()] == ["mine.txt"]  # no staging folder, no script, no SUMMARY.md


def test_sigterm_without_the_handler_is_what_left_the_temp_file(tmp_path):
    """The failure reproduced: the same kill under Python's default SIGTERM action leaves the temp file."""
    script = KILL_MID_WRITE.replace("from shardplan.cli.main import main",
                                    "import shardplan.cli.main as cli_main\ncli_main.terminate_like_interrupt = lambda: None\nmain = cli_main.main")
    res = subprocess.run([sys.executable, "-c", script, "report", "check", str(EXAMPLE), "-o", str(tmp_path / "r.html")],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert res.returncode == -15
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_sigterm_while_the_console_command_imports_is_143_in_one_line():
    """`shardplan` (shardplan_entry) ends at once on a SIGTERM during its first second's imports: nothing written yet."""
    script = ("import os, signal, builtins\nreal = builtins.__import__\n"
              "def imported(name, *a, **k):\n"
              "    if name == 'shardplan.cli.main':\n        os.kill(os.getpid(), signal.SIGTERM)\n"
              "    return real(name, *a, **k)\n"
              "builtins.__import__ = imported\nimport shardplan_entry\nshardplan_entry.main()\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert res.returncode == 143 and res.stderr == "terminated\n", res.stderr
