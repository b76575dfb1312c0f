"""read_training_log on real and format-exact Megatron-LM logs (tests/data/logs/SOURCES.md cites each)."""
from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from bench.speed.training_log import write_log
from constraints.megatron.measured import measured_from_log
from constraints.megatron.training_log import TrainingLogError, looks_like_training_log, read_training_log
from constraints.megatron.training_log_lines import parse_iteration_line, parse_memory_line, split_rank_prefix

LOGS = Path(__file__).resolve().parents[2] / "data" / "logs"


def test_swift_qwen2_run_reads_its_times_memory_and_flags():
    log = read_training_log(str(LOGS / "swift_qwen2_0p5b_megatron_core.log"))
    assert log.runs_in_file == 1
    assert [r.iteration for r in log.iterations] == list(range(10, 130, 10))
    assert log.iterations[0].iteration_time_s == pytest.approx(8.1959)
    assert log.iterations[0].tflops_per_gpu is None  # this run did not pass --log-throughput
    # warm-up (iterations 10 and 20) dropped; 30..120 kept
    assert [r.iteration for r in log.steady] == list(range(30, 130, 10))
    assert log.steady[-1].iteration_time_s == pytest.approx(0.7172)
    assert log.memory[0].rank == 0
    assert log.memory[0].max_allocated_bytes == round(7959.9697265625 * 2**20) == 8346633216
    assert log.memory[0].max_reserved_bytes == 8266 * 2**20
    argv = " ".join(log.argv)
    assert "--tensor-model-parallel-size 1" in argv and "--num-layers 24" in argv and "--hidden-size 896" in argv
    assert "--disable-bias-linear" in log.argv  # dest add_bias_linear=False
    assert "--swiglu" in log.argv and "--fp16" not in log.argv
    assert "--no-masked-softmax-fusion" not in log.argv  # masked_softmax_fusion=True is the default
    assert log.args["num_query_groups"] == "2"
    assert log.args["world_size"] == "2"  # read (check takes the world from it) ...
    assert not any("world_size" in w for w in log.warnings)  # ... and, being derived by Megatron, left out of argv quietly
    assert log.phases is None  # timing-log-level 0: only setup / save-checkpoint blocks, not step phases


def test_megatron_format_log_with_ranks_restart_timers_and_versions():
    log = read_training_log(str(LOGS / "megatron_format_gpt175b_tp8_pp16_restarted.log"))
    assert log.runs_in_file == 2
    # the last run (restarted at iteration 50), each interval once although two ranks print it
    assert [r.iteration for r in log.iterations] == list(range(60, 180, 10))
    argv = log.argv
    assert argv[argv.index("--tensor-model-parallel-size") + 1] == "8"
    assert argv[argv.index("--pipeline-model-parallel-size") + 1] == "16"
    assert "--no-masked-softmax-fusion" in argv and "--sequence-parallel" in argv
    assert argv[argv.index("--attention-backend") + 1] == "auto"
    assert argv[argv.index("--main-grads-dtype") + 1] == "fp32"
    assert "--recompute-granularity" not in argv and "--cuda-graph-scope" not in argv  # None / [] left out
    assert log.iterations[0].iteration_time_s == pytest.approx(41.2507)
    steady = {r.iteration for r in log.steady}
    assert 60 not in steady and 70 not in steady  # warm-up
    assert 110 not in steady  # one skipped iteration in the interval
    assert all(r.tflops_per_gpu and r.tflops_per_gpu > 200 for r in log.steady)
    assert log.memory[0].max_allocated_bytes == round(52290.25 * 2**20)
    assert log.phases is not None and log.phases.intervals == len(log.steady)
    assert 12.0 < log.phases.phase_mean_s["forward-backward"] < 17.0
    assert log.phases.phase_mean_s["optimizer"] == pytest.approx(0.6409)
    assert log.versions == {"container": "24.01", "torch": "2.2.0a0+81ea7a4"}


