"""QA4 findings 9, 10, 11: `check --suggest` text output, readable and actionable "nothing fits" explanations, and
their speed on a large infeasible space (/work/notes/qa4.md)."""
from __future__ import annotations

from click.testing import CliRunner

from solver.cli import cli

LLAMA8B_MBS3 = """model: Llama-3.1-8B
hardware: h100-sxm-80gb
nodes: 1
gpus_per_node: 8
job: {seq_length: 4096, global_batch_size: 32, precision: bf16}
recipe: {tp: 2, pp: 1, mbs: 3, sequence_parallel: true}
"""


def test_check_suggest_prints_the_nearest_recipe_in_text_mode(tmp_path):
    # GBS 32 over DP 4 needs MBS | 8: MBS 3 is illegal (global_batch_divisible); the nearest legal recipe moves MBS only
    path = tmp_path / "r.yaml"
    path.write_text(LLAMA8B_MBS3)
    res = CliRunner().invoke(cli, ["check", str(path), "--suggest"])
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    head = [ln for ln in lines if ln.startswith("suggestion:")]
    assert head and "changes 1 axis" in head[0] and "GiB" in head[0] and "s/iteration" in head[0]
    mbs = [ln for ln in lines if ln.strip().startswith("mbs (--micro-batch-size): 3 -> ")]
    assert len(mbs) == 1 and int(mbs[0].rsplit(" ", 1)[1]) in (1, 2, 4, 8)
