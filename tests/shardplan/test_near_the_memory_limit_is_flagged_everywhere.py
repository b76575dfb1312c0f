"""An answer within a few percent of HBM of the memory limit is flagged in sweep (table column and JSON) and on the
report page, as solve flags it (tests/shardplan/cli/solve/test_flags_thin_memory_headroom.py): published runs that
close to their limit both ran and ran out of memory (constraints/memory/allocator.py)."""
from __future__ import annotations

import json

from tests.helpers.builders import run_cli

SWEEP = ["sweep", "--model", "Llama-3.1-70B", "--hardware", "b200", "--nodes", "1,2", "--seq-length", "8192",
         "--global-batch-size", "128", "--max-memory-fraction", "0.95"]  # 1 node near 95 % once TE's buffers are counted


def test_sweep_flags_the_sizes_near_the_limit():
    rc, out, err = run_cli(*SWEEP, "--json")
    assert rc == 0, err
    points = {p["nodes"]: p for p in json.loads(out)["points"]}
    for p in points.values():  # flagged exactly when the peak lies in the last 3 % of HBM under the 95 % limit
        capacity = p["usable_bytes"] * 100 // 95
        assert p["near_memory_limit"] == (p["peak_bytes"] > p["usable_bytes"] - 3 * capacity // 100)
    assert points[1]["near_memory_limit"] and not points[2]["near_memory_limit"]
    rc, table, err = run_cli(*SWEEP)
    assert rc == 0 and "near limit" in table and "yes" in table


def test_the_report_page_says_it_beside_the_recipe(tmp_path):
    page = tmp_path / "r.html"
    rc, out, err = run_cli("report", "solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "2",
                           "--gpus-per-node", "1", "--seq-length", "8192", "--global-batch-size", "96", "--top", "1",
                           "-o", str(page))
    assert rc == 0, err
    text = page.read_text()
    assert "near the limit" in text and "fits (near the limit)" in text