def test_primus_log_reads_tokens_per_gpu_and_instantaneous_values():
    log = read_training_log(str(LOGS / "primus_rank_prefixed.log"))
    assert [r.iteration for r in log.steady] == [126, 127]
    r = log.steady[0]
    assert r.iteration_time_s == pytest.approx(13.3728)
    assert r.tflops_per_gpu == pytest.approx(567.6)
    assert r.tokens_per_s_per_gpu == pytest.approx(9801.4)
    assert "--seq-length" in log.argv and log.argv[log.argv.index("--seq-length") + 1] == "8192"


def test_real_iteration_lines_of_other_versions():
    # NVIDIA/Megatron-LM issue #756 (MoE losses, num zeros)
    line = (" [2024-04-06 03:02:12] iteration       71/     100 | consumed samples:         9088 | elapsed time per "
            "iteration (ms): 5361.6 | throughput per GPU (TFLOP/s/GPU): 243.6 | learning rate: 1.420000E-05 | global "
            "batch size:   128 | lm loss: 1.818812E+00 | load_balancing_loss: 1.013377E+00 | loss scale: 1.0 | grad norm: "
            "1.300 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |")
    f = parse_iteration_line(line)
    assert (f.iteration, f.train_iters, f.elapsed_ms, f.tflops_per_gpu) == (71, 100, 5361.6, 243.6)
    # epfLLM/Megatron-LLM issue #11: no timestamp, no throughput
    old = (" iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration (ms): 86545.2 | "
           "learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 | loss scale: 1.0 | grad norm: "
           "0.231 | number of skipped iterations:   0 | number of nan iterations:   0 |")
    f = parse_iteration_line(old)
    assert (f.iteration, f.elapsed_ms, f.tflops_per_gpu, f.skipped) == (122, 86545.2, None, 0)
    # Megatron-Bridge run: report_memory line
    m = parse_memory_line("[Rank 0] (after 10 iterations) memory (MB) | allocated: 9554.87939453125 | max allocated: "
                          "12003.60400390625 | reserved: 12232.0 | max reserved: 12232.0")
    assert (m.rank, m.max_allocated_mb, m.max_reserved_mb) == (0, 12003.60400390625, 12232.0)
    assert looks_like_training_log(line) and not looks_like_training_log("hello\nworld")


@pytest.mark.parametrize("line, ranks, rest", [
    ("[default3]: iteration", (3,), " iteration"),
    ("[rank12]:[W init.cpp] x", (12,), "[W init.cpp] x"),
    ("17: [default0]:abc", (17, 0), "abc"),
    ("[20251202 09:12:08][rank-7/8][INFO ] [--------trainer.py:2560] : iteration 1", (7,), "iteration 1"),
    ("2024 was a year", (), "2024 was a year"),
])
def test_rank_prefixes(line, ranks, rest):
    assert split_rank_prefix(line) == (ranks, rest)


