"""One line of a Megatron-LM training log, read: rank prefix, argument-dump entry, iteration record, memory report, timer.

Why its own module: these are the format facts, each pinned to the code that prints it (NVIDIA/Megatron-LM @ d98e8a64:
megatron/training/arguments.py `_print_args`, megatron/training/training.py `training_log`,
megatron/training/utils/common_utils.py `report_memory`, megatron/core/timers.py `_get_global_min_max_time_string`;
AMD-AGI/Primus primus/modules/trainer/megatron/trainer.py `training_log` for the Primus variant). The reader
(constraints.megatron.training_log) only sequences them. Every parser first makes a cheap substring test and returns
None at once for the ~all lines of a log that are not its record, so a 1 GB log costs one `in` per line, not a regex.
"""
from __future__ import annotations

import re
from typing import NamedTuple, Optional

ARGUMENTS_BANNER = "------------------------ arguments ------------------------"
ARGUMENTS_END_BANNER = "-------------------- end of arguments ---------------------"
ITERATION_MARK = "elapsed time per iteration (ms)"
MEMORY_MARK = "memory (MB) | allocated:"
TIMER_HEADER_MARK = "time across ranks (ms):"
# Megatron-Bridge prints its ConfigContainer as YAML under this banner instead of `_print_args` (a real log: Megatron-Bridge
# v0.2.0rc7, Oct 2025, in verdimrc/playground-nemo-2.0-gh @155bbece 05-byoc-te-mb/with-ngc-pytorch-25.06-cleanup.md,
# "Appendix: training log"; the next line is `_target_: megatron.bridge.training.config.ConfigContainer`)
BRIDGE_CONFIG_BANNER = "------- Task Configuration -------"
# NeMo 2 (PyTorch Lightning) prints its steps as `Training epoch 0, iteration 120/149 | lr: 3e-05 | ... | train_step_timing
# in s: 0.03146` (a real excerpt: NVIDIA-BioNeMo/bionemo-recipes#740), not Megatron's training_log line
NEMO2_STEP_MARK = "train_step_timing in s:"

# Launcher prefixes, outermost first: torchrun --tee/--redirects `[default0]:` (and torch's `[rank0]:`), srun
# --label `0: `, Primus's logger `[20251202 09:12:08][rank-7/8][INFO ] [--------trainer.py:2560] : `.
_RANK_PREFIX = re.compile(
    r"\[(?:default|rank)(\d+)\]:"
    r"|(\d+): "
    r"|\[\d{8} \d{2}:\d{2}:\d{2}\]\[rank-(\d+)/\d+\]\[\w+\s*\] \[[^\]]*\] : ?"
)

# `{name} {dots} {value}` with dots = '.' * (48 - len(name)), empty for names of 48+ characters.
_ARG_LINE = re.compile(r"\s+([A-Za-z_]\w*) (\.*)(?: (.*))?")

_ITERATION = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_ELAPSED_MS = re.compile(r"elapsed time per iteration \(ms\):\s*([0-9.]+(?:[eE][+-]?\d+)?)")
# Megatron-LM prints `throughput per GPU (TFLOP/s/GPU): X`; Primus `X/avg`, newer Primus `compute per GPU (...): X (avg Y)`;
# Megatron-DeepSpeed `TFLOPs: X`. The first number is the interval's own value.
_TFLOPS = re.compile(r"(?:(?:throughput|compute) per GPU \(TFLOP/s/GPU\)|\bTFLOPs):\s*([0-9.]+)")
# Primus `tokens per GPU (tokens/s/GPU): X/avg` and `tokens/s/GPU inst/harmonic mean: X/avg`; some forks
# `tokens per second per device: X`.
_TOKENS = re.compile(
    r"(?:tokens per GPU \(tokens/s/GPU\)|tokens/s/GPU inst/harmonic mean|tokens per second per device):\s*([0-9.]+)")
_SKIPPED = re.compile(r"number of skipped iterations:\s*(\d+)")
_NAN = re.compile(r"number of nan iterations:\s*(\d+)")

_MEMORY = re.compile(
    r"(?:\[Rank (\d+)\] )?(.*?)memory \(MB\) \| allocated: ([0-9.]+) \| max allocated: ([0-9.]+)"
    r" \| reserved: ([0-9.]+) \| max reserved: ([0-9.]+)")

