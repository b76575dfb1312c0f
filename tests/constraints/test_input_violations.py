"""Violations found while reading the input (a flag value Megatron refuses) make the verdict illegal; they are never
reported as unusable input."""
from __future__ import annotations

from click.testing import CliRunner

from shardplan.cli.main import cli
from tests.helpers.builders import LLAMA8B_MBS3


def test_violations_found_while_reading_the_input_make_the_verdict_illegal(tmp_path):
    # the reader (constraints/read.py) hands such violations over as LoadedCase.preflight_violations
    from constraints.read import load_check_input
    from constraints.rules.registry import Violation
    from shardplan.verdict import check_and_project

    path = tmp_path / "ok.yaml"
    path.write_text(LLAMA8B_MBS3.replace("mbs: 3", "mbs: 1"))
    loaded = load_check_input(str(path), None, None, None)
    assert check_and_project(loaded, project=False)["ok"]
    loaded.preflight_violations = [Violation(rule="vpp_layers_divisible", message="4 layers per virtual stage do not divide 80/3",
                                             fix="use --num-layers-per-virtual-pipeline-stage dividing the layers per stage")]
    out = check_and_project(loaded, project=False)
    assert not out["ok"] and out["json"]["legal"] is False
    assert [v["rule"] for v in out["json"]["violations"]][:1] == ["vpp_layers_divisible"]


def test_vpp_flag_megatron_refuses_is_a_violation_not_bad_input(tmp_path):
    """--num-layers-per-virtual-pipeline-stage 4 with 80 layers on PP 3 is an illegal recipe (validate_args
    refuses it): check reports a layers_split violation in its JSON and exits 1 instead of an input error (exit 2)."""
    import json as _json



    args = ("--num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64 --group-query-attention "
            "--num-query-groups 8 --vocab-size 128256 --max-position-embeddings 8192 --swiglu --seq-length 8192 "
            "--micro-batch-size 1 --global-batch-size 128 --bf16 --tensor-model-parallel-size 8 "
            "--pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 4 --sequence-parallel")
    path = tmp_path / "args.txt"
    path.write_text(args + "\n")
    res = CliRunner().invoke(cli, ["check", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "8", "--gpus-per-node", "8",
                                   "--json"])
    assert res.exit_code == 1, res.output
    data = _json.loads(res.output)
    first = data["violations"][0]
    assert not data["legal"] and first["rule"] == "layers_split" and "--num-layers-per-virtual-pipeline-stage 4" in first["message"]
    assert "dividing 80" in first["fix"]
