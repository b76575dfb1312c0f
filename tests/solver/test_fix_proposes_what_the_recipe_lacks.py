"""A violation's fix names a change the recipe does not already have: an FP8 run on a part without FP8 tensor cores
is told to drop its FP8 flags (it may already pass --bf16), and a recipe whose optimizer states overflow while they
are already sharded by the distributed optimizer is not told to add it."""
import shardplan
from constraints.check import check_case
from hardware.profile import load_profile
from tests.helpers.builders import make_case

LLAMA_8B = {"model": "Llama-3.1-8B", "nodes": 1, "job": {"seq_length": 4096, "global_batch_size": 8}}


def _violation(res, rule):
    return next(v for v in res.violations if v.rule == rule)


def test_fp8_on_a_part_without_fp8_tensor_cores_is_told_to_drop_the_fp8_flags():
    res = shardplan.check({**LLAMA_8B, "hardware": "a100-sxm-80gb", "gpus_per_node": 8,
                           "job": {**LLAMA_8B["job"], "precision": "fp8-delayed"}, "recipe": {"tp": 8}}, project=False)
    fix = _violation(res, "precision_supported").fix
    assert "drop --fp8-format" in fix and fix != "use --bf16"


def test_optimizer_states_already_sharded_get_a_fix_that_does_not_add_the_distributed_optimizer():
    # 8.0 B params on one H100: Adam's fp32 master weights and two moments (12 B/param, ~90 GiB) are the largest term.
    # The memory rule's own fix (constraints/check.py, what `render` lists); `check` shows the recipe search's answer
    # instead (tests/shardplan/cli/test_check_fixes_come_from_one_search.py)
    def memory_fix(sharding):
        case = make_case(nodes=1, gpus_per_node=1, gbs=8, dp_sharding=sharding)
        report = check_case(case, load_profile(case.placement.hardware))
        return next(v for v in report.violations if v.rule == "memory_fits")

    sharded = memory_fix("distributed_optimizer")
    assert "optimizer_state" in sharded.message
    assert "add --use-distributed-optimizer" not in sharded.fix and sharded.fix.startswith("raise DP")
    plain = memory_fix("none")
    assert "optimizer_state" in plain.message and plain.fix.startswith("add --use-distributed-optimizer")
