"""A Megatron-Bridge training log is read through the ConfigContainer it prints as YAML under `Task Configuration`.

The log is real: a Megatron-Bridge v0.2.0rc7 run of Llama 3.2 1B on 8 H100 (tests/data/logs/SOURCES.md). Its recipe
numbers are the ones Bridge printed (16 layers, hidden 2048, GBS 512, TP 1, samples of 1,024 tokens)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from constraints.megatron.training_log import TrainingLogError, looks_like_training_log, read_training_log
from constraints.megatron.training_log_lines import BRIDGE_CONFIG_BANNER
from constraints.stacks.common import StackConfigError
from constraints.stacks.detect import read_printed_bridge_config
from tests.helpers.builders import run_cli

LOG = Path(__file__).resolve().parents[2] / "data" / "logs" / "megatron_bridge_llama32_1b_whole.log"
LINES = LOG.read_text().splitlines()
BANNER = next(i for i, t in enumerate(LINES) if BRIDGE_CONFIG_BANNER in t)  # 0-based: the block starts after it
BLOCK_END = next(i for i in range(BANNER + 1, len(LINES)) if set(LINES[i].strip()) == {"-"})
REAL_INTERVAL = next(i for i, t in enumerate(LINES) if "iteration       10/      10" in t)


def _logged_every_iteration(tmp_path: Path) -> Path:
    """The real log as the same run would print it at --log-interval 1: iterations 1-9 written in front of the real
    iteration-10 line in its own format (only the iteration, consumed samples and elapsed ms differ; the run logged
    every 10 iterations, so these 9 times are made up around its real 10-iteration mean of 4,647.8 ms)."""
    real = LINES[REAL_INTERVAL]
    made = [real.replace("iteration       10/      10", f"iteration {it:9d}/      10")
                .replace("consumed samples:         5120", f"consumed samples: {512 * it:12d}")
                .replace("elapsed time per iteration (ms): 4647.8", f"elapsed time per iteration (ms): {ms}")
            for it, ms in enumerate(["9321.4", "4262.1", "4255.0", "4251.7", "4249.3", "4253.8", "4250.2", "4256.6",
                                     "4252.9"], start=1)]
    path = tmp_path / "bridge_interval_1.log"
    path.write_text("\n".join(LINES[:REAL_INTERVAL] + made + LINES[REAL_INTERVAL:]) + "\n")
    return path


def test_the_printed_config_reads_as_the_recipe_bridge_ran():
    config = read_printed_bridge_config("\n".join(LINES[BANNER + 1:BLOCK_END]), "log", {})
    argv = " ".join(config.argv)
    for flag in ("--num-layers 16", "--hidden-size 2048", "--ffn-hidden-size 8192", "--num-attention-heads 32",
                 "--global-batch-size 512", "--micro-batch-size 1", "--tensor-model-parallel-size 1",
                 "--pipeline-model-parallel-size 1", "--seq-length 1024", "--rotary-base 500000"):
        assert flag in argv, flag
    assert "--bf16" in config.argv
    # model.seq_length 131072 only sizes the position embeddings; the samples are the dataset's 1,024 tokens
    assert any("dataset.sequence_length = 1024" in n for n in config.notes)


def test_the_real_log_is_read_past_its_config_and_refused_only_for_its_single_interval():
    assert looks_like_training_log("\n".join(LINES[:400]))
    with pytest.raises(TrainingLogError) as err:
        read_training_log(str(LOG))
    assert str(err.value) == (f"{LOG}:{REAL_INTERVAL + 1}: no steady-state iteration (1 logged intervals, all warm-up); "
                              "run past 2 --log-interval intervals and iteration 3")


def test_check_and_calibrate_read_a_bridge_log(tmp_path):
    path = _logged_every_iteration(tmp_path)
    log = read_training_log(str(path))
    assert log.bridge_config_line == BANNER + 1 and log.bridge_config.startswith("_target_: megatron.bridge")
    assert [r.iteration for r in log.steady] == list(range(4, 11))
    code, out, err = run_cli("check", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8",
                             "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["measured"]["iterations_used"] == 7
    assert result["measured"]["iteration_time_s"] == pytest.approx(4.2529)  # the median of iterations 4-10
    assert result["measured"]["max_allocated_bytes"] == round(12003.60400390625 * 2**20)  # the real memory line
    assert any(w["rule"] == "bridge_log" for w in result["warnings"])
    out_file = tmp_path / "cal.json"
    code, out, err = run_cli("calibrate", str(path), "--hardware", "h100-sxm-80gb", "--nodes", "1", "--gpus-per-node", "8",
                             "-o", str(out_file))
    assert code == 0, err
    evidence = json.loads(out_file.read_text())["evidence"][0]
    assert abs(evidence["residual"]) < 0.02  # one run reproduced within the 2 % the issue asks


def test_a_bridge_log_without_a_world_size_asks_for_the_cluster(tmp_path):
    code, _, err = run_cli("check", str(_logged_every_iteration(tmp_path)), "--hardware", "h100-sxm-80gb")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: --nodes/--gpus-per-node:") and "names no world size" in err


def test_a_cut_config_block_is_a_truncated_log(tmp_path):
    path = tmp_path / "cut.log"
    path.write_text("\n".join(LINES[:BANNER + 40]) + "\n")
    with pytest.raises(TrainingLogError) as err:
        read_training_log(str(path))
    assert str(err.value).startswith(f"{path}:{BANNER + 1}: the Task Configuration block has no closing line of dashes "
                                      "(the log is truncated)")


def test_a_block_that_is_no_config_container_is_refused_in_one_line():
    with pytest.raises(StackConfigError) as err:
        read_printed_bridge_config("_target_: some.other.Config\ntrain:\n  global_batch_size: 8\n", "log:7", {})
    assert "\n" not in str(err.value) and "not a Megatron-Bridge ConfigContainer" in str(err.value)
