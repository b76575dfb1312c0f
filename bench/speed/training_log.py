"""How fast `check LOG` / `calibrate` read a long Megatron-LM training log, as a ratio to reading its lines at all.

    nice python -m bench.speed.training_log [--mib 200]

A log of `--mib` MiB is written to a temporary folder: the argument dump of tests/data/logs/swift_qwen2_0p5b_megatron_core.log,
then iteration lines behind torchrun `[default1]:` prefixes, each followed by eight lines of per-rank noise (the shape of a
`--log-interval 1` run with warnings on every rank). Two times are taken on it: the floor, streaming its lines through
boundary.read.iter_text_lines and doing nothing with them, and constraints.megatron.training_log.read_training_log. The
ratio read / floor is what this bench reports, so it reads the same on a loaded or a fast machine; the MiB/s are printed
beside it. Measured on the shared 2-core development machine (load ~11), one 50 MiB log, the reader before and after
this change run one after the other on it: ratio 6.1 before (lines without a record mark had their rank prefix split and
four parsers tried; every optional iteration field was a regex scan of the line), 3.8 after.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from boundary.read import iter_text_lines
from constraints.megatron.training_log import MAX_LINE_BYTES, read_training_log

HEAD = Path(__file__).resolve().parents[2] / "tests" / "data" / "logs" / "swift_qwen2_0p5b_megatron_core.log"
NOISE = "[rank5]:[W init.cpp:767] Warning: nvfuser is no longer supported in torch script " + "x" * 60 + "\n"


def write_log(path: Path, target_bytes: int) -> int:
    """A log of about `target_bytes`; returns the number of iteration lines written."""
    head = HEAD.read_text().split("training ...")[0]
    n = 0
    with path.open("w") as f:
        f.write(head)
        size = len(head)
        while size < target_bytes:
            n += 1
            line = (f"[default1]: [2024-07-15 15:26:21] iteration {n:8d}/10000000 | consumed samples: {n * 8:12d} | "
                    f"elapsed time per iteration (ms): {700 + n % 50:.1f} | learning rate: 1.000000E-05 | global batch "
                    f"size:     8 | lm loss: 1.0E+00 | loss scale: 1.0 | grad norm: 1.000 | number of skipped "
                    f"iterations:   0 | number of nan iterations:   0 |\n")
            block = line + NOISE * 8
            f.write(block)
            size += len(block)
    return n


def measure(path: Path) -> tuple[float, float]:
    """(floor seconds, read seconds) on one file."""
    t0 = time.perf_counter()
    for _ in iter_text_lines(str(path), "training log", MAX_LINE_BYTES):
        pass
    floor_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    read_training_log(str(path))
    return floor_s, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=200, help="size of the generated log in MiB")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.log"
        n = write_log(path, args.mib * 2**20)
        floor_s, read_s = measure(path)
        mib = path.stat().st_size / 2**20
    print(f"{mib:.0f} MiB, {n} iteration lines: lines alone {floor_s:.2f} s, read_training_log {read_s:.2f} s "
          f"({mib / read_s:.0f} MiB/s); ratio read / lines {read_s / floor_s:.2f}")


if __name__ == "__main__":
    main()
