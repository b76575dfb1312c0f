"""read_training_log refuses what it cannot read with one line `<path>:<line>: <what>; <fix>`."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from boundary.errors import InputRefused, ShardplanError
from constraints.megatron.training_log import TrainingLogError, read_training_log

DUMP = ("------------------------ arguments ------------------------\n"
        "  num_layers ...................................... 2\n"
        "  tensor_model_parallel_size ...................... 2\n"
        "-------------------- end of arguments ---------------------\n")


def it(n: int, ms: float = 100.0, skipped: int = 0, nan: int = 0) -> str:
    return (f" iteration {n:8d}/     100 | consumed samples: {n:12d} | elapsed time per iteration (ms): {ms:.1f} | "
            f"number of skipped iterations: {skipped:3d} | number of nan iterations: {nan:3d} |\n")


def refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "train.log"
    path.write_text(text)
    with pytest.raises(TrainingLogError) as exc:
        read_training_log(str(path))
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{path}:") and "; " in msg
    assert isinstance(exc.value, ShardplanError)
    return msg


def test_not_a_megatron_log(tmp_path):
    assert "not a Megatron-LM training log" in refused(tmp_path, "hello\nworld\n")


def test_empty_file(tmp_path):
    assert "empty file" in refused(tmp_path, "")


def test_no_argument_dump(tmp_path):
    msg = refused(tmp_path, "banner\n" + "".join(it(n) for n in range(1, 10)))
    assert ":2: iteration lines but no argument dump" in msg and "--model plus the flags, or the launch script" in msg


def test_dump_without_end_banner(tmp_path):
    msg = refused(tmp_path, "x\n" + DUMP.rsplit("-" * 20, 1)[0].rsplit("\n", 2)[0] + "\n")
    assert ":2: the argument dump has no end banner" in msg


def test_last_line_cut_mid_record(tmp_path):
    text = DUMP + "".join(it(n) for n in range(1, 10)) + it(10)[:60]
    msg = refused(tmp_path, text)
    assert ":14: the last line is cut mid-record" in msg


def test_last_line_cut_right_after_a_separator(tmp_path):
    # Megatron prints each iteration line whole, line break included: one that ends in `|` but not in a line break was
    # cut between two fields, and is refused like any other cut record
    full = it(10)
    cut = full[:full.index("elapsed time per iteration")]
    assert cut.rstrip().endswith("|")
    msg = refused(tmp_path, DUMP + "".join(it(n) for n in range(1, 10)) + cut)
    assert ":14: the last line is cut mid-record" in msg


def test_no_steady_state(tmp_path):
    msg = refused(tmp_path, DUMP + it(1) + it(2) + it(3))
    assert "no steady-state iteration (3 logged intervals, all warm-up)" in msg


def test_no_iterations_after_dump(tmp_path):
    assert "no iteration line after the argument dump" in refused(tmp_path, DUMP + "training ...\n")


def test_only_nan_or_skipped(tmp_path):
    msg = refused(tmp_path, DUMP + "".join(it(n, skipped=1) for n in range(1, 6)) + it(6, nan=1))
    assert "only skipped or NaN iterations" in msg


def test_slow_intervals_and_warmup_are_dropped(tmp_path):
    path = tmp_path / "ok.log"
    path.write_text(DUMP + it(1, 900) + it(2, 300) + it(3, 100) + it(4, 100) + it(5, 400) + it(6, 110) + it(7, 100, 1)
                    + it(8, 105))
    log = read_training_log(str(path))
    assert [r.iteration for r in log.steady] == [4, 6, 8]  # 1-3 warm-up, 5 > 1.5 x median 107.5, 7 skipped


def test_overlong_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "long.log"
    path.write_text(DUMP + "x" * 100_000 + "\n" + "".join(it(n) for n in range(1, 8)))
    log = read_training_log(str(path))
    assert any(w.startswith("line 5: over 64 KiB") for w in log.warnings)
    assert len(log.steady) == 4


def test_fifo_and_directory_are_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputRefused, match="FIFO"):
        read_training_log(str(fifo))
    with pytest.raises(InputRefused, match="directory"):
        read_training_log(str(tmp_path))
    with pytest.raises(InputRefused, match="no such file"):
        read_training_log(str(tmp_path / "missing.log"))
