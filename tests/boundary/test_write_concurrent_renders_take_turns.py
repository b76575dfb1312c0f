"""Two `solve --render DIR` at once into one folder (issue 33) each read what the folder held, then each wrote its
scripts: the last SUMMARY.md did not list the other's scripts. The read and the write now hold an flock on the
folder (boundary.write.folder_locked), so the renders take turns and the folder ends as one render left it."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.helpers.builders import REPO, hf_config

# the real entry point, with the step between reading the folder's manifest and writing it held open until the other
# render has read it too (or 1 s passed: with the lock the other one waits for this render to finish first)
RENDER_SLOWLY = """
import os, sys, time
from pathlib import Path
import templates.render_files as files
real = files.removable
def removable_then_wait(directory):
    earlier = real(directory)
    mine, other = Path(sys.argv[1] + ".read"), Path(sys.argv[2] + ".read")
    mine.touch()
    deadline = time.monotonic() + float(sys.argv[3])
    while not other.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if sys.argv[4] == "unlocked" and sys.argv[1].endswith("r1"):
        # both have read the folder; the second writes after the first has written (else the two race, and either
        # order of check and write may come out)
        time.sleep(5.0)
    return earlier
files.removable = removable_then_wait
if sys.argv[4] == "unlocked":
    import contextlib, shardplan.api
    shardplan.api.folder_locked = lambda directory: contextlib.nullcontext()
from shardplan.cli.main import main
main(sys.argv[5:])
"""


def _two_renders_at_once(tmp_path: Path, wait_s: float, lock: str) -> tuple[Path, list[int], list[str]]:
    out = tmp_path / "out"
    models = ["Llama-3.1-8B", hf_config(tmp_path, name="other-8b.json")]
    procs = [subprocess.Popen([sys.executable, "-c", RENDER_SLOWLY, str(tmp_path / f"r{i}"), str(tmp_path / f"r{1 - i}"),
                               str(wait_s), lock, "solve", "--model", model, "--hardware", "h100-sxm-80gb", "--nodes",
                               "1", "--seq-length", "4096", "--global-batch-size", "64", "--top", "2", "--render",
                               str(out)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for i, model in enumerate(models)]
    rcs = [p.wait(timeout=300) for p in procs]
    return out, rcs, [p.stderr.read() for p in procs]


def _unlisted(out: Path) -> set[str]:
    listed = set(re.findall(r"\| `?(\d{2}-[^`|\s]+\.sh)`? \|", (out / "SUMMARY.md").read_text()))
    return {p.name for p in out.glob("*.sh")} - listed


def test_two_renders_into_one_folder_leave_only_listed_scripts(tmp_path):
    out, rcs, errs = _two_renders_at_once(tmp_path, 1.0, "locked")
    assert rcs == [0, 0], errs
    assert len(list(out.glob("*.sh"))) == 2 and _unlisted(out) == set()
    # no staging folder, no temp file, no lock file: only the render's own manifest beside what it lists
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [".shardplan-render.json"]


def test_without_the_lock_the_second_render_fails(tmp_path):
    """The failure reproduced: both read the folder before either writes. Before the render manifest, the second left
    the first's two scripts unlisted; with it, the second finds a SUMMARY.md it did not see written and refuses it."""
    out, rcs, errs = _two_renders_at_once(tmp_path, 60.0, "unlocked")
    failed = [err for rc, err in zip(rcs, errs) if rc != 0]
    assert sorted(rcs) == [0, 2] and "SUMMARY.md is not a file an earlier render wrote here" in failed[0], errs
