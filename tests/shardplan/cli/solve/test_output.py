"""`solve`'s own output: `bound` in the objective's unit, option names in schema errors, and a target
that no objective reads."""
from __future__ import annotations

import json

from click.testing import CliRunner

from shardplan.cli.main import cli

BASE = ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1", "--seq-length", "4096",
        "--global-batch-size", "16", "--proposer", "none", "--pp", "1..2", "--vpp", "1", "--mbs", "1..2", "--cp", "1"]


def _json(args):
    res = CliRunner().invoke(cli, BASE + args + ["--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_memory_bound_is_in_bytes_and_equals_the_smallest_peak():
    d = _json(["--objective", "memory", "--top", "2"])
    assert d["bound_unit"].startswith("bytes") and d["proven_optimal"]
    assert d["bound"] == d["best_objective"] == d["recipes"][0]["memory"]["peak_bytes"]
    thr = _json(["--top", "1"])
    assert thr["bound_unit"].startswith("s ") and thr["bound"] == thr["best_ranking_time_s"]
    assert thr["bound"] <= d["best_ranking_time_s"]  # the throughput optimum bounds every recipe's ranking time


def test_schema_limits_name_the_option():
    res = CliRunner().invoke(cli, ["solve", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm-80gb", "--nodes", "1",
                                   "--seq-length", "4096", "--global-batch-size", "1000000000"])
    assert res.exit_code != 0
    assert "--global-batch-size" in res.output and "16777216" in res.output and "validation error" not in res.output


def test_target_without_fewest_gpus_is_refused():
    res = CliRunner().invoke(cli, BASE + ["--target-tokens-per-s", "1000"])
    assert res.exit_code != 0 and "--objective fewest-gpus" in res.output


def test_answers_whose_ranking_and_simulated_step_differ_are_flagged():
    """interleaved schedules with unequal stages (here VPP 2 with 8-layer end stages of a 36-layer model)
    are ranked by a closed form a few % below the simulated step; the text output marks them."""
    res = CliRunner().invoke(cli, ["solve", "--model", "Qwen3-8B", "--hardware", "b200", "--nodes", "2", "--seq-length", "4096",
                                   "--global-batch-size", "32", "--top", "1", "--pp", "4", "--vpp", "2", "--cp", "1",
                                   "--tp", "1", "--mbs", "1", "--uneven-stages", "--proposer", "none", "--json"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.output)["recipes"][0]
    from shardplan.solve_text import RANKING_GAP_NOTE, ranking_gap
    assert r["parallel"]["first_stage_layers"] and ranking_gap(r) > RANKING_GAP_NOTE
    assert ranking_gap({"step_time_us": 100, "ranking_time_us": 100}) == 0.0


def test_uncalibrated_parts_are_named_in_the_output(tmp_path):
    """A profile with neither microbenchmarks nor a calibration block projects on its bundled siblings' median
    fractions of peak (hardware/typical_microbench.py); the answer says so (JSON and text). Every bundled profile
    carries its own microbenchmarks, so none is named."""
    import yaml

    from hardware.profile import PROFILES_DIR, available_profiles, load_profile

    assert all(load_profile(name).calibrated for name in available_profiles())
    data = yaml.safe_load((PROFILES_DIR / "a100-sxm-80gb.yaml").read_text())
    del data["microbench"]
    bare = tmp_path / "a100-bare.yaml"
    bare.write_text(yaml.safe_dump(data))
    assert not load_profile(str(bare)).calibrated
    args = ["solve", "--model", "Llama-3.1-8B", "--hardware", str(bare), "--nodes", "1", "--seq-length", "4096",
            "--global-batch-size", "16", "--proposer", "none", "--pp", "1", "--cp", "1", "--top", "1"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0 and "has no microbenchmarks of its own" in res.output and "h100-sxm-80gb" in res.output
    assert json.loads(CliRunner().invoke(cli, args + ["--json"]).output)["projection_calibrated"] is False
    res = CliRunner().invoke(cli, args[:4] + ["a100-sxm-80gb"] + args[5:])
    assert res.exit_code == 0 and "microbenchmarks of its own" not in res.output


def test_json_args_with_their_env_pass_check():
    """megatron_args alone miss the launch environment Megatron's validation reads
    (CUDA_DEVICE_MAX_CONNECTIONS=1 for TP > 1 on Hopper); each answer now carries it, and args + env pass check."""
    from constraints.case import Case
    from constraints.check import check_case
    from constraints.megatron.argv_to_specs import parse_megatron_args
    from constraints.spec import Placement
    from hardware.profile import load_profile

    d = _json(["--tp", "2", "--top", "2"])
    prof = load_profile("h100-sxm-80gb")
    for r in d["recipes"]:
        cfg = parse_megatron_args(r["megatron_args"], world_size=8)
        env = {k: v for k, v in r["env"].items() if v is not None}
        case = Case(model=cfg.model, job=cfg.job, recipe=cfg.recipe,
                    placement=Placement(hardware="h100-sxm-80gb", num_nodes=1, gpus_per_node=8))
        rep = check_case(case, prof, flags=dict(cfg.raw), env=env)
        assert rep.legal, [v.message for v in rep.violations]
        if not r["parallel"]["dp_sharding"].endswith("fsdp"):
            assert r["env"] == {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