def test_large_log_streams_in_bounded_memory(tmp_path):
    """Memory only: the read time is bench/speed/training_log.py's ratio (a test on a shared machine times nothing)."""
    path = tmp_path / "big.log"
    n = write_log(path, 60 * 2**20)
    assert n > 20_000  # more intervals than the reader keeps
    tracemalloc.start()
    log = read_training_log(str(path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(log.iterations) == 20_000
    assert log.iterations[-1].iteration == n
    assert peak < 50 * 2**20, peak


def test_megatron_lm_issue_756_excerpt_reads_step_throughput_memory_and_dump():
    """A real run (NVIDIA/Megatron-LM#756, Mixtral 8x7B on 16 H100, April 2024): its dump slice, memory line and
    iteration lines 2-4 and 71 as the issue prints them (tests/data/logs/SOURCES.md)."""
    log = read_training_log(str(LOGS / "megatron_lm_issue756_mixtral_16xh100_excerpt.log"))
    assert [r.iteration for r in log.iterations] == [2, 3, 4, 71]
    assert [r.iteration for r in log.steady] == [4, 71]  # iterations 2 and 3 are warm-up
    assert [r.tflops_per_gpu for r in log.steady] == [243.5, 243.6]
    run = measured_from_log(log, global_batch_size=int(log.args["global_batch_size"]), seq_length=4096, world_size=16)
    assert run.iteration_time_s == pytest.approx((5.3641 + 5.3616) / 2)
    # tokens/s/GPU as Megatron derives it: 128 x 4096 / 5.36285 s / 16 GPUs (4096 is this test's sequence length: the
    # excerpt's dump slice does not print seq_length)
    assert run.tokens_per_s_per_gpu == pytest.approx(128 * 4096 / 5.36285 / 16)
    assert run.max_allocated_bytes == round(54250.98583984375 * 2**20)
    assert run.max_reserved_bytes == 61480 * 2**20
    assert run.allocator_gap_bytes == 61480 * 2**20 - round(54250.98583984375 * 2**20)
    argv = log.argv
    assert argv[argv.index("--expert-model-parallel-size") + 1] == "8"
    assert argv[argv.index("--ffn-hidden-size") + 1] == "14336" and argv[argv.index("--hidden-size") + 1] == "4096"
    assert argv[argv.index("--global-batch-size") + 1] == "128"
    assert "--fp16" not in argv and "--fp8-format" not in argv  # fp16 False, fp8 None


@pytest.mark.parametrize("line, iteration, elapsed_ms, skipped", [
    # NVIDIA/nccl#743 (https://github.com/NVIDIA/nccl/issues/743): Megatron-LM BERT, Oct 2022, fp16: the first
    # interval's ten iterations were all skipped by the loss scaler, the second interval none
    (" iteration       10/ 1000000 | consumed samples:           40 | elapsed time per iteration (ms): 356.2 | learning "
     "rate: 0.000E+00 | global batch size:     4 | loss scale: 8388608.0 | number of skipped iterations:  10 | number of "
     "nan iterations:   0 |", 10, 356.2, 10),
    # epfLLM/Megatron-LLM#22 (https://github.com/epfLLM/Megatron-LLM/issues/22): Llama 2 7B at TP 2, Aug 2023
    (" iteration        5/    2000 | consumed samples:          320 | elapsed time per iteration (ms): 11075.6 | "
     "learning rate: 5.000E-07 | global batch size:    64 | lm loss: 1.793634E+00 | loss scale: 1.0 | grad norm: 6.716 | "
     "number of skipped iterations:   0 | number of nan iterations:   0 |", 5, 11075.6, 0),
])
def test_real_iteration_lines_with_skip_counts(line, iteration, elapsed_ms, skipped):
    f = parse_iteration_line(line)
    assert (f.iteration, f.elapsed_ms, f.skipped, f.nan, f.tflops_per_gpu) == (iteration, elapsed_ms, skipped, 0, None)


def test_a_megatron_bridge_run_prints_megatron_iteration_and_memory_lines():
    """A real Megatron-Bridge run (v0.2.0rc7, Llama 3.2 1B on 8 H100, Oct 2025; tests/data/logs/SOURCES.md): its
    iteration and memory lines are Megatron's own (its recipe, YAML under `Task Configuration`, is read by
    tests/constraints/megatron/test_a_bridge_log_is_read_through_its_printed_config.py)."""
    path = LOGS / "megatron_bridge_llama32_1b_whole.log"
    assert looks_like_training_log(path.read_text())
    line = next(t for t in path.read_text().splitlines() if "iteration       10/" in t)
    f = parse_iteration_line(line)
    assert (f.iteration, f.elapsed_ms, f.skipped) == (10, 4647.8, 0)
    memory = parse_memory_line(next(t for t in path.read_text().splitlines() if "memory (MB)" in t))
    assert (memory.rank, memory.max_allocated_mb, memory.max_reserved_mb) == (0, 12003.60400390625, 12232.0)


def test_a_nemo2_lightning_log_is_recognised_and_refused_in_one_line():
    """Real NeMo 2 step lines (NVIDIA-BioNeMo/bionemo-recipes#740, tests/data/logs/SOURCES.md): not Megatron's format."""
    path = LOGS / "nemo2_lightning_steps_excerpt.log"
    assert looks_like_training_log(path.read_text())
    with pytest.raises(TrainingLogError) as err:
        read_training_log(str(path))
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}:1: a NeMo 2 (PyTorch Lightning) log")
