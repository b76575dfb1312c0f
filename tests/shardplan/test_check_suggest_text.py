"""`check --suggest` in text mode: the nearest legal recipe, one line per changed field, and the flags it does not
carry."""
from __future__ import annotations

from click.testing import CliRunner

from shardplan.cli.main import cli
from tests.helpers.builders import LLAMA8B_MBS3


def test_check_suggest_prints_the_nearest_recipe_in_text_mode(tmp_path):
    # GBS 32 over DP 4 needs MBS | 8: MBS 3 is illegal (global_batch_divisible); the nearest legal recipe moves MBS only
    path = tmp_path / "r.yaml"
    path.write_text(LLAMA8B_MBS3)
    res = CliRunner().invoke(cli, ["check", str(path), "--suggest"])
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    head = [ln for ln in lines if ln.startswith("suggestion:")]
    assert head and "changes 1 field" in head[0] and "GiB" in head[0] and "s/iteration" in head[0]
    mbs = [ln for ln in lines if ln.split()[:3] == ["mbs", "--micro-batch-size", "3"]]  # field, flag, now, suggested
    assert len(mbs) == 1 and int(mbs[0].split()[-1]) in (1, 2, 4, 8)


def test_suggestion_keeps_flags_it_does_not_search():
    """--suggest searches the parallel axes only; a non-axis flag the user set (here --grad-reduce-in-bf16) is kept
    in the suggestion (which still passes check), not reset to the default."""
    from constraints.case import Case
    from constraints.models.load import load_model
    from constraints.spec import JobSpec, Placement, Recipe
    from solver.suggest import suggest_fix

    case = Case(model=load_model("Llama-3.1-8B"), job=JobSpec(seq_length=4096, global_batch_size=64),
                recipe=Recipe(tp=3, grad_reduce_in_bf16=True),
                placement=Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8))
    sug = suggest_fix(case)
    assert sug["found"] and "grad_reduce_in_bf16" not in sug["changes"] and sug["recipe"]["grad_reduce_in_bf16"] is True
    assert "tp" in sug["changes"]
