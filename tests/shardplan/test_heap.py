"""solver.heap.keep_heap: applied on Linux/glibc, skipped on request; run in a child so the test process keeps
glibc's defaults."""
import os
import subprocess
import sys

import pytest


def _run(env_extra):
    env = dict(os.environ, **env_extra)
    code = "from solver.heap import keep_heap; print(keep_heap())"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_keep_heap_applies_on_linux():
    assert _run({}) == "True"


def test_keep_heap_can_be_switched_off():
    assert _run({"SHARDPLAN_DEFAULT_MALLOC": "1"}) == "False"
