"""Exits that were tracebacks or exit 3 (issue 33): `solve --max-time 1e-9` raised the alarm before its handler's
`try:` (exit 142); `report` and `sweep --report` solved first and then failed to write into an unwritable folder or
under a 300-character name (exit 3). Each is now one `error:` line naming the option, exit 2, before any work."""
from __future__ import annotations

import time

import pytest

from tests.helpers.builders import run_cli

JOB = ("--seq-length", "8192", "--global-batch-size", "2048")
# a long job: `report solve --top 20` of it takes ~100 s here, so a check after the work would show in the time
BIG = ("--model", "Llama-3.1-405B", "--hardware", "h100-sxm-80gb", "--nodes", "64", *JOB)


@pytest.mark.parametrize("limit", ["1e-9", "1e-6", "0.001"])
def test_a_tiny_max_time_is_one_line(limit):
    rc, _, err = run_cli("solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1",
                         "--seq-length", "4096", "--global-batch-size", "64", "--max-time", limit)
    assert rc == 2 and err.startswith("error: --max-time: the solve did not finish within") and err.count("\n") == 1


@pytest.mark.parametrize("command", [("report", "solve", *BIG, "--top", "20", "-o"), ("sweep", *BIG, "--report")])
@pytest.mark.parametrize("path,says", [("/sys/report.html", "cannot write in /sys"),
                                       ("x" * 300 + ".html", "a name of 305 bytes in the path, over this file system's")])
def test_an_output_that_cannot_be_written_is_refused_first(tmp_path, command, path, says):
    started = time.monotonic()
    rc, out, err = run_cli(*command, path, cwd=tmp_path)
    option = "--report" if command[0] == "sweep" else "--output"
    assert rc == 2 and err.startswith(f"error: {option}: {says}"), err
    assert err.count("\n") == 1 and out == ""
    assert time.monotonic() - started < 30  # the solve never started
    assert list(tmp_path.iterdir()) == []