# `    {name padded with dots to 48}: ({min:.2f}, {max:.2f})` or `: {max:.2f}` (--timing-log-option max)
_TIMER = re.compile(r"\s+(\S[^ ]*) \.+: (?:\(([0-9.]+), ([0-9.]+)\)|([0-9.]+))")


class IterationFields(NamedTuple):
    """What one iteration line says, in the log's own units (ms, TFLOP/s/GPU, tokens/s/GPU)."""

    iteration: int
    train_iters: int
    elapsed_ms: float
    tflops_per_gpu: Optional[float]
    tokens_per_s_per_gpu: Optional[float]
    skipped: int
    nan: int


class MemoryFields(NamedTuple):
    """One `report_memory` line: the printing rank (None for logs before `[Rank N]`), what it reports after, and the
    peaks in MB as printed."""

    rank: Optional[int]
    name: str
    max_allocated_mb: float
    max_reserved_mb: float


class TimerFields(NamedTuple):
    """One timer line under a `(min, max) time across ranks (ms):` header: the slowest rank's time in ms."""

    name: str
    max_ms: float


def split_rank_prefix(line: str) -> tuple[tuple[int, ...], str]:
    """The launcher rank labels at the start of `line` (outermost first; () when none) and the text after them."""
    ranks: list[int] = []
    pos = 0
    for _ in range(3):  # srun label + torchrun tee prefix nest at most two deep; a third is text
        if pos >= len(line) or not (line[pos] == "[" or line[pos].isdigit()):
            break
        m = _RANK_PREFIX.match(line, pos)
        if m is None:
            break
        ranks.append(int(next(g for g in m.groups() if g is not None)))
        pos = m.end()
    return tuple(ranks), line[pos:]


def parse_argument_line(text: str) -> Optional[tuple[str, str]]:
    """`(name, value text)` of one argument-dump entry, or None if `text` is not one."""
    if not text.startswith(" "):
        return None
    m = _ARG_LINE.fullmatch(text.rstrip())
    if m is None or (not m.group(2) and m.group(3) is None):
        return None
    return m.group(1), (m.group(3) or "").strip()


def _int_after(text: str, mark: str, pattern: re.Pattern) -> int:
    """The count `pattern` reads where `mark` starts in `text` (0 when the line has no such field): a substring find
    and one anchored match, not a regex scan of the whole line."""
    at = text.find(mark)
    m = pattern.match(text, at) if at >= 0 else None
    return int(m.group(1)) if m else 0


def parse_iteration_line(text: str) -> Optional[IterationFields]:
    """The fields of a `training_log` iteration line, or None if `text` is not one (or lacks the iteration number or
    the elapsed time, e.g. cut off mid-write). Optional fields are looked for only when their word is in the line."""
    at = text.find(ITERATION_MARK)
    if at < 0:
        return None
    it = _ITERATION.search(text)
    ms = _ELAPSED_MS.match(text, at)
    if it is None or ms is None:
        return None
    tflops = _TFLOPS.search(text) if "TFLOP" in text else None
    tokens = _TOKENS.search(text) if "tokens" in text else None
    return IterationFields(
        iteration=int(it.group(1)), train_iters=int(it.group(2)), elapsed_ms=float(ms.group(1)),
        tflops_per_gpu=float(tflops.group(1)) if tflops else None,
        tokens_per_s_per_gpu=float(tokens.group(1)) if tokens else None,
        skipped=_int_after(text, "number of skipped iterations:", _SKIPPED),
        nan=_int_after(text, "number of nan iterations:", _NAN))


def parse_memory_line(text: str) -> Optional[MemoryFields]:
    """The peaks of a `report_memory` line, or None if `text` is not one."""
    if MEMORY_MARK not in text:
        return None
    m = _MEMORY.search(text)
    if m is None:
        return None
    return MemoryFields(rank=int(m.group(1)) if m.group(1) else None, name=m.group(2).strip(),
                        max_allocated_mb=float(m.group(4)), max_reserved_mb=float(m.group(6)))


def parse_timer_line(text: str) -> Optional[TimerFields]:
    """One timer line of a min/max timer block, or None (which ends the block)."""
    if not text.startswith(" ") or ".: " not in text:
        return None
    m = _TIMER.match(text)
    if m is None:
        return None
    return TimerFields(m.group(1), float(m.group(3) if m.group(3) is not None else m.group(4)))
